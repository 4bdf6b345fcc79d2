package io.jmesh.soak;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The soak's verdict: the summary table (faults injected, detected, time to detect, bytes checked, anything lost),
 * the resources of every node incarnation (threads, descriptors, RSS: first against last stretch), the samples as
 * CSV and as an SVG plot.
 */
final class Summary {
    /** Growth allowed between the first and the last stretch of a survivor's samples (medians). */
    static final long THREADS_SLACK = 3;
    static final long FDS_SLACK = 16;

    private final Ledger l;
    final List<String> failures = new ArrayList<>();

    Summary(Ledger ledger) {
        this.l = ledger;
    }

    /** Prints the table; returns whether every goal held. */
    boolean print(PrintStream out, String header, long elapsedMs) {
        int expected = 0;
        int reported = 0;
        int within = 0;
        int named = 0;
        int healed = 0;
        int freezes = 0;
        List<Long> detect = new ArrayList<>();
        List<Long> heal = new ArrayList<>();
        for (Fault f : l.faults) {
            freezes += f.kind == Fault.Kind.FREEZE ? 1 : 0;
            expected += f.expected.size();
            reported += (int) f.expected.keySet().stream().filter(f.reports::containsKey).count();
            within += f.within(l.boundMs);
            named += f.named();
            f.reports.values().forEach(r -> detect.add(r.ms() - f.injectedMs));
            if (f.healedMs >= 0) {
                healed++;
                heal.add(f.healedMs - f.resolvedMs);
            }
            for (var e : f.expected.entrySet()) {
                Fault.Report r = f.reports.get(e.getKey());
                if (r == null || r.ms() - f.injectedMs > l.boundMs || !r.named()) {
                    failures.add("fault " + f.number + " (" + f.kind + " " + Ring.name(f.node) + "): " + e.getKey()
                            + (r == null ? " never reported" : " reported after " + (r.ms() - f.injectedMs)
                            + " ms, naming " + Ring.name(e.getValue()) + ": " + r.named() + ": " + r.err()));
                }
            }
            if (f.healedMs < 0) {
                failures.add("fault " + f.number + ": the mesh did not reconnect after " + Ring.name(f.node)
                        + " came back");
            }
        }
        long checked = 0;
        long sent = 0;
        for (List<long[]> s : l.samples.values()) {
            checked += s.getLast()[6];
            sent += s.getLast()[4];
        }
        long lostAtClose = 0;
        for (Map.Entry<Ledger.Key, Long> f : l.finals.entrySet()) {
            Long got = l.closed.get(f.getKey());
            if (got == null && f.getValue() == 0) {
                continue;           // a session closed before its first message: its receiver never knew its sender
            }
            if (got == null || got < f.getValue()) {
                lostAtClose += f.getValue() - (got == null ? 0 : got);
                failures.add(f.getKey() + ": the sender completed " + f.getValue() + " messages, the receiver got "
                        + got + " by the close");
            }
        }
        l.collateral.forEach(c -> failures.add("collateral: " + c));
        l.bad.forEach(b -> failures.add("bad message: " + b));
        l.stuck.forEach(s -> failures.add("never ended: " + s));
        if (l.faults.isEmpty()) {
            failures.add("no fault was injected: run longer (--seconds)");
        }
        out.println(header);
        row(out, "ran", String.format("%.0f s", elapsedMs / 1e3));
        row(out, "faults injected", l.faults.size() + " (" + freezes + " freeze, " + (l.faults.size() - freezes)
                + " kill)");
        row(out, "connection ends to report", Integer.toString(expected));
        row(out, "reported / within " + l.boundMs + " ms / naming the node",
                reported + " / " + within + " / " + named);
        row(out, "time to detect: median, max", stat(detect, " ms"));
        row(out, "reconnected after the fault", healed + " of " + l.faults.size() + " (after it came back: "
                + stat(heal, " ms") + ")");
        row(out, "collateral failures or stalls", Integer.toString(l.collateral.size()));
        row(out, "messages checked", sent + " sent, " + mib(checked) + " MiB received and checked");
        row(out, "wrong, repeated, out of order", Integer.toString(l.bad.size()));
        row(out, "lost (at the graceful close)", Long.toString(lostAtClose));
        row(out, "cut by faults (in flight, not lost)", Long.toString(l.cutByFaults()));
        row(out, "connections that never ended", Integer.toString(l.stuck.size()));
        row(out, "failed connects, retried", Long.toString(l.connectFailures));
        resources(out);
        row(out, "result", failures.isEmpty() ? "PASS" : "FAIL (" + failures.size() + ")");
        failures.stream().limit(40).forEach(f -> out.println("  " + f));
        return failures.isEmpty();
    }

