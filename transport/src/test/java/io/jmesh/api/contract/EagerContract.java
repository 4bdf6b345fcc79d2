package io.jmesh.api.contract;

import io.jmesh.api.Status;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Small messages, which a provider may send eagerly (into a ring the receiver keeps, before their receive is posted;
 * docs/api.md): whichever way they go, every message lands in the buffer the matching rule gives it (receives take
 * the sends in order, the i-th send with a tag the i-th buffer with that tag), with its real size, and a message too
 * large for its buffer is reported as {@link Status#TRUNCATED}, by the sender's isend or by the receive's test.
 * These tests hold for a provider that sends nothing eagerly too (TCP with its threshold 0): there isend waits for
 * the receive.
 */
public abstract class EagerContract extends CloseContract {
    /** Above the eager threshold every run of this suite sets: such a send always waits for its receive. */
    protected static final long LARGE = 8192;

    /** One isend: the request id when the provider sent it at once, or -1 when it answered NOT_READY. */
    private int tryOnce(long offset, long length, int tag) {
        int r = sender.isend(srcReg, offset, length, tag);
        assertTrue(r >= 0 || r == Status.NOT_READY, "isend of " + length + " bytes: " + Status.describe(r) + " "
                + sender.error());
        return r;
    }

    /**
     * Small sends tried before any receive is posted (duplicate tags, grouped receives), then the receives, then a
     * large send into the last group: each message is in the buffer the rule gives it, the large one in the buffer
     * the small ones of its group left for it.
     */
    @Test
    void smallSendsBeforeTheirReceivesLandWhereTheRuleSaysAndALargeOneTakesTheBufferLeft() {
        // receive 0: tags [7, 7, 3]; receive 1: [5]; receive 2: tags [7, 7, 7] whose third buffer gets a large message
        long[][] offsets = {{0, 4096, 8192}, {12288}, {16384, 20480, 24576}};
        long[][] max = {{4096, 4096, 4096}, {4096}, {4096, 4096, 2 * LARGE}};
        int[][] tags = {{7, 7, 3}, {5}, {7, 7, 7}};
        // sends in stream order: (source offset, length, tag); the source offset is where the receive should land it.
        // The small ones take no more packets with the eager record's 40 bytes than without, at any MTU
        long[][] sends = {{0, 100, 7}, {8192, 3000, 3}, {4096, 1, 7}, {12288, 0, 5}, {16384, 4000, 7},
            {20480, 17, 7}, {24576, LARGE + 5, 7}};
        fill(src, 0, 24576 + LARGE + 5, 77);
        List<Integer> ids = new ArrayList<>();
        int next = 0;
        while (next < sends.length - 1) {           // the small ones, while the provider takes them at once
            int r = tryOnce(sends[next][0], sends[next][1], (int) sends[next][2]);
            if (r < 0) {
                break;
            }
            ids.add(r);
            next++;
        }
        assertEquals(sendsSmallMessagesEagerly() ? sends.length - 1 : 0, next, "small sends taken at once");
        int[] recvs = new int[3];
        for (int g = 0; g < 3; g++) {
            recvs[g] = recv(offsets[g], max[g], tags[g], 0);
        }
        for (; next < sends.length; next++) {
            ids.add(send(sends[next][0], sends[next][1], (int) sends[next][2]));
        }
        complete(ids.stream().mapToInt(Integer::intValue).toArray(), recvs);
        for (long[] s : sends) {
            assertSameBytes(src, s[0], dst, s[0], s[1], "the message of " + s[1] + " bytes with tag " + s[2]);
        }
        long[][] expected = {{100, 1, 3000}, {0}, {4000, 17, LARGE + 5}};
        for (int g = 0; g < 3; g++) {
            for (int i = 0; i < expected[g].length; i++) {
                assertEquals(expected[g][i], receiver.size(recvs[g], i), "receive " + g + " buffer " + i);
            }
        }
    }

    /**
     * Far more small sends than any eager ring holds, with the receives posted only as the sender runs out of room:
     * the ring's credits come back and every message arrives in order.
     */
    @Test
    void manyMoreSmallSendsThanTheRingHoldsArriveInOrderAsReceivesArePosted() {
        int count = 300;
        long slot = 256;
        for (int k = 0; k < count; k++) {
            fill(src, k * slot, slot, 1000 + k);
        }
        int[] sends = new int[count];
        int[] recvs = new int[count];
        int sent = 0;
        int tested = 0;
        int posted = 0;
        int done = 0;
        long end = System.nanoTime() + patience().toNanos();
        while (done < count) {
            assertTrue(System.nanoTime() - end < 0, "not within " + patience().toSeconds() + " s: " + sent
                    + " sent, " + posted + " posted, " + done + " received");
            while (tested < sent) {                // an application tests its sends: their ids are reused
                int t = sender.test(sends[tested]);
                assertTrue(t >= 0, "send " + tested + ": " + Status.describe(t) + " " + sender.error());
                if (t == 0) {
                    break;
                }
                tested++;
            }
            int r = sent < count ? tryOnce(sent * slot, 1 + sent % slot, sent % 3) : -1;
            if (r >= 0) {
                sends[sent++] = r;
                continue;
            }
            if (posted < count && posted - done < 32) {
                recvs[posted] = recv(posted * slot, slot, posted % 3);
                posted++;
            }
            if (done < posted) {
                int t = receiver.test(recvs[done]);
                assertTrue(t >= 0, "receive " + done + ": " + Status.describe(t) + " " + receiver.error());
                if (t == 1) {
                    assertEquals(1 + done % slot, receiver.size(recvs[done], 0), "receive " + done);
                    assertSameBytes(src, done * slot, dst, done * slot, 1 + done % slot, "message " + done);
                    done++;
                }
            }
        }
        for (int k = tested; k < count; k++) {
            int k0 = k;
            int[] t = new int[1];
            await("send " + k + " reported", () -> (t[0] = sender.test(sends[k0])) != 0);
            assertEquals(1, t[0], "send " + k + ": " + Status.describe(t[0]));
        }
    }

    /**
     * Receives posted, then only the sender driven: far more small sends than an eager ring holds all go out while
     * the receiver's application does nothing (its NIC completes what the ring cannot take), as when both ends of an
     * exchange post their receives and then drive only their senders. Then every message is where it belongs.
     */
    @Test
    void smallSendsIntoPostedReceivesNeedNoPollingAtTheReceiver() {
        int receives = 32;
        int per = 8;
        long slot = 512;
        int[] recvs = new int[receives];
        for (int j = 0; j < receives; j++) {
            long[] offsets = new long[per];
            long[] max = new long[per];
            int[] tags = new int[per];
            for (int g = 0; g < per; g++) {
                offsets[g] = (j * per + g) * slot;
                max[g] = slot;
                tags[g] = g;
            }
            recvs[j] = recv(offsets, max, tags, 0);
        }
        int[] sends = new int[receives * per];
        int[] tested = new int[1];                 // an application tests its sends: their ids are reused
        for (int k = 0; k < sends.length; k++) {
            fill(src, k * slot, 1 + k % slot, 3000 + k);
            int k0 = k;
            int[] r = new int[1];
            await("isend " + k + " while the receiver is not polled", () -> {
                r[0] = sender.isend(srcReg, k0 * slot, 1 + k0 % slot, k0 % per);
                while (r[0] == Status.NOT_READY && tested[0] < k0 && sender.test(sends[tested[0]]) == 1) {
                    tested[0]++;
                }
                return r[0] != Status.NOT_READY;
            });
            assertTrue(r[0] >= 0, "isend " + k + ": " + Status.describe(r[0]) + " " + sender.error());
            sends[k] = r[0];
        }
        complete(Arrays.copyOfRange(sends, tested[0], sends.length), recvs);
        for (int k = 0; k < sends.length; k++) {
            assertEquals(1 + k % slot, receiver.size(recvs[k / per], k % per), "message " + k);
            assertSameBytes(src, k * slot, dst, k * slot, 1 + k % slot, "message " + k);
        }
    }

    /**
     * The same with receives of one buffer each, posted one at a time, more of them than an eager ring holds and not
     * a multiple of it: a provider may keep such a receive's clear-to-send back (any message for it can come as a
     * record), but never one the sender would need before the receiver's application polls again.
     */
    @Test
    void smallSendsIntoSingleBufferReceivesNeedNoPollingAtTheReceiver() {
        int receives = 21;
        long slot = 512;
        int[] recvs = new int[receives];
        for (int j = 0; j < receives; j++) {
            recvs[j] = recv(j * slot, slot, 40 + j);
        }
        int[] sends = new int[receives];
        for (int k = 0; k < receives; k++) {
            fill(src, k * slot, 1 + 23 * k, 4000 + k);
            sends[k] = send(k * slot, 1 + 23 * k, 40 + k);
        }
        complete(sends, recvs);
        for (int k = 0; k < receives; k++) {
            assertEquals(1 + 23 * k, receiver.size(recvs[k], 0), "message " + k);
            assertSameBytes(src, k * slot, dst, k * slot, 1 + 23 * k, "message " + k);
        }
    }

    /**
     * A message too large to go eagerly, for a receive only a small one fits: whether or not the receiver kept that
     * receive's clear-to-send back, the sender learns the buffer and answers TRUNCATED at isend, while the receiver
     * is polled as usual, instead of waiting for ever. The receive then takes a message that fits.
     */
    @Test
    void aLargeMessageForASmallReceiveIsReportedTruncated() {
        int r = recv(0, 1000, 21);
        fill(src, 0, LARGE, 8);
        int[] s = new int[1];
        await("isend of a large message into a small buffer (no answer)", () -> {
            assertEquals(0, receiver.test(r), "the receive, before any message: " + receiver.error());
            s[0] = sender.isend(srcReg, 0, LARGE, 21);
            return s[0] != Status.NOT_READY;
        });
        assertEquals(Status.TRUNCATED, s[0], "isend of " + LARGE + " bytes into a buffer of 1000: "
                + Status.describe(s[0]) + " " + sender.error());
        int ok = send(0, 1000, 21);
        complete(new int[] {ok}, new int[] {r});
        assertSameBytes(src, 0, dst, 0, 1000, "the message that fits");
    }

    /**
     * A small message larger than its buffer: a provider that knew the buffer answers TRUNCATED at isend (nothing
     * was sent); one that sent it eagerly fills the buffer and the receive reports TRUNCATED with the real size. The
     * connection goes on either way.
     */
    @Test
    void aSmallMessageLargerThanItsBufferIsReportedTruncated() {
        fill(src, 0, 2000, 5);
        int s = tryOnce(0, 2000, 11);
        assertEquals(sendsSmallMessagesEagerly(), s >= 0, "a small isend before its receive: " + s);
        int r = recv(0, 1000, 11);
        if (s < 0) {
            assertEquals(Status.TRUNCATED, sendWhenReady(srcReg, 0, 2000, 11), "isend into a smaller buffer");
            int ok = send(0, 1000, 11);
            complete(new int[] {ok}, new int[] {r});
        } else {
            int[] t = new int[1];
            await("the receive of a message larger than its buffer", () -> (t[0] = receiver.test(r)) != 0);
            assertEquals(Status.TRUNCATED, t[0], "receive: " + Status.describe(t[0]) + " " + receiver.error());
            assertEquals(2000, receiver.size(r, 0), "the real size of the message");
            assertEquals(1, finish(s), "the eager send itself completed");
        }
        assertSameBytes(src, 0, dst, 0, 1000, "the part that fits");
        fill(src, 4096, 500, 6);                   // and the connection still carries the next message
        int r2 = recv(4096, 4096, 12);
        int s2 = send(4096, 500, 12);
        complete(new int[] {s2}, new int[] {r2});
        assertSameBytes(src, 4096, dst, 4096, 500, "the next message");
        assertEquals(Status.BAD_ARGUMENT, receiver.test(r), "a reported receive is reported once");
    }
}
