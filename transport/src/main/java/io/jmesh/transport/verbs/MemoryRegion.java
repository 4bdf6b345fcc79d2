package io.jmesh.transport.verbs;

import io.jmesh.posix.Errno;
import io.jmesh.verbs.VerbsException;
import io.jmesh.verbs.ffi.ibv_mr;
import io.jmesh.verbs.ffi.verbs_h;

import java.lang.foreign.MemorySegment;

/**
 * Registered memory: the range [address, address + length) pinned and addressable by the NIC through lkey (locally)
 * and rkey (by peers, for RDMA write and read). Close it after the queue pairs that use it can no longer touch it.
 */
public final class MemoryRegion implements AutoCloseable {
    /** Local write plus remote write and read: what the receiver-driven data path and one-sided API need. */
    public static int defaultAccess() {
        return verbs_h.IBV_ACCESS_LOCAL_WRITE() | verbs_h.IBV_ACCESS_REMOTE_WRITE() | verbs_h.IBV_ACCESS_REMOTE_READ();
    }

    private final ProtectionDomain pd;
    private final MemorySegment mr;
    private final long address;
    private final long length;
    private final int lkey;
    private final int rkey;
    private boolean closed;

    public MemoryRegion(ProtectionDomain pd, MemorySegment memory, int access) {
        this(pd, pd.device().verbs().regMr(pd.handle(), memory, memory.byteSize(), access), memory.address(),
                memory.byteSize());
    }

    private MemoryRegion(ProtectionDomain pd, MemorySegment mr, long address, long length) {
        this.pd = pd;
        this.mr = mr;
        this.address = address;
        this.length = length;
        this.lkey = ibv_mr.lkey(mr);
        this.rkey = ibv_mr.rkey(mr);
    }

    /**
     * Registers device memory exported as a dma-buf (GPU memory, {@code ibv_reg_dmabuf_mr}): bytes [offset, offset +
     * length) of the dma-buf {@code fd}, addressed by the NIC as [iova, iova + length).
     *
     * @throws io.jmesh.verbs.VerbsException naming the device and errno (EOPNOTSUPP: the device cannot)
     */
    public static MemoryRegion dmaBuf(ProtectionDomain pd, int fd, long offset, long length, long iova, int access) {
        MemorySegment mr = pd.device().verbs().regDmabufMr(pd.handle(), offset, length, iova, fd, access);
        return new MemoryRegion(pd, mr, iova, length);
    }

    /** The protection domain it was registered in. */
    public ProtectionDomain pd() {
        return pd;
    }

    public int lkey() {
        return lkey;
    }

    public int rkey() {
        return rkey;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        int rc = pd.device().verbs().deregMr(mr);
        if (rc != 0) {
            throw new VerbsException("ibv_dereg_mr of 0x" + Long.toHexString(address) + "+" + length + " on "
                    + pd.device().name() + " failed: " + Errno.describe(rc), rc);
        }
    }
}
