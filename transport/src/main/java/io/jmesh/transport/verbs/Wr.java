package io.jmesh.transport.verbs;

import io.jmesh.verbs.ffi.ibv_recv_wr;
import io.jmesh.verbs.ffi.ibv_send_wr;
import io.jmesh.verbs.ffi.ibv_sge;
import io.jmesh.verbs.ffi.ibv_wc;

import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

/**
 * Static access (a descriptor) to the work-request, scatter-gather and completion structs the data path writes and
 * reads per message. The generated accessors slice a new segment for every nested member ({@code ibv_send_wr.wr(w)}),
 * which allocates; these read and write at {@code static final} offsets taken from the same generated layouts (so the
 * C layout test covers them) and allocate nothing.
 */
public final class Wr {
    private Wr() {
    }

    private static long sendOffset(String... path) {
        PathElement[] p = new PathElement[path.length];
        for (int i = 0; i < path.length; i++) {
            p[i] = PathElement.groupElement(path[i]);
        }
        return ibv_send_wr.layout().byteOffset(p);
    }

    // struct ibv_send_wr
    public static final long SEND_SIZE = ibv_send_wr.sizeof();
    static final long S_WR_ID = sendOffset("wr_id");
    static final long S_NEXT = sendOffset("next");
    static final long S_SG_LIST = sendOffset("sg_list");
    static final long S_NUM_SGE = sendOffset("num_sge");
    static final long S_OPCODE = sendOffset("opcode");
    static final long S_SEND_FLAGS = sendOffset("send_flags");
    static final long S_IMM_DATA = ibv_send_wr.imm_data$offset();
    static final long S_REMOTE_ADDR = sendOffset("wr", "rdma", "remote_addr");
    static final long S_RKEY = sendOffset("wr", "rdma", "rkey");

    // struct ibv_recv_wr
    public static final long RECV_SIZE = ibv_recv_wr.sizeof();
    static final long R_WR_ID = ibv_recv_wr.wr_id$offset();
    static final long R_NEXT = ibv_recv_wr.next$offset();
    static final long R_SG_LIST = ibv_recv_wr.sg_list$offset();
    static final long R_NUM_SGE = ibv_recv_wr.num_sge$offset();

    // struct ibv_sge
    public static final long SGE_SIZE = ibv_sge.sizeof();
    static final long G_ADDR = ibv_sge.addr$offset();
    static final long G_LENGTH = ibv_sge.length$offset();
    static final long G_LKEY = ibv_sge.lkey$offset();

    // struct ibv_wc
    public static final long WC_SIZE = ibv_wc.sizeof();
    static final long C_WR_ID = ibv_wc.wr_id$offset();
    static final long C_STATUS = ibv_wc.status$offset();
    static final long C_OPCODE = ibv_wc.opcode$offset();
    static final long C_IMM_DATA = ibv_wc.imm_data$offset();

    /** Fills one send WR; {@code next} may be NULL. imm is in host order and written big-endian, as C's __be32. */
    public static void send(MemorySegment wr, long wrId, MemorySegment next, MemorySegment sge, int numSge, int opcode,
                            int flags, int immHostOrder, long remoteAddr, int rkey) {
        wr.set(JAVA_LONG_UNALIGNED, S_WR_ID, wrId);
        wr.set(JAVA_LONG_UNALIGNED, S_NEXT, next.address());
        wr.set(JAVA_LONG_UNALIGNED, S_SG_LIST, sge.address());
        wr.set(JAVA_INT_UNALIGNED, S_NUM_SGE, numSge);
        wr.set(JAVA_INT_UNALIGNED, S_OPCODE, opcode);
        wr.set(JAVA_INT_UNALIGNED, S_SEND_FLAGS, flags);
        wr.set(JAVA_INT_UNALIGNED, S_IMM_DATA, Integer.reverseBytes(immHostOrder));
        wr.set(JAVA_LONG_UNALIGNED, S_REMOTE_ADDR, remoteAddr);
        wr.set(JAVA_INT_UNALIGNED, S_RKEY, rkey);
    }

    /** Sets a send WR's next pointer (NULL ends the chain). */
    public static void link(MemorySegment wr, MemorySegment next) {
        wr.set(JAVA_LONG_UNALIGNED, S_NEXT, next.address());
    }

    /** Fills one receive WR with {@code numSge} entries at {@code sge} (NULL and 0 to only catch an immediate). */
    public static void recv(MemorySegment wr, long wrId, MemorySegment next, MemorySegment sge, int numSge) {
        wr.set(JAVA_LONG_UNALIGNED, R_WR_ID, wrId);
        wr.set(JAVA_LONG_UNALIGNED, R_NEXT, next.address());
        wr.set(JAVA_LONG_UNALIGNED, R_SG_LIST, sge.address());
        wr.set(JAVA_INT_UNALIGNED, R_NUM_SGE, numSge);
    }

    public static void sge(MemorySegment sge, long addr, int length, int lkey) {
        sge.set(JAVA_LONG_UNALIGNED, G_ADDR, addr);
        sge.set(JAVA_INT_UNALIGNED, G_LENGTH, length);
        sge.set(JAVA_INT_UNALIGNED, G_LKEY, lkey);
    }

    public static long wcWrId(MemorySegment wcArray, int i) {
        return wcArray.get(JAVA_LONG_UNALIGNED, i * WC_SIZE + C_WR_ID);
    }

    public static int wcStatus(MemorySegment wcArray, int i) {
        return wcArray.get(JAVA_INT_UNALIGNED, i * WC_SIZE + C_STATUS);
    }

    public static int wcOpcode(MemorySegment wcArray, int i) {
        return wcArray.get(JAVA_INT_UNALIGNED, i * WC_SIZE + C_OPCODE);
    }

    /** The immediate in host order. */
    public static int wcImm(MemorySegment wcArray, int i) {
        return Integer.reverseBytes(wcArray.get(JAVA_INT_UNALIGNED, i * WC_SIZE + C_IMM_DATA));
    }
}
