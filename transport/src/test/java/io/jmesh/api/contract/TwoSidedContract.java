package io.jmesh.api.contract;

import io.jmesh.api.Fabric;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The two-sided half of the contract: messages of every size class, matching by tag within and across grouped
 * receives, TRUNCATED, arguments refused at the call, {@code size} of ids that are no live request, and receives
 * held by {@link Receiver#MORE}. Every request is tested until it reports 1 and then once more, which must answer
 * BAD_ARGUMENT: each request is reported exactly once.
 */
public abstract class TwoSidedContract extends EagerContract {
    /** Every size class from nothing to a few MiB, with odd sizes around the page and chunk boundaries. */
    private static final long[] SIZES = {0, 1, 7, 4095, 4096, 4097, 65_537, MIB + 3, 4 * MIB + 1};

    @Test
    void everySizeFromZeroBytesToMiBsArrivesIntact() {
        for (int i = 0; i < SIZES.length; i++) {
            long n = SIZES[i];
            long from = i % 2 == 0 ? 0 : 3;
            long at = i % 3 == 0 ? 0 : 5;
            fill(src, from, n, 100 + i);
            dst.asSlice(0, at + n + 1).fill(GUARD);
            int r = recv(at, BUFFER - at - 1, i);
            int s = send(from, n, i);
            complete(new int[] {s}, new int[] {r});
            assertEquals(n, sender.size(s), "Sender.size of the " + n + "-byte message");
            assertEquals(n, receiver.size(r, 0), "Receiver.size of the " + n + "-byte message");
            assertSameBytes(src, from, dst, at, n, "the " + n + "-byte message");
            assertGuarded(dst, at, n, "the " + n + "-byte message");
            assertEquals(Status.BAD_ARGUMENT, sender.test(s), "a reported send is reported once");
            assertEquals(Status.BAD_ARGUMENT, receiver.test(r), "a reported receive is reported once");
        }
        assertNull(sender.error());
        assertNull(receiver.error());
    }

    @Test
    void theOneBufferReceiveIsTheGroupedOneWithOneBuffer() {
        long large = LARGE;
        fill(src, 0, large, 31);
        dst.asSlice(0, 4096 + large + 1).fill(GUARD);
        int r = receiver.irecv(dstReg, 4096, large + 100, 12);
        assertTrue(r >= 0, "irecv of one buffer: " + Status.describe(r));
        assertNotReadyFor(() -> sender.isend(srcReg, 0, large, 13), "a tag the one buffer does not have");
        int s = send(0, large, 12);
        complete(new int[] {s}, new int[] {r});
        assertEquals(large, receiver.size(r, 0), "the real size, not the buffer's");
        assertSameBytes(src, 0, dst, 4096, large, "the message in the one buffer");
        assertGuarded(dst, 4096, large, "the message in the one buffer");
        assertEquals(Status.BAD_ARGUMENT, receiver.irecv(dstReg, BUFFER - 10, 11, 1), "a buffer past its registration");
        assertEquals(Status.BAD_ARGUMENT, receiver.irecv(null, 0, 1, 1), "no registration");
    }

    @Test
    void aSendWaitsForAReceiveWithItsTag() {
        long large = LARGE;                        // small ones may go eagerly, before their receive (EagerContract)
        fill(src, 0, large, 9);
        assertNotReadyFor(() -> sender.isend(srcReg, 0, large, 4), "isend before the receiver posted anything");
        int r = recv(0, large, 4);
        assertNotReadyFor(() -> sender.isend(srcReg, 0, large, 5), "isend with a tag no posted buffer has");
        int s = send(0, large, 4);
        complete(new int[] {s}, new int[] {r});
        assertSameBytes(src, 0, dst, 0, large, "message");
    }

    /**
     * A send takes a buffer of the oldest receive not yet filled: a tag that only a later receive has waits until
     * the earlier receive's buffers are all matched, as NCCL's receiver-driven FIFO does.
     */
    @Test
    void sendsFillReceivesInTheOrderTheyWerePosted() {
        int first = recv(new long[] {0, 4096}, new long[] {4096, 4096}, new int[] {1, 3}, 0);
        int second = recv(8192, 4096, 2);
        fill(src, 0, 3 * 4096, 21);
        int s1 = send(0, 100, 1);
        assertNotReadyFor(() -> sender.isend(srcReg, 8192, 300, 2),
                "tag 2 is only in the second receive, and the first still waits for tag 3");
        int s3 = send(4096, 200, 3);
        int s2 = send(8192, 300, 2);
        complete(new int[] {s1, s3, s2}, new int[] {first, second});
        assertEquals(100, receiver.size(first, 0));
        assertEquals(200, receiver.size(first, 1));
        assertEquals(300, receiver.size(second, 0));
        assertSameBytes(src, 0, dst, 0, 100, "tag 1");
        assertSameBytes(src, 4096, dst, 4096, 200, "tag 3");
        assertSameBytes(src, 8192, dst, 8192, 300, "tag 2");
    }

    @Test
    void groupedReceivesOfOneToEightBuffersAreMatchedByTag() {
        long slot = 64 << 10;
        for (int n = 1; n <= Receiver.MAX_RECVS; n++) {
            long[] offsets = new long[n];
            long[] max = new long[n];
            int[] tags = new int[n];
            long[] size = new long[n];
            for (int i = 0; i < n; i++) {
                offsets[i] = i * slot + i % 3;
                max[i] = slot - 8 - i;
                tags[i] = 10 * (n - i) + n;                       // posted in falling tag order
                size[i] = i == n - 1 && n > 2 ? 0 : Math.min(max[i], 1 + (i * 9_973L + n * 131L) % slot);
                fill(src, i * slot, size[i], 1000L * n + i);
            }
            dst.asSlice(0, n * slot).fill(GUARD);
            int r = recv(offsets, max, tags, 0);
            int[] sends = new int[n];
            for (int k = 0; k < n; k++) {
                int i = (n - 1 - k + n / 2) % n;                  // sent in another order than posted
                sends[k] = send(i * slot, size[i], tags[i]);
                if (k < n - 1) {
                    assertEquals(0, receiver.test(r), "a grouped receive of " + n + " completes only with all its "
                            + "buffers: " + receiver.error());
                }
            }
            assertEquals(n, Arrays.stream(sends).distinct().count(), "each send of the group has its own id");
            complete(sends, new int[] {r});
            for (int k = 0; k < n; k++) {
                int i = (n - 1 - k + n / 2) % n;
                assertEquals(size[i], sender.size(sends[k]), "Sender.size, group of " + n + ", tag " + tags[i]);
                assertEquals(Status.BAD_ARGUMENT, sender.test(sends[k]), "a reported send is reported once");
            }
            for (int i = 0; i < n; i++) {
                String what = "buffer " + i + " (tag " + tags[i] + ") of a group of " + n;
                assertEquals(size[i], receiver.size(r, i), what);
                assertSameBytes(src, i * slot, dst, offsets[i], size[i], what);
                assertGuarded(dst, offsets[i], size[i], what);
            }
            assertEquals(Status.BAD_ARGUMENT, receiver.test(r), "a reported receive is reported once");
        }
        // eight buffers with one tag: the sends take them in the order they were posted
        long[] offsets = new long[8];
        long[] max = new long[8];
        int[] tags = new int[8];
        int[] sends = new int[8];
        for (int i = 0; i < 8; i++) {
            offsets[i] = i * slot;
            max[i] = slot;
            tags[i] = 9;
        }
        int r = recv(offsets, max, tags, 0);
        for (int i = 0; i < 8; i++) {
            fill(src, i * slot, 1000 + i, 500 + i);
            sends[i] = send(i * slot, 1000 + i, 9);
        }
        complete(sends, new int[] {r});
        for (int i = 0; i < 8; i++) {
            assertEquals(1000 + i, receiver.size(r, i), "one tag: buffer " + i + " takes send " + i);
            assertSameBytes(src, i * slot, dst, i * slot, 1000 + i, "one tag, buffer " + i);
        }
    }

    /**
     * A message larger than its buffer answers TRUNCATED at isend, where the sender knows the receive: every
     * provider's does for a buffer above the eager threshold (a small message into a small buffer may go eagerly and
     * be the receive's TRUNCATED instead, see {@link EagerContract}), and for any buffer of a grouped receive.
     */
    @Test
    void aMessageLargerThanItsBufferIsTruncatedAndTheConnectionStaysUsable() {
        fill(src, 0, 3 * LARGE, 5);
        int r = recv(0, LARGE, 7);
        assertEquals(Status.TRUNCATED, sendWhenReady(srcReg, 0, LARGE + 1, 7), "one byte more than the buffer");
        assertEquals(Status.TRUNCATED, sender.isend(srcReg, 0, 2 * LARGE, 7), "twice the buffer");
        int s = send(0, LARGE, 7);
        complete(new int[] {s}, new int[] {r});
        assertEquals(LARGE, receiver.size(r, 0));
        assertSameBytes(src, 0, dst, 0, LARGE, "the message that fits");
        assertGuarded(dst, 0, LARGE, "the message that fits");

        int g = recv(new long[] {4096, 8192}, new long[] {10, 1000}, new int[] {1, 2}, 0);
        assertEquals(Status.TRUNCATED, sendWhenReady(srcReg, 0, 1001, 2), "in a grouped receive");
        int a = send(0, 10, 1);
        int b = send(0, 1000, 2);
        complete(new int[] {a, b}, new int[] {g});
        assertEquals(10, receiver.size(g, 0));
        assertEquals(1000, receiver.size(g, 1));
        assertSameBytes(src, 0, dst, 8192, 1000, "the grouped message that fits");

        int r2 = recv(0, 8192, 8);
        int s2 = send(0, 8192, 8);
        complete(new int[] {s2}, new int[] {r2});
        assertSameBytes(src, 0, dst, 0, 8192, "a message after the truncations");
        assertNull(sender.error());
        assertNull(receiver.error());
    }

    @Test
    void badArgumentsAreRefusedAtTheCallAndChangeNothing() {
        long length = srcReg.length();
        assertEquals(Status.BAD_ARGUMENT, sender.isend(srcReg, 1, length, 0), "a range past the registration's end");
        assertEquals(Status.BAD_ARGUMENT, sender.isend(srcReg, length, 1, 0), "a range starting at the end");
        assertEquals(Status.BAD_ARGUMENT, sender.isend(srcReg, -1, 10, 0), "a negative offset");
        assertEquals(Status.BAD_ARGUMENT, sender.isend(srcReg, 0, -1, 0), "a negative length");
        assertEquals(Status.BAD_ARGUMENT, sender.isend(null, 0, 1, 0), "no registration");
        for (int id : new int[] {-1, 0, 3, Integer.MAX_VALUE, Integer.MIN_VALUE}) {
            assertEquals(Status.BAD_ARGUMENT, sender.test(id), "Sender.test(" + id + "): no such request");
            assertEquals(Status.BAD_ARGUMENT, receiver.test(id), "Receiver.test(" + id + "): no such request");
        }
        Registration[] one = {dstReg};
        int nine = Receiver.MAX_RECVS + 1;
        assertEquals(Status.BAD_ARGUMENT, receiver.irecv(0, one, new long[1], new long[1], new int[1]), "0 buffers");
        assertEquals(Status.BAD_ARGUMENT, receiver.irecv(nine, regs(dstReg, nine), new long[nine], new long[nine],
                new int[nine]), "more than MAX_RECVS buffers");
        assertEquals(Status.BAD_ARGUMENT, receiver.irecv(2, one, new long[2], new long[2], new int[2]),
                "fewer registrations than buffers");
        assertEquals(Status.BAD_ARGUMENT, receiver.irecv(2, regs(dstReg, 2), new long[1], new long[2], new int[2]),
                "fewer offsets than buffers");
        assertEquals(Status.BAD_ARGUMENT, receiver.irecv(1, one, new long[] {1}, new long[] {dstReg.length()},
                new int[1]), "a buffer past the registration's end");
        assertEquals(Status.BAD_ARGUMENT, receiver.irecv(1, one, new long[] {-1}, new long[] {1}, new int[1]),
                "a negative offset");
        assertEquals(Status.BAD_ARGUMENT, receiver.irecv(1, one, new long[1], new long[] {-1}, new int[1]),
                "a negative size");
        assertEquals(Status.BAD_ARGUMENT, receiver.irecv(1, new Registration[] {null}, new long[1], new long[] {1},
                new int[1]), "no registration");
        for (int flags : new int[] {2, 4, Receiver.MORE | 2, -1, Integer.MIN_VALUE}) {
            assertEquals(Status.BAD_ARGUMENT, receiver.irecv(1, one, new long[1], new long[] {1}, new int[1], flags),
                    "irecv with the unknown flags " + flags);
        }
        // nothing was posted or matched by any of them: a message goes as on a fresh connection
        fill(src, 0, 64, 3);
        int r = recv(0, 64, 3);
        int s = send(0, 64, 3);
        complete(new int[] {s}, new int[] {r});
        assertSameBytes(src, 0, dst, 0, 64, "a message after refused calls");
        assertNull(sender.error());
        assertNull(receiver.error());
    }

    /** Status promises that nothing on the data path throws: a missing array or registration is a bad argument. */
    @Test
    void nullArgumentsAreBadArgumentsNeverExceptions() {
        Registration[] one = {dstReg};
        long[] off = {0};
        long[] len = {1};
        int[] tag = {0};
        assertBad(() -> receiver.irecv(1, null, off, len, tag), "irecv without registrations");
        assertBad(() -> receiver.irecv(1, one, null, len, tag), "irecv without offsets");
        assertBad(() -> receiver.irecv(1, one, off, null, tag), "irecv without sizes");
        assertBad(() -> receiver.irecv(1, one, off, len, null), "irecv without tags");
        assertBad(() -> receiver.iflush(1, null, off, len), "iflush without registrations");
        assertBad(() -> receiver.iflush(1, one, null, len), "iflush without offsets");
        assertBad(() -> receiver.iflush(1, one, off, null), "iflush without sizes");
        assertBad(() -> receiver.iflush(1, new Registration[] {null}, off, len), "iflush of no registration");
        assertBad(() -> sender.isend(null, 0, 1, 0), "isend of no registration");
        assertBad(() -> sender.write(null, 0, 1, dstReg.remote(), 0), "write from no registration");
        assertBad(() -> sender.write(srcReg, 0, 1, null, 0), "write into no region");
        assertBad(() -> sender.read(null, 0, 1, dstReg.remote(), 0), "read into no registration");
        assertBad(() -> sender.read(backReg, 0, 1, null, 0), "read from no region");
        assertNull(sender.error());
        assertNull(receiver.error());
    }

    private static void assertBad(java.util.function.IntSupplier call, String what) {
        assertEquals(Status.BAD_ARGUMENT, assertDoesNotThrow(call::getAsInt, what), what);
    }

    /** docs/api.md: the initiator refuses a closed local registration. */
    @Test
    void aClosedRegistrationIsABadArgumentAtTheCall() {
        Registration gone = registerApart(4096);
        gone.close();
        Registration[] goneArray = {gone};
        assertEquals(Status.BAD_ARGUMENT, sender.isend(gone, 0, 1, 0), "isend from a closed registration");
        assertEquals(Status.BAD_ARGUMENT, receiver.irecv(1, goneArray, new long[1], new long[] {1}, new int[1]),
                "irecv into a closed registration");
        assertEquals(Status.BAD_ARGUMENT, receiver.iflush(1, goneArray, new long[1], new long[] {1}),
                "iflush of a closed registration");
        assertEquals(Status.BAD_ARGUMENT, sender.write(gone, 0, 1, dstReg.remote(), 0),
                "write from a closed registration");
        assertEquals(Status.BAD_ARGUMENT, sender.read(gone, 0, 1, dstReg.remote(), 0),
                "read into a closed registration");
        assertNull(sender.error());
        assertNull(receiver.error());
    }

    /**
     * docs/api.md: a connection uses only its own fabric's registrations (on verbs another fabric's keys belong to
     * another protection domain; TCP checks the same, so a program that works on one works on the other).
     */
    @Test
    void aRegistrationOfAnotherFabricIsABadArgumentAtTheCall() throws Exception {
        try (Fabric other = openFabric(); Arena a = Arena.ofShared()) {
            Registration foreign = other.register(a.allocate(4096, 4096));
            assertEquals(Status.BAD_ARGUMENT, sender.isend(foreign, 0, 1, 0), "isend from another fabric's memory");
            assertEquals(Status.BAD_ARGUMENT, receiver.irecv(1, new Registration[] {foreign}, new long[1],
                    new long[] {1}, new int[1]), "irecv into another fabric's memory");
            foreign.close();
        }
        fill(src, 0, 64, 3);
        int r = recv(0, 64, 0);
        complete(new int[] {send(0, 64, 0)}, new int[] {r});
        assertSameBytes(src, 0, dst, 0, 64, "the connection works on");
    }

    /**
     * docs/api.md: the buffers of one receive must not overlap (which message lands there would be a race); their
     * tags may repeat, and sends with one tag then fill its buffers in buffer order.
     */
    @Test
    void overlappingBuffersAreRefusedAndRepeatedTagsFillInOrder() {
        assertEquals(Status.BAD_ARGUMENT, receiver.irecv(2, regs(dstReg, 2), new long[] {0, 100}, new long[] {200, 50},
                new int[] {1, 2}), "the second buffer lies inside the first");
        assertEquals(Status.BAD_ARGUMENT, receiver.irecv(2, regs(dstReg, 2), new long[] {0, 0}, new long[] {1, 1},
                new int[] {1, 1}), "the same byte twice");
        fill(src, 0, 100, 4);
        fill(src, 100, 100, 5);
        int r = recv(new long[] {0, 100, 200}, new long[] {100, 100, 0}, new int[] {7, 7, 7}, 0);
        int[] s = {send(0, 100, 7), send(100, 100, 7), send(0, 0, 7)};
        complete(s, new int[] {r});
        assertSameBytes(src, 0, dst, 0, 200, "two messages of one tag, in buffer order");
        assertNull(sender.error());
        assertNull(receiver.error());
    }

    /**
     * {@code size} of an id that is no live request answers -1, never an exception: a negative id, one out of
     * range, one never issued, and a buffer index that the request does not have.
     */
    @Test
    void sizeOfAnIdThatIsNoLiveRequestIsMinusOne() {
        int[] never = {-1, Integer.MIN_VALUE, Integer.MAX_VALUE, 0, 1, 7, 8, 31, 32, 255, 256, 257, 511, 4096};
        for (int id : never) {
            assertEquals(-1L, assertDoesNotThrow(() -> sender.size(id), "Sender.size(" + id + ")"),
                    "Sender.size(" + id + ") on a connection that has issued nothing");
            assertEquals(-1L, assertDoesNotThrow(() -> receiver.size(id, 0), "Receiver.size(" + id + ", 0)"),
                    "Receiver.size(" + id + ", 0) on a connection that has issued nothing");
        }
        fill(src, 0, 200, 77);
        int r = recv(new long[] {0, 4096, 8192}, new long[] {100, 100, 100}, new int[] {0, 1, 2}, 0);
        int[] s = {send(0, 10, 0), send(0, 0, 1), send(0, 77, 2)};
        complete(s, new int[] {r});
        long[] expected = {10, 0, 77};
        for (int i = 0; i < 3; i++) {
            assertEquals(expected[i], receiver.size(r, i), "buffer " + i);
            assertEquals(expected[i], sender.size(s[i]), "send " + i);
        }
        for (int i : new int[] {-1, 3, Receiver.MAX_RECVS - 1, Receiver.MAX_RECVS, Integer.MAX_VALUE,
                Integer.MIN_VALUE}) {
            assertEquals(-1L, assertDoesNotThrow(() -> receiver.size(r, i), "Receiver.size(r, " + i + ")"),
                    "Receiver.size of buffer " + i + " of a receive of 3 buffers");
        }
    }

    /** How receives held by {@link Receiver#MORE} are released (docs/api.md). */
    enum Release { NEXT_RECEIVE_WITHOUT_MORE, TEST, POLL, IFLUSH, IRECV_ANSWERING_NOT_READY }

    /**
     * Receives posted with MORE reach the sender once released, without the receiver doing anything more: the
     * sender fills them all while only the sender is called. Before that, verbs keeps them from the sender and TCP
     * announces each at once ({@link #holdsReceivesPostedWithMore()}).
     */
    @ParameterizedTest
    @EnumSource(Release.class)
    void receivesPostedWithMoreReachTheSenderOnceReleased(Release release) {
        long slot = 2 * LARGE;                     // messages above the eager threshold: they wait for the receive
        int held = release == Release.IRECV_ANSWERING_NOT_READY ? 32 : 3;
        int total = release == Release.NEXT_RECEIVE_WITHOUT_MORE ? held + 1 : held;
        int[] recvs = new int[total];
        long[] sizes = new long[total];
        for (int j = 0; j < total; j++) {
            sizes[j] = LARGE + j * 37L % LARGE;
            fill(src, j * slot, sizes[j], 40L * j + release.ordinal());
        }
        for (int j = 0; j < held; j++) {
            recvs[j] = recv(new long[] {j * slot}, new long[] {slot}, new int[] {j}, Receiver.MORE);
        }
        int[] sends = new int[total];
        int sent = 0;
        if (holdsReceivesPostedWithMore()) {
            assertNotReadyFor(() -> sender.isend(srcReg, 0, sizes[0], 0), "a send into a receive held by MORE");
        } else {
            sends[sent++] = sendWhenReady(srcReg, 0, sizes[0], 0); // announced at once, the receiver not called
            assertTrue(sends[0] >= 0, Status.describe(sends[0]));
        }
        int flush = -1;
        boolean firstReported = false;
        switch (release) {
            case NEXT_RECEIVE_WITHOUT_MORE -> recvs[held] = recv(held * slot, slot, held);
            case TEST -> {
                int t = receiver.test(recvs[0]);
                assertTrue(t == 0 || t == 1, "test of a held receive: " + Status.describe(t));
                firstReported = t == 1;
            }
            case POLL -> receiver.poll();
            case IFLUSH -> {
                flush = receiver.iflush(1, new Registration[] {dstReg}, new long[] {BUFFER - 4096},
                        new long[] {1});
                assertTrue(flush >= 0, "iflush: " + Status.describe(flush));
            }
            case IRECV_ANSWERING_NOT_READY -> assertEquals(Status.NOT_READY, receiver.irecv(1,
                    new Registration[] {dstReg}, new long[] {BUFFER - 1}, new long[] {1}, new int[] {99},
                    Receiver.MORE), "a 33rd receive while 32 are in flight");
        }
        for (; sent < total; sent++) {
            int tag = sent;
            sends[sent] = sendWhenReady(srcReg, tag * slot, sizes[tag], tag); // only the sender is called
            assertTrue(sends[sent] >= 0, "isend with tag " + tag + " after the release by " + release + ": "
                    + Status.describe(sends[sent]));
        }
        int[] waitFor = Arrays.copyOfRange(recvs, firstReported ? 1 : 0, total);
        complete(sends, waitFor);
        if (flush >= 0) {
            int f = flush;
            int[] t = new int[1];
            await("the flush", () -> (t[0] = receiver.test(f)) != 0);
            assertEquals(1, t[0], "the flush: " + Status.describe(t[0]) + " " + receiver.error());
        }
        for (int j = 0; j < total; j++) {
            assertEquals(sizes[j], receiver.size(recvs[j], 0), "receive " + j);
            assertSameBytes(src, j * slot, dst, j * slot, sizes[j], "receive " + j);
            assertEquals(Status.BAD_ARGUMENT, receiver.test(recvs[j]), "a reported receive is reported once");
        }
    }
}
