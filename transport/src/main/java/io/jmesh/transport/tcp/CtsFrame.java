package io.jmesh.transport.tcp;

import java.nio.ByteBuffer;

/**
 * The clear-to-send frame, a descriptor of a direct buffer: the receiver sends one per grouped receive on data socket
 * 0, and the sender answers {@code NOT_READY} until the frame for its message is there, as the verbs sender waits for
 * its CTS FIFO entry. Frames are sent in request order. Fixed layout ({@value #BYTES} bytes), big-endian:
 * <pre>
 *   0 u8  type      0x43 'C'
 *   1 u8  count     buffers in the grouped receive, 1..8
 *   2 u16 flags     bit 0 LOCAL: only the receiving thread may write the buffers (memory of a confined arena):
 *                   send the messages on socket 0, not through the bulk sockets' helper threads; other bits 0
 *   4 u32 seq       the request's sequence number (1, 2, ...; mod 2^32); its slot is (seq - 1) mod 32
 *   8 u64 reserved  0
 *  16 entries, 8 of 16 bytes (those past count are 0):
 *       +0 u64 size   the posted buffer's size, 0..2^63-1
 *       +8 u32 tag
 *      +12 u32 reserved 0
 * 144 (length)
 * </pre>
 */
final class CtsFrame {
    static final byte TYPE = 0x43;
    static final int MAX_RECVS = 8;
    static final int TYPE_OFFSET = 0;
    static final int COUNT_OFFSET = 1;
    static final int FLAGS_OFFSET = 2;
    static final short LOCAL = 1;
    static final int SEQ_OFFSET = 4;
    static final int RESERVED2_OFFSET = 8;
    static final int ENTRIES_OFFSET = 16;
    static final int ENTRY_BYTES = 16;
    static final int ENTRY_SIZE_OFFSET = 0;
    static final int ENTRY_TAG_OFFSET = 8;
    static final int ENTRY_RESERVED_OFFSET = 12;
    static final int BYTES = ENTRIES_OFFSET + MAX_RECVS * ENTRY_BYTES;

    private CtsFrame() {
    }

    /** Writes a frame at {@code at} (absolute puts; the caller moves the position). */
    static void write(ByteBuffer b, int at, int seq, int count, long[] sizes, int[] tags, short flags) {
        b.put(at + TYPE_OFFSET, TYPE);
        b.put(at + COUNT_OFFSET, (byte) count);
        b.putShort(at + FLAGS_OFFSET, flags);
        b.putInt(at + SEQ_OFFSET, seq);
        b.putLong(at + RESERVED2_OFFSET, 0);
        for (int i = 0; i < MAX_RECVS; i++) {
            int e = at + ENTRIES_OFFSET + i * ENTRY_BYTES;
            b.putLong(e + ENTRY_SIZE_OFFSET, i < count ? sizes[i] : 0);
            b.putInt(e + ENTRY_TAG_OFFSET, i < count ? tags[i] : 0);
            b.putInt(e + ENTRY_RESERVED_OFFSET, 0);
        }
    }

    static int count(ByteBuffer b, int at) {
        return Byte.toUnsignedInt(b.get(at + COUNT_OFFSET));
    }

    static boolean local(ByteBuffer b, int at) {
        return (b.getShort(at + FLAGS_OFFSET) & LOCAL) != 0;
    }

    static int seq(ByteBuffer b, int at) {
        return b.getInt(at + SEQ_OFFSET);
    }

    static long size(ByteBuffer b, int at, int i) {
        return b.getLong(at + ENTRIES_OFFSET + i * ENTRY_BYTES + ENTRY_SIZE_OFFSET);
    }

    static int tag(ByteBuffer b, int at, int i) {
        return b.getInt(at + ENTRIES_OFFSET + i * ENTRY_BYTES + ENTRY_TAG_OFFSET);
    }

    /**
     * Checks the frame's fixed fields (type, count, reserved bytes, sizes); returns null when it is well formed,
     * else what is wrong. Allocates only when it finds a problem.
     */
    static String check(ByteBuffer b, int at) {
        if (b.get(at + TYPE_OFFSET) != TYPE) {
            return "expected a clear-to-send frame, got type 0x" + Integer.toHexString(b.get(at + TYPE_OFFSET) & 0xff);
        }
        int n = count(b, at);
        if (n < 1 || n > MAX_RECVS) {
            return "a clear-to-send for " + n + " buffers (1.." + MAX_RECVS + " allowed)";
        }
        if ((b.getShort(at + FLAGS_OFFSET) & ~LOCAL) != 0 || b.getLong(at + RESERVED2_OFFSET) != 0) {
            return "a clear-to-send with non-zero reserved bytes";
        }
        for (int i = 0; i < MAX_RECVS; i++) {
            int e = at + ENTRIES_OFFSET + i * ENTRY_BYTES;
            if (b.getInt(e + ENTRY_RESERVED_OFFSET) != 0) {
                return "a clear-to-send with non-zero reserved bytes";
            }
            if (i < n && b.getLong(e + ENTRY_SIZE_OFFSET) < 0) {
                return "a clear-to-send for a buffer of " + Long.toUnsignedString(b.getLong(e + ENTRY_SIZE_OFFSET))
                        + " bytes (at most 2^63 - 1)";
            }
            if (i >= n && (b.getLong(e + ENTRY_SIZE_OFFSET) != 0 || b.getInt(e + ENTRY_TAG_OFFSET) != 0)) {
                return "a clear-to-send with data in unused entry " + i;
            }
        }
        return null;
    }
}
