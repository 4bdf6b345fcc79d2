package io.jmesh.soak;

import java.util.HashMap;
import java.util.Map;

/** A parsed event line of a node ({@link Events}): its type, its key=value fields, the free text after "err=". */
record Ev(int node, int incarnation, String type, Map<String, String> fields, String err) {
    /** The event of {@code line}, or null for a line that is no event (a node's stray output). */
    static Ev parse(int node, int incarnation, String line) {
        if (!line.startsWith("EV ")) {
            return null;
        }
        String err = null;
        int e = line.indexOf(" err=");
        String head = line;
        if (e >= 0) {
            err = line.substring(e + 5);
            head = line.substring(0, e);
        }
        String[] w = head.split(" ");
        Map<String, String> f = new HashMap<>();
        for (int i = 2; i < w.length; i++) {
            int eq = w[i].indexOf('=');
            if (eq > 0) {
                f.put(w[i].substring(0, eq), w[i].substring(eq + 1));
            }
        }
        return new Ev(node, incarnation, w[1], f, err == null ? "" : err);
    }

    long num(String key) {
        String v = fields.get(key);
        return v == null ? -1 : Long.parseLong(v);
    }

    int peer() {
        return (int) num("peer");
    }

    long t() {
        return num("t");
    }
}
