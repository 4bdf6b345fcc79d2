package io.jmesh.nccl;

import io.jmesh.api.Registration;

/** A registration NCCL made with regMr: the transport's registration and the address range it covers. */
final class MemHandle {
    final Registration registration;
    final long base;
    final long length;
    /** GPU memory (registered by dma-buf or as CUDA memory): received data there needs a flush. */
    final boolean gpu;

    MemHandle(Registration registration, boolean gpu) {
        this.registration = registration;
        this.gpu = gpu;
        this.base = registration.memory().address();
        this.length = registration.memory().byteSize();
    }

    /** The offset of {@code [address, address + size)} in the registration, or -1 when it lies outside. */
    long offsetOf(long address, long size) {
        long off = address - base;
        return off >= 0 && size >= 0 && off <= length && size <= length - off ? off : -1;
    }

    @Override
    public String toString() {
        return "registration [0x" + Long.toHexString(base) + ", +" + length + ")";
    }
}
