package io.jmesh.bench;

import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;
import java.util.function.IntUnaryOperator;
import java.util.function.Supplier;

/**
 * The call an NCCL proxy makes most often, straight through the Java API: {@code test} on a posted receive that no
 * message has reached yet. {@code nccl-net-driver --calls} measures the same call through the plugin's upcall, so
 * the difference is what the C to Java layer costs per call. The receive is completed at tear-down by a real
 * message, which also checks that every measured call found nothing.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class CallBenchmark {
    private static final int SIZE = 8;

    @Param({"tcp"})
    public String provider;

    private BenchPair pair;
    private int pending;

    @Setup
    public void open() throws Exception {
        pair = new BenchPair(provider, SIZE);
        int q = pair.abIn.irecv(1, new Registration[] {pair.regB}, new long[] {0}, new long[] {SIZE}, new int[] {0});
        if (q < 0) {
            throw BenchPair.failure("irecv", q, pair.abIn.error());
        }
        pending = q;
    }

    @Benchmark
    public int testNothing(ThreadAllocation alloc) {
        alloc.op();
        return pair.abIn.test(pending);
    }

    @TearDown
    public void close() {
        if (pair == null) {
            return;
        }
        try {
            int before = pair.abIn.test(pending);
            if (before != 0) {
                throw new IllegalStateException("the receive completed (" + before + ") before any message was sent");
            }
            int s;
            while ((s = pair.ab.isend(pair.regA, 0, SIZE, 0)) == Status.NOT_READY) {
                Thread.onSpinWait();
            }
            if (s < 0) {
                throw BenchPair.failure("isend", s, pair.ab.error());
            }
            await(pair.ab::test, pair.ab::error, s, "the send that completes the idle receive");
            await(pair.abIn::test, pair.abIn::error, pending, "the idle receive");
        } finally {
            pair.close();
        }
    }

    private static void await(IntUnaryOperator test, Supplier<String> error, int request, String what) {
        long deadline = System.nanoTime() + BenchPair.PATIENCE_NS;
        int t;
        while ((t = test.applyAsInt(request)) == 0) {
            if (System.nanoTime() > deadline) {
                throw BenchPair.hang(what);
            }
        }
        if (t < 0) {
            throw BenchPair.failure(what, t, error.get());
        }
    }
}
