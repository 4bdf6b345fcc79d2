package io.jmesh.soak;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where the soak's nodes sit: a ring on loopback subnets, as scripts/relay-lib.sh places them (Linux answers all of
 * 127/8 on lo, and each NET.L.0/24 is one cable). Node i (host i + 1) holds links FIRST + i and FIRST + i - 1, so it
 * shares one cable with each ring neighbour, and every other pair's connections go through relays: for 4 nodes on
 * 127.0 from 111, A-B on .111, B-C on .112, C-D on .113 and D-A on .114.
 */
final class Ring {
    private static final Pattern VIA = Pattern.compile(" via (\\d+\\.\\d+\\.\\d+\\.\\d+)");
    final int nodes;
    private final String net;
    private final int first;

    Ring(int nodes, String net, int first) {
        if (nodes < 4 || nodes > 9 || first < 1 || first + nodes > 255) {
            throw new IllegalArgumentException("a ring of 4 to 9 nodes (fewer have no relays) on links " + first
                    + " to " + (first + nodes - 1) + " (each below 255): change --nodes or --first-link");
        }
        this.nodes = nodes;
        this.net = net;
        this.first = first;
    }

    /** Node i's two addresses, without prefix. */
    List<String> addresses(int i) {
        return List.of(net + "." + (first + i) + "." + (i + 1), net + "." + (first + Math.floorMod(i - 1, nodes)) + "."
                + (i + 1));
    }

    /** Node i's JMESH_ADDRESSES. */
    String addressList(int i) {
        return String.join(",", addresses(i).stream().map(a -> a + "/24").toList());
    }

    /** Node i's name in tables: A, B, ... */
    static String name(int i) {
        return String.valueOf((char) ('A' + i));
    }

    /** The node holding {@code address}, or -1. */
    int nodeOf(String address) {
        for (int i = 0; i < nodes; i++) {
            if (addresses(i).contains(address)) {
                return i;
            }
        }
        return -1;
    }

    /** Whether {@code text} names one of node i's addresses (as a whole address, not a prefix of another). */
    boolean names(String text, int i) {
        for (String a : addresses(i)) {
            if (Pattern.compile(Pattern.quote(a) + "(?![0-9])").matcher(text).find()) {
                return true;
            }
        }
        return false;
    }

    /**
     * The nodes a connection from {@code src} to {@code dst} passes, ends included, from the connector's route text:
     * direct, or round the ring in the direction of the first relay it names.
     */
    List<Integer> path(int src, int dst, String route) {
        List<Integer> p = new ArrayList<>(List.of(src));
        Matcher m = VIA.matcher(route);
        if (m.find()) {
            int relay = nodeOf(m.group(1));
            int step = relay == Math.floorMod(src + 1, nodes) ? 1 : -1;
            for (int k = Math.floorMod(src + step, nodes); k != dst; k = Math.floorMod(k + step, nodes)) {
                p.add(k);
            }
        }
        p.add(dst);
        return p;
    }
}
