package io.jmesh.soak;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The driver's view of the mesh, built from the nodes' events: which session each connection is in and the path it
 * takes, which fault each failure belongs to (or none: a collateral failure), and every count the summary needs.
 */
final class Ledger {
    /** A connection's session: sender node, receiver node, session. */
    record Key(int src, int dst, long session) {
    }

    final Ring ring;
    final long boundMs;
    private final long[][] outSession;
    private final long[][] inSession;
    private final Map<Key, List<Integer>> paths = new HashMap<>();
    final List<Fault> faults = new ArrayList<>();
    final List<String> collateral = new ArrayList<>();
    final List<String> bad = new ArrayList<>();
    final List<String> stuck = new ArrayList<>();
    final Map<Key, Long> finals = new HashMap<>();
    final Map<Key, Long> closed = new HashMap<>();
    private final Map<Key, long[]> cut = new HashMap<>();
    /** SAMPLE events by "node/incarnation": t, threads, fds, rss_kb, sent, sent_bytes, checked_bytes. */
    final Map<String, List<long[]>> samples = new java.util.LinkedHashMap<>();
    /**
     * The samples taken in a steady state (the mesh healed and quiet: the last before each fault and before the
     * close), by "node/incarnation": t, threads, fds, rss_kb, and the connections the node relayed then (each holds
     * sockets on both sides, so descriptors are compared only between samples relaying as many).
     */
    final Map<String, List<long[]>> steady = new java.util.LinkedHashMap<>();
    private final Map<Integer, String> latestKey = new HashMap<>();
    private final long[][] latestGot;
    final String[] handles;
    final boolean[] done;
    final boolean[] exited;
    long connectFailures;
    boolean stopping;

    Ledger(Ring ring, long boundMs) {
        this.ring = ring;
        this.boundMs = boundMs;
        int n = ring.nodes;
        outSession = new long[n][n];
        inSession = new long[n][n];
        latestGot = new long[n][n];
        handles = new String[n];
        done = new boolean[n];
        exited = new boolean[n];
    }

    void accept(Ev e) {
        switch (e.type()) {
            case "HANDLE" -> handles[e.node()] = e.fields().get("handle");
            case "UP" -> up(e);
            case "FAULT", "END" -> ended(e);
            case "FINAL" -> finals.put(new Key(e.node(), e.peer(), e.num("session")), e.num("done"));
            case "BAD" -> bad.add(Ring.name(e.node()) + " from " + e.peer() + ": " + e.err());
            case "STUCK" -> stuck.add(Ring.name(e.node()) + " from " + e.peer() + " session " + e.num("session"));
            case "CONNECT_FAIL" -> connectFailures++;
            case "SAMPLE" -> sample(e);
            case "DONE" -> done[e.node()] = true;
            case "EXIT" -> exited[e.node()] = true;
            default -> { }
        }
    }

    /** Whether every ordered pair is connected and its receiver has the sender's current session. */
    boolean healed() {
        for (int s = 0; s < ring.nodes; s++) {
            for (int d = 0; d < ring.nodes; d++) {
                if (s != d && (outSession[s][d] == 0 || inSession[d][s] != outSession[s][d])) {
                    return false;
                }
            }
        }
        return true;
    }

    /** Records a fault on {@code node} now: every end of a connection from, to or through it is to report. */
    Fault inject(Fault.Kind kind, int node, long ms) {
        markSteady();
        Fault f = new Fault(faults.size() + 1, kind, node, ms);
        for (int s = 0; s < ring.nodes; s++) {
            for (int d = 0; d < ring.nodes; d++) {
                long session = s == d ? 0 : outSession[s][d];
                List<Integer> p = paths.get(new Key(s, d, session));
                if (session == 0 || p == null || !p.contains(node)) {
                    continue;
                }
                if (s != node) {
                    f.expected.put(new Fault.End(s, "out", d, session), p.get(1));
                }
                if (d != node && inSession[d][s] == session) {
                    f.expected.put(new Fault.End(d, "in", s, session), p.get(p.size() - 2));
                }
            }
        }
        f.baseline = new long[ring.nodes][];
        for (int d = 0; d < ring.nodes; d++) {
            f.baseline[d] = latestGot[d].clone();
        }
        faults.add(f);
        if (kind == Fault.Kind.KILL) {
            for (int k = 0; k < ring.nodes; k++) {
                outSession[node][k] = 0;
                inSession[node][k] = 0;
            }
        }
        return f;
    }

