package io.jmesh.nccl;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The reduction rule of the CollNet's all-reduce (Reducer's javadoc), on cases where another rule gives other bits. */
class ReducerTest {
    /** Reduces one element per source, each source's value written by {@code put}, and returns the result's segment. */
    private static MemorySegment reduce(Arena a, int type, int op, int width, Put put, int n) {
        long[] srcs = new long[n];
        for (int r = 0; r < n; r++) {
            MemorySegment s = a.allocate(8, 8);
            put.at(s, r);
            srcs[r] = s.address();
        }
        MemorySegment dst = a.allocate(8, 8);
        Reducer.reduce(type, op, dst.address(), srcs, n, 1, new float[Reducer.BLOCK]);
        return dst;
    }

    interface Put {
        void at(MemorySegment s, int rank);
    }

    @Test
    void aFloatSumFollowsRankOrder() {
        try (Arena a = Arena.ofConfined()) {
            // (1e8 + -1e8) + 1 = 1, while 1e8 + (-1e8 + 1) = 0 in fp32: rank order decides
            float[] v = {1e8f, -1e8f, 1f};
            assertEquals(1f, reduce(a, Reducer.FP32, Reducer.SUM, 4, (s, r) -> s.set(JAVA_FLOAT, 0, v[r]), 3)
                    .get(JAVA_FLOAT, 0));
            float[] w = {1f, 1e8f, -1e8f};
            assertEquals(0f, reduce(a, Reducer.FP32, Reducer.SUM, 4, (s, r) -> s.set(JAVA_FLOAT, 0, w[r]), 3)
                    .get(JAVA_FLOAT, 0));
            double[] d = {1e17, -1e17, 1};
            assertEquals(1.0, reduce(a, Reducer.FP64, Reducer.SUM, 8, (s, r) -> s.set(JAVA_DOUBLE, 0, d[r]), 3)
                    .get(JAVA_DOUBLE, 0));
        }
    }

    /** fp16 summed in fp32 and rounded once: 2048 + 1 + 1 = 2050, where fp16 at each step would give 2048. */
    @Test
    void fp16IsReducedInFp32AndRoundedOnce() {
        try (Arena a = Arena.ofConfined()) {
            float[] v = {2048f, 1f, 1f};
            MemorySegment out = reduce(a, Reducer.FP16, Reducer.SUM, 2,
                    (s, r) -> s.set(JAVA_SHORT, 0, Float.floatToFloat16(v[r])), 3);
            assertEquals(2050f, Float.float16ToFloat(out.get(JAVA_SHORT, 0)));
            // bf16 (8 significant bits, spacing 2 from 256): 258 once rounded; at each step 257 would tie to 256 twice
            MemorySegment b = reduce(a, Reducer.BF16, Reducer.SUM, 2,
                    (s, r) -> s.set(JAVA_SHORT, 0, Reducer.toBf16(new float[] {256f, 1f, 1f}[r])), 3);
            assertEquals(258f, Float.intBitsToFloat(b.get(JAVA_SHORT, 0) << 16));
        }
    }

    @Test
    void bf16RoundsToNearestEvenAndKeepsNaN() {
        assertEquals((short) 0x3F80, Reducer.toBf16(1f));
        assertEquals((short) 0x3F80, Reducer.toBf16(Float.intBitsToFloat(0x3F808000))); // a tie: to the even 0x3F80
        assertEquals((short) 0x3F82, Reducer.toBf16(Float.intBitsToFloat(0x3F818000))); // a tie: to the even 0x3F82
        assertTrue(Float.isNaN(Float.intBitsToFloat(Reducer.toBf16(Float.intBitsToFloat(0x7F800001)) << 16)));
    }

