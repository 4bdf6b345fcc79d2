package io.jmesh.transport.core;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The eager ring, a descriptor of off-heap memory (static accessors, as {@link Cts}): small messages travel as records
 * written straight into a ring the receiver announced once, at connect time, and the receiver finds them by reading its
 * own memory: no clear-to-send round and no completion per message. Records fill the ring's {@link #SLOTS} fixed slots
 * in order (record r, from 1, in slot (r - 1) mod SLOTS); the receiver hands the consumed count back in batches
 * (credits), and the sender never has more than SLOTS records unconsumed. The stream position is the message's place
 * among all the sends of the connection (eager or not): the receiver matches it to the grouped receive that covers it.
 *
 * <pre>
 * record (slot of SLOT_BYTES):  0 u64 position   8 u32 tag   12 u32 length
 *                               16 i32 buffer (the receive's buffer index, or -1: the receiver picks it by tag)
 *                               20 u32 0   24 u64 seq (the record, from 1)   32 payload (length bytes)
 *                               32 + align8(length) u64 seq again (trailer)
 * </pre>
 *
 * The sender writes a record with one RDMA write; the NIC places one write's bytes in address order,
 * as the last-byte polling of perftest's ib_write_lat also assumes. So the receiver reads the header's seq (the
 * header's last field), then the fields before it, then the trailer's seq, each seq with acquire: once the trailer
 * shows the record's seq, the payload before it is in place.
 */
public final class Eager {
    // The verbs ring's geometry, fixed because both ends' control regions are laid out from it; a TCP ring's comes
    // from the handshake (an instance of this class)
    /** Slots of a ring: records a sender may have written that the receiver has not consumed. */
    public static final int SLOTS = 64;
    public static final int HEADER_BYTES = 32;
    public static final int TRAILER_BYTES = 8;
    /** The largest payload a slot holds, so the largest eager message. */
    public static final int MAX_PAYLOAD = 4096;
    public static final int SLOT_BYTES = HEADER_BYTES + MAX_PAYLOAD + 64;
    public static final long RING_BYTES = (long) SLOTS * SLOT_BYTES;
    /** The receiver hands credits back once this many records of the verbs ring were consumed since it last did. */
    public static final int CREDIT_BATCH = SLOTS / 4;

    private static final long POSITION = 0;
    private static final long TAG = 8;
    private static final long LENGTH = 12;
    private static final long BUFFER = 16;
    private static final long SEQ = 24;
    private static final VarHandle LONG = JAVA_LONG.varHandle();

    /** The verbs ring. */
    public static final Eager VERBS = new Eager(SLOTS, MAX_PAYLOAD, SLOT_BYTES);

    /** Slots (a power of two), the largest payload, the bytes of a slot, of the ring; the credit batch. */
    public final int slots;
    public final int maxPayload;
    public final int slotBytes;
    public final long ringBytes;
    public final int creditBatch;

    private Eager(int slots, int maxPayload, int slotBytes) {
        this.slots = slots;
        this.maxPayload = maxPayload;
        this.slotBytes = slotBytes;
        this.ringBytes = (long) slots * slotBytes;
        this.creditBatch = Math.max(1, slots / 4);
    }

    /**
     * A ring of {@code slots} slots (a power of two, 2..1024) for payloads of up to {@code maxPayload} bytes
     * (1..16 MiB), each slot rounded up to a cache line.
     */
    public static Eager of(int slots, int maxPayload) {
        if (slots < 2 || slots > 1024 || Integer.bitCount(slots) != 1 || maxPayload < 1 || maxPayload > 16 << 20) {
            throw new IllegalArgumentException("eager ring of " + slots + " slots of " + maxPayload
                    + " bytes (slots: a power of two 2..1024; payload 1..16 MiB)");
        }
        return new Eager(slots, maxPayload, (recordBytes(maxPayload) + 63) & -64);
    }

    /** Byte offset of record {@code seq}'s slot in this ring. */
    public long at(long seq) {
        return ((seq - 1) & (slots - 1)) * (long) slotBytes;
    }

    /**
     * Whether record {@code seq} is complete at {@code at}: its header and its trailer show it (a slot holds an older
     * record, or a part of this one, until then). The length is checked first: it came from the network.
     */
    public boolean complete(MemorySegment ring, long at, long seq) {
        if ((long) LONG.getAcquire(ring, at + SEQ) != seq) {
            return false;
        }
        int length = length(ring, at);
        return length >= 0 && length <= maxPayload
                && (long) LONG.getAcquire(ring, at + HEADER_BYTES + align8(length)) == seq;
    }

    /** Bytes of a record with {@code length} payload bytes, trailer included. */
    public static int recordBytes(int length) {
        return HEADER_BYTES + align8(length) + TRAILER_BYTES;
    }

    private static int align8(int length) {
        return (length + 7) & -8;
    }

    /** Fills the header and the trailer of a record whose payload is in place at {@link #payload}. */
    public static void write(MemorySegment ring, long at, long seq, long position, int tag, int length, int buffer) {
        ring.set(JAVA_LONG, at + POSITION, position);
        ring.set(JAVA_INT, at + TAG, tag);
        ring.set(JAVA_INT, at + LENGTH, length);
        ring.set(JAVA_INT, at + BUFFER, buffer);
        ring.set(JAVA_INT, at + BUFFER + 4, 0);
        LONG.setRelease(ring, at + SEQ, seq);
        LONG.setRelease(ring, at + HEADER_BYTES + align8(length), seq);
    }

    /** Byte offset of a record's payload. */
    public static long payload(long at) {
        return at + HEADER_BYTES;
    }

    public static long position(MemorySegment ring, long at) {
        return ring.get(JAVA_LONG, at + POSITION);
    }

    public static int tag(MemorySegment ring, long at) {
        return ring.get(JAVA_INT, at + TAG);
    }

    public static int length(MemorySegment ring, long at) {
        return ring.get(JAVA_INT, at + LENGTH);
    }

    public static int buffer(MemorySegment ring, long at) {
        return ring.get(JAVA_INT, at + BUFFER);
    }
}