    /**
     * The end of the fault's hold: each connection that neither starts, ends nor passes at the faulty node must
     * have delivered messages meanwhile (its receiver's count grew).
     */
    void resolve(Fault f, long ms) {
        f.resolvedMs = ms;
        for (int s = 0; s < ring.nodes; s++) {
            for (int d = 0; d < ring.nodes; d++) {
                List<Integer> p = s == d ? null : paths.get(new Key(s, d, outSession[s][d]));
                if (p != null && !p.contains(f.node) && latestGot[d][s] <= f.baseline[d][s]) {
                    f.stalled++;
                    collateral.add("fault " + f.number + ": " + Ring.name(s) + "->" + Ring.name(d)
                            + " (not through " + Ring.name(f.node) + ") delivered nothing while it was down");
                }
            }
        }
    }

    /** Records each node's latest sample as a steady one (call only while the mesh is healed and quiet). */
    void markSteady() {
        for (String k : latestKey.values()) {
            List<long[]> s = samples.get(k);
            long[] last = s.getLast();
            if (last[0] > healedMs) {
                int node = Integer.parseInt(k.split("/")[0]);
                steady.computeIfAbsent(k, x -> new ArrayList<>()).add(new long[] {last[0], last[1], last[2], last[3],
                    relayedThrough(node)});
            }
        }
    }

    /** How many current connections pass through {@code node} as a relay (each holds sockets on both sides). */
    private long relayedThrough(int node) {
        long n = 0;
        for (int s = 0; s < ring.nodes; s++) {
            for (int d = 0; d < ring.nodes; d++) {
                List<Integer> p = s == d ? null : paths.get(new Key(s, d, outSession[s][d]));
                if (p != null && p.indexOf(node) > 0 && p.indexOf(node) < p.size() - 1) {
                    n++;
                }
            }
        }
        return n;
    }

    /** When the mesh was last seen healed: a sample from before it is no steady one. */
    long healedMs;

    private void up(Ev e) {
        int peer = e.peer();
        long session = e.num("session");
        if (e.fields().get("dir").equals("out")) {
            outSession[e.node()][peer] = session;
            paths.put(new Key(e.node(), peer, session), ring.path(e.node(), peer, e.err()));
        } else if (peer >= 0) {
            inSession[e.node()][peer] = session;
        }
    }

    private void ended(Ev e) {
        boolean out = e.fields().get("dir").equals("out");
        int peer = e.peer();
        long session = e.num("session");
        if (peer < 0) {
            return;                 // a connection that ended before its first message: nothing to account
        }
        Key key = out ? new Key(e.node(), peer, session) : new Key(peer, e.node(), session);
        cut.computeIfAbsent(key, k -> new long[] {-1, -1})[out ? 0 : 1] = e.num("count");
        if (out && outSession[e.node()][peer] == session) {
            outSession[e.node()][peer] = 0;
        } else if (!out && inSession[e.node()][peer] == session) {
            inSession[e.node()][peer] = 0;
        }
        if (stopping) {
            if (e.type().equals("END") && !out) {
                closed.put(key, e.num("count"));
            } else {
                collateral.add("during the graceful close: " + describe(e));
            }
            return;
        }
        Fault f = faults.isEmpty() ? null : faults.getLast();
        Fault.End end = new Fault.End(e.node(), out ? "out" : "in", peer, session);
        if (f != null && f.expected.containsKey(end)) {
            f.reports.putIfAbsent(end, new Fault.Report(e.t(), ring.names(e.err(), f.expected.get(end)), e.err()));
            return;
        }
        List<Integer> p = paths.get(key);
        boolean recent = f != null && (f.healedMs < 0 || e.t() < f.healedMs + 2 * boundMs);
        if (recent && (e.node() == f.node || p != null && p.contains(f.node))) {
            return;                 // the faulty node's own view, or a connection through it made during the fault
        }
        collateral.add((f == null ? "before any fault" : "fault " + f.number + " (" + f.kind + " "
                + Ring.name(f.node) + ")") + ": " + describe(e));
    }

    private String describe(Ev e) {
        return e.type() + " at " + Ring.name(e.node()) + " (" + e.fields().get("dir") + ", peer " + Ring.name(
                e.peer()) + ", " + e.fields().get("status") + "): " + e.err();
    }

    private void sample(Ev e) {
        latestKey.put(e.node(), e.node() + "/" + e.incarnation());
        samples.computeIfAbsent(e.node() + "/" + e.incarnation(), k -> new ArrayList<>()).add(new long[] {
            e.t(), e.num("threads"), e.num("fds"), e.num("rss_kb"), e.num("sent"), e.num("sent_bytes"),
            e.num("checked_bytes")});
        String[] got = e.fields().get("got").split(",");
        for (int s = 0; s < got.length && s < ring.nodes; s++) {
            latestGot[e.node()][s] = Long.parseLong(got[s]);
        }
    }

    /** Messages the sender completed on connections that a fault then cut, beyond what the receiver got. */
    long cutByFaults() {
        long n = 0;
        for (long[] c : cut.values()) {
            if (c[0] >= 0 && c[1] >= 0 && c[0] > c[1]) {
                n += c[0] - c[1];
            }
        }
        return n;
    }
}
