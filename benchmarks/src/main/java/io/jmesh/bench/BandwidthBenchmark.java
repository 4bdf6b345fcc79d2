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
 * Streaming bandwidth of one connection: node A sends {@code size}-byte messages to node B with up to {@link #DEPTH}
 * in flight, B keeps {@link #DEPTH} receives posted, one thread drives both ends. One operation is one message
 * received, so ops/s times the size is the bandwidth; {@code -prof gc} gives the bytes allocated per message
 * (gc.alloc.rate.norm), which covers isend, irecv and test on both ends and the provider's post and poll beneath.
 *
 * <pre>
 * ./jmesh jmh BandwidthBenchmark -p provider=tcp -prof gc -rf json -rff docs/bench/jmh-tcp.json
 * </pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class BandwidthBenchmark {
    /** Messages in flight: the transport's per-connection maximum. */
    static final int DEPTH = 32;
    private static final int MASK = DEPTH - 1;

    @Param({"tcp"})
    public String provider;

    @Param({"1024", "4096", "16384", "65536", "262144", "1048576", "4194304", "16777216", "67108864"})
    public int size;

    private BenchPair pair;
    private Sender sender;
    private Receiver receiver;
    private Registration source;
    private final Registration[] regs = new Registration[1];
    private final long[] offsets = {0};
    private final long[] max = new long[1];
    private final int[] tags = {0};
    private final int[] sendRing = new int[DEPTH];
    private final int[] recvRing = new int[DEPTH];
    private long sendPosted;
    private long sendDone;
    private long recvPosted;
    private long recvDone;

    @Setup
    public void open() throws Exception {
        pair = new BenchPair(provider, size);
        sender = pair.ab;
        receiver = pair.abIn;
        source = pair.regA;
        regs[0] = pair.regB;
        max[0] = size;
    }

    @TearDown
    public void close() {
        if (pair != null) {
            pair.close();
        }
    }

    /** Advances both ends until one more message has been received; returns the count (so nothing is dead code). */
    @Benchmark
    public long message(ThreadAllocation alloc) {
        alloc.op();
        long spins = 0;
        long started = 0;
        while (true) {
            if (recvPosted - recvDone < DEPTH) {
                int q = receiver.irecv(1, regs, offsets, max, tags);
                if (q >= 0) {
                    recvRing[(int) (recvPosted++ & MASK)] = q;
                } else if (q != Status.NOT_READY) {
                    throw BenchPair.failure("irecv", q, receiver.error());
                }
            }
            if (sendPosted < recvPosted && sendPosted - sendDone < DEPTH) {
                int q = sender.isend(source, 0, size, 0);
                if (q >= 0) {
                    sendRing[(int) (sendPosted++ & MASK)] = q;
                } else if (q != Status.NOT_READY) {
                    throw BenchPair.failure("isend", q, sender.error());
                }
            }
            if (sendDone < sendPosted) {
                int t = sender.test(sendRing[(int) (sendDone & MASK)]);
                if (t == 1) {
                    sendDone++;
                } else if (t < 0) {
                    throw BenchPair.failure("send test", t, sender.error());
                }
            }
            if (recvDone < recvPosted) {
                int t = receiver.test(recvRing[(int) (recvDone & MASK)]);
                if (t == 1) {
                    return ++recvDone;
                } else if (t < 0) {
                    throw BenchPair.failure("receive test", t, receiver.error());
                }
            }
            if ((++spins & 0xFFFF) == 0) {
                long now = System.nanoTime();
                if (started == 0) {
                    started = now;
                } else if (now - started > BenchPair.PATIENCE_NS) {
                    throw BenchPair.hang("a " + size + "-byte message");
                }
            }
        }
    }
}
