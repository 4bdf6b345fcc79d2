package io.jmesh.verbs;

import io.jmesh.posix.Errno;
import io.jmesh.testbed.TestbedEnv;
import io.jmesh.verbs.ffi.ibv_ah_attr;
import io.jmesh.verbs.ffi.ibv_gid_entry;
import io.jmesh.verbs.ffi.ibv_global_route;
import io.jmesh.verbs.ffi.ibv_mr;
import io.jmesh.verbs.ffi.ibv_port_attr;
import io.jmesh.verbs.ffi.ibv_qp;
import io.jmesh.verbs.ffi.ibv_qp_attr;
import io.jmesh.verbs.ffi.ibv_qp_cap;
import io.jmesh.verbs.ffi.ibv_qp_init_attr;
import io.jmesh.verbs.ffi.ibv_recv_wr;
import io.jmesh.verbs.ffi.ibv_send_wr;
import io.jmesh.verbs.ffi.ibv_sge;
import io.jmesh.verbs.ffi.ibv_wc;
import io.jmesh.verbs.ffi.verbs_h;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.zip.CRC32C;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Real kernel verbs through the bindings, inside the Soft-RoCE testbed: every rxe device opens, its port is ACTIVE,
 * the GID the testbed assigned is the RoCE v2 GID of the link's address, memory registers, and on every link an RC
 * queue pair goes RESET → INIT → RTR → RTS with the peer's and a message crosses each way, bytes checked.
 */
@Tag("rdma")
class RxeSmokeTest {
    private static final Duration PEER_TIMEOUT = Duration.ofSeconds(120);

    @Test
    void everyDeviceOpensWithAnActivePortAndTheLinksRoceV2Gid() throws Exception {
        TestbedEnv.require();
        Verbs verbs = Verbs.load();
        List<String> expected = TestbedEnv.devices();
        try (Verbs.DeviceList list = verbs.deviceList(); Arena arena = Arena.ofConfined()) {
            List<String> names = new ArrayList<>();
            for (int i = 0; i < list.count(); i++) {
                names.add(list.name(i));
            }
            assertEquals(expected.stream().sorted().toList(), names.stream().sorted().toList());
            for (int i = 0; i < list.count(); i++) {
                String name = list.name(i);
                MemorySegment ctx = verbs.openDevice(list.device(i), name);
                try {
                    MemorySegment port = ibv_port_attr.allocate(arena);
                    assertEquals(0, verbs.queryPort(ctx, 1, port));
                    assertEquals(verbs_h.IBV_PORT_ACTIVE(), ibv_port_attr.state(port), name + " port 1 state");
                    assertEquals(verbs_h.IBV_LINK_LAYER_ETHERNET(), ibv_port_attr.link_layer(port));
                    int gidIndex = Integer.parseInt(TestbedEnv.dev(name, "GIDX"));
                    MemorySegment entry = ibv_gid_entry.allocate(arena);
                    assertEquals(0, verbs.queryGidEx(ctx, 1, gidIndex, entry));
                    assertEquals(verbs_h.IBV_GID_TYPE_ROCE_V2(), ibv_gid_entry.gid_type(entry));
                    byte[] ip = InetAddress.getByName(TestbedEnv.dev(name, "IP")).getAddress();
                    byte[] gid = ibv_gid_entry.gid(entry).toArray(JAVA_BYTE);
                    byte[] mapped = new byte[16];
                    mapped[10] = (byte) 0xff;
                    mapped[11] = (byte) 0xff;
                    System.arraycopy(ip, 0, mapped, 12, 4);
                    assertArrayEquals(mapped, gid, name + " GID[" + gidIndex + "] = " + HexFormat.of().formatHex(gid));
                } finally {
                    assertEquals(0, verbs.closeDevice(ctx));
                }
            }
        }
    }

