package io.jmesh.cli.perf;

import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;

import java.io.IOException;
import java.util.Map;

/** The fields of the out-of-band messages that both ends read or write (the protocol: {@link PerfCommand}). */
final class PerfProtocol {
    static final int VERSION = 3;

    private PerfProtocol() {
    }

    static String hex(Registration reg) {
        return java.util.HexFormat.of().formatHex(reg.remote().encode());
    }

    /** The peer's memory for --op write, from its message; checked, since it comes from the network. */
    static RemoteRegion region(Map<String, String> f, long need) throws IOException {
        RemoteRegion r;
        try {
            r = RemoteRegion.decode(java.util.HexFormat.of().parseHex(requireField(f, "region")));
        } catch (IllegalArgumentException e) {
            throw new IOException("protocol error: a bad memory region from the peer: " + e.getMessage());
        }
        if (r.length() < need) {
            throw new IOException("protocol error: the peer's memory region has " + r.length() + " bytes, "
                    + need + " needed");
        }
        return r;
    }

    static String requireField(Map<String, String> f, String key) throws IOException {
        String v = f.get(key);
        if (v == null || v.isEmpty()) {
            throw new IOException("protocol error: the client sent no " + key);
        }
        return v;
    }

    static long[] totals(Map<String, String> f, int q) throws IOException {
        String[] parts = requireField(f, "totals").split(",");
        if (parts.length != q) {
            throw new IOException("protocol error: " + parts.length + " totals for " + q + " connections");
        }
        long[] t = new long[q];
        for (int i = 0; i < q; i++) {
            try {
                t[i] = Long.parseLong(parts[i]);
            } catch (NumberFormatException e) {
                throw new IOException("protocol error: bad total '" + parts[i] + "'");
            }
            if (t[i] < 0) {
                throw new IOException("protocol error: negative total " + t[i]);
            }
        }
        return t;
    }
}
