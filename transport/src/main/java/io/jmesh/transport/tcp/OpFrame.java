package io.jmesh.transport.tcp;

import java.nio.ByteBuffer;

/**
 * The frames of one-sided operations, descriptors of direct buffers, all {@value #BYTES} bytes, big-endian. They
 * travel on data socket 0 only, so each direction of that socket keeps them in order.
 *
 * <p>Initiator (the connection's sender) to owner (its receiver), between the data chunks of socket 0:
 * <pre>
 *   'W' write piece, followed by its payload; an operation is one or more consecutive pieces, the last flagged
 *    0 u8  type 0x57      1 u8  flags (bit 0: last piece)     2 u16 reserved 0
 *    4 u32 op             the operation's number: 1, 2, ... (mod 2^32), one after the previous operation
 *    8 u64 key            the registration id (from the owner's RemoteRegion)
 *   16 u64 offset         from the registration's first byte
 *   24 u32 length         the payload, 0..{@value ChunkHeader#MAX_CHUNK}     28 u32 reserved 0
 *   'R' read request
 *    0 u8  type 0x52      1 u8  flags 1                       2 u16 reserved 0
 *    4 u32 op             8 u64 key       16 u64 offset
 *   24 u64 length         the bytes to read, 0..2^63-1
 * </pre>
 * Owner to initiator, between the clear-to-send frames of socket 0, in operation order:
 * <pre>
 *   'A' answer piece of a read, followed by its payload
 *    0 u8  type 0x41      1 u8 0    2 u16 0     4 u32 op
 *    8 u64 offset         within the read (pieces come in order)
 *   16 u64 reserved 0     24 u32 length 1..{@value ChunkHeader#MAX_CHUNK}   28 u32 reserved 0
 *   'K' completion: the write was applied, or every answer piece of the read was sent, or the operation was refused
 *    0 u8  type 0x4b      1 u8 status ({@link #OK}, {@link #NO_REGISTRATION}, {@link #OUT_OF_RANGE})
 *    2 u16 0              4 u32 op
 *    8 u64 detail         for OUT_OF_RANGE the registration's length, else 0
 *   16..31 reserved 0
 * </pre>
 */
final class OpFrame {
    static final byte WRITE = 0x57;
    static final byte READ = 0x52;
    static final byte ANSWER = 0x41;
    static final byte DONE = 0x4b;
    static final int BYTES = 32;
    static final int LAST = 1;

    /** Completion statuses: applied or served. */
    static final int OK = 0;
    /** No open registration has the id: it was closed, or the region is not from this peer, or it is corrupt. */
    static final int NO_REGISTRATION = 1;
    /** The range lies outside the registration (the region the initiator holds is not the owner's). */
    static final int OUT_OF_RANGE = 2;

    static final int TYPE_OFFSET = 0;
    static final int FLAGS_OFFSET = 1;
    static final int RESERVED_OFFSET = 2;
    static final int OP_OFFSET = 4;
    static final int KEY_OFFSET = 8;
    static final int OFFSET_OFFSET = 16;
    static final int LENGTH_OFFSET = 24;
    static final int RESERVED2_OFFSET = 28;

    private OpFrame() {
    }

    /** A write piece or read request, at position 0 of {@code h} (capacity {@value #BYTES}), ready to write. */
    static void request(ByteBuffer h, byte type, boolean last, int op, long key, long offset, long length) {
        h.put(TYPE_OFFSET, type);
        h.put(FLAGS_OFFSET, (byte) (last ? LAST : 0));
        h.putShort(RESERVED_OFFSET, (short) 0);
        h.putInt(OP_OFFSET, op);
        h.putLong(KEY_OFFSET, key);
        h.putLong(OFFSET_OFFSET, offset);
        if (type == READ) {
            h.putLong(LENGTH_OFFSET, length);
        } else {
            h.putInt(LENGTH_OFFSET, (int) length);
            h.putInt(RESERVED2_OFFSET, 0);
        }
        h.clear();
    }

    /** An answer piece at {@code at} of {@code b} (absolute puts). */
    static void answer(ByteBuffer b, int at, int op, long offset, int length) {
        b.put(at + TYPE_OFFSET, ANSWER);
        b.put(at + FLAGS_OFFSET, (byte) 0);
        b.putShort(at + RESERVED_OFFSET, (short) 0);
        b.putInt(at + OP_OFFSET, op);
        b.putLong(at + 8, offset);
        b.putLong(at + 16, 0);
        b.putInt(at + LENGTH_OFFSET, length);
        b.putInt(at + RESERVED2_OFFSET, 0);
    }

