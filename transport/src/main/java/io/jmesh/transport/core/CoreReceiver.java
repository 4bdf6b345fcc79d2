package io.jmesh.transport.core;

import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;

import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;

/**
 * The receiving end of a connection on any provider: {@link #irecv} posts up to {@link Cts#MAX_RECVS} buffers as one
 * grouped receive in the next of {@link Cts#MAX_REQUESTS} slots (its request id), and the provider's {@link
 * ReceiveWire} announces it to the sender with one clear-to-send entry per buffer; {@link #test} reports it once
 * every buffer has its message, with the real sizes. Flushes take ids from {@link #FLUSH_BASE}. Receives posted with
 * {@link #MORE} are held and announced together: with the next receive without the flag, or at the latest with the
 * next {@code test}, {@code iflush}, {@code poll} or an {@code irecv} that answers {@link Status#NOT_READY}.
 *
 * <p>Small messages may come eagerly ({@link Eager}), as records in a ring the wire announced at connect time, before
 * or after their receive is posted. The receives cover the sender's stream positions in order (one per buffer);
 * every call that makes progress consumes the records whose receive is posted, in order: the record names its
 * buffer, or this end gives it the first free buffer with its tag (the rule the sender replays), copies the payload
 * and hands the ring's slots back in batches. A record larger than its buffer fills the buffer and makes the receive
 * report {@link Status#TRUNCATED}, with the message's real size.
 *
 * <p>One thread at a time calls it. Nothing here allocates, locks or throws in normal flow; once {@link #close} ran
 * every call answers {@link Status#CLOSED}.
 */
public final class CoreReceiver implements Receiver {
    /** Request ids of flushes start here, above every receive's id. */
    public static final int FLUSH_BASE = Cts.MAX_REQUESTS;

    private final Fate fate;
    private final ReceiveSlot[] slots;
    private final OpWindow flushes = new OpWindow(FLUSH_BASE);
    private final ReceiveWire wire;
    private final Consumer<AutoCloseable> onClose;
    /** Receives posted so far: the next takes slot {@code head mod MAX_REQUESTS}, as request head+1. */
    private long head;
    /** Receives posted with MORE whose announcement waits. */
    private boolean held;
    /** Stream positions the posted receives cover (one per buffer). */
    private long positions;
    private final MemorySegment eagerRing;
    private final Eager eager;
    /** Eager records consumed, the count last handed back, the request the next one's position falls in. */
    private long consumed;
    private long credited;
    private long eagerRequest = 1;
    private long lastPosition = -1;
    /** The one-buffer irecv's arguments as the grouped call takes them (one thread uses a receiver at a time). */
    private final Registration[] oneRegistration = new Registration[1];
    private final long[] oneOffset = new long[1];
    private final long[] oneMaxSize = new long[1];
    private final int[] oneTag = new int[1];

    public CoreReceiver(Fate fate, ReceiveSlot[] ring, ReceiveWire wire, Consumer<AutoCloseable> onClose) {
        this.fate = fate;
        this.slots = ring;
        this.wire = wire;
        this.onClose = onClose;
        this.eagerRing = wire.eagerRing();
        this.eager = wire.eagerGeometry();
    }

    /** A new, empty receive ring for a wire and its core. */
    public static ReceiveSlot[] ring() {
        return ReceiveSlot.ring();
    }

    /** How this end lives and dies; liveness and device events fail it. */
    public Fate fate() {
        return fate;
    }

    /** The wire under this receiver (for the provider's own tests and tools). */
    public ReceiveWire wire() {
        return wire;
    }

    @Override
    public int irecv(int n, Registration[] registrations, long[] offsets, long[] maxSizes, int[] tags) {
        return irecv(n, registrations, offsets, maxSizes, tags, 0);
    }

    @Override
    public int irecv(Registration registration, long offset, long maxSize, int tag) {
        oneRegistration[0] = registration;
        oneOffset[0] = offset;
        oneMaxSize[0] = maxSize;
        oneTag[0] = tag;
        int id = irecv(1, oneRegistration, oneOffset, oneMaxSize, oneTag, 0);
        oneRegistration[0] = null; // the slot holds it now; this array must not keep it alive after the receive
        return id;
    }

