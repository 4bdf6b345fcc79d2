package io.jmesh.nccl;

import java.io.PrintStream;
import java.util.Locale;

/**
 * Where a step's time goes under real NCCL, with {@code JMESH_NCCL_TRACE=1}: for every request of a comm, from NCCL's
 * isend or irecv to the test() that finds it done (the transport's part: on a send, until its bytes are handed to the
 * kernel or the NIC; on a receive, until the message is in the buffer, which includes waiting for the peer), how many
 * test() calls that took, and the time from one request's completion to the next post on the same comm (NCCL's part:
 * its proxy and the GPU kernel that fills or drains the buffer). Per size class (a power of two), with median and
 * p90 from log-scale histograms; every comm's figures are added into the process's totals when it closes, printed to
 * stderr when the plugin closes (the last finalize). Off, the hooks are one branch on a static final; on, nothing
 * is allocated per request.
 */
final class StepTrace {
    static final boolean ON = "1".equals(System.getenv("JMESH_NCCL_TRACE"));
    /** Request ids kept (a power of two above every id the core hands out). */
    private static final int IDS = 2048;
    private static final int CLASSES = 32;
    /** Histogram buckets: 4 per power of two of nanoseconds, up to 2^40 ns. */
    private static final int BUCKETS = 160;
    private static final StepTrace SENDS = new StepTrace();
    private static final StepTrace RECEIVES = new StepTrace();

    private final long[] postedAt = new long[IDS];
    private final long[] bytes = new long[IDS];
    private final int[] tests = new int[IDS];
    /** Per size class: requests, test() calls, and the post-to-done histogram. */
    private final long[] count = new long[CLASSES];
    private final long[] testCalls = new long[CLASSES];
    private final long[] postToDone = new long[CLASSES * BUCKETS];
    /** Done to the next post on the same comm. */
    private final long[] doneToPost = new long[BUCKETS];
    private long lastDone;

    /** A new trace for one comm, or null when tracing is off. */
    static StepTrace forComm() {
        return ON ? new StepTrace() : null;
    }

    void posted(int id, long size) {
        long now = System.nanoTime();
        int i = id & (IDS - 1);
        postedAt[i] = now;
        bytes[i] = size;
        tests[i] = 0;
        if (lastDone != 0) {
            doneToPost[bucket(now - lastDone)]++;
            lastDone = 0;
        }
    }

    void tested(int id, boolean done) {
        int i = id & (IDS - 1);
        if (postedAt[i] == 0) {
            return;                                    // a flush, or a request posted before tracing
        }
        tests[i]++;
        if (done) {
            long now = System.nanoTime();
            int c = sizeClass(bytes[i]);
            count[c]++;
            testCalls[c] += tests[i];
            postToDone[c * BUCKETS + bucket(now - postedAt[i])]++;
            postedAt[i] = 0;
            lastDone = now;
        }
    }

    /** Adds this comm's figures into the process's totals for sends or receives. */
    void closed(boolean send) {
        StepTrace t = send ? SENDS : RECEIVES;
        synchronized (t) {
            for (int c = 0; c < CLASSES; c++) {
                t.count[c] += count[c];
                t.testCalls[c] += testCalls[c];
            }
            for (int b = 0; b < postToDone.length; b++) {
                t.postToDone[b] += postToDone[b];
            }
            for (int b = 0; b < BUCKETS; b++) {
                t.doneToPost[b] += doneToPost[b];
            }
        }
    }

    /**
     * Prints the totals (when tracing) in one write, each line naming the process (ranks share a terminal and would
     * interleave), and clears them.
     */
    static void printTotals(PrintStream out) {
        if (!ON) {
            return;
        }
        StringBuilder b = new StringBuilder();
        String who = "jmesh trace [pid " + ProcessHandle.current().pid() + "] ";
        SENDS.report(b, who + "isend");
        RECEIVES.report(b, who + "irecv");
        out.print(b);
        out.flush();
    }

    synchronized void report(StringBuilder b, String what) {
        b.append(what).append(": size class, requests, post to done median/p90 us, test() calls per request\n");
        for (int c = 0; c < CLASSES; c++) {
            if (count[c] > 0) {
                b.append(String.format(Locale.ROOT, "%s <=%s: %d, %.1f/%.1f us, %.1f tests%n", what, human(c),
                        count[c], quantile(postToDone, c * BUCKETS, 0.5), quantile(postToDone, c * BUCKETS, 0.9),
                        (double) testCalls[c] / count[c]));
            }
        }
        b.append(String.format(Locale.ROOT, "%s: done to next post %.1f/%.1f us%n", what,
                quantile(doneToPost, 0, 0.5), quantile(doneToPost, 0, 0.9)));
        java.util.Arrays.fill(count, 0);
        java.util.Arrays.fill(testCalls, 0);
        java.util.Arrays.fill(postToDone, 0);
        java.util.Arrays.fill(doneToPost, 0);
    }

    /** The class of a size: the power of two it does not exceed (0 B and 1 B share class 0). */
    static int sizeClass(long size) {
        return size <= 1 ? 0 : Math.min(CLASSES - 1, 64 - Long.numberOfLeadingZeros(size - 1));
    }

    /** 4 buckets per power of two: the power, then the two bits below the leading one. */
    static int bucket(long nanos) {
        if (nanos < 1) {
            return 0;
        }
        int lg = 63 - Long.numberOfLeadingZeros(nanos);
        int frac = (int) ((lg >= 2 ? nanos >>> (lg - 2) : nanos << (2 - lg)) & 3);
        return Math.min(BUCKETS - 1, 4 * lg + frac);
    }

    /** A bucket's lower edge in ns. */
    static double lowerEdge(int b) {
        return Math.pow(2, b / 4) * (1 + (b % 4) / 4.0);
    }

    /** The q-quantile of a histogram, in µs (the bucket's lower edge); 0 when empty. */
    static double quantile(long[] h, int from, double q) {
        long total = 0;
        for (int b = 0; b < BUCKETS; b++) {
            total += h[from + b];
        }
        if (total == 0) {
            return 0;
        }
        long need = (long) Math.ceil(q * total);
        long seen = 0;
        for (int b = 0; b < BUCKETS; b++) {
            seen += h[from + b];
            if (seen >= need) {
                return lowerEdge(b) / 1000;
            }
        }
        return lowerEdge(BUCKETS - 1) / 1000;
    }

    private static String human(int c) {
        long v = 1L << c;
        return v >= 1 << 20 ? (v >> 20) + "M" : v >= 1 << 10 ? (v >> 10) + "K" : Long.toString(v);
    }
}
