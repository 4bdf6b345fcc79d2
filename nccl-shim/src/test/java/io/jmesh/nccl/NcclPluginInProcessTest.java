package io.jmesh.nccl;

import io.jmesh.api.Context;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Map;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The adapter without the C layer: the upcall bodies called from Java with native argument blocks, as the stubs
 * would, over the TCP provider on loopback in this JVM. Checks the NCCL contract (NULL comm while connecting, NULL
 * request while the peer has not posted, real sizes, errors as result codes) and that the data path (isend, irecv,
 * test) allocates nothing per call once warm.
 */
class NcclPluginInProcessTest {
    private static final Context TCP = Context.from(Map.of(), Map.of("JMESH_PROVIDER", "tcp",
            "JMESH_ADDRESSES", "127.0.0.1/8"));

    @Test
    void connectExchangeAndNoAllocationOnTheDataPath() {
        NcclPlugin p = new NcclPlugin(TCP);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(64, 8);
            assertEquals(0, p.init(out.address(), 42, -1, 12));
            assertEquals(0, p.devices(out.address()));
            assertTrue(out.get(JAVA_INT, 0) >= 1);

            MemorySegment handle = arena.allocate(128, 8);
            assertEquals(0, p.listen(0, 0, handle.address(), out.address()));
            long listenComm = out.get(JAVA_LONG, 0);
            long[] pair = connectPair(p, handle, listenComm, out);
            long sendComm = pair[0];
            long recvComm = pair[1];

            int size = 128 * 1024;                // above the TCP eager threshold: a send waits for its receive
            MemorySegment src = arena.allocate(size, 4096);
            MemorySegment dst = arena.allocate(size, 4096);
            for (int i = 0; i < size; i++) {
                src.set(JAVA_BYTE, i, (byte) (i * 7));
            }
            assertEquals(0, p.regMr(sendComm, src.address(), size, Nccl.PTR_HOST, 0, -1, out.address()));
            long srcMh = out.get(JAVA_LONG, 0);
            assertEquals(0, p.regMr(recvComm, dst.address(), size, Nccl.PTR_HOST, 0, -1, out.address()));
            long dstMh = out.get(JAVA_LONG, 0);

            // argument blocks for irecv (1 buffer) and test
            MemorySegment data = arena.allocate(8, 8);
            data.set(JAVA_LONG, 0, dst.address());
            MemorySegment sizes = arena.allocate(8, 8);
            sizes.set(JAVA_LONG, 0, size);
            MemorySegment tags = arena.allocate(4, 4);
            tags.set(JAVA_INT, 0, 7);
            MemorySegment mhs = arena.allocate(8, 8);
            mhs.set(JAVA_LONG, 0, dstMh);
            MemorySegment req = arena.allocate(16, 8);
            MemorySegment done = arena.allocate(4, 4);
            MemorySegment got = arena.allocate(32, 4);

            // a send larger than the eager threshold before the receive is posted: NULL request, success
            assertEquals(0, p.isend(sendComm, src.address(), size - 3, 7, srcMh, req.address()));
            assertEquals(0, req.get(JAVA_LONG, 0));

            exchange(p, sendComm, recvComm, src, srcMh, size - 3, data, sizes, tags, mhs, req, done, got);
            assertEquals(size - 3, got.get(JAVA_INT, 0), "test must report the real received size");
            assertEquals(src.asSlice(0, size - 3).mismatch(dst.asSlice(0, size - 3)), -1L);

            // host memory needs no flush: success with a NULL request, as NCCL reads it ("done")
            MemorySegment flushSizes = arena.allocate(4, 4);
            flushSizes.set(JAVA_INT, 0, size - 3);
            req.set(JAVA_LONG, 0, -1L);
            assertEquals(0, p.iflush(recvComm, 1, data.address(), flushSizes.address(), mhs.address(), req.address()));
            assertEquals(0, req.get(JAVA_LONG, 0));
            flushSizes.set(JAVA_INT, 0, size + 1); // beyond the registration
            assertEquals(Nccl.INVALID_ARGUMENT, p.iflush(recvComm, 1, data.address(), flushSizes.address(),
                    mhs.address(), req.address()));
            // the TCP provider advertises host memory only and refuses CUDA memory
            MemorySegment props = arena.allocate(512, 8);
            assertEquals(0, p.getProperties(0, props.address()));
            assertEquals(Nccl.PTR_HOST, props.get(JAVA_LONG, 8L * ShimAbi.P_PTR_SUPPORT));

            for (int i = 0; i < 2000; i++) { // warm up
                exchange(p, sendComm, recvComm, src, srcMh, 4096, data, sizes, tags, mhs, req, done, got);
            }
            com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long before = mx.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 2000; i++) {
                exchange(p, sendComm, recvComm, src, srcMh, 4096, data, sizes, tags, mhs, req, done, got);
            }
            long allocated = mx.getCurrentThreadAllocatedBytes() - before;
            assertTrue(allocated < 64 * 1024, "2000 exchanges (isend, irecv, test polls) allocated " + allocated
                    + " bytes on the calling thread");

