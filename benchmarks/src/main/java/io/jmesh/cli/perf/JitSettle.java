package io.jmesh.cli.perf;

import java.io.IOException;
import java.io.PrintStream;

/**
 * Warm-up until the JIT is quiet: rounds of about a second until neither JVM's compiler worked during one, for at
 * most {@code --settle}.
 */
final class JitSettle {
    /** A warm-up round in which a JVM's JIT compiled for at most this long counts as quiet. */
    private static final long QUIET_MS = 10;
    static final long ROUND_NS = 1_000_000_000L;

    private final PerfOptions o;
    private final PrintStream err;

    JitSettle(PerfOptions o, PrintStream err) {
        this.o = o;
        this.err = err;
    }

    /** A warm-up round of about a second. */
    interface Round {
        void run() throws IOException;
    }

    /**
     * Goes on warming up in rounds until neither JVM's JIT compiler worked during a round, for at most {@code
     * --settle}: a C2 compilation of the hot loop that outlasts the counted warm-up would share the CPU with the
     * measurement (under emulation, the testbed's, it takes tens of seconds and halved the figures).
     */
    void settle(Oob oob, long size, Round round) throws IOException {
        if (o.settle().isZero()) {
            return;
        }
        long start = System.nanoTime();
        long local = compileMillis();
        long peer = peerCompileMillis(oob);
        while (true) {
            round.run();
            long l = compileMillis();
            long p = peerCompileMillis(oob);
            boolean quiet = l - local <= QUIET_MS && p - peer <= QUIET_MS;
            local = l;
            peer = p;
            if (quiet) {
                return;
            }
            if (System.nanoTime() - start > o.settle().toNanos()) {
                err.println(" jmesh " + o.test() + ": size " + size + ": the JIT compiler was still busy after "
                        + o.settle().toSeconds() + " s of warm-up, measuring anyway; "
                        + "on a busy machine other work keeps it busy, and --settle 0 skips this wait");
                err.flush();
                return;
            }
        }
    }

    private static long peerCompileMillis(Oob oob) throws IOException {
        oob.send("jit");
        return Oob.number(oob.expect("jit"), "ms", -1, Long.MAX_VALUE);
    }

    /** This JVM's total JIT compilation time in milliseconds, or -1 where the JVM does not tell. */
    static long compileMillis() {
        java.lang.management.CompilationMXBean c = java.lang.management.ManagementFactory.getCompilationMXBean();
        return c != null && c.isCompilationTimeMonitoringSupported() ? c.getTotalCompilationTime() : -1;
    }
}