    @Test
    void integerMinAndMaxCompareAsTheTypeIsSigned() {
        try (Arena a = Arena.ofConfined()) {
            byte[] v = {5, (byte) 0xF0};
            assertEquals((byte) 0xF0, reduce(a, Reducer.INT8, Reducer.MIN, 1, (s, r) -> s.set(JAVA_BYTE, 0, v[r]), 2)
                    .get(JAVA_BYTE, 0));
            assertEquals((byte) 0xF0, reduce(a, Reducer.UINT8, Reducer.MAX, 1, (s, r) -> s.set(JAVA_BYTE, 0, v[r]),
                    2).get(JAVA_BYTE, 0));
            long[] w = {-1L, 7L};
            assertEquals(-1L, reduce(a, Reducer.UINT64, Reducer.MAX, 8, (s, r) -> s.set(JAVA_LONG, 0, w[r]), 2)
                    .get(JAVA_LONG, 0));
            assertEquals(7L, reduce(a, Reducer.INT64, Reducer.MAX, 8, (s, r) -> s.set(JAVA_LONG, 0, w[r]), 2)
                    .get(JAVA_LONG, 0));
            // sums wrap: 200 + 100 = 44 in uint8
            byte[] u = {(byte) 200, 100};
            assertEquals(44, reduce(a, Reducer.UINT8, Reducer.SUM, 1, (s, r) -> s.set(JAVA_BYTE, 0, u[r]), 2)
                    .get(JAVA_BYTE, 0) & 0xFF);
        }
    }

    @Test
    void fp8AndAvgAreRefused() {
        for (int op = 0; op < 5; op++) {
            assertFalse(Reducer.supports(10, op));
            assertFalse(Reducer.supports(11, op));
        }
        for (int type = 0; type < 10; type++) {
            assertFalse(Reducer.supports(type, 4));
            for (int op = 0; op < 4; op++) {
                assertTrue(Reducer.supports(type, op));
            }
        }
        assertFalse(Reducer.supports(-1, 0));
    }

    /**
     * Floating-point types over several blocks and a partial one, every op, four ranks, the result written over rank
     * 2's buffer (in place, as a rank's own buffer is): each element as the rule computes it element by element.
     */
    @Test
    void blocksGiveTheRulesBitsForEveryElementAlsoInPlace() {
        int n = 4;
        int count = 2 * Reducer.BLOCK + 37;
        java.util.Random random = new java.util.Random(46);
        for (int type : new int[] {Reducer.FP32, Reducer.FP16, Reducer.BF16}) {
            int w = type == Reducer.FP32 ? 4 : 2;
            for (int op = Reducer.SUM; op <= Reducer.MIN; op++) {
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment[] src = new MemorySegment[n];
                    long[] srcs = new long[n];
                    float[][] values = new float[n][count];
                    for (int r = 0; r < n; r++) {
                        src[r] = a.allocate((long) count * w, 64);
                        srcs[r] = src[r].address();
                        for (int i = 0; i < count; i++) {
                            float v = (random.nextInt(20001) - 10000) / 64f;
                            short bits = type == Reducer.FP16 ? Float.floatToFloat16(v) : Reducer.toBf16(v);
                            values[r][i] = type == Reducer.FP32 ? v : type == Reducer.FP16 ? Float.float16ToFloat(bits)
                                    : Float.intBitsToFloat(bits << 16);
                            if (type == Reducer.FP32) {
                                src[r].setAtIndex(JAVA_FLOAT, i, v);
                            } else {
                                src[r].setAtIndex(JAVA_SHORT, i, bits);
                            }
                        }
                    }
                    Reducer.reduce(type, op, srcs[2], srcs, n, count, new float[Reducer.BLOCK]);
                    for (int i = 0; i < count; i++) {
                        float acc = values[0][i];
                        for (int r = 1; r < n; r++) {
                            float x = values[r][i];
                            acc = op == Reducer.SUM ? acc + x : op == Reducer.PROD ? acc * x
                                    : op == Reducer.MAX ? (x > acc ? x : acc) : (x < acc ? x : acc);
                        }
                        int want = type == Reducer.FP32 ? Float.floatToRawIntBits(acc)
                                : type == Reducer.FP16 ? Float.floatToFloat16(acc) & 0xFFFF : Reducer.toBf16(acc) & 0xFFFF;
                        int got = type == Reducer.FP32 ? Float.floatToRawIntBits(src[2].getAtIndex(JAVA_FLOAT, i))
                                : src[2].getAtIndex(JAVA_SHORT, i) & 0xFFFF;
                        if (want != got) {
                            assertEquals(Integer.toHexString(want), Integer.toHexString(got), Reducer.typeName(type)
                                    + " " + Reducer.opName(op) + " element " + i);
                        }
                    }
                }
            }
        }
    }
}