            // errors are result codes, not exceptions
            assertEquals(Nccl.INVALID_ARGUMENT, p.isend(sendComm, src.address() + size, 16, 7, srcMh, req.address()));
            assertEquals(Nccl.INVALID_ARGUMENT, p.test(Comm.request(999, 1), done.address(), got.address()));
            assertEquals(Nccl.INVALID_ARGUMENT, p.closeSend(12345));

            assertEquals(0, p.deregMr(sendComm, srcMh));
            assertEquals(0, p.deregMr(recvComm, dstMh));
            assertEquals(0, p.closeSend(sendComm));
            assertEquals(0, p.closeRecv(recvComm));
            assertEquals(0, p.closeListen(listenComm));
            assertEquals(List.of(0, 0, 0, 0), p.openCounts());
            assertEquals(0, p.finalizeContext(1));
        } finally {
            p.release();
        }
    }

    @Test
    void finalizeClosesWhatNcclLeftOpen() {
        NcclPlugin p = new NcclPlugin(TCP);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(64, 8);
            assertEquals(0, p.init(out.address(), 1, -1, 11));
            assertEquals(0, p.init(out.address(), 2, -1, 11));
            MemorySegment handle = arena.allocate(128, 8);
            assertEquals(0, p.listen(0, 0, handle.address(), out.address()));
            MemorySegment buf = arena.allocate(4096, 4096);
            assertEquals(0, p.regMr(0, buf.address(), 4096, Nccl.PTR_HOST, 0, -1, out.address()));
            assertEquals(0, p.connect(0, 0, handle.address(), out.address())); // left in progress
            assertEquals(Nccl.INVALID_ARGUMENT, p.regMr(0, buf.address(), 4096, Nccl.PTR_CUDA, 0, -1, out.address()));
            assertEquals(List.of(0, 1, 1, 1), p.openCounts());
            assertEquals(1, p.finalizeContext(1)); // one communicator still open: nothing closed
            assertEquals(List.of(0, 1, 1, 1), p.openCounts());
            assertEquals(0, p.finalizeContext(2));
            assertEquals(List.of(0, 0, 0, 0), p.openCounts());
        } finally {
            p.release();
        }
    }

    /**
     * NCCL's restart after a failure: the process's last communicator ends (abort or destroy: every comm closed, the
     * context finalized, so the fabric closes), then a new one starts in the same process. Each round here is such a
     * communicator: a context, a listener, four connections each way, an exchange on each, all closed, finalized.
     * What a round leaves behind would show as growth from round to round: the jmesh threads (none between rounds,
     * the fabric is closed), and the heap after a full collection (under NCCL the connections' objects outlive young
     * collections and wait in the old generation for a full one, so RSS alone grows until that comes).
     */
    @Test
    void communicatorAfterTheLastOneEndedLeavesNothingBehind() throws InterruptedException {
        NcclPlugin p = new NcclPlugin(TCP);
        long[] heap = new long[8];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(64, 8);
            MemorySegment handle = arena.allocate(128, 8);
            MemorySegment src = arena.allocate(4096, 4096);
            MemorySegment dst = arena.allocate(4096, 4096);
            MemorySegment data = arena.allocate(8, 8);
            data.set(JAVA_LONG, 0, dst.address());
            MemorySegment sizes = arena.allocate(8, 8);
            sizes.set(JAVA_LONG, 0, 4096);
            MemorySegment tags = arena.allocate(4, 4);
            tags.set(JAVA_INT, 0, 7);
            MemorySegment mhs = arena.allocate(8, 8);
            MemorySegment req = arena.allocate(16, 8);
            MemorySegment done = arena.allocate(4, 4);
            MemorySegment got = arena.allocate(32, 4);
            for (int round = 0; round < heap.length; round++) {
                assertEquals(0, p.init(out.address(), 100 + round, -1, 12));
                assertEquals(0, p.listen(0, 0, handle.address(), out.address()));
                long listenComm = out.get(JAVA_LONG, 0);
                for (int k = 0; k < 4; k++) {
                    long[] pair = connectPair(p, handle, listenComm, out);
                    long sendComm = pair[0];
                    long recvComm = pair[1];
                    assertEquals(0, p.regMr(sendComm, src.address(), 4096, Nccl.PTR_HOST, 0, -1, out.address()));
                    long srcMh = out.get(JAVA_LONG, 0);
                    assertEquals(0, p.regMr(recvComm, dst.address(), 4096, Nccl.PTR_HOST, 0, -1, out.address()));
                    mhs.set(JAVA_LONG, 0, out.get(JAVA_LONG, 0));
                    exchange(p, sendComm, recvComm, src, srcMh, 4096, data, sizes, tags, mhs, req, done, got);
                    assertEquals(0, p.deregMr(sendComm, srcMh));
                    assertEquals(0, p.deregMr(recvComm, mhs.get(JAVA_LONG, 0)));
                    assertEquals(0, p.closeSend(sendComm));
                    assertEquals(0, p.closeRecv(recvComm));
                }
                assertEquals(0, p.closeListen(listenComm));
                assertEquals(0, p.finalizeContext(100 + round));
                assertEquals(List.of(0, 0, 0, 0), p.openCounts());
                assertEquals(List.of(), jmeshThreads(), "round " + round + ": threads the closed fabric left");
                System.gc();
                System.gc();
                heap[round] = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
            }
        } finally {
            p.release();
        }
        // the first rounds load and compile what the later ones reuse; from the third on nothing may accumulate
        long grown = heap[heap.length - 1] - heap[2];
        assertTrue(grown < 1 << 20, "the heap after a full collection grew by " + grown + " bytes over "
                + (heap.length - 3) + " communicators: " + java.util.Arrays.toString(heap));
    }

    /** Connects and accepts one pair as NCCL's proxy does, each polled until it returns its comm: {send, recv}. */
    private static long[] connectPair(NcclPlugin p, MemorySegment handle, long listenComm, MemorySegment out) {
        long sendComm = 0;
        long recvComm = 0;
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60); // a hang guard
        while ((sendComm == 0 || recvComm == 0) && System.nanoTime() - deadline < 0) {
            if (sendComm == 0) {
                assertEquals(0, p.connect(0, 0, handle.address(), out.address()));
                sendComm = out.get(JAVA_LONG, 0);
            }
            if (recvComm == 0) {
                assertEquals(0, p.accept(listenComm, out.address() + 8));
                recvComm = out.get(JAVA_LONG, 8);
            }
            Thread.onSpinWait();
        }
        assertNotEquals(0, sendComm, "connect never completed");
        assertNotEquals(0, recvComm, "accept never completed");
        return new long[] {sendComm, recvComm};
    }

    private static List<String> jmeshThreads() throws InterruptedException {
        List<String> names = List.of();
        for (int i = 0; i < 100; i++) { // a stopped thread may take a moment to leave the list
            names = Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                    .filter(n -> n.startsWith("jmesh")).sorted().toList();
            if (names.isEmpty()) {
                break;
            }
            Thread.sleep(20);
        }
        return names;
    }

    private static void exchange(NcclPlugin p, long sendComm, long recvComm, MemorySegment src, long srcMh, int len,
                                 MemorySegment data, MemorySegment sizes, MemorySegment tags, MemorySegment mhs,
                                 MemorySegment req, MemorySegment done, MemorySegment got) {
        assertEquals(0, p.irecv(recvComm, 1, data.address(), sizes.address(), tags.address(), mhs.address(),
                req.address() + 8));
        long recvReq = req.get(JAVA_LONG, 8);
        long sendReq = 0;
        while (sendReq == 0) {
            if (p.isend(sendComm, src.address(), len, 7, srcMh, req.address()) != 0) {
                throw new AssertionError("isend failed");
            }
            sendReq = req.get(JAVA_LONG, 0);
        }
        boolean sent = false;
        boolean received = recvReq == 0;
        while (!sent || !received) {
            if (!sent) {
                if (p.test(sendReq, done.address(), got.address() + 16) != 0) {
                    throw new AssertionError("send test failed");
                }
                sent = done.get(JAVA_INT, 0) == 1;
            }
            if (!received) {
                if (p.test(recvReq, done.address(), got.address()) != 0) {
                    throw new AssertionError("receive test failed");
                }
                received = done.get(JAVA_INT, 0) == 1;
            }
        }
        if (recvReq == 0) {
            throw new AssertionError("irecv returned no request");
        }
    }
}