    @Test
    void registersAndDeregistersMemoryOnEveryDevice() {
        TestbedEnv.require();
        Verbs verbs = Verbs.load();
        try (Verbs.DeviceList list = verbs.deviceList(); Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < list.count(); i++) {
                MemorySegment ctx = verbs.openDevice(list.device(i), list.name(i));
                MemorySegment pd = verbs.allocPd(ctx, list.name(i));
                MemorySegment buf = arena.allocate(16 << 20, 4096);
                int access = verbs_h.IBV_ACCESS_LOCAL_WRITE() | verbs_h.IBV_ACCESS_REMOTE_WRITE()
                        | verbs_h.IBV_ACCESS_REMOTE_READ();
                MemorySegment mr = verbs.regMr(pd, buf, buf.byteSize(), access);
                assertEquals(buf.address(), ibv_mr.addr(mr).address());
                assertEquals(buf.byteSize(), ibv_mr.length(mr));
                assertNotEquals(0, ibv_mr.rkey(mr));
                assertEquals(0, verbs.deregMr(mr));
                assertEquals(0, verbs.deallocPd(pd));
                assertEquals(0, verbs.closeDevice(ctx));
            }
        }
    }

    @Test
    void anRcQueuePairOnEveryLinkExchangesAMessageEachWay() throws Exception {
        TestbedEnv.require();
        Verbs verbs = Verbs.load();
        String me = TestbedEnv.name();
        try (Verbs.DeviceList list = verbs.deviceList()) {
            for (int i = 0; i < list.count(); i++) {
                String dev = list.name(i);
                String peer = TestbedEnv.devOrEmpty(dev, "PEER");
                if (peer.isEmpty()) {
                    continue;
                }
                String link = "smoke-" + TestbedEnv.dev(dev, "IP").replaceAll("\\.[0-9]+$", "") + "-";
                try (RcEndpoint ep = new RcEndpoint(verbs, list.device(i), dev)) {
                    ep.toInit();
                    ep.postReceive();
                    TestbedEnv.publish(link + me, ep.describe());
                    RcEndpoint.Remote remote = RcEndpoint.Remote.parse(TestbedEnv.await(link + peer, PEER_TIMEOUT));
                    ep.toRtr(remote);
                    ep.toRts();
                    TestbedEnv.publish(link + me + "-ready", "rts");
                    TestbedEnv.await(link + peer + "-ready", PEER_TIMEOUT);

                    byte[] message = ("hello from " + me + " to " + peer + " over " + dev + " ").repeat(40)
                            .getBytes(StandardCharsets.US_ASCII);
                    ep.send(message);
                    ep.awaitSendCompletion();
                    byte[] got = ep.awaitReceive();
                    byte[] want = ("hello from " + peer + " to " + me + " over ").getBytes(StandardCharsets.US_ASCII);
                    assertTrue(got.length > want.length, "received only " + got.length + " bytes");
                    assertArrayEquals(want, java.util.Arrays.copyOf(got, want.length),
                            "payload: " + new String(got, 0, Math.min(80, got.length), StandardCharsets.US_ASCII));
                    CRC32C crc = new CRC32C();
                    crc.update(got);
                    TestbedEnv.publish(link + me + "-crc", Long.toString(crc.getValue()));
                    CRC32C mine = new CRC32C();
                    mine.update(message);
                    assertEquals(Long.toString(mine.getValue()), TestbedEnv.await(link + peer + "-crc", PEER_TIMEOUT),
                            "the peer received different bytes than " + me + " sent");
                }
            }
        }
    }

    /** One RC queue pair with its PD, CQ and one registered buffer, closed in reverse order. */
    static final class RcEndpoint implements AutoCloseable {
        record Remote(int qpn, int psn, byte[] gid, int mtu) {
            static Remote parse(String s) {
                String[] f = s.trim().split(" ");
                return new Remote(Integer.parseInt(f[0]), Integer.parseInt(f[1]), HexFormat.of().parseHex(f[2]),
                        Integer.parseInt(f[3]));
            }
        }

        private static final int BUF = 64 << 10;
        private final Verbs verbs;
        private final String name;
        private final Arena arena = Arena.ofConfined();
        private final MemorySegment ctx;
        private final MemorySegment pd;
        private final MemorySegment cq;
        private final MemorySegment qp;
        private final MemorySegment buf;
        private final MemorySegment mr;
        private final DataPath ops;
        private final int gidIndex;
        private final int psn = (int) (Math.random() * 0xffffff);

        RcEndpoint(Verbs verbs, MemorySegment device, String name) {
            this.verbs = verbs;
            this.name = name;
            ctx = verbs.openDevice(device, name);
            ops = DataPath.of(ctx);
            pd = verbs.allocPd(ctx, name);
            cq = verbs.createCq(ctx, 64, name);
            MemorySegment init = ibv_qp_init_attr.allocate(arena);
            ibv_qp_init_attr.send_cq(init, cq);
            ibv_qp_init_attr.recv_cq(init, cq);
            ibv_qp_init_attr.qp_type(init, verbs_h.IBV_QPT_RC());
            MemorySegment cap = ibv_qp_init_attr.cap(init);
            ibv_qp_cap.max_send_wr(cap, 16);
            ibv_qp_cap.max_recv_wr(cap, 16);
            ibv_qp_cap.max_send_sge(cap, 1);
            ibv_qp_cap.max_recv_sge(cap, 1);
            qp = verbs.createQp(pd, init, name);
            buf = arena.allocate(2L * BUF, 4096);
            mr = verbs.regMr(pd, buf, buf.byteSize(), verbs_h.IBV_ACCESS_LOCAL_WRITE());
            gidIndex = Integer.parseInt(TestbedEnv.dev(name, "GIDX"));
        }

        String describe() {
            MemorySegment entry = ibv_gid_entry.allocate(arena);
            assertEquals(0, verbs.queryGidEx(ctx, 1, gidIndex, entry));
            MemorySegment port = ibv_port_attr.allocate(arena);
            assertEquals(0, verbs.queryPort(ctx, 1, port));
            return ibv_qp.qp_num(qp) + " " + psn + " "
                    + HexFormat.of().formatHex(ibv_gid_entry.gid(entry).toArray(JAVA_BYTE)) + " "
                    + ibv_port_attr.active_mtu(port);
        }

        private void modify(MemorySegment attr, int mask, String to) {
            int rc = verbs.modifyQp(qp, attr, mask);
            if (rc != 0) {
                fail("ibv_modify_qp to " + to + " on " + name + " failed: " + Errno.describe(rc));
            }
        }

        void toInit() {
            MemorySegment a = ibv_qp_attr.allocate(arena);
            ibv_qp_attr.qp_state(a, verbs_h.IBV_QPS_INIT());
            ibv_qp_attr.pkey_index(a, (short) 0);
            ibv_qp_attr.port_num(a, (byte) 1);
            ibv_qp_attr.qp_access_flags(a, verbs_h.IBV_ACCESS_LOCAL_WRITE() | verbs_h.IBV_ACCESS_REMOTE_WRITE());
            modify(a, verbs_h.IBV_QP_STATE() | verbs_h.IBV_QP_PKEY_INDEX() | verbs_h.IBV_QP_PORT()
                    | verbs_h.IBV_QP_ACCESS_FLAGS(), "INIT");
        }

        void toRtr(Remote r) {
            MemorySegment port = ibv_port_attr.allocate(arena);
            assertEquals(0, verbs.queryPort(ctx, 1, port));
            MemorySegment a = ibv_qp_attr.allocate(arena);
            ibv_qp_attr.qp_state(a, verbs_h.IBV_QPS_RTR());
            ibv_qp_attr.path_mtu(a, Math.min(r.mtu(), ibv_port_attr.active_mtu(port)));
            ibv_qp_attr.dest_qp_num(a, r.qpn());
            ibv_qp_attr.rq_psn(a, r.psn());
            ibv_qp_attr.max_dest_rd_atomic(a, (byte) 1);
            ibv_qp_attr.min_rnr_timer(a, (byte) 12);
            MemorySegment ah = ibv_qp_attr.ah_attr(a);
            ibv_ah_attr.is_global(ah, (byte) 1);
            ibv_ah_attr.port_num(ah, (byte) 1);
            MemorySegment grh = ibv_ah_attr.grh(ah);
            ibv_global_route.dgid(grh).copyFrom(MemorySegment.ofArray(r.gid()));
            ibv_global_route.sgid_index(grh, (byte) gidIndex);
            ibv_global_route.hop_limit(grh, (byte) 64);
            modify(a, verbs_h.IBV_QP_STATE() | verbs_h.IBV_QP_AV() | verbs_h.IBV_QP_PATH_MTU()
                    | verbs_h.IBV_QP_DEST_QPN() | verbs_h.IBV_QP_RQ_PSN() | verbs_h.IBV_QP_MAX_DEST_RD_ATOMIC()
                    | verbs_h.IBV_QP_MIN_RNR_TIMER(), "RTR");
        }

        void toRts() {
            MemorySegment a = ibv_qp_attr.allocate(arena);
            ibv_qp_attr.qp_state(a, verbs_h.IBV_QPS_RTS());
            ibv_qp_attr.timeout(a, (byte) 20);
            ibv_qp_attr.retry_cnt(a, (byte) 7);
            ibv_qp_attr.rnr_retry(a, (byte) 7);
            ibv_qp_attr.sq_psn(a, psn);
            ibv_qp_attr.max_rd_atomic(a, (byte) 1);
            modify(a, verbs_h.IBV_QP_STATE() | verbs_h.IBV_QP_TIMEOUT() | verbs_h.IBV_QP_RETRY_CNT()
                    | verbs_h.IBV_QP_RNR_RETRY() | verbs_h.IBV_QP_SQ_PSN() | verbs_h.IBV_QP_MAX_QP_RD_ATOMIC(), "RTS");
        }

        private MemorySegment sge(long offset, int length) {
            MemorySegment s = ibv_sge.allocate(arena);
            ibv_sge.addr(s, buf.address() + offset);
            ibv_sge.length(s, length);
            ibv_sge.lkey(s, ibv_mr.lkey(mr));
            return s;
        }

        void postReceive() {
            MemorySegment wr = ibv_recv_wr.allocate(arena);
            ibv_recv_wr.wr_id(wr, 1);
            ibv_recv_wr.sg_list(wr, sge(BUF, BUF));
            ibv_recv_wr.num_sge(wr, 1);
            int rc = ops.postRecv(qp, wr, arena.allocate(ADDRESS));
            assertEquals(0, rc, "ibv_post_recv: " + Errno.describe(rc));
        }

        void send(byte[] message) {
            MemorySegment.copy(message, 0, buf, JAVA_BYTE, 0, message.length);
            MemorySegment wr = ibv_send_wr.allocate(arena);
            ibv_send_wr.wr_id(wr, 2);
            ibv_send_wr.sg_list(wr, sge(0, message.length));
            ibv_send_wr.num_sge(wr, 1);
            ibv_send_wr.opcode(wr, verbs_h.IBV_WR_SEND());
            ibv_send_wr.send_flags(wr, verbs_h.IBV_SEND_SIGNALED());
            int rc = ops.postSend(qp, wr, arena.allocate(ADDRESS));
            assertEquals(0, rc, "ibv_post_send: " + Errno.describe(rc));
        }

        private int pendingReceiveLength = -1;
        private boolean sendDone;

        private void pollUntil(java.util.function.BooleanSupplier done, String what) {
            MemorySegment wc = ibv_wc.allocateArray(4, arena);
            long deadline = System.nanoTime() + PEER_TIMEOUT.toNanos();
            while (!done.getAsBoolean()) {
                int n = ops.pollCq(cq, 4, wc);
                assertTrue(n >= 0, "ibv_poll_cq failed on " + name + ": " + n);
                for (int i = 0; i < n; i++) {
                    MemorySegment c = ibv_wc.asSlice(wc, i);
                    int status = ibv_wc.status(c);
                    if (status != verbs_h.IBV_WC_SUCCESS()) {
                        fail("completion wr_id " + ibv_wc.wr_id(c) + " on " + name + " failed: "
                                + verbs.wcStatusString(status));
                    }
                    if (ibv_wc.wr_id(c) == 1) {
                        pendingReceiveLength = ibv_wc.byte_len(c);
                    } else {
                        sendDone = true;
                    }
                }
                if (n == 0) {
                    if (System.nanoTime() > deadline) {
                        fail("no " + what + " completion on " + name + " within " + PEER_TIMEOUT.toSeconds() + " s");
                    }
                    Thread.onSpinWait();
                }
            }
        }

        void awaitSendCompletion() {
            pollUntil(() -> sendDone, "send");
        }

        byte[] awaitReceive() {
            pollUntil(() -> pendingReceiveLength >= 0, "receive");
            return buf.asSlice(BUF, pendingReceiveLength).toArray(JAVA_BYTE);
        }

        @Override
        public void close() {
            // reverse order of creation: QP before MR, CQ and PD; the device context last
            verbs.destroyQp(qp);
            verbs.deregMr(mr);
            verbs.destroyCq(cq);
            verbs.deallocPd(pd);
            verbs.closeDevice(ctx);
            arena.close();
        }
    }
}
