package io.jmesh.cli.demo;

import io.jmesh.api.CloseHelper;
import io.jmesh.api.Connections;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.IdleStrategy;
import io.jmesh.api.Listener;
import io.jmesh.api.PeerConnections;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;
import io.jmesh.cli.Cli;
import io.jmesh.cli.Jmesh;
import io.jmesh.cli.Json;
import io.jmesh.cli.Settings;
import io.jmesh.cli.Sizes;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.NoRouteException;

import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.SplittableRandom;

import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

/**
 * 'jmesh demo': the seeds' three-node triangle on one machine. By default three jmesh nodes in this JVM use the TCP
 * provider on loopback addresses, one subnet per link (Linux answers the whole of 127.0.0.0/8 on lo); with
 * {@code --softroce} three Soft-RoCE testbed guests use verbs ({@link SoftRoceDemo}). It shows each node's handle with
 * all its addresses, the link each connection chose and why, and a bandwidth table whose data is verified at the
 * receiver. Every step prints as it finishes, so nothing runs a second without output.
 */
@Command(name = "demo", mixinStandardHelpOptions = true)
public final class DemoCommand implements Callable<Integer>, Cli.HelpText {
    /** Node name, and its address on each link: the seeds' triangle (A-B 101, A-C 100, B-C 102) on 127.0.x. */
    record Node(String name, String addresses) {
    }

    static final List<Node> NODES = List.of(
            new Node("A", "127.0.101.1/24,127.0.100.1/24"),
            new Node("B", "127.0.101.2/24,127.0.102.2/24"),
            new Node("C", "127.0.100.3/24,127.0.102.3/24"));

    static final int DEPTH = 16;
    static final int VERIFY_MESSAGES = 3;

    /** --softroce and --ring pick other meshes, so at most one of them. */
    static final class Mesh {
        @Option(names = "--softroce")
        boolean softroce;
        @Option(names = "--ring")
        boolean ring;
    }

    @ArgGroup(exclusive = true)
    Mesh mesh;
    @Option(names = "--sizes")
    String sizes;
    @Option(names = "--seconds")
    double seconds = 0.3;
    @Option(names = "--json")
    boolean json;
    // the guest half of --softroce, started by the host half in each guest
    @Option(names = "--guest", hidden = true)
    boolean guest;
    @Spec
    CommandSpec spec;

    private final PrintStream out;
    private final PrintStream err;

    public DemoCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    /** 'jmesh demo' with {@code argv}, as {@link Jmesh#run(String, List, PrintStream, PrintStream)} runs it. */
    public static int run(List<String> argv, PrintStream out, PrintStream err) {
        return Jmesh.run("demo", argv, out, err);
    }

    @Override
    public String helpText() {
        return """
                usage: jmesh demo [--softroce | --ring] [--sizes 64K,1M,16M] [--seconds S]

                A three-node triangle mesh, each link on its own subnet, as in the seeds' DGX Spark guides:
                each node's handle with all its addresses, the link every connection chose and why, and a
                bandwidth table with the data verified at the receiver.
                  (default)    three nodes in this process, the TCP provider on loopback (127.0.10x.y)
                  --softroce   three Soft-RoCE guests of the testbed (QEMU, rdma_rxe), real verbs; needs root
                               and testbed/setup's packages (it installs them), takes a few minutes
                  --ring       four nodes in a ring on loopback (TCP): the two diagonals go through a relay
                  --sizes      message sizes (default 64K,1M,16M; --softroce: 64K,1M)
                  --seconds    time per size and direction, more than 0, at most 60 (default 0.3)
                  --json       each transfer and the summary as one JSON object on stdout, the text on
                               stderr (fields: docs/cli.md; not with --softroce)
                The JMESH_* settings apply to every node but JMESH_PROVIDER and JMESH_ADDRESSES, which the
                loopback mesh sets itself (a bad value of any is refused all the same).
                """;
    }

