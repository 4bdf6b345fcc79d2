package io.jmesh.transport.tcp;

import io.jmesh.transport.core.Cts;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * The owner's side of the peer's one-sided operations over TCP, and everything a receiver sends back on data socket
 * 0. The peer's {@link OpFrame} requests arrive on socket 0 in operation order; each names a registration id, looked
 * up in the provider's {@link TcpRegistry} and range-checked: a write piece's payload goes straight into the
 * registration (or is read and dropped when refused), a read is queued and its data sent back from the registration.
 * Each operation then owes one completion, in operation order. A write waits for the reads issued before it to be
 * served, so each read sees exactly the writes issued before it. A request naming no open registration, or a range
 * outside it, is refused and the connection stays up; a malformed one fails it.
 *
 * <p>On verbs the NIC does all this; here it happens only while the receiver is polled. Single-threaded, like the
 * receiver that owns it.
 */
final class TcpOpServer {
    /** What {@link #begin} did with a complete request header. */
    static final int BEGUN = 0;
    static final int STALLED = 1;
    static final int BROKEN = 2;
    private static final int MAX_OPS = 32;
    private static final int OPS_MASK = MAX_OPS - 1;
    private static final int WRITES_BACK = 8;
    /**
     * Clear-to-sends of small receives that may wait for company: a message for such a receive comes as an eager
     * record and needs none, so they go with the next frame that must go now (a credit, a larger receive's, a
     * reply), a fetch, or once this many wait: one write then instead of one per receive.
     */
    static final int LATER_LIMIT = 16;
    private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0);

    private final DataConnection conn;
    private final TcpRegistry registry;
    /**
     * Clear-to-sends and completions not yet written, in write mode: one clear-to-send per receive slot at most, and
     * those of receives already done that waited for company.
     */
    private final ByteBuffer ctrl = ByteBuffer.allocateDirect((Cts.MAX_REQUESTS + LATER_LIMIT) * CtsFrame.BYTES
            + 4 * OpFrame.BYTES + EagerFrame.BYTES);
    /** Clear-to-sends in ctrl that may wait, and whether anything in it must go with the next write-back. */
    private int later;
    private boolean now;
    /** Eager records consumed, as the core last said, and as the last credit frame queued said. */
    private long creditOwed;
    private long creditQueued;

    /** Operations applied (writes) or taken (reads) so far; the next must be number applied + 1 (mod 2^32). */
    private int applied;
    /** A write whose last piece has not arrived; its status so far, and whether the piece being read is its last. */
    private boolean open;
    private int status;
    private long detail;
    private boolean last;
    private ByteBuffer piece = EMPTY;
    private final ByteBuffer discard = ByteBuffer.allocateDirect(64 << 10);
    private int discardRemaining;
    private final ViewCache views = new ViewCache();

    // replies owed, in operation order: a completion per operation, after the answer pieces of a read
    private final boolean[] replyRead = new boolean[MAX_OPS];
    private final int[] replyOp = new int[MAX_OPS];
    private final int[] replyStatus = new int[MAX_OPS];
    private final long[] replyDetail = new long[MAX_OPS];
    private final TcpRegistration[] replyRegistration = new TcpRegistration[MAX_OPS];
    private final long[] replyOffset = new long[MAX_OPS];
    private final long[] replyLength = new long[MAX_OPS];
    private final long[] replyServed = new long[MAX_OPS];
    private long replyHead;
    private long replyTail;
    private int pendingReads;
    private final ByteBuffer answerHeader = ByteBuffer.allocateDirect(OpFrame.BYTES).limit(0);
    private ByteBuffer answerPayload = EMPTY;
    private final ViewCache answerViews = new ViewCache();

    /** @param registry where requests look their registration up; null refuses them all */
    TcpOpServer(DataConnection conn, TcpRegistry registry) {
        this.conn = conn;
        this.registry = registry;
    }

    /** Operations applied so far: a receive completes only once those its sender issued before it are. */
    int applied() {
        return applied;
    }

    /**
     * Queues a clear-to-send for the next write-back, or, {@code mayWait}, for the next one that writes anyway.
     * False when there is no room: a peer that reads nothing back while this end keeps posting receives.
     */
    boolean queueCts(int seq, int n, long[] sizes, int[] tags, boolean local, boolean mayWait) {
        int at = ctrl.position();
        if (ctrl.remaining() < CtsFrame.BYTES) {
            return false;
        }
        CtsFrame.write(ctrl, at, seq, n, sizes, tags, local ? CtsFrame.LOCAL : 0);
        ctrl.position(at + CtsFrame.BYTES);
        if (mayWait && !now) {
            later++;
        } else {
            now = true;
        }
        return true;
    }

    /** The sender asked for the clear-to-sends it has not seen: every queued one goes with the next write-back. */
    void fetched() {
        now = true;
    }

    /** The receiver's core consumed eager records 1..{@code consumed}: a credit frame goes with the next write-back. */
    void credit(long consumed) {
        creditOwed = consumed;
    }

    /** Eager records consumed as the credit frames queued so far say (the sender has them once they are written). */
    long credited() {
        return creditQueued;
    }

    /** Records the sender may have sent: those credited so far, plus a ring of {@code slots}. */
    long allowed(int slots) {
        return creditOwed + slots;
    }

    /** Whether anything waits to be written back. */
    boolean owed() {
        return replyHead != replyTail || ctrlDue() || creditOwed != creditQueued;
    }

    /** Whether ctrl's frames go with this write-back: one must, or too many wait. */
    private boolean ctrlDue() {
        return ctrl.position() > 0 && (now || later >= LATER_LIMIT);
    }

    /**
     * Starts on a complete request header: checks it, looks its registration up and checks the range; a read is
     * queued for serving, a write piece's payload is then read through {@link #buffer()}.
     */
    int begin(ByteBuffer h) {
        String bad = OpFrame.checkRequest(h, 0);
        if (bad != null) {
            conn.violation(bad);
            return BROKEN;
        }
        int op = OpFrame.op(h, 0);
        if (op != applied + 1) {
            conn.violation("one-sided operation " + Integer.toUnsignedString(op) + " out of order (expected "
                    + Integer.toUnsignedString(applied + 1) + ")");
            return BROKEN;
        }
        boolean read = OpFrame.type(h, 0) == OpFrame.READ;
        if (!open) {
            if (!read && pendingReads > 0) {
                return STALLED; // this write would change what an earlier read returns
            }
            if (replyTail - replyHead >= MAX_OPS) {
                conn.violation("more than " + MAX_OPS + " one-sided operations outstanding");
                return BROKEN;
            }
            status = OpFrame.OK;
            detail = 0;
        } else if (read) {
            conn.violation("a read request inside write " + Integer.toUnsignedString(op));
            return BROKEN;
        }
        long offset = OpFrame.offset(h, 0);
        long length = read ? OpFrame.readLength(h, 0) : OpFrame.pieceLength(h, 0);
        TcpRegistration r = status == OpFrame.OK ? lookup(OpFrame.key(h, 0), offset, length) : null;
        last = OpFrame.last(h, 0);
        h.clear();
        if (read) {
            queueReply(true, op, r, offset, length);
            applied++;
            return BEGUN;
        }
        open = true;
        if (r != null && length > 0) {
            piece = views.view(r, offset, (int) length);
        } else {
            piece = EMPTY;
            discardRemaining = (int) length;
            discard.clear().limit(Math.min(discard.capacity(), discardRemaining));
        }
        if (!reading()) {
            filled();                              // an empty piece is all in at once
        }
        return BEGUN;
    }

    /** The open registration a request may use, or null with the refusal's status set. */
    private TcpRegistration lookup(long key, long offset, long length) {
        TcpRegistration r = registry == null ? null : registry.lookup(key);
        if (r == null || r.closed()) {
            status = OpFrame.NO_REGISTRATION;
            return null;
        }
        if (!r.contains(offset, length)) {
            status = OpFrame.OUT_OF_RANGE;
            detail = r.length;
            return null;
        }
        return r;
    }

    /** Whether a write piece's payload is still to be read (after {@link #begin}). */
    boolean reading() {
        return piece.hasRemaining() || discardRemaining > 0;
    }

    /** Where socket 0 reads the current piece's payload: the registration, or a scratch buffer for refused bytes. */
    ByteBuffer buffer() {
        return piece.hasRemaining() ? piece : discard;
    }

    /** Socket 0 filled {@link #buffer()}; once the piece is all in (or dropped), a last piece applies the write. */
    void filled() {
        if (piece.hasRemaining()) {
            return;
        }
        if (discardRemaining > 0) {
            discardRemaining -= discard.position();
            discard.clear().limit(Math.min(discard.capacity(), discardRemaining));
            if (discardRemaining > 0) {
                return;
            }
        }
        piece = EMPTY;
        if (last) {
            open = false;
            queueReply(false, applied + 1, null, 0, 0);
            applied++;
        }
    }

    private void queueReply(boolean read, int op, TcpRegistration r, long offset, long length) {
        int k = (int) (replyTail & OPS_MASK);
        replyRead[k] = read;
        replyOp[k] = op;
        replyStatus[k] = status;
        replyDetail[k] = detail;
        replyRegistration[k] = r;
        replyOffset[k] = offset;
        replyLength[k] = length;
        replyServed[k] = 0;
        replyTail++;
        if (read) {
            pendingReads++;
        }
    }

    /**
     * Writes socket 0's reverse direction: the answer piece in progress, then queued control frames, then the next
     * answer piece or completion of the oldest operation owed a reply. False when the connection failed.
     */
    boolean writeBack(SocketChannel ch) {
        for (int w = 0; w < WRITES_BACK; w++) {
            try {
                if (answerHeader.hasRemaining() || answerPayload.hasRemaining()) {
                    if (answerHeader.hasRemaining()) {
                        ch.write(answerHeader);
                        if (answerHeader.hasRemaining()) {
                            return true;
                        }
                    }
                    if (answerPayload.hasRemaining()) {
                        ch.write(answerPayload);
                        if (answerPayload.hasRemaining()) {
                            return true;
                        }
                    }
                    answerPayload = EMPTY;
                    continue;
                }
                if (creditOwed != creditQueued && ctrl.remaining() >= EagerFrame.BYTES) {
                    EagerFrame.credit(ctrl, ctrl.position(), creditOwed);
                    ctrl.position(ctrl.position() + EagerFrame.BYTES);
                    creditQueued = creditOwed;
                    now = true;
                }
                if (ctrlDue()) {
                    ctrl.flip();
                    ch.write(ctrl);
                    ctrl.compact();
                    if (ctrl.position() > 0) {
                        now = true;                // a frame begun must be finished before anything else goes
                        return true;
                    }
                    now = false;
                    later = 0;
                }
            } catch (IOException e) {
                ctrl.clear();
                conn.lost(e);
                return false;
            } catch (IllegalStateException e) {
                conn.memoryGone(e);
                return false;
            }
            if (replyHead == replyTail) {
                return true;
            }
            nextReply();
        }
        return true;
    }

    /** Stages the next answer piece of the oldest reply owed, or its completion. */
    private void nextReply() {
        int k = (int) (replyHead & OPS_MASK);
        if (replyRead[k] && replyStatus[k] == OpFrame.OK && replyServed[k] < replyLength[k]) {
            TcpRegistration r = replyRegistration[k];
            if (r.closed()) {
                replyStatus[k] = OpFrame.NO_REGISTRATION; // closed while being read: the rest is refused
                return;
            }
            long served = replyServed[k];
            int n = (int) Math.min(ChunkHeader.SEND_MAX, replyLength[k] - served);
            answerHeader.clear();
            OpFrame.answer(answerHeader, 0, replyOp[k], served, n);
            answerPayload = answerViews.view(r, replyOffset[k] + served, n);
            replyServed[k] = served + n;
            return;
        }
        int at = ctrl.position();
        OpFrame.done(ctrl, at, replyOp[k], replyStatus[k], replyDetail[k]);
        ctrl.position(at + OpFrame.BYTES);
        now = true;
        if (replyRead[k]) {
            pendingReads--;
        }
        replyRegistration[k] = null;
        replyHead++;
    }
}
