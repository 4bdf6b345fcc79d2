package io.jmesh.nccl;

/**
 * The reductions of the CollNet's all-reduce, on memory given by address: {@code dst[i] = src[0][i] (op) src[1][i]
 * (op) ... (op) src[n-1][i]}, the sources in rank order, evaluated left to right, so that every rank, reducing the same
 * inputs in the same order, gets the same bits (a floating-point sum depends on the order of its terms).
 *
 * <p>The rule, per element:
 * <ul>
 * <li>integers (int8, uint8, int32, uint32, int64, uint64): sum and prod wrap around (two's complement, modulo
 *     2^bits, as NCCL's own kernels); min and max compare signed or unsigned as the type is;</li>
 * <li>fp32 and fp64: each step one IEEE 754 operation in that precision, round to nearest even;</li>
 * <li>fp16 and bf16: every input converted exactly to fp32, the steps done in fp32 as for fp32, and the result rounded
 *     once to fp16 or bf16 (round to nearest even; a NaN stays a NaN);</li>
 * <li>max and min of floating-point values: {@code acc = x > acc ? x : acc} (min: {@code x < acc}), acc starting at
 *     rank 0's value: an equal value (-0 against +0) or a NaN in x keeps the earlier rank's value.</li>
 * </ul>
 * fp8 types and any other type or op are not reduced: {@link #supports} says no, and NCCL then does not use the
 * CollNet for them.
 *
 * <p>The floating-point types, what inference reduces, go a block of {@link #BLOCK} elements at a time through an
 * fp32 accumulator the caller owns: every source's block is read before the block of {@code dst} is written (so {@code
 * dst} may be any source), and each pass is one loop with the type and op fixed, simple enough for the JIT to
 * vectorize (not checked in the compiled code; the blocks' speed is what was measured). Per element the operations and
 * their order are exactly the rule's. Why: with one loop over elements whose body switched on type and op, a 256 KiB
 * fp32 all-reduce of two ranks took 518 us through the plugin on 16 cores (nccl-net-driver --coll --calls), where the
 * transport moves 256 KiB in 33 us: about 8 ns an element in the loop.
 */
final class Reducer {
    static final int INT8 = 0;
    static final int UINT8 = 1;
    static final int INT32 = 2;
    static final int UINT32 = 3;
    static final int INT64 = 4;
    static final int UINT64 = 5;
    static final int FP16 = 6;
    static final int FP32 = 7;
    static final int FP64 = 8;
    static final int BF16 = 9;
    static final int SUM = 0;
    static final int PROD = 1;
    static final int MAX = 2;
    static final int MIN = 3;

