package io.jmesh.transport.rdma;

import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.Eager;
import io.jmesh.transport.core.Fate;
import io.jmesh.transport.core.Op;
import io.jmesh.transport.core.OpWindow;
import io.jmesh.transport.core.ReceiveSlot;
import io.jmesh.transport.core.ReceiveWire;
import io.jmesh.transport.verbs.Wr;
import io.jmesh.posix.Errno;
import io.jmesh.transport.core.Slots;

import java.lang.foreign.MemorySegment;
import java.util.function.Supplier;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The verbs wire of a receiver. Every rail keeps {@link Cts#MAX_REQUESTS} zero-length receives posted to catch the
 * sender's writes-with-immediate (whose immediate names the slot), one reposted per arrival; posting a grouped
 * receive stages one clear-to-send entry per buffer (address, size, tag, an rkey per rail);
 * {@link #announce} RDMA-writes the staged entries into the sender's FIFO over rail 0: one write for a run of
 * receives, two where the run wraps around the ring, signalled every {@value #SIGNAL_EVERY}th write. Entries leave
 * when the receive is posted; only a receive posted with MORE lets them wait for the core to release them (and, on
 * an eager connection, a small one: below), never longer: a thread that posts receives and then drives only a
 * sender never tests them, and the peer's sender would wait for entries nobody writes. A slot is complete once
 * every rail's immediate arrived; its sizes come from the immediate, or from the size array the sender wrote for
 * grouped and very large messages.
 *
 * <p>With an eager ring ({@link Eager}: the connector sends small messages eagerly), the ring lies in rail 0's control
 * region after the size array; the core reads it, and this wire hands the consumed count back by an RDMA write into
 * the sender's credit word, as unsignalled as the clear-to-sends. There a receive of one buffer within the eager
 * threshold, posted on its own (not in a batch with MORE, which costs one write anyway), is not announced when
 * posted: its message comes eagerly, which needs no clear-to-send, and under Soft-RoCE the write would cost as much as
 * a message. Its entries wait in the staging ring (registered, readable by the peer) and leave with the next push: a
 * receive that is announced, a batch, the held entries passing {@value #HOLD_LIMIT}, or the next credits, so the
 * sender learns every receive before the credits let it run ahead of it. A sender that needs them sooner (a full
 * ring, a larger message) reads them itself ({@link RdmaSendWire#fetch}), so the guarantee above holds.
 *
 * <p>A flush reads one byte of each received buffer by RDMA READ through a queue pair connected to itself, made on
 * first use: the NIC answers the read only after its earlier writes into that memory have landed.
 */
final class RdmaReceiveWire extends VerbsWire implements ReceiveWire {
    /** The flush queue pair's control region: where the flush reads land, one 64-byte cell per buffer. */
    static final long FLUSH_BYTES = (long) OpWindow.SIZE * Cts.MAX_RECVS * 64;
    /** wr_id bit of clear-to-send writes, whose completions only free send-queue entries. */
    private static final long CTS_WR = 1L << 32;
    /**
     * One clear-to-send or credit write in this many is signalled, to free the send queue (256 deep) of those before
     * it: as NCCL's IB transport does for its clear-to-sends (one slot in 32), so the receiver polls no more
     * completions per message than there.
     */
    private static final int SIGNAL_EVERY = 32;
    /** Entries of small receives held back at most, far below the ring's ENTRIES, so none is overwritten unread. */
    static final int HOLD_LIMIT = 64;

    private final ReceiveSlot[] slots;
    private final Endpoint[] rails;
    private final int nrails;
    private final long peerFifoAddress;
    private final int peerFifoRkey;
    private final MemorySegment staging;
    private final MemorySegment sizes;
    private final MemorySegment eagerRing;
    private final MemorySegment creditStaging;
    /** One-buffer receives of at most this many bytes are not announced when posted ({@link #small}); 0: none. */
    private final long eagerMax;
    /** Entries up to this ring position must reach the sender with the next announcement. */
    private long pushTo;
    /** A receive was posted with MORE since the last announcement: the batch goes out whole when it closes. */
    private boolean batch;
    private boolean recvsPosted;
    /** Rails whose goodbye arrived ({@link RdmaSendWire#IMM_BYE}). */
    private int goodbyes;
    private final Supplier<Endpoint> flushFactory;

    /** per slot: rails whose write-with-immediate has not arrived yet, and whether the sizes are in the array */
    private final int[] pendingRails = new int[Cts.MAX_REQUESTS];
    private final boolean[] sizesInArray = new boolean[Cts.MAX_REQUESTS];
    /** per buffer * MAX_RAILS + rail: the buffer's rkey on each rail's device, for the entry being staged */
    private final int[] scratchRkeys = new int[Cts.MAX_RECVS * Cts.MAX_RAILS];
    /** Ring position of the next clear-to-send entry, and of the first one not yet written to the peer. */
    private long entryHead;
    private long announced;
    private int unsignalledCts;
    private long ctsWrites;

    private Endpoint flushEp;
    private final Op[] flushes = new Op[OpWindow.SIZE];
    private final int[] flushWrs = new int[OpWindow.SIZE];
    private int flushOutstanding;

    /**
     * @param rails        the connection's queue pairs, connected; rail 0 holds the size array; the wire owns them
     * @param flushFactory makes the loopback queue pair for flushes (on rail 0's device), on first use
     */
    RdmaReceiveWire(Fate fate, ReceiveSlot[] slots, Endpoint[] rails, long peerFifoAddress, int peerFifoRkey,
                    Supplier<Endpoint> flushFactory, int eagerMax) {
        super(fate, rails[0]);
        this.slots = slots;
        this.rails = rails.clone();
        this.nrails = rails.length;
        this.peerFifoAddress = peerFifoAddress;
        this.peerFifoRkey = peerFifoRkey;
        this.flushFactory = flushFactory;
        this.staging = ControlRegion.fifo(ep.control);
        this.sizes = ControlRegion.sizes(ep.control);
        boolean eager = eagerMax > 0;
        this.eagerRing = eager ? ControlRegion.ring(ep.control) : null;
        this.creditStaging = eager ? ControlRegion.credit(ep.control) : null;
        this.eagerMax = Math.min(eagerMax, Eager.MAX_PAYLOAD);
        // at once, not with the first receive: a sender that sends eagerly and closes before this end posts anything
        // still needs a receive for its goodbye's immediate
        postRecvs();
    }

    @Override
    public MemorySegment eagerRing() {
        return eagerRing;
    }

    /**
     * Writes the consumed count into the sender's credit word (see {@link RdmaSendWire#eager}), behind the entries
     * held back since the last announcement, in the same post: the queue pair keeps the order, so the sender has
     * learned of every receive posted before the credits that let it send further ahead.
     */
    @Override
    public int eagerConsumed(long consumed) {
        if (fate.failed() || fate.ended()) {
            return fate.inFlight();
        }
        int w = stageEntries();
        creditStaging.set(JAVA_LONG, 0, consumed);
        boolean signal = ++unsignalledCts >= SIGNAL_EVERY;
        if (signal) {
            unsignalledCts = 0;
        }
        Wr.sge(ep.sge[w], creditStaging.address(), 8, ep.controlMr.lkey());
        Wr.send(ep.wr[w], CTS_WR, MemorySegment.NULL, ep.sge[w], 1, OP_WRITE,
                (signal ? SIGNALED : 0) | (8 <= ep.maxInline ? INLINE : 0), 0,
                peerFifoAddress + ControlRegion.CREDIT_AT, peerFifoRkey);
        if (w > 0) {
            Wr.link(ep.wr[w - 1], ep.wr[w]);
        }
        return post(ep, w + 1, "eager credits") ? 0 : Status.FAILED;
    }

    @Override
    public boolean hostMemory(Registration registration) {
        return registration instanceof RdmaRegistration r && r.host;
    }

    /** Keeps MAX_REQUESTS receives posted on every rail, for the immediates of the slots in flight. */
    private int postRecvs() {
        for (int rail = 0; rail < nrails; rail++) {
            for (int k = 0; k < Cts.MAX_REQUESTS; k++) {
                if (postRecv(rails[rail]) != 0) {
                    return Status.FAILED;
                }
            }
        }
        recvsPosted = true;
        return 0;
    }

    private int postRecv(Endpoint r) {
        Wr.recv(r.recvWr, 0, MemorySegment.NULL, MemorySegment.NULL, 0);
        int rc = r.ops.postRecv(r.qp.handle(), r.recvWr, r.badWr);
        return rc == 0 ? 0 : fate.fail("ibv_post_recv on " + r.device.name() + " failed: " + Errno.describe(rc));
    }

    /** RDMA writes that carried clear-to-send entries so far (for tests: receives posted with MORE share one). */
    long ctsWrites() {
        return ctsWrites;
    }

    @Override
    public int post(ReceiveSlot slot, boolean hold) {
        if (fate.ended()) {
            return 0;                              // the sender closed: what it sent is in the ring or nowhere
        }
        if (!recvsPosted && postRecvs() != 0) {
            return Status.FAILED;
        }
        int n = slot.nreqs;
        for (int i = 0; i < n; i++) {
            RdmaRegistration reg = (RdmaRegistration) slot.registration[i];
            for (int rail = 0; rail < nrails; rail++) {
                scratchRkeys[i * Cts.MAX_RAILS + rail] = reg.rkey(rails[rail].deviceIndex);
            }
            Cts.write(staging, Cts.at(entryHead + i), reg.address + slot.offset[i], slot.maxSize[i], scratchRkeys,
                    i * Cts.MAX_RAILS, nrails, slot.tag[i], n, slot.seq);
        }
        entryHead += n;
        pendingRails[slot.index] = nrails;
        sizesInArray[slot.index] = false;
        if (!small(slot) || entryHead - announced >= HOLD_LIMIT) {
            pushTo = entryHead;
        }
        if (hold) {
            batch = true;
            return 0;
        }
        return announce();
    }

    /**
     * Whether the receive is one buffer that an eager record fills: its message needs no clear-to-send. A grouped
     * receive is announced, so that the sender keeps matching its sends by tag and waits with a tag that only a
     * later receive has. The buffer's size decides, not the message's, which only the sender knows.
     */
    private boolean small(ReceiveSlot slot) {
        return eagerMax > 0 && slot.nreqs == 1 && slot.maxSize[0] <= eagerMax;
    }

    /**
     * RDMA-writes the entries staged since the last announcement into the sender's FIFO, when one of them must go
     * (small receives' entries alone wait, see the class comment): one write, two where the range wraps around the
     * ring. Unsignalled but for every SIGNAL_EVERY-th write, which frees the send-queue entries of those before it.
     */
    @Override
    public int announce() {
        if (fate.failed()) {
            return Status.FAILED;
        }
        if (batch) {
            batch = false;
            pushTo = entryHead;
        }
        if (pushTo <= announced) {
            return 0;
        }
        return post(ep, stageEntries(), "clear-to-send") ? 0 : Status.FAILED;
    }

    /**
     * Prepares the writes of every entry not announced yet in rail 0's work-request scratch (from wr[0], linked),
     * counting them as announced; the caller links the last and posts. Returns how many (0..2).
     */
    private int stageEntries() {
        long count = entryHead - announced;
        if (count == 0) {
            return 0;
        }
        long from = announced & (Cts.ENTRIES - 1);
        int first = (int) Math.min(count, Cts.ENTRIES - from);
        int wrs = first < count ? 2 : 1;
        unsignalledCts += wrs;
        boolean signal = unsignalledCts >= SIGNAL_EVERY;
        if (signal) {
            unsignalledCts = 0;
        }
        int lkey = ep.controlMr.lkey();
        Wr.sge(ep.sge[0], staging.address() + from * Cts.ENTRY_BYTES, first * Cts.ENTRY_BYTES, lkey);
        Wr.send(ep.wr[0], CTS_WR, MemorySegment.NULL, ep.sge[0], 1, OP_WRITE,
                (signal && wrs == 1 ? SIGNALED : 0) | inline(first), 0,
                peerFifoAddress + from * Cts.ENTRY_BYTES, peerFifoRkey);
        if (wrs == 2) {
            Wr.sge(ep.sge[1], staging.address(), (int) (count - first) * Cts.ENTRY_BYTES, lkey);
            Wr.send(ep.wr[1], CTS_WR, MemorySegment.NULL, ep.sge[1], 1, OP_WRITE,
                    (signal ? SIGNALED : 0) | inline(count - first), 0, peerFifoAddress, peerFifoRkey);
            Wr.link(ep.wr[0], ep.wr[1]);
        }
        announced = entryHead;
        pushTo = entryHead;
        ctsWrites += wrs;
        return wrs;
    }

    /** IBV_SEND_INLINE for a write of {@code entries} clear-to-send entries when the queue pair can inline them. */
    private int inline(long entries) {
        return entries * Cts.ENTRY_BYTES <= ep.maxInline ? INLINE : 0;
    }

    @Override
    public int flush(Op op, int n, Registration[] registrations, long[] offsets, long[] sizes) {
        int lastRead = -1;
        for (int i = 0; i < n; i++) {
            if (sizes[i] > 0) {
                lastRead = i;
            }
        }
        if (lastRead < 0) {
            return 1;                              // nothing was received: nothing to wait for
        }
        if (flushEp == null) {
            try {
                flushEp = flushFactory.get();
            } catch (RuntimeException e) {
                return fate.fail("cannot make the flush queue pair on " + ep.device.name() + ": " + e.getMessage());
            }
        }
        if (flushOutstanding + n > flushEp.sendDepth) {
            progress();
            return fate.failed() ? Status.FAILED : Status.NOT_READY;
        }
        int w = 0;
        for (int i = 0; i <= lastRead; i++) {
            if (sizes[i] == 0) {
                continue;
            }
            RdmaRegistration r = (RdmaRegistration) registrations[i];
            Wr.sge(flushEp.sge[w], flushEp.control.address() + ((long) Slots.key(op.index, i)) * 64, 1,
                    flushEp.controlMr.lkey());
            Wr.send(flushEp.wr[w], op.index, MemorySegment.NULL, flushEp.sge[w], 1, OP_READ,
                    i == lastRead ? SIGNALED : 0, 0, r.address + offsets[i], r.rkey(flushEp.deviceIndex));
            if (w > 0) {
                Wr.link(flushEp.wr[w - 1], flushEp.wr[w]);
            }
            w++;
        }
        if (!post(flushEp, w, "flush")) {
            return Status.FAILED;
        }
        flushes[op.index] = op;
        flushWrs[op.index] = w;
        flushOutstanding += w;
        return 0;
    }

    @Override
    public void progress() {
        if (fate.state() != 0 || fate.ended()) {
            return;
        }
        for (int rail = 0; rail < nrails; rail++) {
            if (!poll(rails[rail])) {
                return;
            }
        }
        if (flushEp != null) {
            pollFlush();
        }
    }

    /** Reads one rail's completions; false once the connection failed. */
    private boolean poll(Endpoint r) {
        int n = completions(r);
        if (n < 0) {
            return false;
        }
        if (n == 0 && r == ep) {
            probeIfIdle();
        }
        for (int i = 0; i < n; i++) {
            int status = Wr.wcStatus(r.wcs, i);
            long wrId = Wr.wcWrId(r.wcs, i);
            if (status != WC_SUCCESS) {
                fate.fail((wrId == Endpoint.PROBE_WR ? "the peer stopped answering: a liveness probe on "
                        : (wrId & CTS_WR) != 0 ? "a clear-to-send write on " : "a receive on ") + r.device.name()
                        + " failed: " + r.device.verbs().wcStatusString(status)
                        + " (the peer died, closed, or is unreachable)");
                return false;
            }
            if (wrId == Endpoint.PROBE_WR) {
                r.probeDone();
            } else if ((wrId & CTS_WR) == 0 && Wr.wcOpcode(r.wcs, i) == WC_RECV_IMM) {
                int imm = Wr.wcImm(r.wcs, i);
                if (imm == RdmaSendWire.IMM_BYE) {
                    goodbye(r);
                    continue;
                }
                if (postRecv(r) != 0) {
                    return false;
                }
                arrived(imm);
            }
        }
        return true;
    }

    /**
     * A rail's goodbye arrived: everything the sender wrote on that rail before it is in place. Once every rail's is,
     * the connection ends in order (the core still hands out the eager records in the ring, then answers CLOSED).
     */
    private void goodbye(Endpoint r) {
        if (++goodbyes == nrails) {
            fate.end("the connection on " + r.device.name() + " was closed by the peer (everything it sent before "
                    + "its close arrived); connect again to go on");
        }
    }

    /** A rail's write-with-immediate for a slot arrived; the slot completes with the last rail's. */
    private void arrived(int imm) {
        int index = RdmaSendWire.immSlot(imm);
        ReceiveSlot slot = slots[index];
        if ((imm & RdmaSendWire.IMM_SIZES) == 0) {
            slot.received[0] = imm & RdmaSendWire.IMM_SIZE_MASK;
        } else {
            sizesInArray[index] = true;
        }
        if (--pendingRails[index] == 0) {
            if (sizesInArray[index]) {
                // rail 0's immediate came after the size array it wrote: the sizes are there
                int base = Slots.key(index, 0);
                for (int j = 0; j < slot.nreqs; j++) {
                    slot.received[j] = sizes.getAtIndex(JAVA_LONG, base + j);
                }
            }
            slot.complete();
        }
    }

    private void pollFlush() {
        int n = flushEp.cq.poll(flushEp.wcs, Endpoint.WC_BATCH);
        if (n < 0) {
            fate.fail("ibv_poll_cq (flush) on " + flushEp.device.name() + " failed: " + n);
            return;
        }
        for (int i = 0; i < n; i++) {
            int k = (int) Wr.wcWrId(flushEp.wcs, i) & (OpWindow.SIZE - 1);
            if (Wr.wcStatus(flushEp.wcs, i) != WC_SUCCESS) {
                fate.fail("a flush read on " + flushEp.device.name() + " failed: "
                        + flushEp.device.verbs().wcStatusString(Wr.wcStatus(flushEp.wcs, i))
                        + " (is the buffer still registered?)");
                return;
            }
            flushOutstanding -= flushWrs[k];
            flushes[k].finish(1, null);
            flushes[k] = null;
        }
    }

    /**
     * Lets rail 0 probe the sender while nothing completes (see {@link Endpoint#idle}): a receiver with receives
     * posted has nothing in flight, so only a probe can show that the sender died or closed. The probe's send-queue
     * entry needs no accounting: at most one is in flight next to at most MAX_REQUESTS clear-to-sends.
     */
    private void probeIfIdle() {
        probe(peerFifoAddress, peerFifoRkey);
    }

    @Override
    public void close() {
        try {
            if (flushEp != null) {
                flushEp.close();
            }
        } finally {
            Endpoint.closeAll(rails);
        }
    }

    @Override
    public String toString() {
        return "rdma receiver on " + ep.device.name() + (nrails > 1 ? " (" + nrails + " rails)" : "");
    }
}
