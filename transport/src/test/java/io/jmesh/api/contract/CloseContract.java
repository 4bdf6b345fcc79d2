package io.jmesh.api.contract;

import io.jmesh.api.Status;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A sender's close is graceful: every send that {@code test} reported done before {@code close} is delivered, to
 * receives posted before the close and to receives posted after it, and the receiver then sees the close as {@link
 * Status#CLOSED}, never {@link Status#FAILED} (docs/api.md, "When the sender closes"). Found by a user whose process sent three
 * small messages, saw each done, closed, and the peer lost them all.
 */
public abstract class CloseContract extends ContractFixture {
    /** Sizes a user sends before closing: every one small enough to go eagerly where the provider does. */
    private static final long[] SMALL_SIZES = {1000, 2000, 4096};

    /** Tests a receive until it leaves flight, driving nothing else; returns what test said last. */
    private int settle(int request) {
        int[] t = new int[1];
        await("receive " + request + " leaves flight", () -> (t[0] = receiver.test(request)) != 0);
        return t[0];
    }

    /** Sends that went at once and were reported done, then close: each receive posted afterwards gets its message. */
    @Test
    void smallSendsDoneBeforeCloseReachReceivesPostedAfterIt() {
        assumeTrue(sendsSmallMessagesEagerly(), "this provider's sends all wait for their receive, so none can "
                + "complete before the receiver posts one (the next test covers that order)");
        long offset = 0;
        for (int i = 0; i < SMALL_SIZES.length; i++) {
            fill(src, offset, SMALL_SIZES[i], 100 + i);
            int req = send(offset, SMALL_SIZES[i], i);
            int t = finish(req);
            assertEquals(1, t, "send " + i + ": " + Status.describe(t) + ": " + sender.error());
            offset += SMALL_SIZES[i];
        }
        sender.close();
        offset = 0;
        for (int i = 0; i < SMALL_SIZES.length; i++) {
            int r = recv(offset, SMALL_SIZES[i], i);
            int t = settle(r);
            assertEquals(1, t, "receive " + i + " posted after the sender closed: " + Status.describe(t) + ": "
                    + receiver.error());
            assertEquals(SMALL_SIZES[i], receiver.size(r, 0), "receive " + i + " size");
            assertSameBytes(src, offset, dst, offset, SMALL_SIZES[i], "message " + i);
            offset += SMALL_SIZES[i];
        }
        assertClosedAtTheReceiver(offset);
    }

    /**
     * Receives posted first (small, one above the eager threshold, one striped over several sockets), the sends
     * reported done, then close before the receiver looked at anything: every message arrives.
     */
    @Test
    void sendsDoneBeforeCloseReachReceivesPostedBeforeIt() {
        long[] sizes = {100, 2 * EagerContract.LARGE + 1, 300_000};
        long[] offsets = {0, 4096, 65536};
        int[] recvs = new int[sizes.length];
        for (int i = 0; i < sizes.length; i++) {
            fill(src, offsets[i], sizes[i], 200 + i);
            recvs[i] = recv(offsets[i], sizes[i], 10 + i);
        }
        for (int i = 0; i < sizes.length; i++) {
            int req = send(offsets[i], sizes[i], 10 + i);
            int[] t = new int[1];
            // the receiver is left alone: what its own thread has not read yet is exactly what a close must not lose
            await("send " + i + " reported done", () -> (t[0] = sender.test(req)) != 0);
            assertEquals(1, t[0], "send " + i + ": " + Status.describe(t[0]) + ": " + sender.error());
        }
        sender.close();
        for (int i = 0; i < sizes.length; i++) {
            int t = settle(recvs[i]);
            assertEquals(1, t, "receive " + i + " (" + sizes[i] + " bytes) after the sender closed: "
                    + Status.describe(t) + ": " + receiver.error());
            assertSameBytes(src, offsets[i], dst, offsets[i], sizes[i], "message " + i);
        }
        assertClosedAtTheReceiver(offsets[offsets.length - 1] + sizes[sizes.length - 1]);
    }

    /** A close with nothing sent: the receiver's next receive reports CLOSED, not FAILED, and names the close. */
    @Test
    void aReceiveAfterThePeersCloseReportsClosed() {
        sender.close();
        assertClosedAtTheReceiver(0);
    }

    /** The receiver's next receive, posted at {@code offset}, ends CLOSED; the connection did not fail. */
    private void assertClosedAtTheReceiver(long offset) {
        int r = receiver.irecv(dstReg, offset, 4096, 99);
        int t = r >= 0 ? settle(r) : r;
        assertEquals(Status.CLOSED, t, "a receive after the peer closed and everything it sent arrived: "
                + Status.describe(t) + ": " + receiver.error());
        String why = receiver.error();
        assertTrue(why != null && why.contains("closed"), "the receiver says why it is closed: " + why);
        int again = receiver.irecv(dstReg, offset, 4096, 99);
        assertTrue(again == Status.CLOSED || (again >= 0 && settle(again) == Status.CLOSED),
                "every later receive ends CLOSED too: " + Status.describe(again));
    }
}
