package io.jmesh.transport.tcp;

import java.nio.ByteBuffer;

/**
 * The three frames of the TCP eager path ({@link io.jmesh.transport.core.Eager}), descriptors of buffers, all
 * {@value #BYTES} bytes, big-endian. A RECORD carries a small message on data socket 0 with no clear-to-send round;
 * the receiver reads its payload into its own ring at the record's slot, where the core matches it exactly as a
 * record a verbs peer wrote. A CREDIT goes back on socket 0's reverse direction: the records the receiver's core
 * consumed, so their slots are free; a sender never has more than the ring's slots unconsumed. A FETCH goes forward:
 * the sender needs the clear-to-sends from entry {@code from} on, which the receiver may be keeping back (those of
 * receives small enough that any message for them comes as a record), so it writes them now.
 * <pre>
 * RECORD   0 u8  type      0x45 'E'
 *          1 u8  reserved  0     2 u16 reserved 0
 *          4 i32 buffer    the receive's buffer it fills (0..7), or -1: the receiver picks it by tag
 *          8 u64 position  the message's place among all sends of the connection
 *         16 u32 tag
 *         20 u32 length    payload bytes, 0..the ring's largest payload (agreed in the handshake)
 *         24 u64 seq       the record's number, 1, 2, ...: slot (seq - 1) mod slots
 *         32 payload
 *
 * CREDIT   0 u8  type      0x47 'G'
 *          1 u8[7] reserved 0
 *          8 u64 consumed  records consumed so far (never falls)
 *         16 u8[16] reserved 0
 *
 * FETCH    0 u8  type      0x46 'F'
 *          1 u8[7] reserved 0
 *          8 u64 from      the first clear-to-send entry the sender needs (its count of entries taken)
 *         16 u8[16] reserved 0
 * </pre>
 */
final class EagerFrame {
    static final byte RECORD = 0x45;
    static final byte CREDIT = 0x47;
    static final byte FETCH = 0x46;
    static final int BYTES = 32;
    static final int TYPE_OFFSET = 0;
    static final int RESERVED_OFFSET = 1;
    static final int BUFFER_OFFSET = 4;
    static final int POSITION_OFFSET = 8;
    static final int TAG_OFFSET = 16;
    static final int LENGTH_OFFSET = 20;
    static final int SEQ_OFFSET = 24;
    static final int CONSUMED_OFFSET = 8;
    static final int FROM_OFFSET = 8;

    private EagerFrame() {
    }

    /** A record's header at {@code at} of {@code b} (absolute puts). */
    static void record(ByteBuffer b, int at, long seq, long position, int tag, int length, int buffer) {
        b.putInt(at + TYPE_OFFSET, RECORD << 24);
        b.putInt(at + BUFFER_OFFSET, buffer);
        b.putLong(at + POSITION_OFFSET, position);
        b.putInt(at + TAG_OFFSET, tag);
        b.putInt(at + LENGTH_OFFSET, length);
        b.putLong(at + SEQ_OFFSET, seq);
    }

    /** A credit frame at {@code at} of {@code b} (absolute puts). */
    static void credit(ByteBuffer b, int at, long consumed) {
        b.putLong(at, (long) CREDIT << 56);
        b.putLong(at + CONSUMED_OFFSET, consumed);
        b.putLong(at + 16, 0);
        b.putLong(at + 24, 0);
    }

    /** A fetch frame at {@code at} of {@code b} (absolute puts). */
    static void fetch(ByteBuffer b, int at, long from) {
        b.putLong(at, (long) FETCH << 56);
        b.putLong(at + FROM_OFFSET, from);
        b.putLong(at + 16, 0);
        b.putLong(at + 24, 0);
    }

    static long from(ByteBuffer b, int at) {
        return b.getLong(at + FROM_OFFSET);
    }

    static int buffer(ByteBuffer b, int at) {
        return b.getInt(at + BUFFER_OFFSET);
    }

    static long position(ByteBuffer b, int at) {
        return b.getLong(at + POSITION_OFFSET);
    }

    static int tag(ByteBuffer b, int at) {
        return b.getInt(at + TAG_OFFSET);
    }

    static int length(ByteBuffer b, int at) {
        return b.getInt(at + LENGTH_OFFSET);
    }

    static long seq(ByteBuffer b, int at) {
        return b.getLong(at + SEQ_OFFSET);
    }

    static long consumed(ByteBuffer b, int at) {
        return b.getLong(at + CONSUMED_OFFSET);
    }

    /**
     * What is wrong with the record header at {@code at}, or null: record {@code expected} (the next one), for a
     * ring of {@code slots} slots of which the sender may use those up to {@code allowed} (credits handed back plus
     * slots), holding at most {@code maxPayload} bytes. The header came from the network.
     */
    static String checkRecord(ByteBuffer b, int at, long expected, long allowed, int maxPayload) {
        if ((b.getInt(at + TYPE_OFFSET) & 0xffffff) != 0) {
            return "an eager record with non-zero reserved bytes";
        }
        long seq = seq(b, at);
        if (seq != expected) {
            return "eager record number " + seq + " out of order (expected " + expected + ")";
        }
        if (seq > allowed) {
            return "eager record " + seq + " while only " + allowed + " were allowed by the credits handed back";
        }
        int length = length(b, at);
        if (length < 0 || length > maxPayload) {
            return "an eager record of " + Integer.toUnsignedString(length) + " bytes (at most " + maxPayload
                    + " were agreed)";
        }
        int buffer = buffer(b, at);
        if (buffer < -1 || buffer >= CtsFrame.MAX_RECVS) {
            return "an eager record for buffer " + buffer + " (-1.." + (CtsFrame.MAX_RECVS - 1) + ")";
        }
        if (position(b, at) < 0) {
            return "an eager record at stream position " + position(b, at);
        }
        return null;
    }

    /** What is wrong with the fetch frame at {@code at}, or null. It came from the network. */
    static String checkFetch(ByteBuffer b, int at) {
        if (reservedSet(b, at)) {
            return "a clear-to-send fetch with non-zero reserved bytes";
        }
        if (from(b, at) < 0) {
            return "a clear-to-send fetch from entry " + from(b, at);
        }
        return null;
    }

    /** What is wrong with the credit frame at {@code at}, or null, given the records sent so far and the last credit. */
    static String checkCredit(ByteBuffer b, int at, long sent, long last) {
        if (reservedSet(b, at)) {
            return "an eager credit with non-zero reserved bytes";
        }
        long consumed = consumed(b, at);
        if (consumed < last || consumed > sent) {
            return "an eager credit for " + consumed + " records (" + last + " credited before, " + sent + " sent)";
        }
        return null;
    }

    /** Whether a CREDIT, FETCH or goodbye frame has a non-zero byte where only its type and one u64 may be. */
    static boolean reservedSet(ByteBuffer b, int at) {
        return (b.getLong(at) & 0x00ffffffffffffffL) != 0 || b.getLong(at + 16) != 0 || b.getLong(at + 24) != 0;
    }
}