    @Override
    public Integer call() throws Exception {
        Settings.environment(); // a bad JMESH_* value is refused before anything starts
        List<Long> list = sizes == null ? null : Sizes.list("--sizes", sizes, 1, 1L << 28);
        if (guest) {
            return SoftRoceDemo.guest(list == null ? List.of(65536L, 1L << 20) : list, out);
        }
        if (json && mesh != null && mesh.softroce) {
            throw new Cli.UsageError("--json: not with --softroce, whose guests print text; leave one out");
        }
        if (mesh != null && mesh.softroce) {
            return SoftRoceDemo.host(spec.commandLine().getParseResult().originalArgs().stream()
                    .filter(s -> !s.equals("--softroce")).toList(), out, err);
        }
        if (!(seconds > 0 && seconds <= 60)) {
            throw new Cli.UsageError("--seconds " + seconds + ": expected more than 0, at most 60");
        }
        List<Long> s = list == null ? List.of(64L << 10, 1L << 20, 16L << 20) : list;
        PrintStream text = json ? err : out; // --json: stdout carries only the JSON objects
        PrintStream jsonOut = json ? out : null;
        return mesh != null && mesh.ring ? RingDemo.run(s, seconds, text, jsonOut) : local(s, seconds, text, jsonOut);
    }

    /**
     * A loopback node's settings: the process's JMESH_* values, but the TCP provider on {@code addresses}, which
     * the demo's mesh needs whatever the environment says for a real one.
     */
    static Context context(String addresses) {
        return Settings.environment().provider("tcp").addresses(addresses);
    }

    // --------------------------------------------------------------------------------------------- local demo

