package io.jmesh.cli.perf;

import io.jmesh.api.CloseHelper;

import java.io.PrintStream;
import java.util.List;

/**
 * 'jmesh bw' and 'jmesh lat': perftest-style measurements of jmesh's isend/irecv between two nodes. The server
 * listens on an out-of-band TCP port; the client connects there, the two exchange jmesh listen handles and then talk
 * over jmesh. For bw the client sends and the server is a sink that keeps {@code depth} receives posted per
 * connection; for lat the server echoes each message back over a second connection.
 *
 * <p>Out-of-band protocol (one ASCII line each, see {@link Oob}):
 * <pre>
 * client: hello version=1 test=bw|lat qps=Q maxsize=M [handle=H]     (H: the client's handle, for lat)
 * server: handle handle=H                                           (or: error TEXT)
 * client: jit                    server: jit ms=N     (N: the server JVM's total JIT compilation time, -1: unknown)
 * client: end totals=T1,T2,..    server: done        (after each size: messages per connection so far, cumulative)
 * client: report TEXT                                (a result line for the server to print)
 * client: bye
 * </pre>
 * The hot loops allocate nothing: request ids live in preallocated rings and times in preallocated arrays.
 *
 * <p>The parts: {@link PerfServer} and {@link PerfClient} set up each end, {@link BandwidthServer}, {@link
 * BandwidthClient}, {@link LatencyServer} and {@link LatencyClient} run the measurement loops, {@link Requests} holds
 * what the loops share, {@link JitSettle} the warm-up, {@link PerfHeader} and {@link PerfReport} the output.
 */
public final class PerfCommand {
    private PerfCommand() {
    }

    /** Runs 'jmesh bw' or 'jmesh lat' with the given arguments; returns the exit status. */
    public static int run(String test, List<String> argv, PrintStream out, PrintStream err) {
        return io.jmesh.cli.Jmesh.run(test, argv, out, err);
    }

    /**
     * Closes in reverse order of opening, so connections go before the registrations and listeners they use; a
     * failed close is reported and the rest still closed, without hiding the error the run may be failing with.
     */
    static void closeAll(List<AutoCloseable> open) {
        CloseHelper.closeAll(e -> System.err.println("jmesh: closing failed: " + e), open.reversed());
    }
}
