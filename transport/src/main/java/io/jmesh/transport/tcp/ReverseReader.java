package io.jmesh.transport.tcp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.function.LongConsumer;

/**
 * What a sender reads on socket 0's reverse direction: the receiver's clear-to-send frames (into the {@link
 * CtsIntake}), the answers and completions of one-sided operations (answer payloads straight into the reader's
 * memory, through the {@link OpOutbox}) and eager credits (into the {@link EagerOutbox}). Frames are taken whole from
 * one staging buffer; anything else from the network fails the connection. Runs on the sender's thread inside its
 * progress; allocates nothing.
 */
final class ReverseReader {
    private static final int BYTES = 64 << 10;
    private static final int READS = 8;

    private final ByteBuffer reverse = ByteBuffer.allocateDirect(BYTES);
    private final SocketChannel socket;
    private final DataConnection conn;
    private final CtsIntake cts;
    private final OpOutbox ops;
    private final EagerOutbox eager;
    /** Takes the issue number of a one-sided operation that completed: the sender's completion order. */
    private final LongConsumer finished;

    /** @param eager the eager path's outbox, or null where the listener keeps no ring (no credits then) */
    ReverseReader(SocketChannel socket, DataConnection conn, CtsIntake cts, OpOutbox ops, EagerOutbox eager,
                  LongConsumer finished) {
        this.socket = socket;
        this.conn = conn;
        this.cts = cts;
        this.ops = ops;
        this.eager = eager;
        this.finished = finished;
    }

    /** Reads what the receiver sent back and takes the frames in it; bounded work. */
    void read() {
        cts.fileHeld();
        for (int r = 0; r < READS; r++) {
            int got;
            try {
                got = socket.read(reverse);
            } catch (IOException e) {
                conn.lost(e);
                return;
            }
            if (got < 0) {
                conn.lostEndOfStream(ops.answerPending() || reverse.position() > 0 ? " in the middle of a frame" : "");
                return;
            }
            boolean fullBuffer = !reverse.hasRemaining();
            reverse.flip();
            boolean ok = takeFrames();
            reverse.compact();
            if (!ok || !fullBuffer) {
                return;
            }
        }
    }

    /** Takes every whole frame (and answer payload) in the staging buffer; false when the connection failed. */
    private boolean takeFrames() {
        while (true) {
            if (ops.answerPending()) {
                if (!ops.takeAnswer(reverse)) {
                    return false;
                }
                if (ops.answerPending()) {
                    return true;
                }
                continue;
            }
            if (!reverse.hasRemaining()) {
                return true;
            }
            int at = reverse.position();
            byte type = reverse.get(at);
            boolean credit = type == EagerFrame.CREDIT && eager != null;
            if (type != CtsFrame.TYPE && type != OpFrame.ANSWER && type != OpFrame.DONE && !credit) {
                conn.violation("expected a clear-to-send, a one-sided reply" + (eager != null ? " or an eager credit"
                        : "") + ", got type 0x" + Integer.toHexString(type & 0xff));
                return false;
            }
            int need = type == CtsFrame.TYPE ? CtsFrame.BYTES : credit ? EagerFrame.BYTES : OpFrame.BYTES;
            if (reverse.remaining() < need) {
                return true;
            }
            if (!(type == CtsFrame.TYPE ? cts.accept(reverse, at) : credit ? acceptCredit(at) : acceptReply(at))) {
                return false;
            }
            reverse.position(at + need);
        }
    }

    /** An answer or completion of a one-sided operation; its end goes into the completion order. */
    private boolean acceptReply(int at) {
        int r = ops.reply(reverse, at);
        if (r == 1) {
            finished.accept(ops.completed());
        }
        return r >= 0;
    }

    private boolean acceptCredit(int at) {
        String bad = eager.credit(reverse, at);
        if (bad != null) {
            conn.violation(bad);
            return false;
        }
        return true;
    }
}
