package io.jmesh.transport.rdma;

import io.jmesh.api.Registration;
import io.jmesh.transport.verbs.MemoryRegion;

import java.lang.foreign.MemorySegment;

/**
 * Memory registered on every device of the provider: one memory region per device, indexed like the provider's,
 * shared through the provider's registration cache with other registrations of the same pages.
 */
final class RdmaRegistration implements Registration {
    private final MemorySegment memory;
    private final MemoryRegion[] regions;
    final long address;
    final long length;
    /** Host memory the CPU may read and write (not GPU memory registered by dma-buf): eager messages need that. */
    final boolean host;
    private final java.util.function.Consumer<AutoCloseable> onClose;
    private boolean closed;

    RdmaRegistration(MemorySegment memory, boolean host, MemoryRegion[] regions,
                     java.util.function.Consumer<AutoCloseable> onClose) {
        this.memory = memory;
        this.host = host;
        this.onClose = onClose;
        this.regions = regions;
        this.address = memory.address();
        this.length = memory.byteSize();
    }

    @Override
    public MemorySegment memory() {
        return memory;
    }

    /**
     * Whether a queue pair of {@code ep} may use this registration: only one of the same fabric (another fabric's
     * keys belong to another protection domain, and its NIC would fail the connection).
     */
    boolean usableOn(Endpoint ep) {
        return ep.deviceIndex < regions.length && regions[ep.deviceIndex].pd() == ep.pd;
    }

    int lkey(int device) {
        return regions[device].lkey();
    }

    int rkey(int device) {
        return regions[device].rkey();
    }

    /** True when [offset, offset + len) lies inside the registration and it is open (a closed one's keys are stale). */
    boolean contains(long offset, long len) {
        return offset >= 0 && len >= 0 && offset <= length - len && !closed;
    }

    @Override
    public io.jmesh.api.RemoteRegion remote() {
        int[] keys = new int[regions.length];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = regions[i].rkey();
        }
        return new io.jmesh.api.RemoteRegion("rdma", address, length, keys);
    }

    /** Releases this use of the memory regions (the provider's cache deregisters them with their last user). */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        onClose.accept(this);
    }
}
