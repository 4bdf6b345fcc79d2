package io.jmesh.transport.rdma;

import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.Receiver;
import io.jmesh.api.Status;
import io.jmesh.api.contract.ContractFixture;
import io.jmesh.testbed.TestbedEnv;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.Eager;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * On an eager connection a receive of one buffer that fits the ring is not announced when posted (its message comes
 * eagerly and needs no clear-to-send): its entries wait in the receiver's staging ring and leave with the next
 * announcement or the next credits, or the sender reads them when a send needs them. Counted here on the wires: the
 * receiver's clear-to-send writes and the sender's fetches. Runs in the testbed guests, on a connection of the guest
 * to itself, like the contract suite.
 */
@Tag("rdma")
class RdmaLazyAnnouncementTest extends ContractFixture {
    private static final int THRESHOLD = 4096;
    /** Above the threshold: such a message needs its receive's entries. */
    private static final long LARGE = 8192;
    /** A buffer within the threshold: its receive is kept back. */
    private static final long SMALL = 3000;

    @Override
    protected Fabric openFabric() {
        TestbedEnv.require();
        Fabric fabric = Fabric.open(Context.from(Map.of(), System.getenv()).provider("rdma")
                .eagerThreshold(THRESHOLD));
        assertEquals("rdma", fabric.provider());
        return fabric;
    }

    @Override
    protected Duration patience() {
        return Duration.ofSeconds(120);
    }

    @Override
    protected boolean reportsAllKindsInIssueOrder() {
        return false;
    }

    @Override
    protected boolean holdsReceivesPostedWithMore() {
        return false;
    }

    @Override
    protected boolean sendsSmallMessagesEagerly() {
        return true;
    }

    @Override
    protected boolean ownerServesOnlyWhilePolled() {
        return false;
    }

    @Override
    protected OwnerRefusal ownerRefusal() {
        return OwnerRefusal.CONNECTION_FAILS;
    }

    private long ctsWrites() {
        return ((RdmaReceiveWire) ((CoreReceiver) receiver).wire()).ctsWrites();
    }

    private long pulls() {
        return ((RdmaSendWire) ((CoreSender) sender).wire()).pulls();
    }

    /**
     * Receives of one small buffer posted one at a time, each without MORE, cost no write; their messages arrive
     * whole; the entries reach the sender with the credits (one write per {@link Eager#CREDIT_BATCH} messages), and
     * no send needed a fetch.
     */
    @Test
    void smallReceivesCostNoWriteWhenPostedAndTheirEntriesRideWithTheCredits() {
        int messages = 3 * Eager.CREDIT_BATCH;
        long writes = ctsWrites();
        for (int k = 0; k < messages; k++) {
            long at = k * 4096L;
            fill(src, at, 1 + k * 61 % 3000, k);
            int r = recv(at, SMALL, 1);
            if (k < Eager.CREDIT_BATCH) {         // no credits yet, which would carry the entries
                assertEquals(writes, ctsWrites(), "receive " + k + " of a buffer that fits the ring is not announced");
            }
            int s = send(at, 1 + k * 61 % 3000, 1);
            complete(new int[] {s}, new int[] {r});
            assertEquals(1 + k * 61 % 3000, receiver.size(r, 0), "message " + k);
            assertSameBytes(src, at, dst, at, 1 + k * 61 % 3000, "message " + k);
        }
        long used = ctsWrites() - writes;
        assertTrue(used >= messages / Eager.CREDIT_BATCH - 1 && used <= messages / Eager.CREDIT_BATCH + 1,
                messages + " small receives: their entries left with the credits, in " + used + " writes");
        assertEquals(0, pulls(), "no send needed its receive's entries");
    }

    /**
     * A receive with a buffer above the threshold is announced at once, and takes the small receives held before it
     * along in the same write.
     */
    @Test
    void aLargeReceiveIsAnnouncedAtOnceWithTheSmallOnesBeforeIt() {
        long writes = ctsWrites();
        int[] recvs = new int[4];
        for (int j = 0; j < 3; j++) {
            recvs[j] = recv(j * 4096L, SMALL, j);
        }
        assertEquals(writes, ctsWrites(), "three small receives wait");
        recvs[3] = recv(16384, 2 * LARGE, 3);
        assertEquals(writes + 1, ctsWrites(), "the large receive goes at once, with the three before it");
        fill(src, 0, 16384 + LARGE, 9);
        int[] sends = new int[4];
        for (int j = 0; j < 3; j++) {
            sends[j] = send(j * 4096L, 1000 + j, j);
        }
        sends[3] = send(16384, LARGE, 3);
        complete(sends, recvs);
        for (int j = 0; j < 3; j++) {
            assertSameBytes(src, j * 4096L, dst, j * 4096L, 1000 + j, "small message " + j);
        }
        assertSameBytes(src, 16384, dst, 16384, LARGE, "the large message");
    }

