package io.jmesh.transport.tcp;

import io.jmesh.api.Status;
import io.jmesh.transport.core.Op;
import io.jmesh.transport.core.OpWindow;

import java.nio.ByteBuffer;

/**
 * A TCP sender's one-sided operations ({@link OpFrame}): issued, put on socket 0 (a read as one request, a write as
 * pieces of at most {@link ChunkHeader#SEND_MAX} bytes), then answered by the owner in operation order: a read's
 * answer pieces land in the reader's memory, and one completion per operation ends it. Everything the owner sends back
 * is checked against the oldest operation not yet completed, the only one it may be for. One thread (the sender's).
 */
final class OpOutbox {
    private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0);

    /** An operation on its way out: how much of a write's data went on the wire, and how it ended. */
    private static final class Outgoing {
        Op op;
        long assigned;
        long issue;
        int result;
        String failure;
    }

    private final DataConnection conn;
    private final Outgoing[] ops = new Outgoing[OpWindow.SIZE];
    /** Issued, put on the wire (all pieces handed to socket 0), answered by the owner. */
    private long issued;
    private long sent;
    private long done;
    /** The read whose answer piece is arriving, what of it arrived, and what of the piece is still to come. */
    private Op answering;
    private long answered;
    private int answerRemaining;
    private final ViewCache answerViews = new ViewCache();
    /** The issue number of the operation the last {@link #reply} completed. */
    private long completed;

    OpOutbox(DataConnection conn) {
        this.conn = conn;
        for (int k = 0; k < ops.length; k++) {
            ops[k] = new Outgoing();
        }
    }

    /** Takes an operation; {@code issue} is its place in the sender's completion order. */
    void issue(Op op, long issue) {
        Outgoing o = ops[op.index];
        o.op = op;
        o.assigned = 0;
        o.result = 0;
        o.failure = null;
        o.issue = issue;
        issued++;
    }

    /** Operations issued so far (mod 2^32 it is what a message's chunks carry). */
    long issued() {
        return issued;
    }

    /** Reports operation {@code index}'s end to the core (the sender's completion order reached it). */
    void finish(int index) {
        Outgoing o = ops[index];
        o.op.finish(o.result, o.failure);
        o.op = null;
    }

    /**
     * Fills {@code header} with the next frame of the oldest operation not yet on the wire.
     *
     * @return the frame's payload (empty for a read), or null when every operation is on the wire
     */
    ByteBuffer next(ByteBuffer header, ViewCache views) {
        if (sent == issued) {
            return null;
        }
        Outgoing o = ops[(int) (sent & (OpWindow.SIZE - 1))];
        Op op = o.op;
        int number = (int) (sent + 1);
        long key = TcpRegistration.idOf(op.remote);
        if (op.read) {
            OpFrame.request(header, OpFrame.READ, true, number, key, op.remoteOffset, op.length);
            sent++;
            return EMPTY;
        }
        long from = o.assigned;
        int length = (int) Math.min(ChunkHeader.SEND_MAX, op.length - from);
        boolean last = from + length == op.length;
        OpFrame.request(header, OpFrame.WRITE, last, number, key, op.remoteOffset + from, length);
        o.assigned = from + length;
        if (last) {
            sent++;
        }
        return length == 0 ? EMPTY : views.view((TcpRegistration) op.local, op.localOffset + from, length);
    }

    /** Whether the reverse direction is in the middle of an answer's payload. */
    boolean answerPending() {
        return answerRemaining > 0;
    }

    /**
     * Moves what {@code reverse} holds of the answer piece in progress into the reader's memory.
     *
     * @return false when the memory is gone (the connection failed)
     */
    boolean takeAnswer(ByteBuffer reverse) {
        int n = Math.min(answerRemaining, reverse.remaining());
        if (n == 0) {
            return true;
        }
        Op op = answering;
        ByteBuffer dst = answerViews.view((TcpRegistration) op.local, op.localOffset + answered, n);
        int limit = reverse.limit();
        reverse.limit(reverse.position() + n);
        try {
            dst.put(reverse);
        } catch (IllegalStateException e) {
            conn.memoryGone(e);
            return false;
        } finally {
            reverse.limit(limit);
        }
        answered += n;
        answerRemaining -= n;
        return true;
    }

    /**
     * Takes an answer header or a completion at {@code at}.
     *
     * @return 1 when it completed an operation ({@link #completed()} has its issue number), 0 for an answer header,
     *         or -1 when it broke the protocol (the connection failed)
     */
    int reply(ByteBuffer reverse, int at) {
        String bad = OpFrame.checkReply(reverse, at);
        if (bad != null) {
            conn.violation(bad);
            return -1;
        }
        long next = done + 1;
        int number = OpFrame.op(reverse, at);
        if (next > sent || number != (int) next) {
            conn.violation("a reply for one-sided operation " + Integer.toUnsignedString(number) + " (expected "
                    + (next > sent ? "none: " + (issued - done) + " unsent" : String.valueOf(next)) + ")");
            return -1;
        }
        Outgoing o = ops[(int) ((next - 1) & (OpWindow.SIZE - 1))];
        Op op = o.op;
        long got = answering == op ? answered : 0;
        if (OpFrame.type(reverse, at) == OpFrame.ANSWER) {
            long offset = OpFrame.offset(reverse, at);
            int length = OpFrame.pieceLength(reverse, at);
            if (!op.read || offset != got || length > op.length - offset) {
                conn.violation("an answer of " + length + " bytes at " + offset + " for " + (op.read
                        ? "a read of " + op.length + " bytes with " + got + " received" : "a write"));
                return -1;
            }
            answering = op;
            answered = got;
            answerRemaining = length;
            return 0;
        }
        int status = OpFrame.status(reverse, at);
        if (status == OpFrame.OK) {
            if (op.read && got != op.length) {
                conn.violation("a read completed with " + got + " of " + op.length + " bytes");
                return -1;
            }
            o.result = 1;
        } else {
            o.result = Status.REFUSED;
            o.failure = refusal(op, status, OpFrame.detail(reverse, at));
        }
        answering = null;
        done = next;
        completed = o.issue;
        return 1;
    }

    /** The issue number of the operation the last {@link #reply} that answered 1 completed. */
    long completed() {
        return completed;
    }

    /** The error for a refused operation: what the owner said, and what to do. Failure path only. */
    private String refusal(Op op, int status, long detail) {
        String what = (op.read ? "read of " : "write of ") + op.length + " bytes at offset " + op.remoteOffset;
        return "the peer " + conn.peer + " refused the one-sided " + what + ": " + (status == OpFrame.NO_REGISTRATION
                ? "it has no open registration with that region's id (the registration was closed, or the "
                + "RemoteRegion is not from this peer or was corrupted); use a RemoteRegion the peer sent for a "
                + "registration it keeps open"
                : "the range lies outside its registration of " + detail + " bytes (the RemoteRegion does not "
                + "match the peer's registration); use the RemoteRegion exactly as the peer sent it");
    }
}