    @Override
    public int irecv(int n, Registration[] registrations, long[] offsets, long[] maxSizes, int[] tags, int flags) {
        if ((flags & ~MORE) != 0 || !buffers(n, registrations, offsets, maxSizes) || tags == null
                || tags.length < n || overlap(n, registrations, offsets, maxSizes)) {
            return Status.BAD_ARGUMENT;
        }
        int state = fate.state();
        if (state != 0) {
            return state;
        }
        ReceiveSlot slot = slots[Slots.ofCount(head)];
        if (slot.busy) {
            // an application that keeps calling irecv(MORE) until it succeeds must not wait for receives it holds
            if (release() != 0) {
                return Status.FAILED;
            }
            progress();
            return fate.failed() ? Status.FAILED : Status.NOT_READY;
        }
        for (int i = 0; i < n; i++) {
            slot.registration[i] = registrations[i];
            slot.offset[i] = offsets[i];
            slot.maxSize[i] = maxSizes[i];
            slot.tag[i] = tags[i];
            slot.received[i] = 0;
        }
        slot.nreqs = n;
        slot.seq = head + 1;
        slot.first = positions;
        slot.filled = 0;
        slot.landed = 0;
        slot.truncated = false;
        slot.done = false;
        slot.busy = true;
        head++;
        positions += n;
        boolean hold = (flags & MORE) != 0;
        if (wire.post(slot, hold) != 0) {
            return Status.FAILED;
        }
        held = hold;
        return slot.index;
    }