    /**
     * Small receives posted as a batch (MORE on all but the last) are announced together with the receive that
     * closes the batch, in one write: a batch costs one write anyway, and its sender then knows the buffers (and
     * answers TRUNCATED at isend). Its sends, one of them the largest eager size, find their entries: no fetch.
     */
    @Test
    void smallReceivesPostedAsABatchAreAnnouncedWithTheReceiveThatClosesIt() {
        long writes = ctsWrites();
        long pulled = pulls();
        int[] recvs = new int[4];
        for (int j = 0; j < 4; j++) {
            recvs[j] = recv(new long[] {j * 4096L}, new long[] {4096}, new int[] {j}, j < 3 ? Receiver.MORE : 0);
            assertEquals(writes + (j < 3 ? 0 : 1), ctsWrites(), j < 3 ? "receive " + j + " waits for its batch"
                    : "the receive that closes the batch takes all four in one write");
        }
        fill(src, 0, 4 * 4096L, 5);
        int[] sends = new int[4];
        for (int j = 0; j < 4; j++) {
            sends[j] = send(j * 4096L, j == 3 ? 4096 : 100 + j, j);
        }
        complete(sends, recvs);
        for (int j = 0; j < 4; j++) {
            assertEquals(j == 3 ? 4096 : 100 + j, receiver.size(recvs[j], 0), "message " + j);
            assertSameBytes(src, j * 4096L, dst, j * 4096L, j == 3 ? 4096 : 100 + j, "message " + j);
        }
        assertEquals(pulled, pulls(), "every send knew its receive");
    }

    /**
     * A sender that knows a batch's receives answers TRUNCATED at isend for a small message too large for its buffer,
     * as without the eager path; the receive then takes a message that fits.
     */
    @Test
    void aSmallMessageTooLargeForABatchedReceiveIsTruncatedAtIsend() {
        int[] recvs = new int[2];
        for (int j = 0; j < 2; j++) {
            recvs[j] = recv(new long[] {j * 4096L}, new long[] {900}, new int[] {7}, j == 0 ? Receiver.MORE : 0);
        }
        MemorySegment fifo = ((RdmaSendWire) ((CoreSender) sender).wire()).fifo();
        await("the batch's entries reach the sender", () -> Cts.seq(fifo, Cts.at(1)) == 2);
        fill(src, 0, 2 * 4096L, 6);
        assertEquals(Status.TRUNCATED, sender.isend(srcReg, 0, 1000, 7),
                "1000 bytes for a known 900-byte buffer");
        int[] sends = {send(0, 900, 7), send(4096, 10, 7)};
        complete(sends, recvs);
        assertEquals(900, receiver.size(recvs[0], 0));
        assertEquals(10, receiver.size(recvs[1], 0));
        assertSameBytes(src, 0, dst, 0, 900, "the message that fits");
        assertSameBytes(src, 4096, dst, 4096, 10, "the second message");
    }

    /**
     * A send that needs a held-back receive (here a message above the threshold, too large for the small buffer)
     * fetches its entries with an RDMA READ while the receiver's application does nothing: it learns the buffer and
     * answers TRUNCATED at isend; then a message that fits completes the receive.
     */
    @Test
    void aSendThatNeedsAHeldBackReceiveFetchesIt() {
        long writes = ctsWrites();
        int r = recv(0, 900, 4);
        assertEquals(writes, ctsWrites(), "a small receive waits");
        fill(src, 0, LARGE, 3);
        assertEquals(Status.TRUNCATED, sendWhenReady(srcReg, 0, LARGE, 4),
                "a message larger than the held-back buffer, whose entry the sender fetched");
        assertTrue(pulls() >= 1, "the sender fetched the entry: " + pulls());
        assertEquals(writes, ctsWrites(), "the receiver announced nothing");
        int s = send(0, 800, 4);
        complete(new int[] {s}, new int[] {r});
        assertSameBytes(src, 0, dst, 0, 800, "the message that fits");
    }
}
