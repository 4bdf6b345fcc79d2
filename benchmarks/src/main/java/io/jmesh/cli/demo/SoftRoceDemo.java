package io.jmesh.cli.demo;

import io.jmesh.api.CloseHelper;
import io.jmesh.api.Connections;
import io.jmesh.api.Fabric;
import io.jmesh.api.IdleStrategy;
import io.jmesh.api.Listener;
import io.jmesh.api.PeerConnections;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.NoRouteException;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;


/**
 * 'jmesh demo --softroce': the triangle over real verbs, one Soft-RoCE testbed guest per node. The host side starts
 * {@code testbed/run triangle} with 'jmesh demo --guest' in every guest; the guests exchange their handles through
 * the testbed's shared folder, connect to each other, and run the transfers in one global order so that both ends of
 * each meet. Guest a prints the table at the end.
 */
final class SoftRoceDemo {
    private static final Duration PATIENCE = Duration.ofSeconds(180);
    /** Bytes per measured transfer: about a second at the testbed's 5-20 MB/s. */
    private static final long BYTES_PER_ROW = 8L << 20;

    private SoftRoceDemo() {
    }

    static int host(List<String> argv, PrintStream out, PrintStream err) throws IOException {
        Path root = Path.of(System.getProperty("jmesh.root", "."));
        Path run = root.resolve("testbed/run");
        if (!Files.isExecutable(run)) {
            throw new IOException("--softroce needs the testbed (" + run + "): run ./jmesh from the jmesh checkout");
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cp = System.getProperty("java.class.path");
        Path out1 = root.resolve("target/demo-runs/" + System.currentTimeMillis());
        Files.createDirectories(out1.getParent());
        List<String> guestArgs = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                "-XX:TieredStopAtLevel=1", "-cp", cp, "io.jmesh.cli.Jmesh", "demo", "--guest"));
        guestArgs.addAll(argv);
        String command = String.join(" ", guestArgs.stream().map(SoftRoceDemo::quote).toList());
        out.println("jmesh demo --softroce: the triangle over real kernel verbs, one QEMU guest with rdma_rxe per "
                + "node");
        out.println("(booting three guests and their JVMs under software emulation takes a minute or two; their "
                + "output follows, [a] [b] [c])");
        out.flush();
        ProcessBuilder pb = new ProcessBuilder(run.toString(), "--out", out1.toString(), "-t", "900", "triangle",
                "--", "bash", "-c", command).directory(root.toFile()).inheritIO();
        try {
            int rc = pb.start().waitFor();
            if (rc == 95) {
                err.println("jmesh demo: the testbed cannot run on this machine (see above); 'jmesh demo' without "
                        + "--softroce runs the same triangle over TCP");
            }
            return rc;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 130;
        }
    }

    private static String quote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }

    /** One node of the triangle inside a testbed guest. */
    static int guest(List<Long> sizes, PrintStream out) throws IOException, NoRouteException {
        String me = env("TESTBED_NAME");
        List<String> guests = Arrays.asList(env("TESTBED_GUESTS").trim().split("\\s+"));
        Path shared = Path.of(env("TESTBED_SHARED"));
        List<String> peers = guests.stream().filter(g -> !g.equals(me)).toList();
        long maxSize = sizes.stream().mapToLong(Long::longValue).max().orElse(1);
        List<AutoCloseable> open = new ArrayList<>();
        try (Arena arena = Arena.ofShared(); Fabric fabric = Fabric.open()) {
            Registration src = fabric.register(arena.allocate(maxSize, 4096));
            open.add(src);
            Registration dst = fabric.register(arena.allocate(maxSize, 4096));
            open.add(dst);
            Listener listener = fabric.listen();
            open.add(listener);
            publish(shared, "demo-handle-" + me, listener.handleText());
            out.println("node " + name(me) + " (" + fabric.provider() + "): handle " + listener.handleText());
            Map<String, byte[]> handles = new LinkedHashMap<>();
            for (String p : peers) {
                handles.put(p, ListenHandle.parse(await(shared, "demo-handle-" + p)).encode());
            }
            PeerConnections<String> mesh = PeerConnections.start(fabric, listener, handles);
            open.add(mesh);
            for (String p : peers) {
                ListenHandle h = ListenHandle.decode(handles.get(p));
                Why.Choice route = Why.route(fabric, h);
                publish(shared, "demo-route-" + me + "-" + p, route.local().prefix().network() + " " + mesh.route(p));
                out.println(name(me) + " -> " + name(p) + "  " + mesh.route(p) + "  because "
                        + Why.explain(name(me), fabric.links(), name(p), h, route));
                out.flush();
            }
            // each peer's connect needs this node's accept and vice versa; each receiver is then known by its peer
            Connections.awaitAll(PATIENCE, IdleStrategy.controlPlane(), List.of(mesh));
            Map<String, Sender> senders = mesh.senders();
            Map<String, Receiver> receivers = mesh.receivers();
            for (String from : guests) {
                for (String to : guests) {
                    if (from.equals(to) || (!from.equals(me) && !to.equals(me))) {
                        continue;
                    }
                    for (long size : sizes) {
                        long messages = Math.max(4, BYTES_PER_ROW / size);
                        long seed = from.hashCode() * 31L + to.hashCode() * 7L + size;
                        String key = from + "-" + to + "-" + size;
                        if (from.equals(me)) {
                            double mbps = sendRow(senders.get(to), src, size, messages, seed);
                            publish(shared, "demo-bw-" + key, String.format(Locale.ROOT, "%d %.2f", messages, mbps));
                        } else {
                            String verdict = receiveRow(receivers.get(from), dst, arena, size, messages, seed);
                            publish(shared, "demo-verify-" + key, verdict);
                            out.println(name(from) + " -> " + name(to) + " " + DemoCommand.bytes(size) + ": " + verdict);
                            out.flush();
                        }
                    }
                }
            }
            barrier("demo-done");
            if (me.equals(guests.getFirst())) {
                table(out, shared, guests, sizes);
            }
            return 0;
        } finally {
            CloseHelper.closeAll(e -> out.println("closing failed: " + e), open.reversed());
        }
    }

    private static void table(PrintStream out, Path shared, List<String> guests, List<Long> sizes)
            throws IOException {
        out.println();
        out.println("  from  to  link              size        messages        MB/s  data");
        int rows = 0;
        int ok = 0;
        for (String from : guests) {
            for (String to : guests) {
                if (from.equals(to)) {
                    continue;
                }
                String link = Files.readString(shared.resolve("demo-route-" + from + "-" + to)).split(" ")[0];
                for (long size : sizes) {
                    String key = from + "-" + to + "-" + size;
                    String[] bw = Files.readString(shared.resolve("demo-bw-" + key)).trim().split(" ");
                    String verdict = Files.readString(shared.resolve("demo-verify-" + key)).trim();
                    rows++;
                    ok += verdict.equals("verified") ? 1 : 0;
                    out.printf(Locale.ROOT, "  %-4s  %-2s  %-16s  %-10s  %8s  %10s  %s%n", name(from), name(to), link,
                            DemoCommand.bytes(size), bw[0], bw[1], verdict);
                }
            }
        }
        out.println();
        out.printf(Locale.ROOT, "%d connections over real verbs (Soft-RoCE), each over the link of its own subnet; "
                + "%d of %d transfers verified.%n", guests.size() * (guests.size() - 1), ok, rows);
        out.println("(Soft-RoCE under QEMU emulation is 100-1000x slower than a real RoCE NIC: the MB/s show that data "
                + "moves, not how fast.)");
    }

    private static double sendRow(Sender s, Registration src, long size, long messages, long seed)
            throws IOException {
        DemoCommand.fill(src.memory(), size, seed);
        int[] ring = new int[DemoCommand.DEPTH];
        long posted = 0;
        long done = 0;
        long start = System.nanoTime();
        long last = start;
        while (done < messages) {
            if (posted < messages && posted - done < DemoCommand.DEPTH) {
                int q = s.isend(src, 0, size, 0);
                if (q >= 0) {
                    ring[(int) (posted++ % DemoCommand.DEPTH)] = q;
                } else if (q != Status.NOT_READY) {
                    throw new IOException("isend: " + Status.describe(q) + " " + s.error());
                }
            }
            if (done < posted) {
                int t = s.test(ring[(int) (done % DemoCommand.DEPTH)]);
                if (t == 1) {
                    done++;
                    last = System.nanoTime();
                } else if (t < 0) {
                    throw new IOException("send: " + Status.describe(t) + " " + s.error());
                }
            }
            if (System.nanoTime() - last > PATIENCE.toNanos()) {
                throw new IOException("no send completed for " + PATIENCE.toSeconds() + " s");
            }
        }
        double mbps = (double) size * messages * 1e9 / (System.nanoTime() - start) / (1 << 20);
        for (int v = 0; v < DemoCommand.VERIFY_MESSAGES; v++) {
            DemoCommand.fill(src.memory(), size, seed * 1_000_003 + v);
            complete(s, send(s, src, size));
        }
        return mbps;
    }

    private static String receiveRow(Receiver r, Registration dst, Arena arena, long size, long messages, long seed)
            throws IOException {
        Registration[] regs = {dst};
        long[] offsets = {0};
        long[] max = {size};
        int[] tags = {0};
        int[] ring = new int[DemoCommand.DEPTH];
        long posted = 0;
        long done = 0;
        long last = System.nanoTime();
        while (done < messages) {
            if (posted < messages && posted - done < DemoCommand.DEPTH) {
                int q = r.irecv(1, regs, offsets, max, tags);
                if (q >= 0) {
                    ring[(int) (posted++ % DemoCommand.DEPTH)] = q;
                } else if (q != Status.NOT_READY) {
                    throw new IOException("irecv: " + Status.describe(q) + " " + r.error());
                }
            }
            if (done < posted) {
                int req = ring[(int) (done % DemoCommand.DEPTH)];
                int t = r.test(req);
                if (t == 1) {
                    if (r.size(req, 0) != size) {
                        return "CORRUPT: a message of " + r.size(req, 0) + " bytes, not " + size;
                    }
                    done++;
                    last = System.nanoTime();
                } else if (t < 0) {
                    throw new IOException("receive: " + Status.describe(t) + " " + r.error());
                }
            }
            if (System.nanoTime() - last > PATIENCE.toNanos()) {
                throw new IOException("no message arrived for " + PATIENCE.toSeconds() + " s");
            }
        }
        MemorySegment expected = arena.allocate(size, 4096);
        for (int v = 0; v < DemoCommand.VERIFY_MESSAGES; v++) {
            dst.memory().asSlice(0, size).fill((byte) 0);
            int q = r.irecv(1, regs, offsets, max, tags);
            if (q < 0) {
                throw new IOException("irecv: " + Status.describe(q) + " " + r.error());
            }
            waitRecv(r, q);
            DemoCommand.fill(expected, size, seed * 1_000_003 + v);
            long at = expected.mismatch(dst.memory().asSlice(0, size));
            if (r.size(q, 0) != size || at >= 0) {
                return "CORRUPT: " + (r.size(q, 0) != size ? r.size(q, 0) + " bytes" : "byte " + at + " differs");
            }
        }
        return "verified";
    }

    private static int send(Sender s, Registration src, long size) throws IOException {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        int q;
        while ((q = s.isend(src, 0, size, 0)) == Status.NOT_READY) {
            if (System.nanoTime() > deadline) {
                throw new IOException("the peer posted no receive for " + PATIENCE.toSeconds() + " s");
            }
            Thread.onSpinWait();
        }
        if (q < 0) {
            throw new IOException("isend: " + Status.describe(q) + " " + s.error());
        }
        return q;
    }

    private static void complete(Sender s, int q) throws IOException {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        int t;
        while ((t = s.test(q)) == 0) {
            if (System.nanoTime() > deadline) {
                throw new IOException("a send did not complete in " + PATIENCE.toSeconds() + " s");
            }
        }
        if (t < 0) {
            throw new IOException("send: " + Status.describe(t) + " " + s.error());
        }
    }

    private static void waitRecv(Receiver r, int q) throws IOException {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        int t;
        while ((t = r.test(q)) == 0) {
            if (System.nanoTime() > deadline) {
                throw new IOException("nothing arrived in " + PATIENCE.toSeconds() + " s");
            }
        }
        if (t < 0) {
            throw new IOException("receive: " + Status.describe(t) + " " + r.error());
        }
    }

    private static String name(String guest) {
        return guest.toUpperCase(Locale.ROOT);
    }

    private static String env(String name) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            throw new IllegalStateException("--guest runs inside the testbed only ($" + name + " is unset); use "
                    + "'jmesh demo --softroce'");
        }
        return v;
    }

    private static void publish(Path shared, String key, String value) throws IOException {
        Path tmp = shared.resolve(key + ".tmp");
        Files.writeString(tmp, value);
        Files.move(tmp, shared.resolve(key), StandardCopyOption.ATOMIC_MOVE);
    }

    private static String await(Path shared, String key) throws IOException {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        Path p = shared.resolve(key);
        while (!Files.exists(p)) {
            if (System.nanoTime() > deadline) {
                throw new IOException("no " + key + " from the peer within " + PATIENCE.toSeconds() + " s");
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted");
            }
        }
        return Files.readString(p).trim();
    }

    private static void barrier(String name) throws IOException {
        try {
            int rc = new ProcessBuilder("testbed-barrier", name, "300").inheritIO().start().waitFor();
            if (rc != 0) {
                throw new IOException("testbed-barrier " + name + " failed (" + rc + ")");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
    }
}
