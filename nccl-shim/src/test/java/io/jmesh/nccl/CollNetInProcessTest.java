package io.jmesh.nccl;

import io.jmesh.api.Context;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The CollNet's upcall bodies without the C layer: two plugins in this JVM (two fabrics over the TCP provider on
 * loopback) are two nodes; each connects on a thread of its own, as NCCL's proxy would (connect returns only with the
 * communicator), then one thread drives both: all-reduces with the window full (a NULL request, success), results
 * checked, and the data path (iallreduce, test) allocating nothing once warm; a finalize closes what was left open.
 */
class CollNetInProcessTest {
    private static Context tcp() {
        return Context.from(Map.of(), Map.of("JMESH_PROVIDER", "tcp", "JMESH_ADDRESSES", "127.0.0.1/8",
                "JMESH_ROUTE_PORT", "0"));
    }

    @Test
    void twoNodesAllReduceWithoutAllocationAndFinalizeClosesWhatIsLeft() throws Exception {
        NcclPlugin[] p = {new NcclPlugin(tcp()), new NcclPlugin(tcp())};
        try (Arena arena = Arena.ofShared()) {
            MemorySegment out = arena.allocate(64, 8);
            MemorySegment handles = arena.allocate(2 * 128, 8);
            MemorySegment handlePtrs = arena.allocate(16, 8);
            long[] listen = new long[2];
            for (int r = 0; r < 2; r++) {
                assertEquals(0, p[r].init(out.address(), 7, -1, 11));
                assertEquals(0, p[r].listen(0, 0, handles.address() + 128L * r, out.address()));
                listen[r] = out.get(JAVA_LONG, 0);
                handlePtrs.set(JAVA_LONG, 8L * r, handles.address() + 128L * r);
            }
            MemorySegment props = arena.allocate(8L * ShimAbi.P_SLOTS, 8);
            assertEquals(0, p[0].collNet.getProperties(0, props.address()));
            assertEquals(Nccl.PTR_HOST, props.get(JAVA_LONG, 8L * ShimAbi.P_PTR_SUPPORT));
            assertEquals(CollNetPlugin.DEFAULT_MAX_BYTES, props.get(JAVA_LONG, 8L * ShimAbi.P_MAX_COLL_BYTES));

            long[] comm = new long[2];
            // a thread each, both at once: each connect returns only once the other node accepted it
            ExecutorService two = Executors.newFixedThreadPool(2);
            List<Future<Integer>> connects = List.of(0, 1).stream().map(r -> two.submit(
                    () -> p[r].collNet.connect(handlePtrs.address(), 2, r, listen[r], out.address() + 8L * (1 + r))))
                    .toList();
            two.shutdown();
            for (int r = 0; r < 2; r++) {
                assertEquals(0, connects.get(r).get(60, TimeUnit.SECONDS));
                comm[r] = out.get(JAVA_LONG, 8L * (1 + r));
                assertNotEquals(0, comm[r], "connect returned without a communicator");
                assertEquals(0, p[r].closeListen(listen[r]));
            }

            int n = 1024;
            int window = CollComm.WINDOW;
            long bytes = 4L * n * (window + 1);
            MemorySegment[] send = new MemorySegment[2];
            MemorySegment[] recv = new MemorySegment[2];
            long[] sendMh = new long[2];
            long[] recvMh = new long[2];
            for (int r = 0; r < 2; r++) {
                send[r] = arena.allocate(bytes, 4096);
                recv[r] = arena.allocate(bytes, 4096);
                for (int i = 0; i < n * (window + 1); i++) {
                    send[r].set(JAVA_FLOAT, 4L * i, i * 0.5f + r);
                }
                assertEquals(0, p[r].collNet.regMr(comm[r], send[r].address(), bytes, Nccl.PTR_HOST, 0, -1,
                        out.address()));
                sendMh[r] = out.get(JAVA_LONG, 0);
                assertEquals(0, p[r].collNet.regMr(comm[r], recv[r].address(), bytes, Nccl.PTR_HOST, 0, -1,
                        out.address()));
                recvMh[r] = out.get(JAVA_LONG, 0);
            }
            MemorySegment reqs = arena.allocate(8L * 2 * (window + 1), 8);
            MemorySegment done = arena.allocate(8, 4);

            // the window full: the 17th all-reduce gets a NULL request and success, and takes no number
            for (int k = 0; k < window; k++) {
                for (int r = 0; r < 2; r++) {
                    assertEquals(0, p[r].collNet.iallreduce(comm[r], send[r].address() + 4L * n * k,
                            recv[r].address() + 4L * n * k, n, Reducer.FP32, Reducer.SUM, sendMh[r], recvMh[r],
                            reqs.address() + 8L * (2 * k + r)));
                    assertNotEquals(0, reqs.get(JAVA_LONG, 8L * (2 * k + r)));
                }
            }
            assertEquals(0, p[0].collNet.iallreduce(comm[0], send[0].address() + 4L * n * window,
                    recv[0].address() + 4L * n * window, n, Reducer.FP32, Reducer.SUM, sendMh[0], recvMh[0],
                    reqs.address() + 8L * 2 * window));
            assertEquals(0, reqs.get(JAVA_LONG, 8L * 2 * window), "a full window must answer a NULL request");
            for (int k = 0; k < window; k++) {
                awaitBoth(p, reqs.get(JAVA_LONG, 8L * 2 * k), reqs.get(JAVA_LONG, 8L * (2 * k + 1)), done);
                assertEquals(4 * n, done.get(JAVA_INT, 4), "test reports the operation's bytes");
            }
            for (int r = 0; r < 2; r++) {
                for (int i = 0; i < n * window; i++) {
                    assertEquals(i * 0.5f + 0 + (i * 0.5f + 1), recv[r].get(JAVA_FLOAT, 4L * i), "rank " + r + " " + i);
                }
            }

            for (int i = 0; i < 3000; i++) { // warm up
                allReduce(p, comm, send, recv, sendMh, recvMh, reqs, done, n);
            }
            com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long before = mx.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 2000; i++) {
                allReduce(p, comm, send, recv, sendMh, recvMh, reqs, done, n);
            }
            long allocated = mx.getCurrentThreadAllocatedBytes() - before;
            assertTrue(allocated < 64 * 1024, "2000 all-reduces on both nodes (iallreduce, test polls) allocated "
                    + allocated + " bytes on the calling thread");

            // errors are result codes: an unknown request, an unsupported type
            assertEquals(Nccl.INVALID_ARGUMENT, p[0].collNet.test(comm[0] << 32 | 99_999, done.address(),
                    done.address() + 4));
            assertEquals(Nccl.INVALID_ARGUMENT, p[0].collNet.iallreduce(comm[0], send[0].address(),
                    recv[0].address(), 4, 10, Reducer.SUM, sendMh[0], recvMh[0], reqs.address()));

            // node 1 closes in order; node 0 leaves its communicator and registrations to finalize
            assertEquals(0, p[1].collNet.deregMr(comm[1], sendMh[1]));
            assertEquals(0, p[1].collNet.deregMr(comm[1], recvMh[1]));
            assertEquals(0, p[1].collNet.closeColl(comm[1]));
            assertEquals(List.of(0, 0), p[1].collNet.openCounts());
            assertEquals(List.of(1, 2), p[0].collNet.openCounts());
            assertEquals(0, p[0].finalizeContext(1));
            assertEquals(List.of(0, 0), p[0].collNet.openCounts());
            assertEquals(0, p[1].finalizeContext(1));
        } finally {
            p[0].release();
            p[1].release();
        }
    }

    /** One all-reduce on both nodes, driven from this thread. */
    private static void allReduce(NcclPlugin[] p, long[] comm, MemorySegment[] send, MemorySegment[] recv,
                                  long[] sendMh, long[] recvMh, MemorySegment reqs, MemorySegment done, int n) {
        for (int r = 0; r < 2; r++) {
            assertEquals(0, p[r].collNet.iallreduce(comm[r], send[r].address(), recv[r].address(), n, Reducer.FP32,
                    Reducer.SUM, sendMh[r], recvMh[r], reqs.address() + 8L * r));
        }
        awaitBoth(p, reqs.get(JAVA_LONG, 0), reqs.get(JAVA_LONG, 8), done);
    }

    /**
     * Tests both nodes' requests of one operation until both are done: one thread drives both nodes, and each test
     * also advances everything else in flight on its node.
     */
    private static void awaitBoth(NcclPlugin[] p, long req0, long req1, MemorySegment done) {
        boolean done0 = false;
        boolean done1 = false;
        for (long i = 0; i < 50_000_000L && !(done0 && done1); i++) {
            if (!done0) {
                assertEquals(0, p[0].collNet.test(req0, done.address(), done.address() + 4));
                done0 = done.get(JAVA_INT, 0) == 1;
            }
            if (!done1) {
                assertEquals(0, p[1].collNet.test(req1, done.address(), done.address() + 4));
                done1 = done.get(JAVA_INT, 0) == 1;
            }
        }
        if (!(done0 && done1)) { // the message only on failure: built on every call it would be the allocation measured
            throw new AssertionError("all-reduce requests 0x" + Long.toHexString(req0) + " and 0x"
                    + Long.toHexString(req1) + " never completed");
        }
    }
}
