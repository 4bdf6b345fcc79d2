package io.jmesh.api.contract;

import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
import io.jmesh.api.Status;
import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The contract of {@link io.jmesh.api.Sender} and {@link io.jmesh.api.Receiver}, written once and run against every
 * provider: a provider's test extends this class, opens its fabric and answers the questions of {@link
 * ContractFixture} where providers differ (docs/api.md, "Contract", says why they do). This half: one-sided write
 * and read, the checks on them at the call and at the owner, iflush, what {@code test} answers after {@code close},
 * and the ordering docs/api.md promises; {@link TwoSidedContract} holds the messages.
 */
public abstract class SenderReceiverContract extends TwoSidedContract {
    private static final long[] ONE_SIDED_SIZES = {0, 1, 7, 4095, 65_537, MIB + 3};

    @Test
    void oneSidedWriteThenReadBackEverySize() {
        RemoteRegion region = RemoteRegion.decode(dstReg.remote().encode());
        assertEquals(fabric.provider(), region.provider());
        assertEquals(BUFFER, region.length());
        for (int i = 0; i < ONE_SIDED_SIZES.length; i++) {
            long n = ONE_SIDED_SIZES[i];
            long local = i % 2 == 0 ? 0 : 5;
            long remote = i % 3 == 0 ? 0 : 4099;
            fill(src, local, n, 300 + i);
            dst.asSlice(0, remote + n + 1).fill(GUARD);
            int w = sender.write(srcReg, local, n, region, remote);
            completeOneSided(w, "write of " + n + " bytes");
            assertEquals(n, sender.size(w), "Sender.size of the write");
            assertSameBytes(src, local, dst, remote, n, "written " + n + " bytes");
            assertGuarded(dst, remote, n, "write of " + n + " bytes");
            assertEquals(Status.BAD_ARGUMENT, sender.test(w), "a reported write is reported once");

            back.asSlice(0, n + 4).fill(GUARD);
            int q = sender.read(backReg, 3, n, region, remote);
            completeOneSided(q, "read of " + n + " bytes");
            assertEquals(n, sender.size(q), "Sender.size of the read");
            assertSameBytes(dst, remote, back, 3, n, "read " + n + " bytes");
            assertGuarded(back, 3, n, "read of " + n + " bytes");
            assertEquals(Status.BAD_ARGUMENT, sender.test(q), "a reported read is reported once");
        }
        assertNull(sender.error());
        assertNull(receiver.error());
    }

    @Test
    void oneSidedArgumentsAreCheckedAtTheCall() {
        RemoteRegion good = dstReg.remote();
        RemoteRegion foreign = fabric.provider().equals("tcp")
                ? new RemoteRegion("rdma", good.address(), good.length(), new int[] {1})
                : new RemoteRegion("tcp", good.address(), good.length(), new int[] {1, 2});
        long end = good.length();
        assertEquals(Status.BAD_ARGUMENT, sender.write(srcReg, 0, 10, foreign, 0), "a region of another provider");
        assertEquals(Status.BAD_ARGUMENT, sender.read(backReg, 0, 10, foreign, 0), "a region of another provider");
        assertEquals(Status.BAD_ARGUMENT, sender.write(srcReg, 0, 10, good, end - 9), "past the region's end");
        assertEquals(Status.BAD_ARGUMENT, sender.read(backReg, 0, 10, good, end), "at the region's end");
        assertEquals(Status.BAD_ARGUMENT, sender.read(backReg, 0, 10, good, -1), "a negative remote offset");
        assertEquals(Status.BAD_ARGUMENT, sender.write(srcReg, srcReg.length() - 9, 10, good, 0),
                "past the local registration's end");
        assertEquals(Status.BAD_ARGUMENT, sender.read(backReg, backReg.length() - 9, 10, good, 0),
                "past the local registration's end");
        assertEquals(Status.BAD_ARGUMENT, sender.write(srcReg, -1, 10, good, 0), "a negative local offset");
        assertEquals(Status.BAD_ARGUMENT, sender.write(srcReg, 0, -1, good, 0), "a negative length");
        // nothing was issued: a good write goes as on a fresh connection
        fill(src, 0, 4096, 14);
        completeOneSided(sender.write(srcReg, 0, 4096, good, 0), "a write after refused calls");
        assertSameBytes(src, 0, dst, 0, 4096, "a write after refused calls");
        assertNull(sender.error());
        assertNull(receiver.error());
    }

    /** The initiator cannot know that the owner closed a region; the owner refuses it as {@link #ownerRefusal()}. */
    @Test
    void aRegionItsOwnerClosedIsRefused() {
        Registration owned = registerApart(4096);
        RemoteRegion closed = owned.remote();
        owned.close();
        fill(src, 0, 100, 15);
        int w = sender.write(srcReg, 0, 100, closed, 0);
        assertTrue(w >= 0, "only the owner can tell that the region is closed: " + Status.describe(w));
        assertOwnerRefused(w, "closed");
    }

