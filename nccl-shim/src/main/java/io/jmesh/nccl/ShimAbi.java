package io.jmesh.nccl;

import java.lang.foreign.FunctionDescriptor;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The Java half of {@code nccl-shim/src/main/c/jmesh_shim.h}: the bootstrap block the C library hands over, the
 * order and C signatures of the upcalls Java puts into it, and the property slots. Pointers cross as {@code long}
 * (the same registers as a C pointer on x86-64 and AArch64), so the upcalls never create segment objects.
 */
final class ShimAbi {
    static final int BOOT_MAGIC = 0x4A4D4E43;
    static final int ABI_VERSION = 3;

    // jm_boot_t
    static final long BOOT_MAGIC_OFFSET = 0;
    static final long BOOT_ABI_OFFSET = 4;
    static final long BOOT_UPCALL_COUNT_OFFSET = 8;
    static final long BOOT_LOG_OFFSET = 16;
    static final long BOOT_RELEASE_OFFSET = 24;
    static final long BOOT_UPCALLS_OFFSET = 32;
    static final int ERROR_BYTES = 2048;

    /** Upcalls in jm_upcalls_t order: name and C signature (return value first). */
    enum Upcall {
        INIT(JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT),
        DEVICES(JAVA_LONG),
        GET_PROPERTIES(JAVA_INT, JAVA_LONG),
        LISTEN(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG),
        CONNECT(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG),
        ACCEPT(JAVA_LONG, JAVA_LONG),
        REG_MR(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG),
        DEREG_MR(JAVA_LONG, JAVA_LONG),
        ISEND(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG),
        IRECV(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
        IFLUSH(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
        TEST(JAVA_LONG, JAVA_LONG, JAVA_LONG),
        CLOSE_SEND(JAVA_LONG),
        CLOSE_RECV(JAVA_LONG),
        CLOSE_LISTEN(JAVA_LONG),
        FINALIZE(JAVA_LONG),
        // CollNet (CollNetPlugin), from here to the end
        COLL_GET_PROPERTIES(JAVA_INT, JAVA_LONG),
        COLL_CONNECT(JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG),
        REDUCE_SUPPORT(JAVA_INT, JAVA_INT, JAVA_LONG),
        COLL_REG_MR(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG),
        COLL_DEREG_MR(JAVA_LONG, JAVA_LONG),
        IALLREDUCE(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG),
        COLL_TEST(JAVA_LONG, JAVA_LONG, JAVA_LONG),
        CLOSE_COLL(JAVA_LONG);

        final FunctionDescriptor descriptor;

        Upcall(java.lang.foreign.MemoryLayout... args) {
            this.descriptor = FunctionDescriptor.of(JAVA_INT, args);
        }

        /** Whether the upcall's body is {@link CollNetPlugin}'s (else {@link NcclPlugin}'s). */
        boolean collNet() {
            return ordinal() >= COLL_GET_PROPERTIES.ordinal();
        }
    }

    static final int UPCALL_COUNT = Upcall.values().length;
    static final long BOOT_ERROR_OFFSET = BOOT_UPCALLS_OFFSET + 8L * UPCALL_COUNT;

    // property slots (jm_slot_t, 8 bytes each)
    static final int P_NAME = 0;
    static final int P_PCI_PATH = 1;
    static final int P_GUID = 2;
    static final int P_PTR_SUPPORT = 3;
    static final int P_REG_IS_GLOBAL = 4;
    static final int P_FORCE_FLUSH = 5;
    static final int P_SPEED = 6;
    static final int P_PORT = 7;
    static final int P_LATENCY = 8;
    static final int P_MAX_COMMS = 9;
    static final int P_MAX_RECVS = 10;
    static final int P_NET_DEVICE_TYPE = 11;
    static final int P_NET_DEVICE_VERSION = 12;
    static final int P_VDEV_COUNT = 13;
    static final int P_VDEVS = 14;
    static final int P_MAX_P2P_BYTES = P_VDEVS + 8;
    static final int P_MAX_COLL_BYTES = P_MAX_P2P_BYTES + 1;
    static final int P_MAX_MULTI_REQUEST_SIZE = P_MAX_COLL_BYTES + 1;
    static final int P_RAIL_ID = P_MAX_MULTI_REQUEST_SIZE + 1;
    static final int P_PLANE_ID = P_RAIL_ID + 1;
    static final int P_SLOTS = P_PLANE_ID + 1;

    private ShimAbi() {
    }
}
