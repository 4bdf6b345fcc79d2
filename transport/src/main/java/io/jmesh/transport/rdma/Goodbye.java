package io.jmesh.transport.rdma;

import io.jmesh.transport.verbs.Wr;

import java.lang.foreign.MemorySegment;

/**
 * A verbs sender's orderly close: a zero-byte write-with-immediate {@link RdmaSendWire#IMM_BYE} on every rail, then
 * a wait, at most {@link #WAIT_NANOS}, for their completions. A reliable connection completes a request only once
 * everything posted before it on that queue pair is in the peer's memory, so after the wait the eager records and
 * messages this end reported done have landed; destroying the queue pairs at once would drop writes the NIC had not
 * sent yet. The receiver that takes every rail's goodbye ends the connection (CLOSED) instead of failing it.
 */
final class Goodbye {
    /** A round trip, or the peer's NIC retrying for a while: a close never waits longer. */
    static final long WAIT_NANOS = 2_000_000_000L;
    private static final long BYE_WR = 1L << 35;

    private Goodbye() {
    }

    /**
     * Posts the goodbyes and waits for them; gives up at once when a send queue has no room ({@code outstanding}
     * per rail against its depth), a post fails, or a goodbye completes with an error (the peer is gone).
     */
    static void sendAndWait(VerbsWire wire, Endpoint[] rails, int[] outstanding, long peerAddress, int peerRkey) {
        for (int rail = 0; rail < rails.length; rail++) {
            if (outstanding[rail] >= rails[rail].sendDepth) {
                return;
            }
        }
        for (Endpoint r : rails) {
            Wr.send(r.wr[0], BYE_WR, MemorySegment.NULL, MemorySegment.NULL, 0, VerbsWire.OP_WRITE_IMM,
                    VerbsWire.SIGNALED, RdmaSendWire.IMM_BYE, peerAddress, peerRkey);
            if (!wire.post(r, 1, "goodbye")) {
                return;
            }
        }
        int acknowledged = 0;
        long deadline = System.nanoTime() + WAIT_NANOS;
        while (acknowledged < rails.length && System.nanoTime() - deadline < 0) {
            for (Endpoint r : rails) {
                int n = r.cq.poll(r.wcs, Endpoint.WC_BATCH);
                if (n < 0) {
                    return;
                }
                for (int i = 0; i < n; i++) {
                    if (Wr.wcWrId(r.wcs, i) == BYE_WR) {
                        if (Wr.wcStatus(r.wcs, i) != VerbsWire.WC_SUCCESS) {
                            return;
                        }
                        acknowledged++;
                    }
                }
            }
            Thread.onSpinWait();
        }
    }
}