    /**
     * Each node incarnation's steady samples (taken with the mesh healed and quiet), first against last: threads
     * over all of them (median of the first third against the last third), descriptors between samples at which the
     * node relayed as many connections (routes change with every fault, and each relayed connection holds about 8
     * descriptors), the largest growth among those groups. Samples during a reconnect are not steady: a failed
     * connection's sockets linger up to 10 s and new ones open.
     */
    private void resources(PrintStream out) {
        for (Map.Entry<String, List<long[]>> e : l.steady.entrySet()) {
            List<long[]> s = e.getValue();
            if (s.size() < 3) {
                continue;           // too short a life to tell a trend (a node restarted near the end)
            }
            int third = Math.max(1, s.size() / 3);
            long[] a = medians(s.subList(0, third));
            long[] b = medians(s.subList(s.size() - third, s.size()));
            long fdGrowth = 0;
            String fdAt = "";
            Map<Long, List<long[]>> byRelays = new java.util.TreeMap<>();
            s.forEach(x -> byRelays.computeIfAbsent(x[4], k -> new ArrayList<>()).add(x));
            for (Map.Entry<Long, List<long[]>> g : byRelays.entrySet()) {
                List<long[]> v = g.getValue();
                if (v.size() >= 2) {
                    int t = Math.max(1, v.size() / 3);
                    long grow = medians(v.subList(v.size() - t, v.size()))[2] - medians(v.subList(0, t))[2];
                    if (fdAt.isEmpty() || grow > fdGrowth) {
                        fdGrowth = grow;
                        fdAt = " (relaying " + g.getKey() + ": " + v.size() + " samples)";
                    }
                }
            }
            String node = Ring.name(Integer.parseInt(e.getKey().split("/")[0])) + "#" + e.getKey().split("/")[1];
            long span = (s.getLast()[0] - s.getFirst()[0]) / 1000;
            row(out, "node " + node + ", " + s.size() + " steady samples, " + span + " s", String.format(
                    "threads %d -> %d, fds %d -> %d, at equal relaying %+d%s, RSS %d -> %d MiB", a[1], b[1], a[2],
                    b[2], fdGrowth, fdAt, a[3] / 1024, b[3] / 1024));
            if (b[1] - a[1] > THREADS_SLACK || fdGrowth > FDS_SLACK) {
                failures.add("node " + node + ": threads " + a[1] + " -> " + b[1] + ", descriptors " + fdGrowth
                        + " more at equal relaying (more than " + THREADS_SLACK + " threads or " + FDS_SLACK
                        + " descriptors of growth)");
            }
        }
    }

    private static long[] medians(List<long[]> in) {
        long[] m = new long[4];
        for (int k = 1; k < 4; k++) {
            final int c = k;
            long[] v = in.stream().mapToLong(x -> x[c]).sorted().toArray();
            m[k] = v[v.length / 2];
        }
        return m;
    }

    private static void row(PrintStream out, String what, String value) {
        out.printf("| %-40s | %s |%n", what, value);
    }

    private static String stat(List<Long> v, String unit) {
        if (v.isEmpty()) {
            return "none";
        }
        long[] a = v.stream().mapToLong(Long::longValue).sorted().toArray();
        return a[a.length / 2] + unit + ", " + a[a.length - 1] + unit;
    }

    private static String mib(long bytes) {
        return String.format("%.1f", bytes / 1048576.0);
    }

    /** samples.csv (one row per sample) and resources.svg (threads, fds, RSS of every incarnation against time). */
    void write(Path dir, long startMs) throws IOException {
        StringBuilder csv = new StringBuilder("node,incarnation,seconds,threads,fds,rss_kb,sent,checked_bytes\n");
        for (Map.Entry<String, List<long[]>> e : l.samples.entrySet()) {
            String[] k = e.getKey().split("/");
            for (long[] x : e.getValue()) {
                csv.append(Ring.name(Integer.parseInt(k[0]))).append(',').append(k[1]).append(',')
                        .append((x[0] - startMs) / 1000.0).append(',').append(x[1]).append(',').append(x[2])
                        .append(',').append(x[3]).append(',').append(x[4]).append(',').append(x[6]).append('\n');
            }
        }
        Files.writeString(dir.resolve("samples.csv"), csv);
        Files.writeString(dir.resolve("resources.svg"), Plot.svg(l.samples, startMs,
                l.faults.stream().mapToLong(f -> f.injectedMs - startMs).toArray()));
    }
}
