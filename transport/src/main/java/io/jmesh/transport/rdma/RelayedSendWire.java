package io.jmesh.transport.rdma;

import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.Fate;
import io.jmesh.transport.core.Op;
import io.jmesh.transport.core.SendSlot;
import io.jmesh.transport.core.SendWire;
import io.jmesh.transport.verbs.Wr;
import io.jmesh.posix.Errno;
import io.jmesh.transport.core.Slots;

import java.lang.foreign.MemorySegment;

/**
 * The verbs wire of a sender whose receiver is reached through a relay node ({@link RelayLayout}). The core matches
 * sends against the clear-to-send entries the relay forwards into this side's FIFO, exactly as on a direct
 * connection; a full slot goes out as its descriptors (where each buffer lies, its length and key; a small buffer
 * itself), RDMA-written into the relay's descriptor ring, and completes when the relay's done word says it has the
 * data. One-sided
 * operations are refused: the far node's keys belong to a NIC this side has no queue pair to.
 */
final class RelayedSendWire extends VerbsWire implements SendWire {
    private static final long DESC_WR = 1;
    private static final long BYE_WR = 2;

    private final SendSlot[] slots;
    private final String relay;
    /** What a refused post was for, named once: the hot path builds no string. */
    private final String toRelay;
    private final long relayRing;
    private final int relayRkey;
    private final MemorySegment fifo;
    private final MemorySegment descs;
    private long full;
    private long posted;
    private long completed;
    private int outstanding;

    /**
     * @param relay     the relay node's address, for errors
     * @param relayRing the relay's descriptor ring (address and key from its handshake reply)
     */
    RelayedSendWire(Fate fate, SendSlot[] slots, Endpoint ep, String relay, long relayRing, int relayRkey) {
        super(fate, ep);
        this.slots = slots;
        this.relay = relay;
        this.toRelay = "to the relay " + relay;
        this.relayRing = relayRing;
        this.relayRkey = relayRkey;
        this.fifo = ControlRegion.fifo(ep.control);
        this.descs = ep.control.asSlice(Cts.FIFO_BYTES, RelayLayout.STAGE);
    }

    MemorySegment fifo() {
        return fifo;
    }

    @Override
    public void matched(SendSlot slot, int i) {
        if (slot.full()) {
            full++;
            drainPosts();
        }
    }

    private void drainPosts() {
        while (posted < full && !fate.failed()) {
            if (!post(slots[Slots.ofCount(posted)])) {
                return;
            }
            posted++;
        }
    }

    /**
     * Writes a full slot's descriptors into the relay's ring, one write per buffer; a buffer of up to {@link
     * RelayLayout#INLINE_MAX} bytes goes in the same write, just before its descriptor (two gather entries: the
     * user's buffer, then the staged descriptor), so the descriptor's sequence number still lands last.
     */
    private boolean post(SendSlot s) {
        int n = s.nreqs;
        if (outstanding + n >= ep.sendDepth) {
            return false;                          // one entry stays free for the liveness probe
        }
        int lkey = ep.controlMr.lkey();
        for (int i = 0; i < n; i++) {
            RdmaRegistration reg = (RdmaRegistration) s.registration[i];
            long length = s.length[i];
            boolean inline = length <= RelayLayout.INLINE_MAX;
            long staged = RelayLayout.staged(s.entry + i);
            long remote = relayRing + RelayLayout.at(s.entry + i);
            RelayLayout.write(descs, staged, reg.address + s.offset[i], length, reg.rkey(ep.deviceIndex),
                    inline ? RelayLayout.INLINE : 0, s.seq);
            int sges = 1;
            if (inline && length > 0) {
                Wr.sge(ep.sge[2 * i], reg.address + s.offset[i], (int) length, reg.lkey(ep.deviceIndex));
                remote -= length;
                sges = 2;
            }
            Wr.sge(ep.sge[2 * i + sges - 1], descs.address() + staged, RelayLayout.DESC_BYTES, lkey);
            Wr.send(ep.wr[i], DESC_WR, MemorySegment.NULL, ep.sge[2 * i], sges, OP_WRITE, SIGNALED, 0, remote,
                    relayRkey);
            if (i > 0) {
                Wr.link(ep.wr[i - 1], ep.wr[i]);
            }
        }
        if (!post(ep, n, toRelay)) {
            return false;
        }
        outstanding += n;
        return true;
    }