    @Test
    void aRangeOutsideTheOwnersRegistrationIsRefused() {
        Registration owned = registerApart(4096);
        RemoteRegion real = owned.remote();
        RemoteRegion longer = new RemoteRegion(real.provider(), real.address(), 16 * MIB, real.keys());
        int q = sender.read(backReg, 0, 4096, longer, 8192);
        assertTrue(q >= 0, "only the owner can tell the region's real length: " + Status.describe(q));
        assertOwnerRefused(q, "outside");
    }

    private void assertOwnerRefused(int request, String reasonMentions) {
        int t = finish(request);
        switch (ownerRefusal()) {
            case REFUSED_CONNECTION_KEPT -> {
                String why = sender.failure(request);
                assertEquals(Status.REFUSED, t, Status.describe(t) + ": " + why);
                assertTrue(why != null && why.contains(reasonMentions), "failure(request) says why: " + why);
                assertEquals(Status.BAD_ARGUMENT, sender.test(request), "a refused request is reported once");
                assertNull(sender.error(), "a refusal keeps the connection");
                assertNull(receiver.error(), "a refusal keeps the connection");
                fill(src, 0, 4096, 16);
                completeOneSided(sender.write(srcReg, 0, 4096, dstReg.remote(), 0), "a write after the refusal");
                assertSameBytes(src, 0, dst, 0, 4096, "a write after the refusal");
                int r = recv(8192, 100, 1);
                int s = send(0, 100, 1);
                complete(new int[] {s}, new int[] {r});
                assertSameBytes(src, 0, dst, 8192, 100, "a message after the refusal");
            }
            case CONNECTION_FAILS -> {
                assertEquals(Status.FAILED, t, "the owner's NIC rejects the access: " + Status.describe(t));
                assertNotNull(sender.error(), "the failed connection says why");
                assertEquals(Status.FAILED, sender.write(srcReg, 0, 1, dstReg.remote(), 0), "after the failure");
                assertEquals(Status.FAILED, sender.isend(srcReg, 0, 1, 0), "after the failure");
            }
        }
    }

    /** docs/api.md, "Who does the owner's part": TCP's receiver while polled, verbs' NIC alone. */
    @Test
    void theOwnersPartOfAOneSidedWrite() {
        fill(src, 0, 1000, 8);
        int w = sender.write(srcReg, 0, 1000, dstReg.remote(), 0);
        assertTrue(w >= 0, Status.describe(w));
        if (ownerServesOnlyWhilePolled()) {
            long end = System.nanoTime() + quietPeriod().toNanos();
            while (System.nanoTime() - end < 0) {
                assertEquals(0, sender.test(w), "the write waits while nobody polls the owner's receiver");
            }
            completeOneSided(w, "the write, once the owner's receiver is polled");
        } else {
            int[] t = new int[1];
            await("the write, with only the sender called", () -> (t[0] = sender.test(w)) != 0);
            assertEquals(1, t[0], Status.describe(t[0]) + ": " + sender.failure(w));
        }
        assertSameBytes(src, 0, dst, 0, 1000, "the write");
    }

