package io.jmesh.transport.core;

import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The core's eager path through the in-memory wire ({@link MemoryWires} with a ring): small sends made before their
 * receive exists are replayed against it once its entries arrive, so a large send takes the buffer they left; the
 * ring's slots bound the records in flight and the receiver's credits free them, nothing lost or reordered; and a
 * receive that a receiver-driven message and an eager one fill together can be reused, whichever completes first.
 */
class CoreInMemoryEagerTest {
    private MemoryWires link;

    @AfterEach
    void close() {
        link.close();
    }

    private MemoryWires open(int slots, int payload) {
        link = new MemoryWires(Eager.of(slots, payload));
        return link;
    }

    private static void fill(MemorySegment m, long offset, long length, int seed) {
        for (long k = 0; k < length; k++) {
            m.set(JAVA_BYTE, offset + k, (byte) (seed + k * 31));
        }
    }

    /** Calls {@code call} until it answers something other than {@code waiting}, and returns that. */
    private static int until(String what, int waiting, java.util.function.IntSupplier call) {
        for (int turn = 0; turn < 10_000; turn++) {
            int r = call.getAsInt();
            if (r != waiting) {
                return r;
            }
        }
        fail(what + " still waits after 10,000 calls on a wire that moves at once");
        return 0;
    }

    /** An isend retried while it answers NOT_READY. */
    private static int send(String what, java.util.function.IntSupplier isend) {
        return until(what, Status.NOT_READY, isend);
    }

    /** A test repeated while it answers 0 (in flight). */
    private static int done(String what, java.util.function.IntSupplier test) {
        return until(what, 0, test);
    }

    @Test
    void smallSendsBeforeTheirReceiveAreReplayedAndALargeOneTakesTheBufferTheyLeft() {
        MemoryWires w = open(8, 4096);
        MemoryWires.Memory src = w.allocate(1 << 16);
        MemoryWires.Memory dst = w.allocate(1 << 16);
        fill(src.memory(), 0, 1 << 16, 3);
        int a = w.sender.isend(src, 0, 100, 7);
        int b = w.sender.isend(src, 4096, 200, 7);
        assertTrue(a >= CoreSender.EAGER_BASE && b >= CoreSender.EAGER_BASE, "small sends go before any receive: "
                + Status.describe(a) + ", " + Status.describe(b));
        assertEquals(Status.NOT_READY, w.sender.isend(src, 8192, 8000, 7), "a large one waits for its receive");
        int recv = w.receiver.irecv(3, new Registration[] {dst, dst, dst}, new long[] {0, 4096, 8192},
                new long[] {4096, 4096, 16384}, new int[] {7, 7, 7});
        int c = send("the large send", () -> w.sender.isend(src, 8192, 8000, 7));
        assertTrue(c >= 0 && c < CoreSender.EAGER_BASE, "the large send is receiver-driven: " + Status.describe(c));
        assertEquals(1, done("the large send's test", () -> w.sender.test(c)));
        assertEquals(1, done("the small sends' test", () -> w.sender.test(a)));
        assertEquals(1, done("the small sends' test", () -> w.sender.test(b)));
        assertEquals(1, done("the grouped receive", () -> w.receiver.test(recv)));
        long[] sizes = {100, 200, 8000};
        long[] from = {0, 4096, 8192};
        long[] at = {0, 4096, 8192};
        for (int i = 0; i < 3; i++) {
            assertEquals(sizes[i], w.receiver.size(recv, i), "buffer " + i);
            assertEquals(-1, MemorySegment.mismatch(src.memory(), from[i], from[i] + sizes[i], dst.memory(), at[i],
                    at[i] + sizes[i]), "buffer " + i + "'s bytes");
        }
    }

    @Test
    void theRingBoundsRecordsInFlightAndCreditsFreeItWithNothingLostOrReordered() {
        MemoryWires w = open(4, 64);
        MemoryWires.Memory src = w.allocate(4096);
        MemoryWires.Memory dst = w.allocate(4096);
        fill(src.memory(), 0, 4096, 9);
        int[] sends = new int[12];
        int sent = 0;
        while (sent < sends.length && (sends[sent] = w.sender.isend(src, sent * 64L, 10 + sent, 1)) >= 0) {
            sent++;
        }
        assertEquals(4, sent, "the ring's four slots, then NOT_READY until credits come back");
        for (int k = 0; k < sends.length; k++) {
            int recv = w.receiver.irecv(1, new Registration[] {dst}, new long[] {k * 64L}, new long[] {64},
                    new int[] {1});
            assertTrue(recv >= 0, Status.describe(recv));
            final int j = k;
            if (k >= sent) {
                sends[k] = send("send " + k, () -> w.sender.isend(src, j * 64L, 10 + j, 1));
                sent++;
            }
            assertEquals(1, done("receive " + k, () -> w.receiver.test(recv)));
            assertEquals(10 + k, w.receiver.size(recv, 0));
            assertEquals(-1, MemorySegment.mismatch(src.memory(), k * 64L, k * 64L + 10 + k, dst.memory(), k * 64L,
                    k * 64L + 10 + k), "message " + k + " in its own receive");
            assertEquals(1, done("send " + k + "'s test", () -> w.sender.test(sends[j])));
        }
    }

    /**
     * The stall the NCCL driver found on TCP: a receive of two buffers whose large message completed and was reported
     * before the small one filled it eagerly. The slot must be free for its next use, 32 receives later.
     */
    @Test
    void aReceiveFilledByAReportedLargeMessageAndThenAnEagerOneIsReusedManyTimes() {
        MemoryWires w = open(8, 64);
        MemoryWires.Memory src = w.allocate(4096);
        MemoryWires.Memory dst = w.allocate(4096);
        for (int round = 0; round < 3 * Cts.MAX_REQUESTS; round++) {
            fill(src.memory(), 0, 320, round);
            int recv = w.receiver.irecv(2, new Registration[] {dst, dst}, new long[] {0, 1024}, new long[] {256, 64},
                    new int[] {0, 1});
            assertTrue(recv >= 0, "round " + round + ": " + Status.describe(recv));
            int large = send("round " + round + ": the large send", () -> w.sender.isend(src, 0, 256, 0));
            assertTrue(large >= 0 && large < CoreSender.EAGER_BASE, Status.describe(large));
            assertEquals(1, done("round " + round + ": the large send's test", () -> w.sender.test(large)));
            int small = send("round " + round + ": the small send", () -> w.sender.isend(src, 256, 64, 1));
            assertTrue(small >= CoreSender.EAGER_BASE, "round " + round + ": " + Status.describe(small));
            assertEquals(1, done("round " + round + ": the small send's test", () -> w.sender.test(small)));
            assertEquals(1, done("round " + round + ": the receive", () -> w.receiver.test(recv)));
            assertEquals(-1, MemorySegment.mismatch(src.memory(), 0, 256, dst.memory(), 0, 256));
            assertEquals(-1, MemorySegment.mismatch(src.memory(), 256, 320, dst.memory(), 1024, 1088));
        }
    }
}