    private static int local(List<Long> sizes, double seconds, PrintStream out, PrintStream json)
            throws IOException, NoRouteException {
        out.println("jmesh demo: a three-node mesh on this machine");
        out.println();
        out.println("Three jmesh nodes in this process, the TCP provider on loopback (Linux answers all of 127/8 on");
        out.println("lo). As in the DGX Spark triangle of the seeds, each pair of nodes has a link of its own on a");
        out.println("subnet of its own, and no node can reach a peer over the other link's subnet.");
        out.println();
        out.println("                 A");
        out.println("                /  \\");
        out.println("  127.0.101.0/24    127.0.100.0/24");
        out.println("              /      \\");
        out.println("             B ------ C");
        out.println("            127.0.102.0/24");
        out.println();
        long maxSize = sizes.stream().mapToLong(Long::longValue).max().orElse(1);
        List<AutoCloseable> open = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            int n = NODES.size();
            Fabric[] fabrics = new Fabric[n];
            Listener[] listeners = new Listener[n];
            Registration[] src = new Registration[n];
            Registration[] dst = new Registration[n];
            out.println("[1/3] the nodes, each listening on all its addresses; the handle is what a peer is given:");
            for (int i = 0; i < n; i++) {
                Node node = NODES.get(i);
                fabrics[i] = Fabric.open(context(node.addresses()));
                open.add(fabrics[i]);
                src[i] = fabrics[i].register(arena.allocate(maxSize, 4096));
                open.add(src[i]);
                dst[i] = fabrics[i].register(arena.allocate(maxSize, 4096));
                open.add(dst[i]);
                listeners[i] = fabrics[i].listen();
                open.add(listeners[i]);
                out.printf(Locale.ROOT, "  %s  links %-32s handle %s%n", node.name(), node.addresses().replace(",", " "),
                        listeners[i].handleText());
            }
            out.println();
            out.println("[2/3] every node connects to both others; jmesh takes the local link that shares a subnet "
                    + "with the peer:");
            // all six connections at once: each node's connects need the others' accepts, so they progress together
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
            String[][] subnet = new String[n][n];
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < n; j++) {
                    if (i == j) {
                        continue;
                    }
                    ListenHandle peer = ListenHandle.parse(listeners[j].handleText());
                    Why.Choice route = Why.route(fabrics[i], peer);
                    subnet[i][j] = route.local().prefix().network().toString();
                    out.printf(Locale.ROOT, "  %s -> %s  %-42s because %s%n", NODES.get(i).name(),
                            NODES.get(j).name(), nodes.get(i).route(NODES.get(j).name()), Why.explain(
                                    NODES.get(i).name(), fabrics[i].links(), NODES.get(j).name(), peer, route));
                }
            }
            out.println();
            out.printf(Locale.ROOT, "[3/3] bandwidth, %.1f s per size and direction, %d messages in flight; the data is "
                    + "random and the receiver%n      checks the last %d messages of each row byte for byte:%n",
                    seconds, DEPTH, VERIFY_MESSAGES);
            out.println();
            out.println("  from  to  link              size        messages        MB/s  data");
            int verified = 0;
            int rows = 0;
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < n; j++) {
                    if (i == j) {
                        continue;
                    }
                    for (long size : sizes) {
                        Transfer t = Transfer.run(nodes.get(i).sender(NODES.get(j).name()), src[i],
                                nodes.get(j).receiver(NODES.get(i).name()), dst[j], size,
                                (long) (seconds * 1e9), 31L * i + j + size);
                        rows++;
                        verified += t.verified() ? 1 : 0;
                        out.printf(Locale.ROOT, "  %-4s  %-2s  %-16s  %-10s  %8d  %10.1f  %s%n", NODES.get(i).name(),
                                NODES.get(j).name(), subnet[i][j], bytes(size), t.messages(), t.mbPerSecond(),
                                t.verified() ? "verified" : "CORRUPT: " + t.problem());
                        out.flush();
                        json(json, "triangle", NODES.get(i).name(), NODES.get(j).name(), subnet[i][j], size, t);
                    }
                }
            }
            out.println();
            out.printf(Locale.ROOT, "%d connections, each over the link of its own subnet; %d of %d transfers "
                    + "verified.%n", n * (n - 1), verified, rows);
            out.println("Next: 'jmesh devices' and 'jmesh doctor' on a real mesh (docs/dgx-spark.md); "
                    + "'jmesh demo --softroce' for the same over real verbs.");
            summary(json, "triangle", n * (n - 1), rows, verified);
            return verified == rows ? 0 : 1;
        } finally {
            CloseHelper.closeAll(e -> out.println("jmesh demo: closing failed: " + e), open.reversed());
        }
    }

    /** One transfer as a JSON object (--json), where {@code json} is not null. */
    static void json(PrintStream json, String mesh, String from, String to, String path, long size, Transfer t) {
        if (json != null) {
            json.println(new Json().put("type", "transfer").put("mesh", mesh).put("from", from).put("to", to)
                    .put("path", path).put("bytes", size).put("messages", t.messages())
                    .put("mb_per_s", Math.round(t.mbPerSecond() * 10) / 10.0).put("verified", t.verified())
                    .put("problem", t.problem()));
            json.flush();
        }
    }

    /** The run's last JSON object (--json), where {@code json} is not null. */
    static void summary(PrintStream json, String mesh, int connections, int transfers, int verified) {
        if (json != null) {
            json.println(new Json().put("type", "summary").put("mesh", mesh).put("connections", connections)
                    .put("transfers", transfers).put("verified", verified).put("ok", verified == transfers));
            json.flush();
        }
    }

    static String bytes(long n) {
        if (n >= (1L << 20) && n % (1L << 20) == 0) {
            return (n >> 20) + " MiB";
        }
        if (n >= 1024 && n % 1024 == 0) {
            return (n >> 10) + " KiB";
        }
        return n + " B";
    }

    static void fill(MemorySegment m, long size, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long i = 0;
        for (; i + 8 <= size; i += 8) {
            m.set(JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
        for (; i < size; i++) {
            m.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
    }

    /** One measured and verified transfer between two ends that one thread drives. */
    record Transfer(long messages, double mbPerSecond, boolean verified, String problem) {
        static Transfer run(Sender s, Registration src, Receiver r, Registration dst, long size, long nanos, long seed)
                throws IOException {
            Registration[] regs = {dst};
            long[] offsets = {0};
            long[] max = {size};
            int[] tags = {0};
            int[] sendRing = new int[DEPTH];
            int[] recvRing = new int[DEPTH];
            fill(src.memory(), size, seed);
            long sendPosted = 0;
            long sendDone = 0;
            long recvPosted = 0;
            long recvDone = 0;
            long start = System.nanoTime();
            long lastProgress = start;
            long stopSending = Long.MAX_VALUE;
            while (true) {
                long now = System.nanoTime();
                if (stopSending == Long.MAX_VALUE && now - start >= nanos) {
                    stopSending = recvPosted; // every receive already posted still gets its message
                }
                if (recvPosted < stopSending && recvPosted - recvDone < DEPTH) {
                    int q = r.irecv(1, regs, offsets, max, tags);
                    if (q >= 0) {
                        recvRing[(int) (recvPosted++ % DEPTH)] = q;
                    } else if (q != Status.NOT_READY) {
                        throw new IOException("irecv: " + Status.describe(q) + " " + r.error());
                    }
                }
                if (sendPosted < stopSending && sendPosted < recvPosted && sendPosted - sendDone < DEPTH) {
                    int q = s.isend(src, 0, size, 0);
                    if (q >= 0) {
                        sendRing[(int) (sendPosted++ % DEPTH)] = q;
                    } else if (q != Status.NOT_READY) {
                        throw new IOException("isend: " + Status.describe(q) + " " + s.error());
                    }
                }
                if (sendDone < sendPosted) {
                    int t = s.test(sendRing[(int) (sendDone % DEPTH)]);
                    if (t == 1) {
                        sendDone++;
                        lastProgress = now;
                    } else if (t < 0) {
                        throw new IOException("send: " + Status.describe(t) + " " + s.error());
                    }
                }
                if (recvDone < recvPosted) {
                    int req = recvRing[(int) (recvDone % DEPTH)];
                    int t = r.test(req);
                    if (t == 1) {
                        if (r.size(req, 0) != size) {
                            return new Transfer(recvDone, 0, false, "a message of " + r.size(req, 0) + " bytes, "
                                    + "not " + size);
                        }
                        recvDone++;
                        lastProgress = now;
                    } else if (t < 0) {
                        throw new IOException("receive: " + Status.describe(t) + " " + r.error());
                    }
                }
                if (stopSending != Long.MAX_VALUE && sendDone == stopSending && recvDone == recvPosted) {
                    break;
                }
                if (now - lastProgress > 30_000_000_000L) {
                    throw new IOException("no progress for 30 s (" + recvDone + " received)");
                }
            }
            long elapsed = System.nanoTime() - start;
            double mbps = (double) size * recvDone * 1e9 / elapsed / (1 << 20);
            // verification: fresh random content each time, into a receive buffer wiped first
            for (int v = 0; v < VERIFY_MESSAGES; v++) {
                fill(src.memory(), size, seed * 1_000_003 + v);
                dst.memory().asSlice(0, size).fill((byte) 0);
                String problem = Exchange.once(s, src, r, dst, size);
                if (problem != null) {
                    return new Transfer(recvDone, mbps, false, problem);
                }
                long at = src.memory().asSlice(0, size).mismatch(dst.memory().asSlice(0, size));
                if (at >= 0) {
                    return new Transfer(recvDone, mbps, false, "byte " + at + " differs");
                }
            }
            return new Transfer(recvDone, mbps, true, null);
        }
    }

    /** One message, both ends driven by this thread; null, or what went wrong. */
    static final class Exchange {
        private Exchange() {
        }

        static String once(Sender s, Registration src, Receiver r, Registration dst, long size) {
            int rq = r.irecv(1, new Registration[] {dst}, new long[] {0}, new long[] {size}, new int[] {0});
            if (rq < 0) {
                return "irecv: " + Status.describe(rq) + " " + r.error();
            }
            long deadline = System.nanoTime() + 30_000_000_000L;
            int sq;
            while ((sq = s.isend(src, 0, size, 0)) == Status.NOT_READY) {
                r.test(rq);
                if (System.nanoTime() > deadline) {
                    return "the receiver never posted";
                }
            }
            if (sq < 0) {
                return "isend: " + Status.describe(sq) + " " + s.error();
            }
            int st = 0;
            int rt = 0;
            while (st == 0 || rt == 0) {
                if (st == 0) {
                    st = s.test(sq);
                }
                if (rt == 0) {
                    rt = r.test(rq);
                }
                if (st < 0 || rt < 0) {
                    return "send " + Status.describe(st) + " / receive " + Status.describe(rt);
                }
                if (System.nanoTime() > deadline) {
                    return "the message did not complete in 30 s";
                }
            }
            return r.size(rq, 0) == size ? null : "received " + r.size(rq, 0) + " bytes, not " + size;
        }
    }
}