    @Test
    void thirtyTwoOneSidedOperationsAtOnceThenNotReady() {
        RemoteRegion region = dstReg.remote();
        fill(src, 0, 64 << 10, 5);
        int[] ids = new int[32];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = sender.write(srcReg, i * 2048L, 2048, region, i * 2048L);
            assertTrue(ids[i] >= 0, "write " + i + ": " + Status.describe(ids[i]));
        }
        assertEquals(ids.length, Arrays.stream(ids).distinct().count(), "32 distinct ids");
        assertEquals(Status.NOT_READY, sender.write(srcReg, 0, 1, region, 0), "a 33rd while 32 are unreported");
        assertEquals(Status.NOT_READY, sender.read(backReg, 0, 1, region, 0), "a 33rd while 32 are unreported");
        for (int id : ids) {
            completeOneSided(id, "write " + id);
        }
        assertSameBytes(src, 0, dst, 0, 64 << 10, "32 writes");
        completeOneSided(sender.read(backReg, 0, 10, region, 0), "a read once they are reported");
    }

    @Test
    void iflushCompletesOnceAndChecksItsArguments() {
        Registration[] two = {dstReg, dstReg};
        int nine = io.jmesh.api.Receiver.MAX_RECVS + 1;
        assertEquals(Status.BAD_ARGUMENT, receiver.iflush(0, two, new long[2], new long[2]), "0 buffers");
        assertEquals(Status.BAD_ARGUMENT, receiver.iflush(nine, regs(dstReg, nine), new long[nine], new long[nine]),
                "more than MAX_RECVS buffers");
        assertEquals(Status.BAD_ARGUMENT, receiver.iflush(2, new Registration[] {dstReg}, new long[2], new long[2]),
                "fewer registrations than buffers");
        assertEquals(Status.BAD_ARGUMENT, receiver.iflush(1, two, new long[] {BUFFER - 96}, new long[] {97}),
                "past the registration's end");
        assertEquals(Status.BAD_ARGUMENT, receiver.iflush(1, two, new long[] {-1}, new long[] {1}),
                "a negative offset");
        assertEquals(Status.BAD_ARGUMENT, receiver.iflush(1, two, new long[] {0}, new long[] {-1}),
                "a negative size");

        fill(src, 0, 8192, 17);
        int r = recv(0, 8192, 0);
        int s = send(0, 8192, 0);
        complete(new int[] {s}, new int[] {r});
        int f = receiver.iflush(2, two, new long[] {0, 4096}, new long[] {4096, 4096});
        assertTrue(f >= 0, "iflush: " + Status.describe(f) + " " + receiver.error());
        int[] t = new int[1];
        await("the flush", () -> (t[0] = receiver.test(f)) != 0);
        assertEquals(1, t[0], "the flush: " + Status.describe(t[0]) + " " + receiver.error());
        assertEquals(Status.BAD_ARGUMENT, receiver.test(f), "a reported flush is reported once");
        assertSameBytes(src, 0, dst, 0, 8192, "the flushed message");
    }

    /**
     * After close, {@code test} answers CLOSED at once for every request not reported yet, including those that
     * had completed; new requests answer CLOSED.
     */
    @Test
    void afterCloseTheSenderAnswersClosedAtOnce() {
        fill(src, 0, 4096, 18);
        RemoteRegion region = dstReg.remote();
        recv(0, 100, 1);
        recv(4096, 100, 2);
        int s1 = send(0, 100, 1);
        int s2 = send(0, 100, 2);
        int w1 = sender.write(srcReg, 0, 100, region, 8192);
        int w2 = sender.write(srcReg, 0, 100, region, 16384);
        // each kind completes in issue order: with s2 and w2 reported, s1 and w1 are complete and unreported
        assertEquals(1, finish(s2), "the second send: " + sender.error());
        assertEquals(1, finish(w2), "the second write: " + sender.failure(w2));
        int w3 = sender.write(srcReg, 0, 4 * MIB, region, MIB);
        assertTrue(w3 >= 0, Status.describe(w3));
        sender.close();
        assertEquals(Status.CLOSED, sender.test(s1), "a completed send not reported yet");
        assertEquals(Status.CLOSED, sender.test(w1), "a completed write not reported yet");
        assertEquals(Status.CLOSED, sender.test(w3), "a write issued just before the close");
        assertEquals(Status.CLOSED, sender.test(s1), "asked again");
        assertEquals(Status.CLOSED, sender.isend(srcReg, 0, 1, 3), "isend after close");
        assertEquals(Status.CLOSED, sender.write(srcReg, 0, 1, region, 0), "write after close");
        assertEquals(Status.CLOSED, sender.read(backReg, 0, 1, region, 0), "read after close");
        assertDoesNotThrow(sender::close, "a second close");
    }

    @Test
    void afterCloseTheReceiverAnswersClosedAtOnce() {
        fill(src, 0, 100, 19);
        int r1 = recv(0, 100, 1);
        int r2 = recv(4096, 100, 2);
        complete(new int[] {send(0, 100, 1), send(0, 100, 2)}, new int[] {r2});
        // r1 is complete too: verbs completes receives in order; on TCP its message went before r2's, and the
        // polls take in whatever of it is still in the sockets
        for (int i = 0; i < 100; i++) {
            receiver.poll();
        }
        Registration[] one = {dstReg};
        int f1 = receiver.iflush(1, one, new long[] {0}, new long[] {100});
        int f2 = receiver.iflush(1, one, new long[] {4096}, new long[] {100});
        assertTrue(f1 >= 0 && f2 >= 0, Status.describe(f1) + " / " + Status.describe(f2));
        int[] t = new int[1];
        await("the second flush (flushes complete in order)", () -> (t[0] = receiver.test(f2)) != 0);
        assertEquals(1, t[0], "the second flush: " + Status.describe(t[0]) + " " + receiver.error());
        int r3 = recv(8192, 100, 3);
        receiver.close();
        assertEquals(Status.CLOSED, receiver.test(r1), "a completed receive not reported yet");
        assertEquals(Status.CLOSED, receiver.test(f1), "a completed flush not reported yet");
        assertEquals(Status.CLOSED, receiver.test(r3), "a receive in flight");
        assertEquals(Status.CLOSED, receiver.irecv(1, one, new long[] {0}, new long[] {1}, new int[] {4}),
                "irecv after close");
        assertEquals(Status.CLOSED, receiver.iflush(1, one, new long[] {0}, new long[] {1}), "iflush after close");
        assertDoesNotThrow(receiver::close, "a second close");
    }

    /** Sends among sends, and one-sided operations among one-sided operations, complete in issue order. */
    @Test
    void eachKindOfRequestCompletesInIssueOrder() {
        fill(src, 0, 2 * MIB, 13);
        int r1 = recv(0, 2 * MIB, 1);
        int r2 = recv(4 * MIB, 10, 2);
        int s1 = send(0, 2 * MIB, 1);
        int s2 = send(0, 1, 2);
        assertEquals(1, finish(s2), "the later send: " + sender.error());
        assertEquals(1, sender.test(s1), "the send issued before a completed send has completed");
        complete(new int[0], new int[] {r1, r2});
        assertSameBytes(src, 0, dst, 0, 2 * MIB, "the first message");

        RemoteRegion region = dstReg.remote();
        int w1 = sender.write(srcReg, 0, 2 * MIB, region, 4 * MIB);
        int w2 = sender.write(srcReg, 0, 1, region, 7 * MIB);
        assertTrue(w1 >= 0 && w2 >= 0, Status.describe(w1) + " / " + Status.describe(w2));
        assertEquals(1, finish(w2), "the later write: " + sender.failure(w2));
        assertEquals(1, sender.test(w1), "the write issued before a completed write has completed");
        assertSameBytes(src, 0, dst, 4 * MIB, 2 * MIB, "the first write");
    }

    /**
     * "Write, then send a notification" works on every provider: the message is received only once the write is
     * in place. Where {@link #reportsAllKindsInIssueOrder()} (TCP), the send also tests 1 only after the write.
     */
    @Test
    void aSendIssuedAfterAWriteIsReceivedOnlyOnceTheWriteIsInPlace() {
        long n = MIB;
        RemoteRegion region = dstReg.remote();
        for (int round = 0; round < 3; round++) {
            fill(src, 0, n + 64, 700 + round);
            int r = recv(2 * MIB, 64, round);
            int w = sender.write(srcReg, 0, n, region, 0);
            assertTrue(w >= 0, Status.describe(w));
            int s = send(n, 64, round);
            int[] t = new int[3]; // the send, the receive, the write
            String what = "round " + round;
            await(what + ": the write, the send after it and its receive", () -> {
                if (t[1] == 0 && (t[1] = receiver.test(r)) == 1) {
                    assertSameBytes(src, 0, dst, 0, n, what + ": the write issued before the received message");
                }
                if (t[0] == 0 && (t[0] = sender.test(s)) == 1 && reportsAllKindsInIssueOrder() && t[2] == 0) {
                    t[2] = sender.test(w);
                    assertEquals(1, t[2], what + ": the write issued before a completed send has completed");
                }
                if (t[2] == 0) {
                    t[2] = sender.test(w);
                }
                assertTrue(t[0] >= 0 && t[1] >= 0 && t[2] >= 0, what + ": " + Arrays.toString(t) + " "
                        + sender.failure(w) + " / " + receiver.error());
                return t[0] == 1 && t[1] == 1 && t[2] == 1;
            });
            assertSameBytes(src, n, dst, 2 * MIB, 64, what + ": the message");
        }
    }

    @Test
    void aReadSeesExactlyTheWritesIssuedBeforeIt() {
        long n = (256 << 10) + 5;
        fill(src, 0, n, 1);
        fill(src, MIB, n, 2);
        fill(dst, 0, n, 3);
        back.asSlice(4 * MIB, n).copyFrom(dst.asSlice(0, n));
        RemoteRegion region = dstReg.remote();
        // read, write, read, write: issued back to back, nothing waited for in between
        int q1 = sender.read(backReg, 0, n, region, 0);
        int w1 = sender.write(srcReg, 0, n, region, 0);
        int q2 = sender.read(backReg, MIB, n, region, 0);
        int w2 = sender.write(srcReg, MIB, n, region, 0);
        for (int q : new int[] {q1, w1, q2, w2}) {
            assertTrue(q >= 0, Status.describe(q));
        }
        completeOneSided(w2, "the last write");
        for (int q : new int[] {q1, w1, q2}) {
            assertEquals(1, sender.test(q), "one-sided operations complete in issue order");
        }
        assertSameBytes(back, 4 * MIB, back, 0, n, "the first read sees the memory before the first write");
        assertSameBytes(src, 0, back, MIB, n, "the second read sees the first write, not the second");
        assertSameBytes(src, MIB, dst, 0, n, "the last write is in place");
    }
}
