package io.jmesh.transport.tcp;

import io.jmesh.transport.core.Cts;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * A TCP sender's clear-to-sends on their way into the core: each frame ({@link CtsFrame}) is checked, then filed as
 * {@link Cts} entries into the FIFO the core matches against, exactly where a verbs receiver would have written them.
 * A frame is filed only where it overwrites no entry the core has not taken yet (the entries of the slots it filled).
 * Eager sends let the receiver run ahead of what the core learned (a receive they filled completes there, and the
 * receiver posts another), so a frame that does not fit waits here, in order, while the frames behind it on the
 * socket (credits, one-sided replies) are still taken; it is filed once the core has moved on.
 *
 * <pre>
 *   learned <= entryHead - (entries of the frames waiting) ... entryHead <= learned + Cts.ENTRIES
 * </pre>
 *
 * One thread (the sender's).
 */
final class CtsIntake {
    /** Frames that may wait for the core: the eager sends' replay history (256) and a ring of receives. */
    static final int HELD_FRAMES = 256 + Cts.MAX_REQUESTS;

    private final DataConnection conn;
    private final MemorySegment fifo = Arena.ofAuto().allocate(Cts.FIFO_BYTES, 64);
    /** Frames accepted so far, frames filed (in the same order), and the ring position of the next entry filed. */
    private long received;
    private long filed;
    private long entryHead;
    /** FIFO entries the core has taken. */
    private long learned;
    private final ByteBuffer held = ByteBuffer.allocateDirect(HELD_FRAMES * CtsFrame.BYTES);
    /** Per receive number (mod {@link Cts#ENTRIES}, what the FIFO can hold): only the peer's thread writes its buffers. */
    private final boolean[] peerLocal = new boolean[Cts.ENTRIES];

    CtsIntake(DataConnection conn) {
        this.conn = conn;
    }

    /** The FIFO the core reads. */
    MemorySegment fifo() {
        return fifo;
    }

    /** The core filled a slot: it took that slot's {@code entries}. */
    void learned(int entries) {
        learned += entries;
    }

    /** Whether receive {@code seq}'s buffers may only be written by the peer's own thread (send on socket 0). */
    boolean peerLocal(long seq) {
        return peerLocal[(int) (seq & (Cts.ENTRIES - 1))];
    }

    /** Checks one frame at {@code at} of {@code b}; files it or holds it. False when it broke the protocol. */
    boolean accept(ByteBuffer b, int at) {
        String bad = CtsFrame.check(b, at);
        if (bad != null) {
            conn.violation(bad);
            return false;
        }
        long seq = received + 1;
        if (CtsFrame.seq(b, at) != (int) seq) {
            conn.violation("clear-to-send number " + Integer.toUnsignedString(CtsFrame.seq(b, at))
                    + " out of order (expected " + seq + ")");
            return false;
        }
        received = seq;
        if (held.position() == 0 && fits(b, at)) {
            file(b, at);
            return true;
        }
        if (held.remaining() < CtsFrame.BYTES) {
            conn.violation("clear-to-send number " + seq + " while " + HELD_FRAMES + " wait for this end to take "
                    + "them: the receiver posts receives no send has reached");
            return false;
        }
        held.put(b.slice(at, CtsFrame.BYTES));
        return true;
    }

    /** Files the held frames that fit now, in order. */
    void fileHeld() {
        int end = held.position();
        int at = 0;
        while (at < end && fits(held, at)) {
            file(held, at);
            at += CtsFrame.BYTES;
        }
        if (at > 0) {
            held.flip().position(at);
            held.compact();
        }
    }

    private boolean fits(ByteBuffer b, int at) {
        return entryHead + CtsFrame.count(b, at) - learned <= Cts.ENTRIES;
    }

    private void file(ByteBuffer b, int at) {
        int n = CtsFrame.count(b, at);
        long seq = ++filed;
        for (int i = 0; i < n; i++) {
            Cts.write(fifo, Cts.at(entryHead + i), 0, CtsFrame.size(b, at, i), null, 0, 0, CtsFrame.tag(b, at, i), n,
                    seq);
        }
        entryHead += n;
        peerLocal[(int) (seq & (Cts.ENTRIES - 1))] = CtsFrame.local(b, at);
    }
}
