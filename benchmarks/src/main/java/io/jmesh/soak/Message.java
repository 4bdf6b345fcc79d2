package io.jmesh.soak;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

/**
 * One soak message: a 32-byte header (magic, sender node, session, sequence number, length, CRC-32C) and a payload
 * drawn from the session and sequence number. The receiver checks it without knowing the payload: the CRC covers the
 * header and the payload, and the header says whose stream and which place in it the message claims, so a corrupt,
 * misdelivered, repeated or reordered message each fails a different check.
 */
final class Message {
    static final int HEADER = 32;
    /** The largest message: every buffer slot has this size. */
    static final int MAX = 1 << 20;
    private static final int MAGIC = 0x4A534F4B;
    private static final int CRC_AT = 28;

    private Message() {
    }

    /**
     * A size mix that exercises every path of the TCP wire: mostly eager records (up to 64 KiB), some striped
     * messages, and a few that fill a whole slot.
     */
    static int size(SplittableRandom r) {
        int p = r.nextInt(100);
        if (p < 60) {
            return r.nextInt(HEADER, 4097);
        }
        if (p < 90) {
            return r.nextInt(4097, 65_537);
        }
        return p < 98 ? r.nextInt(65_537, MAX / 2) : MAX;
    }

    /** Writes message {@code seq} of {@code session} from node {@code src}, {@code length} bytes, at {@code at}. */
    static void write(MemorySegment at, int src, long session, long seq, int length) {
        MemorySegment m = at.asSlice(0, length);
        m.set(JAVA_INT_UNALIGNED, 0, MAGIC);
        m.set(JAVA_INT_UNALIGNED, 4, src);
        m.set(JAVA_LONG_UNALIGNED, 8, session);
        m.set(JAVA_LONG_UNALIGNED, 16, seq);
        m.set(JAVA_INT_UNALIGNED, 24, length);
        long x = session * 0x9E3779B97F4A7C15L ^ seq;
        int i = HEADER;
        for (; i + 8 <= length; i += 8) {
            x = mix(x + 0x9E3779B97F4A7C15L);
            m.set(JAVA_LONG_UNALIGNED, i, x);
        }
        for (; i < length; i++) {
            m.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) i);
        }
        m.set(JAVA_INT_UNALIGNED, CRC_AT, crc(m));
    }

    /** The header fields of a received message, or the reason it is not a well-formed soak message. */
    record Header(int src, long session, long seq, String problem) {
    }

    /** Reads and checks the message of {@code size} bytes at {@code at}: magic, length, CRC. */
    static Header read(MemorySegment at, long size) {
        if (size < HEADER || size > MAX) {
            return new Header(-1, 0, -1, "a message of " + size + " bytes (soak messages have 32 to " + MAX + ")");
        }
        MemorySegment m = at.asSlice(0, size);
        if (m.get(JAVA_INT_UNALIGNED, 0) != MAGIC) {
            return new Header(-1, 0, -1, "no soak header (magic " + Integer.toHexString(m.get(JAVA_INT_UNALIGNED, 0))
                    + ")");
        }
        int src = m.get(JAVA_INT_UNALIGNED, 4);
        long session = m.get(JAVA_LONG_UNALIGNED, 8);
        long seq = m.get(JAVA_LONG_UNALIGNED, 16);
        int length = m.get(JAVA_INT_UNALIGNED, 24);
        if (length != size) {
            return new Header(src, session, seq, "the header says " + length + " bytes, the receive got " + size);
        }
        int want = m.get(JAVA_INT_UNALIGNED, CRC_AT);
        int got = crc(m);
        if (want != got) {
            return new Header(src, session, seq, "CRC-32C " + Integer.toHexString(got) + ", the sender's "
                    + Integer.toHexString(want));
        }
        return new Header(src, session, seq, null);
    }

    private static int crc(MemorySegment m) {
        CRC32C c = new CRC32C();
        c.update(m.asSlice(0, CRC_AT).asByteBuffer().order(ByteOrder.nativeOrder()));
        c.update(m.asSlice(HEADER).asByteBuffer());
        return (int) c.getValue();
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
