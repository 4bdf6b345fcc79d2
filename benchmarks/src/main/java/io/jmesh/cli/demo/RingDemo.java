package io.jmesh.cli.demo;

import io.jmesh.api.CloseHelper;
import io.jmesh.api.Connections;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.IdleStrategy;
import io.jmesh.api.Listener;
import io.jmesh.api.PeerConnections;
import io.jmesh.api.Registration;
import io.jmesh.api.NoRouteException;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * 'jmesh demo --ring': four jmesh nodes in this JVM in a ring (A-B-C-D-A, each link its own loopback subnet), as a
 * four-node DGX Spark cluster without a switch is cabled. The neighbours connect directly; the two diagonals (A-C,
 * B-D) have no link and go through a neighbour, which relays. It shows each connection's route and a bandwidth table
 * of direct and relayed pairs with the data verified at the receiver.
 */
final class RingDemo {
    private static final List<DemoCommand.Node> NODES = List.of(
            new DemoCommand.Node("A", "127.0.111.1/24,127.0.114.1/24"),
            new DemoCommand.Node("B", "127.0.111.2/24,127.0.112.2/24"),
            new DemoCommand.Node("C", "127.0.112.3/24,127.0.113.3/24"),
            new DemoCommand.Node("D", "127.0.113.4/24,127.0.114.4/24"));

    private RingDemo() {
    }

    static int run(List<Long> sizes, double seconds, PrintStream out, PrintStream json)
            throws IOException, NoRouteException {
        out.println("jmesh demo --ring: a four-node ring on this machine");
        out.println();
        out.println("Four jmesh nodes in this process, the TCP provider on loopback, each link its own subnet.");
        out.println("A and C, B and D share no link: their connections go through a neighbour, which relays.");
        out.println();
        out.println("        127.0.111.0/24");
        out.println("      A ---------------- B");
        out.println("      |                  |");
        out.println("  127.0.114.0/24   127.0.112.0/24");
        out.println("      |                  |");
        out.println("      D ---------------- C");
        out.println("        127.0.113.0/24");
        out.println();
        long maxSize = sizes.stream().mapToLong(Long::longValue).max().orElse(1);
        int n = NODES.size();
        List<AutoCloseable> open = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            Fabric[] fabrics = new Fabric[n];
            Listener[] listeners = new Listener[n];
            Registration[] src = new Registration[n];
            Registration[] dst = new Registration[n];
            out.println("[1/3] the nodes; each relays for the others and finds its neighbours over its links (UDP):");
            for (int i = 0; i < n; i++) {
                fabrics[i] = Fabric.open(DemoCommand.context(NODES.get(i).addresses()));
                open.add(fabrics[i]);
                src[i] = fabrics[i].register(arena.allocate(maxSize, 4096));
                open.add(src[i]);
                dst[i] = fabrics[i].register(arena.allocate(maxSize, 4096));
                open.add(dst[i]);
                listeners[i] = fabrics[i].listen();
                open.add(listeners[i]);
                out.printf(Locale.ROOT, "  %s  links %s%n", NODES.get(i).name(),
                        NODES.get(i).addresses().replace(",", " "));
            }
            out.println();
            out.println("[2/3] every node connects to the three others (the diagonals wait for route discovery, "
                    + "about a second):");
            List<PeerConnections<String>> nodes = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Map<String, byte[]> peers = new LinkedHashMap<>();
                for (int j = 0; j < n; j++) {
                    if (j != i) {
                        peers.put(NODES.get(j).name(), listeners[j].handle());
                    }
                }
                PeerConnections<String> node = PeerConnections.start(fabrics[i], listeners[i], peers);
                open.add(node);
                nodes.add(node);
            }
            Connections.awaitAll(Duration.ofSeconds(30), IdleStrategy.controlPlane(), nodes);
            boolean[][] relayed = new boolean[n][n];
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < n; j++) {
                    if (i != j) {
                        String route = nodes.get(i).route(NODES.get(j).name());
                        relayed[i][j] = route.contains(" via ");
                        out.printf(Locale.ROOT, "  %s -> %s  %-8s %s%n", NODES.get(i).name(), NODES.get(j).name(),
                                relayed[i][j] ? "relayed" : "direct", route);
                    }
                }
            }
            out.println();
            out.printf(Locale.ROOT, "[3/3] bandwidth, %.1f s per size and pair, %d messages in flight; the receiver "
                    + "checks the last %d%n      messages of each row byte for byte:%n", seconds, DemoCommand.DEPTH,
                    DemoCommand.VERIFY_MESSAGES);
            out.println();
            out.println("  from  to  path      size        messages        MB/s  data");
            Map<Long, double[]> sums = new TreeMap<>(); // size -> direct sum, direct count, relayed sum, relayed count
            int verified = 0;
            int rows = 0;
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < n; j++) {
                    if (i == j) {
                        continue;
                    }
                    for (long size : sizes) {
                        DemoCommand.Transfer t = DemoCommand.Transfer.run(nodes.get(i).sender(NODES.get(j).name()),
                                src[i], nodes.get(j).receiver(NODES.get(i).name()), dst[j], size,
                                (long) (seconds * 1e9), 37L * i + j + size);
                        rows++;
                        verified += t.verified() ? 1 : 0;
                        double[] s = sums.computeIfAbsent(size, k -> new double[4]);
                        s[relayed[i][j] ? 2 : 0] += t.mbPerSecond();
                        s[relayed[i][j] ? 3 : 1]++;
                        out.printf(Locale.ROOT, "  %-4s  %-2s  %-8s  %-10s  %8d  %10.1f  %s%n", NODES.get(i).name(),
                                NODES.get(j).name(), relayed[i][j] ? "relayed" : "direct", DemoCommand.bytes(size),
                                t.messages(), t.mbPerSecond(), t.verified() ? "verified" : "CORRUPT: " + t.problem());
                        out.flush();
                        DemoCommand.json(json, "ring", NODES.get(i).name(), NODES.get(j).name(),
                                relayed[i][j] ? "relayed" : "direct", size, t);
                    }
                }
            }
            out.println();
            out.println("  size        direct MB/s   relayed MB/s   relayed/direct");
            sums.forEach((size, s) -> {
                double direct = s[0] / Math.max(1, s[1]);
                double relay = s[2] / Math.max(1, s[3]);
                out.printf(Locale.ROOT, "  %-10s  %11.1f  %13.1f  %15.2f%n", DemoCommand.bytes(size), direct, relay,
                        direct > 0 ? relay / direct : 0);
            });
            out.println();
            out.printf(Locale.ROOT, "%d connections, 4 of them relayed; %d of %d transfers verified. On loopback "
                    + "every hop shares this machine's cores: the ratio shows the shape, not a real mesh's figure.%n",
                    n * (n - 1), verified, rows);
            DemoCommand.summary(json, "ring", n * (n - 1), rows, verified);
            return verified == rows ? 0 : 1;
        } finally {
            CloseHelper.closeAll(e -> out.println("jmesh demo: closing failed: " + e), open.reversed());
        }
    }
}
