package io.jmesh.transport.verbs;

import io.jmesh.verbs.ffi.ibv_recv_wr;
import io.jmesh.verbs.ffi.ibv_send_wr;
import io.jmesh.verbs.ffi.ibv_sge;
import io.jmesh.verbs.ffi.ibv_wc;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The flyweight writes exactly the fields the generated (gcc-checked) accessors read. */
class WrTest {
    @Test
    void sendRecvSgeAndCompletionFieldsLandWhereTheGeneratedLayoutSays() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment wr = a.allocate(Wr.SEND_SIZE * 2, 8);
            MemorySegment w0 = wr.asSlice(0, Wr.SEND_SIZE);
            MemorySegment w1 = wr.asSlice(Wr.SEND_SIZE, Wr.SEND_SIZE);
            MemorySegment sge = a.allocate(Wr.SGE_SIZE, 8);
            Wr.sge(sge, 0x1000_2000L, 4096, 77);
            Wr.send(w0, 42, w1, sge, 1, 4, 2, 0x01020304, 0x5555_0000L, 0xbeef);
            assertEquals(42, ibv_send_wr.wr_id(w0));
            assertEquals(w1.address(), ibv_send_wr.next(w0).address());
            assertEquals(sge.address(), ibv_send_wr.sg_list(w0).address());
            assertEquals(1, ibv_send_wr.num_sge(w0));
            assertEquals(4, ibv_send_wr.opcode(w0));
            assertEquals(2, ibv_send_wr.send_flags(w0));
            assertEquals(Integer.reverseBytes(0x01020304), ibv_send_wr.imm_data(w0));
            assertEquals(0x5555_0000L, ibv_send_wr.wr.rdma.remote_addr(ibv_send_wr.wr(w0)));
            assertEquals(0xbeef, ibv_send_wr.wr.rdma.rkey(ibv_send_wr.wr(w0)));
            Wr.link(w0, MemorySegment.NULL);
            assertEquals(0, ibv_send_wr.next(w0).address());
            assertEquals(0x1000_2000L, ibv_sge.addr(sge));
            assertEquals(4096, ibv_sge.length(sge));
            assertEquals(77, ibv_sge.lkey(sge));

            MemorySegment rwr = a.allocate(Wr.RECV_SIZE, 8);
            Wr.recv(rwr, 9, MemorySegment.NULL, sge, 1);
            assertEquals(9, ibv_recv_wr.wr_id(rwr));
            assertEquals(sge.address(), ibv_recv_wr.sg_list(rwr).address());
            assertEquals(1, ibv_recv_wr.num_sge(rwr));

            MemorySegment wcs = ibv_wc.allocateArray(2, a);
            MemorySegment second = ibv_wc.asSlice(wcs, 1);
            ibv_wc.wr_id(second, 5);
            ibv_wc.status(second, 12);
            ibv_wc.opcode(second, 129);
            ibv_wc.byte_len(second, 1000);
            ibv_wc.imm_data(second, Integer.reverseBytes(777));
            ibv_wc.qp_num(second, 0x11);
            assertEquals(5, Wr.wcWrId(wcs, 1));
            assertEquals(12, Wr.wcStatus(wcs, 1));
            assertEquals(129, Wr.wcOpcode(wcs, 1));
            assertEquals(777, Wr.wcImm(wcs, 1));
        }
    }
}
