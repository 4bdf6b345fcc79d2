package io.jmesh.transport.core;

import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.Random;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The core's protocol through an in-memory wire ({@link MemoryWires}): no sockets, no devices, one thread. What the
 * contract suite checks through each provider's wire, checked here on the core alone, where a failure can only be
 * the core's: every size with its real size, tags and the order in which sends fill receives, grouped receives,
 * TRUNCATED, receives held by MORE until the receiver's next call, the ring reused many times over, each request
 * reported once, close and failure.
 */
class CoreInMemoryTest {
    private static final long MIB = 1 << 20;
    private final MemoryWires link = new MemoryWires();
    private final CoreSender s = link.sender;
    private final CoreReceiver r = link.receiver;
    private final MemoryWires.Memory src = link.allocate(4 * MIB);
    private final MemoryWires.Memory dst = link.allocate(4 * MIB);

    @AfterEach
    void close() {
        link.close();
    }

    private static void fill(MemorySegment m, long offset, long length, long seed) {
        Random random = new Random(seed);
        for (long k = 0; k < length; k++) {
            m.set(JAVA_BYTE, offset + k, (byte) random.nextInt());
        }
    }

    private void assertArrived(long from, long at, long length, String what) {
        long diff = MemorySegment.mismatch(src.memory(), from, from + length, dst.memory(), at, at + length);
        assertEquals(-1, diff, what + ": first wrong byte at " + diff);
    }

    /** Tests both ends until every request reports 1, then once more each: a reported request is reported once. */
    private void complete(int[] sends, int[] recvs) {
        boolean[] sent = new boolean[sends.length];
        boolean[] got = new boolean[recvs.length];
        for (int turn = 0; turn < 1_000; turn++) {
            boolean all = true;
            for (int k = 0; k < sends.length; k++) {
                if (!sent[k]) {
                    int t = s.test(sends[k]);
                    assertTrue(t == 0 || t == 1, "send " + sends[k] + ": " + Status.describe(t) + " " + s.error());
                    sent[k] = t == 1;
                    all &= sent[k];
                }
            }
            for (int k = 0; k < recvs.length; k++) {
                if (!got[k]) {
                    int t = r.test(recvs[k]);
                    assertTrue(t == 0 || t == 1, "receive " + recvs[k] + ": " + Status.describe(t));
                    got[k] = t == 1;
                    all &= got[k];
                }
            }
            if (all) {
                for (int q : sends) {
                    assertEquals(Status.BAD_ARGUMENT, s.test(q), "send " + q + " reported twice");
                }
                for (int q : recvs) {
                    assertEquals(Status.BAD_ARGUMENT, r.test(q), "receive " + q + " reported twice");
                }
                return;
            }
        }
        fail("requests still in flight after 1,000 turns of test on a wire that completes at once");
    }

    @Test
    void everySizeArrivesWithItsRealSize() {
        long[] sizes = {0, 1, 7, 4095, 4096, 65_537, MIB + 3, 3 * MIB};
        for (int k = 0; k < sizes.length; k++) {
            long n = sizes[k];
            fill(src.memory(), 0, n, k);
            int q = r.irecv(dst, 5, 4 * MIB - 5, 9);
            int p = s.isend(src, 0, n, 9);
            assertTrue(q >= 0 && p >= 0, "irecv " + q + ", isend " + p);
            complete(new int[] {p}, new int[] {q});
            assertEquals(n, r.size(q, 0), "the receiver's size of " + n + " bytes");
            assertEquals(n, s.size(p), "the sender's size of " + n + " bytes");
            assertArrived(0, 5, n, n + " bytes");
        }
        assertNull(s.error());
        assertNull(r.error());
    }

    @Test
    void aSendWaitsForAReceiveWithItsTagAndSendsFillReceivesInPostedOrder() {
        assertEquals(Status.NOT_READY, s.isend(src, 0, 100, 1), "no receive posted");
        int first = r.irecv(2, new Registration[] {dst, dst}, new long[] {0, 4096}, new long[] {4096, 4096},
                new int[] {1, 3});
        int second = r.irecv(dst, 8192, 4096, 2);
        fill(src.memory(), 0, 3 * 4096, 3);
        int s1 = s.isend(src, 0, 100, 1);
        assertEquals(Status.NOT_READY, s.isend(src, 8192, 300, 2),
                "tag 2 is only in the second receive, and the first still waits for tag 3");
        int s3 = s.isend(src, 4096, 200, 3);
        int s2 = s.isend(src, 8192, 300, 2);
        assertEquals(Slots.key(0, 0), s1, "a send's id names its receive's slot and buffer");
        assertEquals(Slots.key(0, 1), s3);
        assertEquals(Slots.key(1, 0), s2);
        complete(new int[] {s1, s3, s2}, new int[] {first, second});
        assertEquals(100, r.size(first, 0));
        assertEquals(200, r.size(first, 1));
        assertEquals(300, r.size(second, 0));
        assertArrived(0, 0, 100, "tag 1");
        assertArrived(4096, 4096, 200, "tag 3");
        assertArrived(8192, 8192, 300, "tag 2");
    }

