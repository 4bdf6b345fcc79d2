package io.jmesh.transport.tcp;

import java.nio.ByteBuffer;

/**
 * The header in front of every piece of a message on a data socket, a descriptor of a direct buffer. A message is
 * cut into chunks that go out on whichever data socket is free; the receiver reads each chunk straight into the
 * posted buffer at its offset, so chunks of one message may arrive in any order across the sockets. Every message,
 * a zero-length one too, has at least one chunk. Fixed layout ({@value #BYTES} bytes), big-endian:
 * <pre>
 *   0 u8  type      0x44 'D'
 *   1 u8  index     the buffer of the grouped receive it fills, 0..count-1
 *   2 u16 reserved  0
 *   4 u32 seq       the grouped receive's sequence number (see {@link CtsFrame})
 *   8 u64 total     the message's size, at most the posted buffer's size
 *  16 u64 offset    where this chunk goes in the buffer, offset + length <= total
 *  24 u32 length    the chunk's payload bytes, 0..{@value #MAX_CHUNK} (0 only when total is 0)
 *  28 u32 ops       one-sided operations the sender issued before this message ({@link OpFrame}, mod 2^32): the
 *                   receive completes only once the receiver has applied that many, so a write followed by a send
 *                   is in place when the send's receive completes, as on a verbs queue pair
 *  32 payload
 * </pre>
 */
final class ChunkHeader {
    static final byte TYPE = 0x44;
    /** The largest chunk a receiver accepts; senders cut at most {@value #SEND_MAX} bytes. */
    static final int MAX_CHUNK = 1 << 20;
    static final int SEND_MAX = 512 << 10;
    static final int SEND_MIN = 64 << 10;
    static final int TYPE_OFFSET = 0;
    static final int INDEX_OFFSET = 1;
    static final int RESERVED_OFFSET = 2;
    static final int SEQ_OFFSET = 4;
    static final int TOTAL_OFFSET = 8;
    static final int OFFSET_OFFSET = 16;
    static final int LENGTH_OFFSET = 24;
    static final int OPS_OFFSET = 28;
    static final int BYTES = 32;

    private ChunkHeader() {
    }

    /** Fills {@code h} (capacity {@value #BYTES}) and makes it ready to write. */
    static void write(ByteBuffer h, int index, int seq, long total, long offset, int length) {
        write(h, index, seq, total, offset, length, 0);
    }

    static void write(ByteBuffer h, int index, int seq, long total, long offset, int length, int ops) {
        h.put(TYPE_OFFSET, TYPE);
        h.put(INDEX_OFFSET, (byte) index);
        h.putShort(RESERVED_OFFSET, (short) 0);
        h.putInt(SEQ_OFFSET, seq);
        h.putLong(TOTAL_OFFSET, total);
        h.putLong(OFFSET_OFFSET, offset);
        h.putInt(LENGTH_OFFSET, length);
        h.putInt(OPS_OFFSET, ops);
        h.clear();
    }

    static int index(ByteBuffer h) {
        return Byte.toUnsignedInt(h.get(INDEX_OFFSET));
    }

    static int seq(ByteBuffer h) {
        return h.getInt(SEQ_OFFSET);
    }

    static long total(ByteBuffer h) {
        return h.getLong(TOTAL_OFFSET);
    }

    static long offset(ByteBuffer h) {
        return h.getLong(OFFSET_OFFSET);
    }

    static int ops(ByteBuffer h) {
        return h.getInt(OPS_OFFSET);
    }

    /** The length as sent: a negative value means more than 2^31 - 1 and is rejected by {@link #check}. */
    static int length(ByteBuffer h) {
        return h.getInt(LENGTH_OFFSET);
    }

    /**
     * Checks what a header can say about itself (type, reserved bytes, length and offset against total); returns
     * null when it is well formed, else what is wrong. The receiver then checks it against the posted buffer.
     */
    static String check(ByteBuffer h) {
        if (h.get(TYPE_OFFSET) != TYPE) {
            return "expected a data chunk, got type 0x" + Integer.toHexString(h.get(TYPE_OFFSET) & 0xff);
        }
        if (h.getShort(RESERVED_OFFSET) != 0) {
            return "a data chunk with non-zero reserved bytes";
        }
        long total = total(h);
        long offset = offset(h);
        int length = length(h);
        if (length < 0 || length > MAX_CHUNK) {
            return "a data chunk of " + Integer.toUnsignedString(length) + " bytes (at most " + MAX_CHUNK + ")";
        }
        if (total < 0 || offset < 0 || offset > total - length) {
            return "a data chunk at offset " + Long.toUnsignedString(offset) + " of " + length + " bytes in a "
                    + "message of " + Long.toUnsignedString(total) + " bytes";  // u64 on the wire: never negative
        }
        if (length == 0 && total != 0) {
            return "an empty data chunk in a message of " + Long.toUnsignedString(total) + " bytes";
        }
        return null;
    }
}
