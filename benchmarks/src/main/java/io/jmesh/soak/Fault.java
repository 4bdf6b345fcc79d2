package io.jmesh.soak;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One injected fault and what it should produce: every connection end it cuts (the connections from, to or through
 * the faulty node, seen from the nodes that stay up) must report within the bound, naming the node it lost (the
 * faulty one, or the relay between them where the faulty node lies beyond it).
 */
final class Fault {
    enum Kind { FREEZE, KILL }

    /** A connection end: node, "out" (its sender) or "in" (its receiver), the peer, the session. */
    record End(int node, String dir, int peer, long session) {
    }

    /** What one end reported: when, naming which node. */
    record Report(long ms, boolean named, String err) {
    }

    final int number;
    final Kind kind;
    final int node;
    final long injectedMs;
    /** Each end expected to report, with the node its report must name. */
    final Map<End, Integer> expected = new LinkedHashMap<>();
    final Map<End, Report> reports = new LinkedHashMap<>();
    /** Connections not through the faulty node that delivered nothing while it was down. */
    int stalled;
    long resolvedMs;
    /** Each receiver's count per sender when the fault began. */
    long[][] baseline;
    long healedMs = -1;

    Fault(int number, Kind kind, int node, long injectedMs) {
        this.number = number;
        this.kind = kind;
        this.node = node;
        this.injectedMs = injectedMs;
    }

    int within(long boundMs) {
        int n = 0;
        for (End e : expected.keySet()) {
            Report r = reports.get(e);
            if (r != null && r.ms - injectedMs <= boundMs) {
                n++;
            }
        }
        return n;
    }

    int named() {
        return (int) expected.keySet().stream().filter(e -> reports.containsKey(e) && reports.get(e).named).count();
    }

    long maxDetectMs() {
        return reports.values().stream().mapToLong(r -> r.ms - injectedMs).max().orElse(-1);
    }
}
