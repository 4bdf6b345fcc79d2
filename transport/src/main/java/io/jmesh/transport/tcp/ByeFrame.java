package io.jmesh.transport.tcp;

import java.nio.ByteBuffer;

/**
 * The last frame a sender writes on data socket 0 when its owner closes it in order: everything it reported done is
 * before it, and the end of stream follows it on every data socket. The receiver then delivers what it holds and
 * reports the close as {@code CLOSED}; an end of stream without it is a peer that died ({@code FAILED}). A descriptor
 * of a buffer, {@value #BYTES} bytes, big-endian.
 * <pre>
 *   0 u8    type      0x42 'B'
 *   1 u8[7] reserved  0
 *   8 u64   records   eager records the sender wrote (the receiver must have read exactly as many)
 *  16 u8[16] reserved 0
 * </pre>
 */
final class ByeFrame {
    static final byte TYPE = 0x42;
    static final int BYTES = 32;
    static final int RECORDS_OFFSET = 8;

    private ByeFrame() {
    }

    /** A goodbye at {@code at} of {@code b} (absolute puts). */
    static void write(ByteBuffer b, int at, long records) {
        b.putLong(at, (long) TYPE << 56);
        b.putLong(at + RECORDS_OFFSET, records);
        b.putLong(at + 16, 0);
        b.putLong(at + 24, 0);
    }

    static long records(ByteBuffer b, int at) {
        return b.getLong(at + RECORDS_OFFSET);
    }

    /** What is wrong with the goodbye at {@code at}, given the records this end read; null when nothing. */
    static String check(ByteBuffer b, int at, long read) {
        if (EagerFrame.reservedSet(b, at)) {           // the same shape as a credit: a type, then one u64
            return "a goodbye frame with non-zero reserved bytes";
        }
        if (records(b, at) != read) {
            return "a goodbye after " + records(b, at) + " eager records, of which " + read + " arrived";
        }
        return null;
    }
}