    @Override
    public int start(Op op) {
        return Status.BAD_ARGUMENT;               // see the class comment; docs/api.md says so
    }

    @Override
    public void progress() {
        if (fate.state() == 0) {
            advance(true);
        }
    }

    /**
     * Takes completions and the relay's done word, probes while idle, and (with {@code post}) posts what was matched
     * since; false once the connection failed (while closing: once it would have).
     */
    private boolean advance(boolean post) {
        int n = completions(ep);
        if (n < 0) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            int status = Wr.wcStatus(ep.wcs, i);
            long wrId = Wr.wcWrId(ep.wcs, i);
            if (status != WC_SUCCESS) {
                fate.fail((wrId == Endpoint.PROBE_WR ? "the relay node " + relay + " stopped answering: a liveness "
                        + "probe on " : "a write to the relay node " + relay + " on ") + ep.device.name()
                        + " failed: " + ep.device.verbs().wcStatusString(status)
                        + " (the relay's jmesh process died or closed, or the link went down)");
                return false;
            }
            if (wrId == Endpoint.PROBE_WR) {
                ep.probeDone();
            }
            outstanding--;
        }
        long done = RelayLayout.done(ep.control);
        if ((done & RelayLayout.FAILED) != 0) {
            fate.fail("the relay node " + relay + " lost the connection to the receiver (the receiver, or a relay "
                    + "further on, closed or died, or a link beyond the relay went down; see the relay node's log)");
            return false;
        }
        if (done > posted) {
            fate.fail("the relay node " + relay + " reported request " + done + " done, but only " + posted
                    + " were sent (run the same jmesh version on every node)");
            return false;
        }
        while (completed < done) {
            slots[Slots.ofCount(completed)].completeAll();
            completed++;
        }
        if (n == 0 && outstanding < ep.sendDepth) {
            int p = probe(relayRing, relayRkey);
            if (p > 0) {
                outstanding++;
            } else if (p < 0) {
                return false;
            }
        }
        if (post) {
            drainPosts();
        }
        return true;
    }

    /**
     * Ends the connection in order where it can, as {@link Goodbye} does on a direct one: waits (at most {@link
     * Goodbye#WAIT_NANOS} in all) until the relay has read every message sent, since it reads them from this side's
     * buffers, then writes the goodbye word into the relay's ring and waits for it to land; the relay passes it on
     * behind the last message and the receiver ends CLOSED. Then the queue pair goes.
     */
    @Override
    public void close() {
        try {
            if (!fate.failed()) {
                goodbye(System.nanoTime() + Goodbye.WAIT_NANOS);
            }
        } finally {
            ep.close();
        }
    }

    private void goodbye(long deadline) {
        boolean ok = true;
        while (completed < posted && (ok = advance(false)) && System.nanoTime() - deadline < 0) {
            Thread.onSpinWait();
        }
        if (!ok || completed < posted || outstanding >= ep.sendDepth) {
            return;                                // the receiver will see the connection fail, as before goodbyes
        }
        MemorySegment word = ep.control.asSlice(RelayLayout.BYE_STAGING_AT, 8);
        word.set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, posted + 1);
        Wr.sge(ep.sge[0], word.address(), 8, ep.controlMr.lkey());
        Wr.send(ep.wr[0], BYE_WR, MemorySegment.NULL, ep.sge[0], 1, OP_WRITE, SIGNALED, 0,
                relayRing + RelayLayout.BYE_AT, relayRkey);
        Wr.link(ep.wr[0], MemorySegment.NULL);
        if (!post(ep, 1, "goodbye")) {
            return;
        }
        while (System.nanoTime() - deadline < 0) {
            int n = ep.cq.poll(ep.wcs, Endpoint.WC_BATCH);
            if (n < 0) {
                return;
            }
            for (int i = 0; i < n; i++) {
                if (Wr.wcWrId(ep.wcs, i) == BYE_WR) {
                    return;                        // landed, or failed: either way nothing more to wait for
                }
            }
            Thread.onSpinWait();
        }
    }

    @Override
    public String toString() {
        return "rdma sender on " + ep.device.name() + " through the relay " + relay;
    }
}
