package io.jmesh.transport.core;

import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * The sending end of a connection on any provider. Large messages are receiver-driven as NCCL's IB transport: the
 * receiver announces each grouped receive with one clear-to-send entry per buffer ({@link Cts}), and {@link #isend}
 * answers {@link Status#NOT_READY} until the entry for its tag is there, so data only ever goes into a buffer that
 * waits for it. Small messages (those the wire {@link SendWire#sendsEagerly sends eagerly}, {@link Eager}) are
 * written at once into the ring the receiver announced at connect time, whether or not their receive is posted yet.
 *
 * <p>Every send takes the next stream position (0, 1, ...), and the receiver's grouped receives cover the positions
 * in order, one per buffer; within a receive, the i-th send with tag t takes the i-th buffer with tag t. An eager
 * send whose receive the sender already knows (its entries arrived) names its buffer, and is checked for {@link
 * Status#TRUNCATED} here; one sent ahead of the clear-to-sends leaves the choice to the receiver, which applies the
 * same rule and reports a message too large for its buffer at its own {@code test}. Once the entries of such a
 * receive arrive, the sender replays its eager sends against them (it keeps their tags), so a large send that follows
 * in the same receive takes the buffer the receiver left for it.
 *
 * <p>A receiver may keep the entries of small receives back (verbs, on an eager connection: they cost a post each,
 * and eager sends do not need them); they come with the next entries it pushes, or the sender fetches them ({@link
 * SendWire#fetch}) when a send needs its receive and its entries are not here.
 *
 * <p>This class owns the protocol both providers share: the ring of {@link Cts#MAX_REQUESTS} slots, request ids
 * ({@code slot * 8 + buffer}; one-sided ids from {@link #OP_BASE}, eager sends from {@link #EAGER_BASE}), tag
 * matching, what was reported, and the {@code test}/{@code size}/{@code close} contract. The provider's {@link
 * SendWire} moves the bytes and marks completions.
 *
 * <p>One thread at a time calls it. Nothing here allocates, locks or throws in normal flow: results are request ids
 * (>= 0) or {@link Status} codes, and once {@link #close} ran every call answers {@link Status#CLOSED}.
 */
public final class CoreSender implements Sender {
    public static final int MESSAGES = Slots.BUFFERS;
    /** Request ids of one-sided operations start here, above every send's id. */
    public static final int OP_BASE = MESSAGES;
    /** Request ids of eager sends start here, above the one-sided operations'. */
    public static final int EAGER_BASE = OP_BASE + OpWindow.SIZE;
    /** Eager sends that may be unreported at once (their ids). */
    public static final int EAGER_IDS = 256;
    /** How far eager sends may run ahead of the clear-to-sends: their tags are kept for the replay. */
    private static final int HISTORY = 256;

    private final Fate fate;
    private final MemorySegment fifo;
    private final SendSlot[] slots;
    private final OpWindow ops = new OpWindow(OP_BASE);
    private final SendWire wire;
    private final Consumer<AutoCloseable> onClose;
    /** Receives fully matched so far: slot {@code head mod MAX_REQUESTS} takes request head+1. */
    private long head;
    /** Ring position of the first clear-to-send entry of request head+1: the stream position of its buffer 0. */
    private long entryTail;
    /** Stream position of the next send. */
    private long position;
    /** Tag and length of each eager send at stream position p, at p mod HISTORY (for the replay). */
    private final int[] historyTag = new int[HISTORY];
    private final long[] historyLength = new long[HISTORY];
    private final boolean[] eagerLive = new boolean[EAGER_IDS];
    private final long[] eagerLength = new long[EAGER_IDS];
    /** The wire's record number (from 1) of each eager send: it completes once the wire says the record left. */
    private final long[] eagerRecord = new long[EAGER_IDS];
    private long eagerIssued;

    /**
     * @param ring    the send ring the wire was made with ({@link #ring()})
     * @param fifo    where the clear-to-send entries arrive, {@link Cts#FIFO_BYTES} long
     * @param onClose runs once when this end closes (the provider forgets it)
     */
    public CoreSender(Fate fate, MemorySegment fifo, SendSlot[] ring, SendWire wire, Consumer<AutoCloseable> onClose) {
        this.fate = fate;
        this.fifo = fifo;
        this.slots = ring;
        this.wire = wire;
        this.onClose = onClose;
        Arrays.fill(eagerLength, -1);
    }

    /** A new, empty send ring for a wire and its core. */
    public static SendSlot[] ring() {
        return SendSlot.ring();
    }

    /** How this end lives and dies; liveness and device events fail it. */
    public Fate fate() {
        return fate;
    }

    /** The wire under this sender (for the provider's own tests and tools). */
    public SendWire wire() {
        return wire;
    }

    @Override
    public int isend(Registration registration, long offset, long length, int tag) {
        if (!wire.owns(registration, offset, length)) {
            return Status.BAD_ARGUMENT;
        }
        int state = fate.state();
        if (state != 0 || fate.ended()) {
            return state != 0 ? state : Status.CLOSED;
        }
        int known = learn();
        if (known < 0) {
            return known;
        }
        if (known == 0) {
            // the receive that takes this send is not known yet: only an eager send may go, the receiver picks
            if (position - entryTail < HISTORY && wire.sendsEagerly(registration, length)) {
                int id = eager(registration, offset, length, tag, null, -1);
                if (id != Status.NOT_READY) {
                    return id;
                }
            }
            if (!slots[Slots.ofCount(head)].full) {
                wire.fetch(entryTail);             // its entries are needed now: the peer may have kept them back
            }
            return idle();
        }
        boolean small = wire.sendsEagerly(registration, length);
        SendSlot slot = slots[Slots.ofCount(head)];
        int i = free(slot, tag);
        if (i < 0) {
            return idle();
        }
        if (length > Cts.size(fifo, Cts.at(entryTail + i))) {
            return Status.TRUNCATED;
        }
        if (small) {
            int id = eager(registration, offset, length, tag, slot, i);
            if (id != Status.NOT_READY) {
                return id;
            }
            // the ring is full: the peer's application has not polled its receiver. The receive is known, so the
            // message goes the receiver-driven way, which the peer's NIC completes alone: a thread that posted its
            // receives and now drives only its senders (as both ends of an exchange may) never waits on the other
        }
        slot.registration[i] = registration;
        slot.offset[i] = offset;
        slot.length[i] = length;
        slot.matched |= 1 << i;
        slot.sized |= 1 << i;
        position++;
        if (slot.matched == slot.mask()) {
            fill(slot);
        }
        wire.matched(slot, i);
        return Slots.key(slot.index, i);
    }

    /**
     * Takes in the clear-to-sends that arrived: the receive that takes the next send (request head+1), and every
     * receive before it that eager sends filled completely.
     *
     * @return 1 when request head+1 is known and takes the next send, 0 while its entries have not arrived (or its
     *         slot's last use is not reported yet), or {@link Status#FAILED}
     */
    private int learn() {
        while (true) {
            SendSlot slot = slots[Slots.ofCount(head)];
            long seq = head + 1;
            if (slot.seq == seq) {
                return 1;
            }
            if (slot.full) {
                return 0;                          // the request that last used this slot is not reported yet
            }
            long first = Cts.at(entryTail);
            if (Cts.seq(fifo, first) != seq) {
                wire.progress();                   // reads the peer's announcements where they are not pushed to us
                if (Cts.seq(fifo, first) != seq) {
                    return fate.failed() ? Status.FAILED : 0;
                }
            }
            int n = Cts.nreqs(fifo, first);
            if (n < 1 || n > Cts.MAX_RECVS) {
                return fate.fail("the receiver sent a clear-to-send for " + n + " buffers (1.." + Cts.MAX_RECVS
                        + " allowed); run the same jmesh version on both nodes");
            }
            for (int i = 1; i < n; i++) {
                if (Cts.seq(fifo, Cts.at(entryTail + i)) != seq) {
                    return 0;                      // the rest of the group is still on its way
                }
            }
            slot.nreqs = n;
            slot.seq = seq;
            slot.sized = 0;                        // a new use of the slot: the old sizes are gone
            long replayed = Math.min(position, entryTail + n);
            for (long p = entryTail; p < replayed; p++) {
                int h = (int) (p & (HISTORY - 1));
                int i = free(slot, historyTag[h]);
                if (i < 0) {
                    return fate.fail("the message sent at stream position " + p + " with tag " + historyTag[h]
                            + " found no free buffer with that tag in the receiver's grouped receive #" + seq
                            + ": send with the tags the receiver posts, in its order");
                }
                taken(slot, i, historyLength[h]);
            }
            if (slot.matched != slot.mask()) {
                return 1;
            }
            fill(slot);                            // every buffer went eagerly: on to the next receive
        }
    }

    /** The first buffer of the known request whose entry has this tag and no send yet, or -1. */
    private int free(SendSlot slot, int tag) {
        for (int i = 0; i < slot.nreqs; i++) {
            if ((slot.matched & (1 << i)) == 0 && Cts.tag(fifo, Cts.at(entryTail + i)) == tag) {
                return i;
            }
        }
        return -1;
    }

    /** Buffer i of the slot took an eager send: nothing for the wire to post or for test to report there. */
    private static void taken(SendSlot slot, int i, long length) {
        int bit = 1 << i;
        slot.matched |= bit;
        slot.eager |= bit;
        slot.reported |= bit;
        slot.done |= bit;
        slot.length[i] = length;
    }

    /** Every buffer of request head+1 has its send: the wire may post the slot; on to the next request. */
    private void fill(SendSlot slot) {
        slot.full = true;
        slot.entry = entryTail;
        entryTail += slot.nreqs;
        head++;
        if (slot.eager == slot.mask()) {
            slot.reset();                          // the receiver's ring had them all: nothing to post or report
            wire.eagerOnly(slot);
        }
    }

    /**
     * Sends eagerly: for buffer i of the known request in {@code slot}, or, with slot null, for whichever buffer the
     * receiver's rule gives it. Complete at once (the bytes were copied), so test reports it at its first call.
     */
    private int eager(Registration registration, long offset, long length, int tag, SendSlot slot, int i) {
        int k = (int) (eagerIssued & (EAGER_IDS - 1));
        if (eagerLive[k]) {
            return idle();                         // the send that last had this id is not reported yet
        }
        int rc = wire.eager(position, tag, registration, offset, (int) length, i);
        if (rc != 0) {
            return rc == Status.NOT_READY ? idle() : rc;
        }
        eagerLive[k] = true;
        eagerLength[k] = length;
        eagerRecord[k] = ++eagerIssued;
        if (slot == null) {
            int h = (int) (position & (HISTORY - 1));
            historyTag[h] = tag;
            historyLength[h] = length;
            position++;
        } else {
            taken(slot, i, length);
            position++;
            if (slot.matched == slot.mask()) {
                fill(slot);
                if (slot.full) {
                    wire.matched(slot, i);         // the slot's large messages may go now
                    if (slot.reported == slot.mask()) {
                        // a wire that moves each message on its own (TCP) may have completed them all, and test
                        // reported them, before this eager send filled the slot: nothing is left to report
                        slot.reset();
                    }
                }
            }
        }
        return EAGER_BASE + k;
    }

    /**
     * The answer while nothing can be matched: makes progress first, so that a waiting sender notices a peer that
     * died or closed (the wire probes it) and frees slots whose sends completed.
     */
    private int idle() {
        wire.progress();
        int pending = fate.inFlight();
        return pending != 0 ? pending : Status.NOT_READY;
    }

    @Override
    public int write(Registration local, long localOffset, long length, RemoteRegion remote, long remoteOffset) {
        return oneSided(false, local, localOffset, length, remote, remoteOffset);
    }

    @Override
    public int read(Registration local, long localOffset, long length, RemoteRegion remote, long remoteOffset) {
        return oneSided(true, local, localOffset, length, remote, remoteOffset);
    }

    private int oneSided(boolean read, Registration local, long localOffset, long length, RemoteRegion remote,
                         long remoteOffset) {
        if (!wire.owns(local, localOffset, length) || remote == null || !remote.contains(remoteOffset, length)) {
            return Status.BAD_ARGUMENT;
        }
        int state = fate.state();
        if (state != 0 || fate.ended()) {
            return state != 0 ? state : Status.CLOSED;
        }
        Op op = ops.next();
        if (op == null) {
            return idle();
        }
        op.read = read;
        op.local = local;
        op.localOffset = localOffset;
        op.length = length;
        op.remote = remote;
        op.remoteOffset = remoteOffset;
        int started = wire.start(op);
        if (started != 0) {
            op.local = null;
            op.remote = null;
            return started;
        }
        return ops.issue(op);
    }

    /**
     * Makes progress and reports on one request.
     *
     * @return 1 when complete ({@link #size(int)}), 0 while in flight, {@link Status#REFUSED} for a one-sided
     *         operation the peer refused ({@link #failure(int)}), {@link Status#FAILED}, {@link Status#CLOSED}, or
     *         {@link Status#BAD_ARGUMENT} for an id that is not a live request (never issued, or already reported)
     */
    @Override
    public int test(int request) {
        if (fate.closed()) {
            return Status.CLOSED;
        }
        if (ops.owns(request)) {
            return ops.test(request, fate, wire);
        }
        if (request >= EAGER_BASE && request < EAGER_BASE + EAGER_IDS) {
            int k = request - EAGER_BASE;
            if (!eagerLive[k]) {
                return Status.BAD_ARGUMENT;
            }
            if (!wire.eagerSent(eagerRecord[k])) {
                if (fate.failed()) {
                    return Status.FAILED;
                }
                wire.progress();
                if (!wire.eagerSent(eagerRecord[k])) {
                    return fate.inFlight();
                }
            }
            eagerLive[k] = false;
            return 1;
        }
        if (request < 0 || request >= MESSAGES) {
            return Status.BAD_ARGUMENT;
        }
        SendSlot slot = slots[Slots.slotOf(request)];
        int bit = 1 << (Slots.bufferOf(request));
        if ((slot.matched & bit) == 0 || (slot.reported & bit) != 0) {
            return Status.BAD_ARGUMENT;
        }
        if ((slot.done & bit) == 0) {
            if (fate.failed()) {
                return Status.FAILED;
            }
            wire.progress();
            if ((slot.done & bit) == 0) {
                return fate.inFlight();
            }
        }
        slot.reported |= bit;
        if (slot.full && slot.reported == slot.mask()) {
            slot.reset();
        }
        return 1;
    }

    /**
     * Bytes sent, written or read by request {@code request}, from its issue until its id is taken again; -1 for an id
     * no request has (out of range, never issued, or its slot reused).
     */
    @Override
    public long size(int request) {
        if (ops.owns(request)) {
            return ops.size(request);
        }
        if (request >= EAGER_BASE && request < EAGER_BASE + EAGER_IDS) {
            return eagerLength[request - EAGER_BASE];
        }
        if (request < 0 || request >= MESSAGES) {
            return -1;
        }
        SendSlot slot = slots[Slots.slotOf(request)];
        int i = Slots.bufferOf(request);
        return (slot.sized & (1 << i)) != 0 ? slot.length[i] : -1;
    }

    @Override
    public String error() {
        return fate.error();
    }

    @Override
    public String failure(int request) {
        String why = ops.owns(request) ? ops.failure(request) : null;
        return why != null ? why : fate.error();
    }

    /** Closes the connection: requests in flight fail at the peer, and every later call here answers CLOSED. */
    @Override
    public void close() {
        if (fate.close()) {
            try {
                wire.close();
            } finally {
                onClose.accept(this);
            }
        }
    }

    @Override
    public String toString() {
        return wire.toString();
    }
}