    /** Whether the n buffers are ranges of this provider's registrations. */
    private boolean buffers(int n, Registration[] registrations, long[] offsets, long[] sizes) {
        if (n < 1 || n > Cts.MAX_RECVS || registrations == null || offsets == null || sizes == null
                || registrations.length < n || offsets.length < n || sizes.length < n) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            if (!wire.owns(registrations[i], offsets[i], sizes[i])) {
                return false;
            }
        }
        return true;
    }

    /** Whether two non-empty buffers of one receive share memory: which message lands there would be a race. */
    private static boolean overlap(int n, Registration[] registrations, long[] offsets, long[] sizes) {
        for (int i = 0; i < n; i++) {
            long from = registrations[i].memory().address() + offsets[i];
            for (int j = i + 1; j < n; j++) {
                long other = registrations[j].memory().address() + offsets[j];
                if (sizes[i] > 0 && sizes[j] > 0 && from < other + sizes[j] && other < from + sizes[i]) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Announces the receives held by MORE. */
    private int release() {
        if (!held) {
            return 0;
        }
        held = false;
        return wire.announce();
    }

    @Override
    public int iflush(int n, Registration[] registrations, long[] offsets, long[] sizes) {
        if (!buffers(n, registrations, offsets, sizes)) {
            return Status.BAD_ARGUMENT;
        }
        int state = fate.state();
        if (state != 0) {
            return state;
        }
        if (release() != 0) {
            return Status.FAILED;
        }
        Op op = flushes.next();
        if (op == null) {
            progress();
            return fate.failed() ? Status.FAILED : Status.NOT_READY;
        }
        int started = wire.flush(op, n, registrations, offsets, sizes);
        if (started < 0) {
            return started;
        }
        int id = flushes.issue(op);
        if (started == 1) {
            op.finish(1, null);
        }
        return id;
    }

    /**
     * Makes progress and reports on one request.
     *
     * @return 1 when complete (sizes from {@link #size(int, int)}), 0 while in flight, {@link Status#FAILED}, {@link
     *         Status#CLOSED}, or {@link Status#BAD_ARGUMENT} for an id that is not a live request
     */
    @Override
    public int test(int request) {
        if (fate.closed()) {
            return Status.CLOSED;
        }
        release();                                 // a receive waited for must have been announced
        if (flushes.owns(request)) {
            return flushes.test(request, fate, wire);
        }
        if (request < 0 || request >= Cts.MAX_REQUESTS || !slots[request].busy) {
            return Status.BAD_ARGUMENT;
        }
        ReceiveSlot slot = slots[request];
        // before the wire's word that the large messages landed counts: the records before them are in place too
        consumeEager();
        if (!slot.done) {
            if (fate.failed()) {
                return Status.FAILED;
            }
            progress();
            if (!slot.done) {
                return fate.inFlight();            // ended: the eager records in the ring were all consumed first
            }
        }
        slot.busy = false;
        for (int i = 0; i < slot.nreqs; i++) {
            slot.registration[i] = null;
        }
        return slot.truncated ? Status.TRUNCATED : 1;
    }

    /** The wire's progress, then the eager records it may have made consumable. */
    private void progress() {
        wire.progress();
        consumeEager();
    }

    /**
     * Consumes, in order, the eager records whose receive is posted: each fills its buffer. A record waits in the ring
     * while its receive is not posted (the sender runs out of slots and waits too). Whatever does not fit the
     * protocol fails the connection: the records came from the network.
     */
    private void consumeEager() {
        if (eagerRing == null || fate.state() != 0) {
            return;
        }
        while (true) {
            long seq = consumed + 1;
            long at = eager.at(seq);
            if (!eager.complete(eagerRing, at, seq)) {
                break;
            }
            long p = Eager.position(eagerRing, at);
            if (p >= positions) {
                break;                             // its receive is not posted yet
            }
            if (p <= lastPosition) {
                fate.fail("eager record " + seq + " names stream position " + p + " after " + lastPosition
                        + ": the sender broke the protocol (run the same jmesh version on both nodes)");
                return;
            }
            while (eagerRequest < head && past(slots[Slots.ofRequest(eagerRequest)], p)) {
                eagerRequest++;
            }
            ReceiveSlot slot = slots[Slots.ofRequest(eagerRequest)];
            if (slot.seq != eagerRequest || !slot.busy || p < slot.first || p >= slot.first + slot.nreqs) {
                fate.fail("eager record " + seq + " for stream position " + p + " falls in no posted receive: the "
                        + "sender broke the protocol (run the same jmesh version on both nodes)");
                return;
            }
            if (!deliver(slot, at, p)) {
                return;
            }
            lastPosition = p;
            consumed = seq;
        }
        if (consumed - credited >= eager.creditBatch) {
            credited = consumed;
            wire.eagerConsumed(consumed);
        }
    }

    /** Whether request eagerRequest lies before position p (or its slot was reused: it is long done). */
    private boolean past(ReceiveSlot slot, long p) {
        return slot.seq != eagerRequest || p >= slot.first + slot.nreqs;
    }

    /** Copies one record into its buffer of {@code slot}; false once the connection failed. */
    private boolean deliver(ReceiveSlot slot, long at, long p) {
        int tag = Eager.tag(eagerRing, at);
        int length = Eager.length(eagerRing, at);
        int named = Eager.buffer(eagerRing, at);
        int i = -1;
        if (named < 0) {
            for (int b = 0; b < slot.nreqs && i < 0; b++) {
                if (!slot.has(b) && slot.tag[b] == tag) {
                    i = b;
                }
            }
        } else if (named < slot.nreqs && !slot.has(named) && slot.tag[named] == tag) {
            i = named;
        }
        if (i < 0) {
            fate.fail("a message with tag " + tag + " (stream position " + p + ") arrived for receive #" + slot.seq
                    + ", which has no free buffer with that tag: send with the tags the receiver posts, in its order");
            return false;
        }
        Registration r = slot.registration[i];
        if (!wire.hostMemory(r)) {
            fate.fail("a small message arrived eagerly for a receive into GPU memory, which the CPU cannot copy "
                    + "into: set JMESH_EAGER_THRESHOLD=0 on the sending node");
            return false;
        }
        long fits = Math.min(length, slot.maxSize[i]);
        MemorySegment.copy(eagerRing, Eager.payload(at), r.memory(), slot.offset[i], fits);
        slot.received[i] = length;
        slot.truncated |= length > slot.maxSize[i];
        slot.filled |= 1 << i;
        if ((slot.filled | slot.landed) == (1 << slot.nreqs) - 1) {
            slot.complete();
            wire.eagerFilled(slot);
        }
        return true;
    }

    /**
     * Bytes received into buffer i of request {@code request}, from its completion until the id is taken again; -1
     * for an id or buffer index no request has.
     */
    @Override
    public long size(int request, int i) {
        if (request < 0 || request >= Cts.MAX_REQUESTS || i < 0) {
            return -1;
        }
        ReceiveSlot slot = slots[request];
        return slot.done && i < slot.nreqs ? slot.received[i] : -1;
    }

    /** The number of buffers of request {@code request}, or -1 for an id no request has. */
    public int buffers(int request) {
        return request >= 0 && request < Cts.MAX_REQUESTS && slots[request].seq > 0 ? slots[request].nreqs : -1;
    }

    @Override
    public void poll() {
        if (!fate.closed()) {
            release();
            progress();
        }
    }

    @Override
    public String error() {
        return fate.error();
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
