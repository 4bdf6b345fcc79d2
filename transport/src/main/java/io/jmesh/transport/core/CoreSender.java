package io.jmesh.transport.core;

import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;

import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;

/**
 * The sending end of a connection on any provider, receiver-driven as NCCL's IB transport: the receiver announces
 * each grouped receive with one clear-to-send entry per buffer ({@link Cts}), and {@link #isend} answers {@link
 * Status#NOT_READY} until the entry for its tag is there, so data only ever goes into a buffer that waits for it.
 * This class owns the protocol both providers share: the ring of {@link Cts#MAX_REQUESTS} slots, request ids ({@code
 * slot * 8 + buffer}; one-sided ids from {@link #OP_BASE}), tag matching, what was reported, and the {@code
 * test}/{@code size}/{@code close} contract. The provider's {@link SendWire} moves the bytes and marks completions.
 *
 * <p>One thread at a time calls it. Nothing here allocates, locks or throws in normal flow: results are request ids
 * (>= 0) or {@link Status} codes, and once {@link #close} ran every call answers {@link Status#CLOSED}.
 */
public final class CoreSender implements Sender {
    public static final int MESSAGES = Cts.MAX_REQUESTS * Cts.MAX_RECVS;
    /** Request ids of one-sided operations start here, above every send's id. */
    public static final int OP_BASE = MESSAGES;

    private final Fate fate;
    private final MemorySegment fifo;
    private final SendSlot[] slots;
    private final OpWindow ops = new OpWindow(OP_BASE);
    private final SendWire wire;
    private final Consumer<AutoCloseable> onClose;
    /** Slots fully matched so far: slot {@code head mod MAX_REQUESTS} is the one being matched, for request head+1. */
    private long head;
    /** Ring position of the first clear-to-send entry of request head+1. */
    private long entryTail;

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
    }

    /** A new, empty send ring for a wire and its core. */
    public static SendSlot[] ring() {
        return SendSlot.ring();
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
        if (state != 0) {
            return state;
        }
        SendSlot slot = slots[(int) (head & (Cts.MAX_REQUESTS - 1))];
        if (slot.full) {
            return idle();  // the request that last used this slot is not reported yet
        }
        int i = match(slot, length, tag);
        if (i < 0) {
            return i;
        }
        if (slot.matched == 0) {
            slot.sized = 0;                        // a new use of the slot: the old sizes are gone
        }
        slot.registration[i] = registration;
        slot.offset[i] = offset;
        slot.length[i] = length;
        slot.matched |= 1 << i;
        slot.sized |= 1 << i;
        if (slot.matched == slot.mask()) {
            slot.full = true;
            slot.entry = entryTail;
            entryTail += slot.nreqs;
            head++;
        }
        wire.matched(slot, i);
        return slot.index * Cts.MAX_RECVS + i;
    }

    /** Finds the clear-to-send entry for {@code tag} in the request being matched: its buffer index, or a status. */
    private int match(SendSlot slot, long length, int tag) {
        long seq = head + 1;
        long first = Cts.at(entryTail);
        if (Cts.seq(fifo, first) != seq) {
            wire.progress();                       // reads the peer's announcements where they are not pushed to us
            if (Cts.seq(fifo, first) != seq) {
                return fate.failed() ? Status.FAILED : Status.NOT_READY;
            }
        }
        int n = Cts.nreqs(fifo, first);
        if (n < 1 || n > Cts.MAX_RECVS) {
            return fate.fail("the receiver sent a clear-to-send for " + n + " buffers (1.." + Cts.MAX_RECVS
                    + " allowed); run the same jmesh version on both nodes");
        }
        int match = -1;
        for (int i = 0; i < n; i++) {
            long e = Cts.at(entryTail + i);
            if (Cts.seq(fifo, e) != seq) {
                return idle();                     // the rest of the group is still on its way
            }
            if (match < 0 && (slot.matched & (1 << i)) == 0 && Cts.tag(fifo, e) == tag) {
                match = i;
            }
        }
        if (match < 0) {
            return idle();
        }
        if (length > Cts.size(fifo, Cts.at(entryTail + match))) {
            return Status.TRUNCATED;
        }
        slot.nreqs = n;
        slot.seq = seq;
        return match;
    }

    /**
     * The answer while nothing can be matched: makes progress first, so that a waiting sender notices a peer that
     * died or closed (the wire probes it) and frees slots whose sends completed.
     */
    private int idle() {
        wire.progress();
        return fate.failed() ? Status.FAILED : Status.NOT_READY;
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
        if (state != 0) {
            return state;
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
        if (request < 0 || request >= MESSAGES) {
            return Status.BAD_ARGUMENT;
        }
        SendSlot slot = slots[request / Cts.MAX_RECVS];
        int bit = 1 << (request % Cts.MAX_RECVS);
        if ((slot.matched & bit) == 0 || (slot.reported & bit) != 0) {
            return Status.BAD_ARGUMENT;
        }
        if ((slot.done & bit) == 0) {
            if (fate.failed()) {
                return Status.FAILED;
            }
            wire.progress();
            if ((slot.done & bit) == 0) {
                return fate.failed() ? Status.FAILED : 0;
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
        if (request < 0 || request >= MESSAGES) {
            return -1;
        }
        SendSlot slot = slots[request / Cts.MAX_RECVS];
        int i = request % Cts.MAX_RECVS;
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
