package io.jmesh.bench;

import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
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

/**
 * Round-trip latency: A sends {@code size} bytes to B, B sends them back, one thread drives both nodes (so the
 * figure is the software path plus the wire, without a second thread's wake-up). Each side re-posts its receive
 * as soon as the previous one completes, so the clear-to-send is on its way before the next message, as in a real
 * ping-pong. One operation is one round trip; {@code -prof gc} gives the bytes allocated per round trip (two
 * messages).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class LatencyBenchmark {
    @Param({"tcp"})
    public String provider;

    @Param({"8", "4096", "65536"})
    public int size;

    private BenchPair pair;
    private int recvAtB;
    private int recvAtA;

    @Setup
    public void open() throws Exception {
        pair = new BenchPair(provider, size);
        recvAtB = post(pair.abIn, pair.regB);
        recvAtA = post(pair.baIn, pair.regA);
    }

    @TearDown
    public void close() {
        if (pair != null) {
            pair.close();
        }
    }

    @Benchmark
    public int roundTrip(ThreadAllocation alloc) {
        alloc.op();
        int out = send(pair.ab, pair.regA);
        await(pair.abIn, recvAtB);
        recvAtB = post(pair.abIn, pair.regB);
        int back = send(pair.ba, pair.regB);
        await(pair.baIn, recvAtA);
        recvAtA = post(pair.baIn, pair.regA);
        complete(pair.ab, out);
        complete(pair.ba, back);
        return recvAtA;
    }

    /** One buffer, the short form of irecv: its gc.alloc.rate.norm shows it allocates nothing either. */
    private int post(Receiver r, Registration reg) {
        int q;
        long spins = 0;
        while ((q = r.irecv(reg, 0, size, 0)) == Status.NOT_READY) {
            guard(++spins, "irecv");
        }
        if (q < 0) {
            throw BenchPair.failure("irecv", q, r.error());
        }
        return q;
    }

    private int send(Sender s, Registration reg) {
        int q;
        long spins = 0;
        while ((q = s.isend(reg, 0, size, 0)) == Status.NOT_READY) {
            guard(++spins, "isend");
        }
        if (q < 0) {
            throw BenchPair.failure("isend", q, s.error());
        }
        return q;
    }

    private void await(Receiver r, int request) {
        int t;
        long spins = 0;
        while ((t = r.test(request)) == 0) {
            guard(++spins, "receive");
        }
        if (t < 0) {
            throw BenchPair.failure("receive", t, r.error());
        }
    }

    private void complete(Sender s, int request) {
        int t;
        long spins = 0;
        while ((t = s.test(request)) == 0) {
            guard(++spins, "send completion");
        }
        if (t < 0) {
            throw BenchPair.failure("send", t, s.error());
        }
    }

    private long guardStart;

    /** Checks the clock only every 64 Ki spins, so the guard costs nothing on the normal path. */
    private void guard(long spins, String what) {
        if ((spins & 0xFFFF) == 0) {
            long now = System.nanoTime();
            if (spins == 0x10000) {
                guardStart = now;
            } else if (now - guardStart > BenchPair.PATIENCE_NS) {
                throw BenchPair.hang(what);
            }
        }
    }
}
