package io.jmesh.transport.rdma;

import io.jmesh.transport.core.Cts;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * What a relayed verbs sender and the relay node write into each other's memory (a descriptor, as {@link Cts}). For
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
 *   [BYE_AT, +64) goodbye word: the sender's messages in all, plus 1, written once when it closes
 *   [CHUNKS_AT, ...) the chunks the relay reads into
 * sender's control region           [0, FIFO)           clear-to-send FIFO: the receiver's entries, forwarded by the relay
 *                                   [FIFO, +STAGE)      descriptor staging, 32 B per entry
 *                                   [DONE_AT, +64)      done word, written by the relay
 *                                   [BYE_STAGING_AT, +64) the goodbye word, staged
 * relay's control towards sender    [0, FIFO)           clear-to-send staging   [FIFO, +64) done staging
 * done word: requests whose data the relay has read (the sender's buffers are free), in order; bit 63: the relay
 *            failed the connection
 * </pre>
 *
 * <p>Between two relays (a route through several) nothing is pulled: the upstream relay cannot hold a whole message
 * for the next to read. It pushes records instead, each one RDMA write of a piece of a buffer and a trailer behind it
 * into the next relay's record ring, at most as many as that ring has free slots (credits):
 *
 * <pre>
 * record slot r at r * (recordBytes + TRAILER):  [payload, right-aligned: it ends where the trailer starts] trailer
 * trailer (32 B):  0 u64 offset in the buffer   8 u32 length   12 u8 buffer   13 u8 flags (LAST of its message;
 *                  BYE: no data, the node before closed after the messages before it, whose count is the total)
 *                  14 u16 0   16 u64 the buffer's whole length   24 u64 seq (the record, from 1; written last)
 * upstream relay's control towards the next relay (its down endpoint):
 *   [0, FIFO) clear-to-send FIFO (the receiver's entries, forwarded)   [CREDIT_AT, +64) credit word, written by the
 *   next relay: records it has passed on (their slots are free); bit 63: it failed the connection
 *   [TRAILERS_AT, +MAX_RECORDS * 32) trailer staging, one per slot of the next relay's ring
 * </pre>
 * Every buffer gets at least one record (an empty one for 0 bytes), so the next relay learns every buffer's size.
 */
final class RelayLayout {
    static final int DESC_BYTES = 32;
    static final int STRIDE = 4096;
    static final int INLINE_MAX = STRIDE - DESC_BYTES;
    /** the descriptor ring with its inline space, at the start of the relay's registered memory */
    static final long DESCS = (long) Cts.ENTRIES * STRIDE;
    static final long STAGE = (long) Cts.ENTRIES * DESC_BYTES;
    static final long BYE_AT = DESCS;
    static final long CHUNKS_AT = BYE_AT + 64;
    static final long DONE_AT = Cts.FIFO_BYTES + STAGE;
    static final long BYE_STAGING_AT = DONE_AT + 64;
    static final long SENDER_CONTROL_BYTES = BYE_STAGING_AT + 64;
    static final long RELAY_CONTROL_BYTES = Cts.FIFO_BYTES + 64;
    static final long FAILED = 1L << 63;
    static final int INLINE = 1;

    static final int TRAILER_BYTES = 32;
    static final int LAST = 1;
    static final int BYE = 2;
    /** The most record slots a relay's ring may have ({@code JMESH_RELAY_CHUNKS}' bound). */
    static final int MAX_RECORDS = 256;
    /** The largest record slot a relay may offer ({@code JMESH_RELAY_CHUNK_KIB}' bound). */
    static final int MAX_RECORD_BYTES = 64 << 20;
    static final long CREDIT_AT = ControlRegion.BYTES;
    static final long TRAILERS_AT = CREDIT_AT + 64;
    /** A relay's control region towards the next node: what a direct sender has, then the credit word and trailers. */
    static final long RELAY_DOWN_CONTROL_BYTES = TRAILERS_AT + (long) MAX_RECORDS * TRAILER_BYTES;
    private static final long T_OFFSET = 0;
    private static final long T_LENGTH = 8;
    private static final long T_BUFFER = 12;
    private static final long T_FLAGS = 13;
    private static final long T_TOTAL = 16;
    private static final long T_SEQ = 24;

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

    /** The sender's goodbye in the relay's ring: its messages in all plus 1, or 0 while it has not closed. */
    static long bye(MemorySegment ring) {
        return (long) LONG.getAcquire(ring, BYE_AT);
    }

    static long done(MemorySegment control) {
        return (long) LONG.getAcquire(control, DONE_AT);
    }

    static void trailer(MemorySegment m, long at, long offset, int length, int buffer, int flags, long total,
                        long seq) {
        m.set(JAVA_LONG, at + T_OFFSET, offset);
        m.set(JAVA_INT, at + T_LENGTH, length);
        m.set(JAVA_BYTE, at + T_BUFFER, (byte) buffer);
        m.set(JAVA_BYTE, at + T_FLAGS, (byte) flags);
        m.set(JAVA_LONG, at + T_TOTAL, total);
        LONG.setRelease(m, at + T_SEQ, seq);
    }

    static long trailerSeq(MemorySegment m, long at) {
        return (long) LONG.getAcquire(m, at + T_SEQ);
    }

    static long trailerOffset(MemorySegment m, long at) {
        return m.get(JAVA_LONG, at + T_OFFSET);
    }

    /** Unsigned: a length from the network is checked as a long. */
    static long trailerLength(MemorySegment m, long at) {
        return Integer.toUnsignedLong(m.get(JAVA_INT, at + T_LENGTH));
    }

    static int trailerBuffer(MemorySegment m, long at) {
        return Byte.toUnsignedInt(m.get(JAVA_BYTE, at + T_BUFFER));
    }

    static int trailerFlags(MemorySegment m, long at) {
        return Byte.toUnsignedInt(m.get(JAVA_BYTE, at + T_FLAGS));
    }

    static long trailerTotal(MemorySegment m, long at) {
        return m.get(JAVA_LONG, at + T_TOTAL);
    }

    static long credit(MemorySegment control) {
        return (long) LONG.getAcquire(control, CREDIT_AT);
    }
}
