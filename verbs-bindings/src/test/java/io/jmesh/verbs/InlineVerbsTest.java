package io.jmesh.verbs;

import io.jmesh.posix.Errno;
import io.jmesh.verbs.ffi.ibv_cq;
import io.jmesh.verbs.ffi.ibv_port_attr;
import io.jmesh.verbs.ffi.ibv_qp;
import io.jmesh.verbs.ffi.ibv_recv_wr;
import io.jmesh.verbs.ffi.ibv_send_wr;
import io.jmesh.verbs.ffi.ibv_sge;
import io.jmesh.verbs.ffi.ibv_wc;
import io.jmesh.verbs.ffi.verbs_h;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The hand-written static inlines ({@link DataPath}) and macros ({@link Verbs#queryPort}) do what gcc's do: a stand-in
 * provider (src/test/c/fake_provider.c), built here with gcc, logs what each call receives; the same requests go once
 * through Java and once through C's own {@code ibv_post_send}/{@code ibv_poll_cq}/... and must arrive identically.
 */
@Tag("native")                // also run in the arm64 testbed guests: the calling convention of the provider's ops
class InlineVerbsTest {
    private static Arena arena;
    private static SymbolLookup fake;
    private static MemorySegment context;
    private static final Linker LINKER = Linker.nativeLinker();

    @BeforeAll
    static void buildFakeProvider() throws Throwable {
        Libibverbs.requireLoadable();
        Path dir = Files.createTempDirectory("jmesh-fake-provider");
        Path lib = dir.resolve("libfakeprov.so");
        // the module's folder under Maven, the repository's root in the testbed guests
        Path src = Path.of("src/test/c/fake_provider.c").toAbsolutePath();
        if (!Files.exists(src)) {
            src = Path.of("verbs-bindings/src/test/c/fake_provider.c").toAbsolutePath();
        }
        run("gcc", "-shared", "-fPIC", "-O1", "-o", lib.toString(), src.toString(), "-l:libibverbs.so.1");
        arena = Arena.ofShared();
        fake = SymbolLookup.libraryLookup(lib, arena);
        context = (MemorySegment) fn("fake_context", FunctionDescriptor.of(ADDRESS)).invokeExact();
    }

    @AfterAll
    static void unload() {
        if (arena != null) {
            arena.close();
        }
    }

    private static void run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "gcc timed out");
        assertEquals(0, p.exitValue(), "gcc failed (needs gcc and libibverbs-dev: ./test installs them):\n" + out);
    }

    private static MethodHandle fn(String name, FunctionDescriptor d) {
        return LINKER.downcallHandle(fake.findOrThrow(name), d);
    }

    private static String takeLog() throws Throwable {
        MemorySegment s = (MemorySegment) fn("fake_log", FunctionDescriptor.of(ADDRESS)).invokeExact();
        String log = s.reinterpret(1 << 16).getString(0);
        fn("fake_log_reset", FunctionDescriptor.ofVoid()).invokeExact();
        return log;
    }

    private static MemorySegment qp(Arena a) {
        MemorySegment qp = ibv_qp.allocate(a);
        ibv_qp.context(qp, context);
        ibv_qp.qp_num(qp, 42);
        return qp;
    }

    private static MemorySegment cq(Arena a) {
        MemorySegment cq = ibv_cq.allocate(a);
        ibv_cq.context(cq, context);
        ibv_cq.cqe(cq, 256);
        return cq;
    }

    /** Two chained writes, the second with immediate data, with two and one scatter-gather entries. */
    private static MemorySegment sendChain(Arena a) {
        MemorySegment sges = ibv_sge.allocateArray(3, a);
        for (int i = 0; i < 3; i++) {
            MemorySegment s = ibv_sge.asSlice(sges, i);
            ibv_sge.addr(s, 0x7f0000001000L + i * 0x1000L);
            ibv_sge.length(s, 4096 * (i + 1));
            ibv_sge.lkey(s, 0x100 + i);
        }
        MemorySegment wrs = ibv_send_wr.allocateArray(2, a);
        MemorySegment w0 = ibv_send_wr.asSlice(wrs, 0);
        MemorySegment w1 = ibv_send_wr.asSlice(wrs, 1);
        ibv_send_wr.wr_id(w0, 7);
        ibv_send_wr.next(w0, w1);
        ibv_send_wr.sg_list(w0, sges);
        ibv_send_wr.num_sge(w0, 2);
        ibv_send_wr.opcode(w0, verbs_h.IBV_WR_RDMA_WRITE());
        ibv_send_wr.wr.rdma.remote_addr(ibv_send_wr.wr(w0), 0x5555000000L);
        ibv_send_wr.wr.rdma.rkey(ibv_send_wr.wr(w0), 0xbeef);
        ibv_send_wr.wr_id(w1, 8);
        ibv_send_wr.sg_list(w1, ibv_sge.asSlice(sges, 2));
        ibv_send_wr.num_sge(w1, 1);
        ibv_send_wr.opcode(w1, verbs_h.IBV_WR_RDMA_WRITE_WITH_IMM());
        ibv_send_wr.send_flags(w1, verbs_h.IBV_SEND_SIGNALED());
        ibv_send_wr.imm_data(w1, Integer.reverseBytes(0x1234abcd)); // __be32
        ibv_send_wr.wr.rdma.remote_addr(ibv_send_wr.wr(w1), 0x5555003000L);
        ibv_send_wr.wr.rdma.rkey(ibv_send_wr.wr(w1), 0xbeef);
        return w0;
    }

    @Test
    void postSendPassesTheSameChainAsC() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment qp = qp(a);
            MemorySegment wr = sendChain(a);
            MemorySegment bad = a.allocate(ADDRESS);
            takeLog();
            assertEquals(0, DataPath.of(context).postSend(qp, wr, bad));
            String fromJava = takeLog();
            int rc = (int) fn("c_post_send", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS))
                    .invokeExact(qp, wr, bad);
            assertEquals(0, rc);
            assertEquals(takeLog(), fromJava);
            assertTrue(fromJava.contains("post_send qp=42"), fromJava);
            assertTrue(fromJava.contains("wr id=8 op=" + verbs_h.IBV_WR_RDMA_WRITE_WITH_IMM() + " flags="
                    + verbs_h.IBV_SEND_SIGNALED() + " nsge=1 imm=1234abcd raddr=5555003000 rkey=48879"), fromJava);
            assertTrue(fromJava.contains("  sge addr=7f0000002000 len=8192 lkey=257"), fromJava);
        }
    }

    @Test
    void postSendErrorReturnsTheErrnoAndTheFailedRequest() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment qp = qp(a);
            MemorySegment w0 = sendChain(a);
            MemorySegment w1 = ibv_send_wr.next(w0);
            ibv_send_wr.opcode(w1, 0x7f);
            MemorySegment bad = a.allocate(ADDRESS);
            assertEquals(Errno.EINVAL, DataPath.of(context).postSend(qp, w0, bad));
            assertEquals(w1.address(), bad.get(ADDRESS, 0).address());
            takeLog();
        }
    }

    @Test
    void postRecvReachesTheProvider() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment qp = qp(a);
            MemorySegment wr = ibv_recv_wr.allocate(a);
            ibv_recv_wr.wr_id(wr, 99);
            MemorySegment bad = a.allocate(ADDRESS);
            takeLog();
            assertEquals(0, DataPath.of(context).postRecv(qp, wr, bad));
            String fromJava = takeLog();
            assertEquals(0, (int) fn("c_post_recv", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS))
                    .invokeExact(qp, wr, bad));
            assertEquals(takeLog(), fromJava);
            assertEquals("post_recv qp=42\nrecv id=99 nsge=0\n", fromJava);
        }
    }

    @Test
    void pollCqReadsTheSameCompletionsAsC() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cq = cq(a);
            MemorySegment fromJava = ibv_wc.allocateArray(4, a);
            MemorySegment fromC = ibv_wc.allocateArray(4, a);
            assertEquals(2, DataPath.of(context).pollCq(cq, 4, fromJava));
            assertEquals(2, (int) fn("c_poll_cq", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS))
                    .invokeExact(cq, 4, fromC));
            assertArrayEquals(fromC.toArray(JAVA_BYTE), fromJava.toArray(JAVA_BYTE));
            MemorySegment second = ibv_wc.asSlice(fromJava, 1);
            assertEquals(101, ibv_wc.wr_id(second));
            assertEquals(verbs_h.IBV_WC_REM_ACCESS_ERR(), ibv_wc.status(second));
            assertEquals(4097, ibv_wc.byte_len(second));
            assertEquals(0xabc1, Integer.reverseBytes(ibv_wc.imm_data(second)));
            assertEquals(77, ibv_wc.qp_num(second));
            assertEquals("poll_cq cqe=256 n=4\npoll_cq cqe=256 n=4\n", takeLog());
        }
    }

    @Test
    void reqNotifyCqReachesTheProvider() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cq = cq(a);
            takeLog();
            assertEquals(0, DataPath.of(context).reqNotifyCq(cq, true));
            assertEquals(0, (int) fn("c_req_notify_cq", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT))
                    .invokeExact(cq, 1));
            assertEquals("req_notify_cq cqe=256 solicited=1\nreq_notify_cq cqe=256 solicited=1\n", takeLog());
        }
    }

    @Test
    void queryPortTakesTheVerbsContextPathWithTheFullStruct() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment fromJava = ibv_port_attr.allocate(a);
            MemorySegment fromC = ibv_port_attr.allocate(a);
            takeLog();
            assertEquals(0, Verbs.load().queryPort(context, 1, fromJava));
            assertEquals(0, (int) fn("c_query_port", FunctionDescriptor.of(JAVA_INT, ADDRESS, ValueLayout.JAVA_BYTE,
                    ADDRESS)).invokeExact(context, (byte) 1, fromC));
            String log = takeLog();
            assertEquals("query_port port=1 len=" + ibv_port_attr.sizeof() + "\n"
                    + "query_port port=1 len=" + ibv_port_attr.sizeof() + "\n", log);
            assertArrayEquals(fromC.toArray(JAVA_BYTE), fromJava.toArray(JAVA_BYTE));
            assertEquals(verbs_h.IBV_PORT_ACTIVE(), ibv_port_attr.state(fromJava));
            assertEquals(0x1234, Short.toUnsignedInt(ibv_port_attr.port_cap_flags2(fromJava)));
        }
    }

    @Test
    void aProviderWithoutPostSendIsRefusedWithAReason() throws Throwable {
        MemorySegment ctx = (MemorySegment) fn("fake_context_without_post_send", FunctionDescriptor.of(ADDRESS))
                .invokeExact();
        VerbsException e = assertThrows(VerbsException.class, () -> DataPath.of(ctx));
        assertTrue(e.getMessage().contains("no post_send"), e.getMessage());
    }
}