    /** Elements per block of the floating-point path: the accumulator's length. */
    static final int BLOCK = 1024;
    private static final int[] SIZES = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
    private static final String[] TYPE_NAMES = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "fp16",
        "fp32", "fp64", "bf16", "fp8e4m3", "fp8e5m2"};
    private static final String[] OP_NAMES = {"sum", "prod", "max", "min", "avg"};

    private Reducer() {
    }

    /** Whether {@code type} and {@code op} (NCCL's ncclDataType_t and ncclRedOp_t) are reduced exactly here. */
    static boolean supports(int type, int op) {
        return type >= INT8 && type <= BF16 && op >= SUM && op <= MIN;
    }

    /** Bytes per element of a supported type. */
    static int size(int type) {
        return SIZES[type];
    }

    static String typeName(int type) {
        return type >= 0 && type < TYPE_NAMES.length ? TYPE_NAMES[type] : "ncclDataType " + type;
    }

    static String opName(int op) {
        return op >= 0 && op < OP_NAMES.length ? OP_NAMES[op] : "ncclRedOp " + op;
    }

    /**
     * Reduces {@code count} elements of the {@code n} sources (rank order) into {@code dst}, which may be a source;
     * {@code acc} is the caller's scratch of {@link #BLOCK} floats (one per thread that reduces).
     */
    static void reduce(int type, int op, long dst, long[] srcs, int n, long count, float[] acc) {
        switch (type) {
            case FP16, FP32, BF16 -> floats(type, op, dst, srcs, n, count, acc);
            case FP64 -> doubles(op, dst, srcs, n, count);
            default -> integers(type, op, dst, srcs, n, count);
        }
    }

    private static void integers(int type, int op, long dst, long[] srcs, int n, long count) {
        int w = SIZES[type];
        for (long i = 0, at = 0; i < count; i++, at += w) {
            long acc = load(type, srcs[0] + at);
            for (int r = 1; r < n; r++) {
                long x = load(type, srcs[r] + at);
                acc = switch (op) {
                    case SUM -> acc + x;
                    case PROD -> acc * x;
                    // zero-extended uint8/uint32 compare right as signed longs; uint64 needs the unsigned compare
                    case MAX -> type == UINT64 ? (Long.compareUnsigned(x, acc) > 0 ? x : acc) : Math.max(acc, x);
                    default -> type == UINT64 ? (Long.compareUnsigned(x, acc) < 0 ? x : acc) : Math.min(acc, x);
                };
            }
            store(type, dst + at, acc);
        }
    }

    private static long load(int type, long address) {
        return switch (type) {
            case INT8 -> Mem.getByte(address);
            case UINT8 -> Mem.getByte(address) & 0xFFL;
            case INT32 -> Mem.getInt(address);
            case UINT32 -> Mem.getInt(address) & 0xFFFF_FFFFL;
            default -> Mem.getLong(address);
        };
    }

    private static void store(int type, long address, long value) {
        switch (SIZES[type]) {
            case 1 -> Mem.putByte(address, (byte) value);
            case 4 -> Mem.putInt(address, (int) value);
            default -> Mem.putLong(address, value);
        }
    }

    private static void floats(int type, int op, long dst, long[] srcs, int n, long count, float[] acc) {
        int w = SIZES[type];
        for (long first = 0; first < count; first += BLOCK) {
            int m = (int) Math.min(BLOCK, count - first);
            long at = first * w;
            load(type, srcs[0] + at, acc, m);
            for (int r = 1; r < n; r++) {
                if (type == FP32) {
                    foldFp32(op, srcs[r] + at, acc, m);
                } else {
                    foldHalf(type, op, srcs[r] + at, acc, m);
                }
            }
            store(type, dst + at, acc, m);
        }
    }

    private static void load(int type, long from, float[] acc, int m) {
        switch (type) {
            case FP32 -> {
                for (int i = 0; i < m; i++) {
                    acc[i] = Mem.getFloat(from + 4L * i);
                }
            }
            case FP16 -> {
                for (int i = 0; i < m; i++) {
                    acc[i] = Float.float16ToFloat(Mem.getShort(from + 2L * i));
                }
            }
            default -> {
                for (int i = 0; i < m; i++) {
                    acc[i] = Float.intBitsToFloat(Mem.getShort(from + 2L * i) << 16);
                }
            }
        }
    }

    private static void foldFp32(int op, long from, float[] acc, int m) {
        switch (op) {
            case SUM -> {
                for (int i = 0; i < m; i++) {
                    acc[i] += Mem.getFloat(from + 4L * i);
                }
            }
            case PROD -> {
                for (int i = 0; i < m; i++) {
                    acc[i] *= Mem.getFloat(from + 4L * i);
                }
            }
            case MAX -> {
                for (int i = 0; i < m; i++) {
                    float x = Mem.getFloat(from + 4L * i);
                    acc[i] = x > acc[i] ? x : acc[i];
                }
            }
            default -> {
                for (int i = 0; i < m; i++) {
                    float x = Mem.getFloat(from + 4L * i);
                    acc[i] = x < acc[i] ? x : acc[i];
                }
            }
        }
    }

    /** fp16 or bf16 into the fp32 accumulator: the half converts exactly, the step is fp32's. */
    private static void foldHalf(int type, int op, long from, float[] acc, int m) {
        boolean fp16 = type == FP16;
        switch (op) {
            case SUM -> {
                for (int i = 0; i < m; i++) {
                    acc[i] += half(fp16, Mem.getShort(from + 2L * i));
                }
            }
            case PROD -> {
                for (int i = 0; i < m; i++) {
                    acc[i] *= half(fp16, Mem.getShort(from + 2L * i));
                }
            }
            case MAX -> {
                for (int i = 0; i < m; i++) {
                    float x = half(fp16, Mem.getShort(from + 2L * i));
                    acc[i] = x > acc[i] ? x : acc[i];
                }
            }
            default -> {
                for (int i = 0; i < m; i++) {
                    float x = half(fp16, Mem.getShort(from + 2L * i));
                    acc[i] = x < acc[i] ? x : acc[i];
                }
            }
        }
    }

    private static float half(boolean fp16, short bits) {
        return fp16 ? Float.float16ToFloat(bits) : Float.intBitsToFloat(bits << 16);
    }

    private static void store(int type, long to, float[] acc, int m) {
        switch (type) {
            case FP32 -> {
                for (int i = 0; i < m; i++) {
                    Mem.putFloat(to + 4L * i, acc[i]);
                }
            }
            case FP16 -> {
                for (int i = 0; i < m; i++) {
                    Mem.putShort(to + 2L * i, Float.floatToFloat16(acc[i]));
                }
            }
            default -> {
                for (int i = 0; i < m; i++) {
                    Mem.putShort(to + 2L * i, toBf16(acc[i]));
                }
            }
        }
    }

    /** fp32 to bf16, round to nearest even; a NaN stays a (quiet) NaN instead of rounding into an infinity. */
    static short toBf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) ((bits >>> 16) | 0x0040);
        }
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    private static void doubles(int op, long dst, long[] srcs, int n, long count) {
        for (long i = 0, at = 0; i < count; i++, at += 8) {
            double acc = Mem.getDouble(srcs[0] + at);
            for (int r = 1; r < n; r++) {
                double x = Mem.getDouble(srcs[r] + at);
                acc = switch (op) {
                    case SUM -> acc + x;
                    case PROD -> acc * x;
                    case MAX -> x > acc ? x : acc;
                    default -> x < acc ? x : acc;
                };
            }
            Mem.putDouble(dst + at, acc);
        }
    }
}
