package io.jmesh.cli.perf;

import io.jmesh.api.IdleStrategy;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;

import java.io.IOException;
import java.io.PrintStream;

import static io.jmesh.cli.perf.JitSettle.ROUND_NS;
import static io.jmesh.cli.perf.Requests.RING;

/** The bw client: streams messages over every connection, size by size, and reports each. */
final class BandwidthClient {
    private static final long INTERVAL_NS = 1_000_000_000L;
    private final PerfOptions o;
    private final JitSettle jit;
    private final PrintStream progress;

    /** @param progress where a timed run ('-D') prints one line per second, as iperf3 does */
    BandwidthClient(PerfOptions o, JitSettle jit, PrintStream progress) {
        this.o = o;
        this.jit = jit;
        this.progress = progress;
    }

    /** Sends warm-up and then measured messages round-robin over the connections; returns the result line. */
    String bandwidth(Oob oob, Sender[] s, Registration reg, long size, long[] totals) throws IOException {
        int q = s.length;
        int[][] ring = new int[q][RING];
        // the peak is the best rate over this many consecutive completions: several windows of requests in flight,
        // so that completions reported in bursts do not count as a rate
        int peakWindow = (int) Math.max(4L * o.depth() * q, Math.min(o.iterations() / 16, 4096));
        long[] window = new long[peakWindow];
        long[] posted = new long[q];
        long[] done = new long[q];
        long warm = o.warmupFor();
        // warm-up takes the measurement's code path (peak window too): a branch first taken when measuring would be
        // compiled then, on the measurement's CPU time
        long[] scratch = new long[peakWindow];
        stream(s, reg, size, ring, posted, done, warm, 0, scratch, false);
        jit.settle(oob, size, () -> stream(s, reg, size, ring, posted, done, -1, ROUND_NS, scratch, false));
        long start = System.nanoTime();
        long measured = o.duration() > 0 ? stream(s, reg, size, ring, posted, done, -1,
                o.duration() * 1_000_000_000L, window, true) : stream(s, reg, size, ring, posted, done,
                o.iterations(), 0, window, false);
        long elapsed = System.nanoTime() - start;
        double peakNs = window[0];
        for (int c = 0; c < q; c++) {
            totals[c] += posted[c];
        }
        StringBuilder sb = new StringBuilder("end totals=");
        for (int c = 0; c < q; c++) {
            sb.append(c == 0 ? "" : ",").append(totals[c]);
        }
        oob.send(sb.toString());
        oob.expect("done");
        double avg = (double) size * measured * 1e9 / elapsed;
        double peak = peakNs > 0 ? (double) size * peakWindow * 1e9 / peakNs : avg;
        return PerfReport.bwLine(size, measured, Math.max(peak, avg), avg, measured * 1e9 / elapsed, o.gbits());
    }

    /**
     * Keeps up to depth messages in flight per connection until {@code count} messages (or, when count < 0, until
     * {@code durationNs}) have completed. {@code peak}, when given, receives in [0] the shortest time taken by
     * {@code peak.length} consecutive completions. With {@code intervals}, prints a line each second (one string a
     * second is all this loop allocates). Returns the messages completed.
     */
    private long stream(Sender[] s, Registration reg, long size, int[][] ring, long[] posted, long[] done, long count,
                        long durationNs, long[] peak, boolean intervals) throws IOException {
        int q = s.length;
        long sent = 0;
        long completed = 0;
        long start = System.nanoTime();
        long lastProgress = start;
        long timeoutNs = o.timeout().toNanos();
        long best = Long.MAX_VALUE;
        int w = peak == null ? 1 : peak.length;
        long[] times = peak == null ? null : new long[w];
        boolean stop = count == 0;
        long now = start;
        IdleStrategy idler = o.poll().idleStrategy();
        long nextInterval = start + INTERVAL_NS;
        long intervalStart = start;
        long intervalFrom = 0;
        for (long spin = 0; ; spin++) {
            boolean progress = false;
            for (int c = 0; c < q; c++) {
                Sender x = s[c];
                if (!stop && posted[c] - done[c] < o.depth()) {
                    int req = x.isend(reg, 0, size, 0);
                    if (req >= 0) {
                        ring[c][(int) (posted[c] & (RING - 1))] = req;
                        posted[c]++;
                        sent++;
                        if (count >= 0 && sent == count) {
                            stop = true;
                        }
                    } else if (req != Status.NOT_READY) {
                        throw new IOException("isend failed: " + Status.describe(req) + " " + x.error());
                    }
                }
                if (done[c] < posted[c]) {
                    int t = x.test(ring[c][(int) (done[c] & (RING - 1))]);
                    if (t == 1) {
                        done[c]++;
                        if (times != null) {
                            now = System.nanoTime();
                            int slot = (int) (completed % w);
                            long prev = times[slot];
                            times[slot] = now;
                            if (completed >= w && now - prev < best) {
                                best = now - prev;
                            }
                        }
                        completed++;
                        progress = true;
                    } else if (t < 0) {
                        throw new IOException("send failed: " + Status.describe(t) + " " + x.error());
                    }
                }
            }
            if (stop && completed == sent) {
                break;
            }
            if (progress) {
                idler.reset();
            } else {
                idler.idle();
            }
            if (progress || (spin & 255) == 0) {
                now = System.nanoTime();
                if (progress) {
                    lastProgress = now;
                } else if (now - lastProgress > timeoutNs) {
                    throw new IOException("no send completed for " + o.timeout().toSeconds() + " s (" + completed
                            + " of " + sent + " done): the receiver stopped posting or the link stalled");
                }
                if (count < 0 && !stop && now - start >= durationNs) {
                    stop = true;
                }
                if (intervals && now - nextInterval >= 0) {
                    this.progress.println(PerfReport.interval(o, size, (intervalStart - start) / 1e9,
                            (now - start) / 1e9, completed - intervalFrom));
                    this.progress.flush();
                    intervalStart = now;
                    intervalFrom = completed;
                    nextInterval = now + INTERVAL_NS;
                }
            }
        }
        if (peak != null) {
            peak[0] = best == Long.MAX_VALUE ? 0 : best;
        }
        return completed;
    }
}
