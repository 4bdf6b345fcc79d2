package io.jmesh.transport.rdma;

import io.jmesh.transport.core.Cts;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * What a relayed verbs sender and the relay node write into each other's memory (a flyweight, as {@link Cts}). For
 * a large buffer the relay pulls: the sender only says where the buffer lies, and the relay RDMA-reads it in chunks
 * into memory registered on both of its devices and RDMA-writes each chunk from there into the receiver's posted
 * buffer. So the relay holds a bounded number of chunks per connection whatever the message sizes, and a slow
 * receiver slows the sender (no clear-to-send, no pull). A small buffer (up to {@link #INLINE_MAX}) travels inline:
 * the sender writes it together with its descriptor, in one write, into the space before the descriptor, and the
 * relay writes it on from there; that saves the read's round trip, which is most of a small message's relayed latency.
 *
 * <pre>
 * descriptor (32 B):  0 u64 addr   8 u64 length   16 u32 rkey   20 u32 flags (INLINE)   24 u64 seq (the request, from 1)
 *
 * relay's ring (registered on both devices, the sender writes it):
 *   entry e at e * STRIDE:  [0, INLINE_MAX) inline space, the payload ends where the descriptor starts | descriptor
 *   then the chunks the relay reads into
 * sender's control region           [0, FIFO)           clear-to-send FIFO: the receiver's entries, forwarded by the relay
 *                                   [FIFO, +STAGE)      descriptor staging, 32 B per entry
 *                                   [DONE_AT, +64)      done word, written by the relay
 * relay's control towards sender    [0, FIFO)           clear-to-send staging   [FIFO, +64) done staging
 * done word: requests whose data the relay has read (the sender's buffers are free), in order; bit 63: the relay
 *            failed the connection
 * </pre>
 */
final class RelayLayout {
    static final int DESC_BYTES = 32;
    static final int STRIDE = 4096;
    static final int INLINE_MAX = STRIDE - DESC_BYTES;
    /** the descriptor ring with its inline space, at the start of the relay's registered memory */
    static final long DESCS = (long) Cts.ENTRIES * STRIDE;
    static final long STAGE = (long) Cts.ENTRIES * DESC_BYTES;
    static final long DONE_AT = Cts.FIFO_BYTES + STAGE;
    static final long SENDER_CONTROL_BYTES = DONE_AT + 64;
    static final long RELAY_CONTROL_BYTES = Cts.FIFO_BYTES + 64;
    static final long FAILED = 1L << 63;
    static final int INLINE = 1;

    private static final long ADDR = 0;
    private static final long LENGTH = 8;
    private static final long RKEY = 16;
    private static final long FLAGS = 20;
    private static final long SEQ = 24;
    private static final VarHandle LONG = JAVA_LONG.varHandle();

    private RelayLayout() {
    }

    /**
     * Byte offset, in the relay's ring, of the descriptor at ring position {@code position} (the position of its
     * clear-to-send entry); an inline payload of n bytes lies at {@code at - n}.
     */
    static long at(long position) {
        return (position & (Cts.ENTRIES - 1)) * STRIDE + INLINE_MAX;
    }

    /** Byte offset of a descriptor in the sender's staging. */
    static long staged(long position) {
        return (position & (Cts.ENTRIES - 1)) * DESC_BYTES;
    }

    static void write(MemorySegment ring, long at, long addr, long length, int rkey, int flags, long seq) {
        ring.set(JAVA_LONG, at + ADDR, addr);
        ring.set(JAVA_LONG, at + LENGTH, length);
        ring.set(JAVA_INT, at + RKEY, rkey);
        ring.set(JAVA_INT, at + FLAGS, flags);
        LONG.setRelease(ring, at + SEQ, seq);
    }

    static int flags(MemorySegment ring, long at) {
        return ring.get(JAVA_INT, at + FLAGS);
    }

    static long seq(MemorySegment ring, long at) {
        return (long) LONG.getAcquire(ring, at + SEQ);
    }

    static long addr(MemorySegment ring, long at) {
        return ring.get(JAVA_LONG, at + ADDR);
    }

    static long length(MemorySegment ring, long at) {
        return ring.get(JAVA_LONG, at + LENGTH);
    }

    static int rkey(MemorySegment ring, long at) {
        return ring.get(JAVA_INT, at + RKEY);
    }

    static long done(MemorySegment control) {
        return (long) LONG.getAcquire(control, DONE_AT);
    }
}