    /** A completion at {@code at} of {@code b} (absolute puts). */
    static void done(ByteBuffer b, int at, int op, int status, long detail) {
        b.put(at + TYPE_OFFSET, DONE);
        b.put(at + FLAGS_OFFSET, (byte) status);
        b.putShort(at + RESERVED_OFFSET, (short) 0);
        b.putInt(at + OP_OFFSET, op);
        b.putLong(at + 8, detail);
        b.putLong(at + 16, 0);
        b.putLong(at + 24, 0);
    }

    static byte type(ByteBuffer b, int at) {
        return b.get(at + TYPE_OFFSET);
    }

    static boolean last(ByteBuffer b, int at) {
        return (b.get(at + FLAGS_OFFSET) & LAST) != 0;
    }

    static int status(ByteBuffer b, int at) {
        return Byte.toUnsignedInt(b.get(at + FLAGS_OFFSET));
    }

    static int op(ByteBuffer b, int at) {
        return b.getInt(at + OP_OFFSET);
    }

    static long key(ByteBuffer b, int at) {
        return b.getLong(at + KEY_OFFSET);
    }

    /** A request's offset in the registration, or an answer's offset in the read. */
    static long offset(ByteBuffer b, int at) {
        return b.getLong(at + (type(b, at) == ANSWER ? 8 : OFFSET_OFFSET));
    }

    /** A write piece's or answer's payload length (negative: over 2^31 - 1, rejected by the checks). */
    static int pieceLength(ByteBuffer b, int at) {
        return b.getInt(at + LENGTH_OFFSET);
    }

    static long readLength(ByteBuffer b, int at) {
        return b.getLong(at + LENGTH_OFFSET);
    }

    static long detail(ByteBuffer b, int at) {
        return b.getLong(at + 8);
    }

    /**
     * Checks what a request frame ('W' or 'R') can say about itself; null when well formed, else what is wrong. The
     * owner then checks the key and range against its registrations. Allocates only when it finds a problem.
     */
    static String checkRequest(ByteBuffer b, int at) {
        byte type = type(b, at);
        int flags = Byte.toUnsignedInt(b.get(at + FLAGS_OFFSET));
        if (b.getShort(at + RESERVED_OFFSET) != 0) {
            return "a one-sided request with non-zero reserved bytes";
        }
        if (type == WRITE) {
            int length = pieceLength(b, at);
            if ((flags & ~LAST) != 0 || b.getInt(at + RESERVED2_OFFSET) != 0) {
                return "a write piece with unknown flags or non-zero reserved bytes";
            }
            if (length < 0 || length > ChunkHeader.MAX_CHUNK) {
                return "a write piece of " + Integer.toUnsignedString(length) + " bytes (at most "
                        + ChunkHeader.MAX_CHUNK + ")";
            }
        } else if (type == READ) {
            if (flags != LAST) {
                return "a read request with flags " + flags;
            }
            if (readLength(b, at) < 0) {
                return "a read request of " + Long.toUnsignedString(readLength(b, at)) + " bytes (at most 2^63 - 1)";
            }
        } else {
            return "expected a one-sided request, got type 0x" + Integer.toHexString(type & 0xff);
        }
        return null;
    }

    /** Checks an answer or completion frame's fixed fields; null when well formed. */
    static String checkReply(ByteBuffer b, int at) {
        byte type = type(b, at);
        if (b.getShort(at + RESERVED_OFFSET) != 0 || b.getLong(at + 16) != 0
                || (type == DONE && b.getLong(at + 24) != 0)
                || (type == ANSWER && (b.get(at + FLAGS_OFFSET) != 0 || b.getInt(at + RESERVED2_OFFSET) != 0))) {
            return "a one-sided reply with non-zero reserved bytes";
        }
        if (type == ANSWER) {
            int length = pieceLength(b, at);
            if (length <= 0 || length > ChunkHeader.MAX_CHUNK) {
                return "an answer piece of " + Integer.toUnsignedString(length) + " bytes (1.."
                        + ChunkHeader.MAX_CHUNK + ")";
            }
            if (offset(b, at) < 0) {
                return "an answer piece at offset " + Long.toUnsignedString(offset(b, at)) + " (at most 2^63 - 1)";
            }
        } else if (type == DONE) {
            int status = status(b, at);
            if (status > OUT_OF_RANGE) {
                return "a completion with unknown status " + status;
            }
        } else {
            return "expected a one-sided reply, got type 0x" + Integer.toHexString(type & 0xff);
        }
        return null;
    }
}
