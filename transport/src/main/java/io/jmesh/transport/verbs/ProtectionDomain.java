package io.jmesh.transport.verbs;

import io.jmesh.posix.Errno;
import io.jmesh.verbs.VerbsException;

import java.lang.foreign.MemorySegment;

/** A protection domain on a device. Close it after the QPs and MRs made in it, before the device. */
public final class ProtectionDomain implements AutoCloseable {
    private final DeviceContext device;
    private final MemorySegment pd;
    private boolean closed;

    public ProtectionDomain(DeviceContext device) {
        this.device = device;
        this.pd = device.verbs().allocPd(device.handle(), device.name());
    }

    public DeviceContext device() {
        return device;
    }

    /** The {@code struct ibv_pd*}. */
    public MemorySegment handle() {
        return pd;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        int rc = device.verbs().deallocPd(pd);
        if (rc != 0) {
            throw new VerbsException("ibv_dealloc_pd on " + device.name() + " failed: " + Errno.describe(rc)
                    + (rc == Errno.EBUSY ? "; a queue pair or memory region of this PD is still open (close those first)"
                    : ""), rc);
        }
    }
}
