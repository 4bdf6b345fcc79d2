package io.jmesh.nccl;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

/**
 * Reads and writes the memory NCCL hands over by address. One segment spanning the address space, made once, so the
 * upcalls read argument arrays and write results without creating a segment per call. Callers check for null (0).
 */
final class Mem {
    private static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    private Mem() {
    }

    static long getLong(long address) {
        return ALL.get(JAVA_LONG_UNALIGNED, address);
    }

    static void putLong(long address, long value) {
        ALL.set(JAVA_LONG_UNALIGNED, address, value);
    }

    static int getInt(long address) {
        return ALL.get(JAVA_INT_UNALIGNED, address);
    }

    static void putInt(long address, int value) {
        ALL.set(JAVA_INT_UNALIGNED, address, value);
    }

    static void putDouble(long address, double value) {
        ALL.set(JAVA_DOUBLE_UNALIGNED, address, value);
    }

    static double getDouble(long address) {
        return ALL.get(JAVA_DOUBLE_UNALIGNED, address);
    }

    static float getFloat(long address) {
        return ALL.get(JAVA_FLOAT_UNALIGNED, address);
    }

    static void putFloat(long address, float value) {
        ALL.set(JAVA_FLOAT_UNALIGNED, address, value);
    }

    static short getShort(long address) {
        return ALL.get(JAVA_SHORT_UNALIGNED, address);
    }

    static void putShort(long address, short value) {
        ALL.set(JAVA_SHORT_UNALIGNED, address, value);
    }

    static byte getByte(long address) {
        return ALL.get(JAVA_BYTE, address);
    }

    static void putByte(long address, byte value) {
        ALL.set(JAVA_BYTE, address, value);
    }

    static void copy(long from, long to, long length) {
        MemorySegment.copy(ALL, from, ALL, to, length);
    }

    static byte[] getBytes(long address, int length) {
        byte[] out = new byte[length];
        MemorySegment.copy(ALL, JAVA_BYTE, address, out, 0, length);
        return out;
    }

    static void putBytes(long address, byte[] bytes, int length) {
        MemorySegment.copy(bytes, 0, ALL, JAVA_BYTE, address, length);
    }

    static void fill(long address, long length, byte value) {
        ALL.asSlice(address, length).fill(value);
    }

    /** A segment for {@code [address, address + length)}, for registering memory NCCL owns. */
    static MemorySegment segment(long address, long length) {
        return MemorySegment.ofAddress(address).reinterpret(length);
    }
}
