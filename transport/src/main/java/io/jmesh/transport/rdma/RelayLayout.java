package io.jmesh.transport.rdma;

import io.jmesh.transport.core.Cts;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * What a relayed verbs sender and the relay node write into each other's control regions (a flyweight, as {@link
 * Cts}). The relay pulls: the sender never writes data anywhere, it only says where each matched message lies, and
 * the relay RDMA-reads it in chunks into memory registered on both of its devices and RDMA-writes each chunk from
 * there into the receiver's posted buffer. So the relay holds a bounded number of chunks per connection whatever the
 * message sizes, and a slow receiver slows the sender (no clear-to-send, no pull).
 *
 * <pre>
 * descriptor (32 B):  0 u64 addr   8 u64 length   16 u32 rkey   20 u32 zero   24 u64 seq (the request, from 1)
 *
 * sender's control region           [0, FIFO)           clear-to-send FIFO: the receiver's entries, forwarded by the relay
 *                                   [FIFO, +DESCS)      descriptor staging (the sender's, written to the relay)
 *                                   [DONE_AT, +64)      done word, written by the relay
 * relay's control towards sender    [0, DESCS)          descriptor ring, written by the sender, at the entries' positions
 *                                   [DESCS, +FIFO)      clear-to-send staging   [DESCS + FIFO, +64) done staging
 * done word: requests whose data the relay has read (the sender's buffers are free), in order; bit 63: the relay
 *            failed the connection
 * </pre>
 */
final class RelayLayout {
    static final int DESC_BYTES = 32;
    static final long DESCS = (long) Cts.ENTRIES * DESC_BYTES;
    static final long DONE_AT = Cts.FIFO_BYTES + DESCS;
    static final long SENDER_CONTROL_BYTES = DONE_AT + 64;
    static final long RELAY_CONTROL_BYTES = DESCS + Cts.FIFO_BYTES + 64;
    static final long FAILED = 1L << 63;

    private static final long ADDR = 0;
    private static final long LENGTH = 8;
    private static final long RKEY = 16;
    private static final long SEQ = 24;
    private static final VarHandle LONG = JAVA_LONG.varHandle();

    private RelayLayout() {
    }

    /** Byte offset of the descriptor at ring position {@code position} (the position of its clear-to-send entry). */
    static long at(long position) {
        return (position & (Cts.ENTRIES - 1)) * DESC_BYTES;
    }

    static void write(MemorySegment ring, long at, long addr, long length, int rkey, long seq) {
        ring.set(JAVA_LONG, at + ADDR, addr);
        ring.set(JAVA_LONG, at + LENGTH, length);
        ring.set(JAVA_INT, at + RKEY, rkey);
        ring.set(JAVA_INT, at + RKEY + 4, 0);
        LONG.setRelease(ring, at + SEQ, seq);
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