    @Test
    void aGroupedReceiveTakesRepeatedTagsInOrderAndTheLastBufferCompletesIt() {
        int q = r.irecv(3, new Registration[] {dst, dst, dst}, new long[] {0, MIB, 2 * MIB},
                new long[] {MIB, MIB, MIB}, new int[] {4, 4, 4});
        fill(src.memory(), 0, 3 * MIB, 4);
        int a = s.isend(src, 0, 10, 4);
        int b = s.isend(src, MIB, 20, 4);
        assertEquals(0, r.test(q), "two of three buffers do not complete a grouped receive");
        int c = s.isend(src, 2 * MIB, 30, 4);
        complete(new int[] {a, b, c}, new int[] {q});
        assertEquals(10, r.size(q, 0));
        assertEquals(20, r.size(q, 1));
        assertEquals(30, r.size(q, 2));
        assertArrived(2 * MIB, 2 * MIB, 30, "the third send in the third buffer");
    }

    @Test
    void aMessageLargerThanItsBufferIsTruncatedAtTheSenderAndTheBufferStaysPosted() {
        int q = r.irecv(dst, 0, 1000, 6);
        assertEquals(Status.TRUNCATED, s.isend(src, 0, 1001, 6), "one byte more than the buffer");
        assertEquals(0, link.deliveries, "nothing went on the wire");
        fill(src.memory(), 0, 1000, 6);
        int p = s.isend(src, 0, 1000, 6);
        complete(new int[] {p}, new int[] {q});
        assertEquals(1000, r.size(q, 0));
        assertArrived(0, 0, 1000, "the message that fits");
    }

    @Test
    void receivesPostedWithMoreAreHeldUntilTheReceiversNextCall() {
        int q1 = r.irecv(1, new Registration[] {dst}, new long[] {0}, new long[] {64}, new int[] {1}, Receiver.MORE);
        int q2 = r.irecv(1, new Registration[] {dst}, new long[] {64}, new long[] {64}, new int[] {2}, Receiver.MORE);
        assertEquals(0, link.entriesWritten, "held: no clear-to-send left");
        assertEquals(Status.NOT_READY, s.isend(src, 0, 8, 1), "the sender cannot know a held receive");
        assertEquals(0, r.test(q1), "the receiver's next call announces what it held");
        assertEquals(2, link.entriesWritten, "both entries in one announcement");
        int p1 = s.isend(src, 0, 8, 1);
        int p2 = s.isend(src, 8, 8, 2);
        complete(new int[] {p1, p2}, new int[] {q1, q2});
    }

    @Test
    void theRingIsReusedManyTimesOverWithOneRequestInFlightOrManyAtOnce() {
        fill(src.memory(), 0, MIB, 7);
        for (int k = 0; k < 5 * Cts.MAX_REQUESTS; k++) {
            int q = r.irecv(dst, 0, 4096, k);
            int p = s.isend(src, k, 100 + k, k);
            complete(new int[] {p}, new int[] {q});
            assertEquals(100 + k, r.size(q, 0), "message " + k);
            assertArrived(k, 0, 100 + k, "message " + k);
        }
        int[] qs = new int[Cts.MAX_REQUESTS];
        int[] ps = new int[Cts.MAX_REQUESTS];
        for (int k = 0; k < Cts.MAX_REQUESTS; k++) {
            qs[k] = r.irecv(dst, 4096L * k, 4096, 1000 + k);
            assertTrue(qs[k] >= 0, "receive " + k + " of a full ring: " + Status.describe(qs[k]));
        }
        assertEquals(Status.NOT_READY, r.irecv(dst, 0, 1, 1), "a 33rd receive in flight");
        for (int k = 0; k < Cts.MAX_REQUESTS; k++) {
            ps[k] = s.isend(src, 4096L * k, 4096, 1000 + k);
            assertTrue(ps[k] >= 0, "send " + k + ": " + Status.describe(ps[k]));
        }
        complete(ps, qs);
        assertArrived(0, 0, 4096L * Cts.MAX_REQUESTS, "a full ring of messages");
    }

    @Test
    void aFailureIsReportedByEveryCallAndCloseAnswersClosed() {
        int q = r.irecv(dst, 0, 64, 1);
        int p = s.isend(src, 0, 64, 1);
        link.senderFate.fail("the peer went away (test)");
        assertEquals(Status.FAILED, s.test(p));
        assertEquals(Status.FAILED, s.isend(src, 0, 1, 1));
        assertEquals("the peer went away (test)", s.error());
        s.close();
        assertEquals(Status.CLOSED, s.test(p), "after close every call answers CLOSED");
        assertEquals(Status.CLOSED, s.isend(src, 0, 1, 1));
        r.close();
        assertEquals(Status.CLOSED, r.test(q));
        assertEquals(Status.CLOSED, r.irecv(dst, 0, 1, 1));
    }

    @Test
    void argumentsOutsideARegistrationAreRefusedAtTheCall() {
        assertEquals(Status.BAD_ARGUMENT, r.irecv(dst, 4 * MIB - 1, 2, 1), "past the end");
        assertEquals(Status.BAD_ARGUMENT, r.irecv(null, 0, 1, 1), "no registration");
        assertEquals(Status.BAD_ARGUMENT, r.irecv(9, new Registration[9], new long[9], new long[9], new int[9]),
                "more than MAX_RECVS buffers");
        assertEquals(Status.BAD_ARGUMENT, s.isend(src, -1, 1, 1), "a negative offset");
        assertEquals(Status.BAD_ARGUMENT, s.test(12345), "an id no request has");
        assertEquals(-1, r.size(31, 9), "size of a buffer past MAX_RECVS");
    }
}
