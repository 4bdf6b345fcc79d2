package io.jmesh.cli.doctor;

import io.jmesh.api.Connections;
import io.jmesh.api.Connector;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.IdleStrategy;
import io.jmesh.api.Listener;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;
import io.jmesh.cli.Cli;
import io.jmesh.cli.Jmesh;
import io.jmesh.cli.Json;
import io.jmesh.cli.Settings;
import io.jmesh.cli.FabricSupport;
import io.jmesh.cli.perf.Oob;
import io.jmesh.transport.discovery.DiscoveryResult;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.NoRouteException;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * 'jmesh doctor': checks this node the way the DGX Spark guides' troubleshooting sections do by hand (devices, ports,
 * GIDs, MTUs, memlock, one subnet per link), and with peers given, each peer over RDMA with a real queue-pair
 * handshake and a verified message; then draws the mesh. Peers run 'jmesh doctor --serve'. Every failed check
 * prints its fix; the exit status is 1 when a check failed.
 *
 * <p>Out-of-band protocol (port -p, one ASCII line each): client {@code hello version=1 name=.. links=.. seed=S
 * bytes=N}; server {@code node name=.. links=..}, {@code handle handle=H}; the client connects with jmesh and sends
 * N pattern bytes (from seed S); server {@code verified bytes=N} or {@code error TEXT}. A client that cannot
 * connect sends {@code abort reason=..} instead.
 */
@Command(name = "doctor", mixinStandardHelpOptions = true)
public final class DoctorCommand implements Callable<Integer>, Cli.HelpText {
    public static final int DEFAULT_PORT = 18517;
    static final int PROTOCOL = 1;
    static final int PROBE_BYTES = 65536;

    @Option(names = {"-p", "--port"})
    int portOption = DEFAULT_PORT;
    @Option(names = "--timeout")
    long timeoutSeconds = 30;
    @Option(names = "--count")
    long count;
    @Option(names = "--provider")
    String provider = "auto";
    @Option(names = "--addresses")
    String addresses;
    @Option(names = "--name")
    String nameOption;
    @Option(names = "--serve")
    boolean serve;
    @Option(names = "--json")
    boolean jsonOption;
    @Parameters
    List<String> peers = new ArrayList<>();

    /** The text a person reads: stdout, or stderr with --json. */
    private PrintStream out;
    /** With --json: stdout, where each check goes as one JSON object; else null. */
    private PrintStream json;
    private final PrintStream err;
    private Duration timeout;
    private int port;
    private String name;
    private Context config;

    public DoctorCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    /** 'jmesh doctor' with {@code argv}, as {@link Jmesh#run(String, List, PrintStream, PrintStream)} runs it. */
    public static int run(List<String> argv, PrintStream out, PrintStream err) {
        return Jmesh.run("doctor", argv, out, err);
    }

    @Override
    public String helpText() {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        usage(new PrintStream(b, true, StandardCharsets.UTF_8));
        return b.toString(StandardCharsets.UTF_8);
    }

    @Override
    public Integer call() throws IOException {
        if (timeoutSeconds < 1 || timeoutSeconds > 3600) {
            throw new Cli.UsageError("--timeout " + timeoutSeconds + ": expected 1 to 3600 seconds");
        }
        if (portOption < 1 || portOption > 65535) {
            throw new Cli.UsageError("--port " + portOption + ": expected 1 to 65535");
        }
        if (count < 0 || count > 1_000_000) {
            throw new Cli.UsageError("--count " + count + ": expected 0 (serve until stopped) to 1000000");
        }
        if (jsonOption) {
            json = out;
            out = err;
        }
        timeout = Duration.ofSeconds(timeoutSeconds);
        port = portOption;
        name = nameOption == null ? hostName() : nameOption;
        config = Settings.withOptions(provider, addresses, -1);
        if (serve) {
            if (!peers.isEmpty()) {
                throw new Cli.UsageError("--serve takes no peers: the peers run 'jmesh doctor " + name + "'");
            }
            return serve(count);
        }
        return check(peers);
    }

    static void usage(PrintStream out) {
        out.println("usage: jmesh doctor [options] [PEER...]   check this node, and each PEER over RDMA");
        out.println("       jmesh doctor --serve [options]      answer the checks of peers (run this on the PEERs)");
        out.println();
        out.println("Checks: RDMA devices present, ports ACTIVE, a RoCE v2 GID for every address, the MTU of each");
        out.println("link (and that both ends agree), the memlock limit, each link on its own subnet, and each PEER");
        out.println("reachable over RDMA with a real queue-pair handshake and a verified message. Then it draws the");
        out.println("mesh. Every failed check prints its fix. Exit status 1 when a check failed.");
        out.println();
        out.println("With --provider tcp (or JMESH_PROVIDER=tcp), for a mesh without RDMA: the addresses the TCP");
        out.println("provider uses, the interface and MTU of each, each link on its own subnet, and each PEER's");
        out.println("doctor answering, its route and a real TCP handshake with a verified message (the PEERs run");
        out.println("'jmesh doctor --serve --provider tcp'). On one machine: 'jmesh doctor --serve --provider tcp'");
        out.println("and 'jmesh doctor --provider tcp 127.0.0.1'.");
        out.println();
        out.println("  -p, --port PORT     out-of-band TCP port of the peers' 'jmesh doctor --serve' (default "
                + DEFAULT_PORT + ")");
        out.println("      --count N       with --serve: exit after N peers (default: serve until stopped)");
        out.println("      --timeout SECS  bound on each step (default 30)");
        out.println("      --provider P    rdma, tcp or auto (default auto)");
        out.println("      --addresses L   the local addresses with prefixes to check (JMESH_ADDRESSES; default all)");
        out.println("      --name NAME     this node's name in the report (default: the host name)");
        out.println("      --json          each check (and the summary) as one JSON object on stdout, the text on");
        out.println("                      stderr (fields: docs/cli.md)");
    }

    static String hostName() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
        } catch (IOException | RuntimeException e) {
            return "this-node";
        }
    }

    // ---------------------------------------------------------------------------------------------- checking

    /** The TCP mode: the provider asked for is TCP (--provider tcp, JMESH_PROVIDER=tcp or JMESH_DISABLE_RDMA=1). */
    private boolean tcp() {
        return Set.of("tcp", "socket").contains(config.provider());
    }

    private int check(List<String> peers) {
        boolean tcp = tcp();
        Fabric fabric = null;
        String openError = null;
        // TCP: the provider's links are what is checked, so it runs first; RDMA: the local checks print first, as
        // they explain a fabric that will not open
        if (tcp) {
            try {
                fabric = FabricSupport.open(config);
            } catch (RuntimeException e) {
                openError = e.getMessage();
            }
        }
        try {
            NodeReport me;
            List<Check> checks;
            if (tcp) {
                me = TcpChecks.node(NodeReport.safe(name), fabric == null ? List.of() : fabric.links());
                checks = new ArrayList<>(TcpChecks.local(me, openError));
            } else {
                DiscoveryResult found = FabricSupport.discover(config);
                me = NodeReport.of(NodeReport.safe(name), found);
                checks = new ArrayList<>(Checks.local(found, Memlock.read()));
            }
            out.println("jmesh doctor on " + me.name() + (tcp ? " (TCP provider)" : ""));
            out.println();
            checks.forEach(this::emit);
            out.flush();
            List<NodeReport> nodes = new ArrayList<>();
            nodes.add(me);
            Map<String, String> status = new LinkedHashMap<>();
            Map<String, String> routes = new LinkedHashMap<>();
            if (!tcp && !peers.isEmpty()) {
                try {
                    fabric = FabricSupport.open(config);
                } catch (RuntimeException e) {
                    openError = e.getMessage();
                }
            }
            checkPeers(peers, fabric, openError, me, checks, nodes, status, routes);
            out.println();
            out.print(MeshMap.render(nodes, status, routes));
            out.println();
            out.println("summary: " + Checks.summary(checks));
            if (json != null) {
                json.println(new Json().put("type", "summary").put("node", me.name()).put("provider", tcp ? "tcp"
                        : "rdma").put("ok", count(checks, Check.Status.OK)).put("warnings", count(checks,
                        Check.Status.WARN)).put("failed", count(checks, Check.Status.FAIL)));
                json.flush();
            }
            return checks.stream().anyMatch(c -> c.status() == Check.Status.FAIL) ? 1 : 0;
        } finally {
            if (fabric != null) {
                fabric.close();
            }
        }
    }

    private void checkPeers(List<String> peers, Fabric fabric, String openError, NodeReport me, List<Check> checks,
                            List<NodeReport> nodes, Map<String, String> status, Map<String, String> routes) {
        String expected = tcp() ? "tcp" : "rdma";
        try (Arena arena = Arena.ofShared()) {
            Registration reg = fabric == null || peers.isEmpty() ? null
                    : fabric.register(arena.allocate(PROBE_BYTES, 4096));
            try {
                for (String peer : peers) {
                    PeerResult r = openError != null ? PeerResult.failed(peer, null, "no transport: " + openError,
                            "fix the local checks above first") : probe(fabric, reg, me, peer);
                    List<Check> pc = Checks.peer(me, r, expected);
                    pc.forEach(this::emit);
                    out.flush();
                    checks.addAll(pc);
                    if (r.report() != null && nodes.stream().noneMatch(n -> n.name().equals(r.report().name()))) {
                        nodes.add(r.report());
                        status.put(r.report().name(), r.error() == null && expected.equals(r.provider())
                                ? String.format(java.util.Locale.ROOT, "%s ok (%.1f ms)", tcp() ? "TCP" : "RDMA",
                                r.handshakeNanos() / 1e6) : "FAILED");
                        if (r.route() != null) {
                            routes.put(r.report().name(), r.route());
                        }
                    }
                }
            } finally {
                if (reg != null) {
                    reg.close();
                }
            }
        }
    }

    private PeerResult probe(Fabric fabric, Registration reg, NodeReport me, String peer) {
        long seed = System.nanoTime();
        NodeReport them = null;
        try (Oob oob = Oob.connect(peer, port, timeout, timeout)) {
            oob.send("hello version=" + PROTOCOL + " " + me.encode() + " seed=" + seed + " bytes=" + PROBE_BYTES);
            Map<String, String> node = oob.expect("node");
            try {
                them = NodeReport.decode(node.get("name"), node.get("links"));
            } catch (IllegalArgumentException e) {
                return PeerResult.failed(peer, null, "its report is malformed: " + e.getMessage(),
                        "run the same jmesh version on both nodes");
            }
            ListenHandle handle = ListenHandle.parse(oob.expect("handle").getOrDefault("handle", ""));
            pattern(reg.memory(), PROBE_BYTES, seed);
            long t0 = System.nanoTime();
            Connector c;
            try {
                c = fabric.connect(handle.encode());
            } catch (NoRouteException e) {
                oob.send("abort reason=no-route");
                return PeerResult.failed(peer, them, "no route to it: " + e.getMessage(),
                        "cable the two nodes directly and give both ends of that link addresses on one subnet with "
                                + "the same prefix length, or run jmesh (or 'jmesh relay') on a node linked to both "
                                + "(docs/dgx-spark.md, docs/troubleshooting.md)");
            } catch (RuntimeException e) {
                oob.send("abort reason=connect");
                return PeerResult.failed(peer, them, "connect failed: " + e.getMessage(),
                        "set JMESH_PROVIDER the same on both nodes and fix what 'jmesh doctor' reports on each");
            }
            try (c) {
                Sender s;
                try {
                    s = Connections.await(c, timeout, IdleStrategy.controlPlane());
                } catch (RuntimeException e) {
                    oob.send("abort reason=handshake");
                    return PeerResult.failed(peer, them, "the queue-pair handshake over " + c.route() + " failed: "
                                    + e.getMessage(),
                            tcp() ? "check that the peer's address on that link answers ('ping') and that no "
                                    + "firewall blocks TCP between the two nodes (the handshake uses an ephemeral "
                                    + "port)" : "check that the peer's address on that link answers ('ping'), that "
                                    + "both ports are ACTIVE with a RoCE v2 GID, and that no firewall blocks TCP "
                                    + "between them");
                }
                long t1 = System.nanoTime();
                try (s) {
                    int req = sendOnce(s, reg);
                    if (req < 0) {
                        oob.send("abort reason=send");
                        return PeerResult.failed(peer, them, "sending over " + c.route() + " failed: "
                                + Status.describe(req) + " " + s.error(), "run 'jmesh doctor' on the peer; check "
                                + "'dmesg' on both nodes for RDMA errors");
                    }
                    oob.expect("verified");
                    return new PeerResult(peer, them, fabric.provider(), c.route(), t1 - t0, PROBE_BYTES, null, null);
                }
            }
        } catch (IOException | RuntimeException e) {
            return PeerResult.failed(peer, them, e.getMessage(), them == null
                    ? "start 'jmesh doctor --serve" + (tcp() ? " --provider tcp" : "") + "' on " + peer + " (same -p), "
                    + "and check that this node reaches it over TCP" : "run 'jmesh doctor' on " + peer + " and fix "
                    + "what it reports");
        }
    }

    private int sendOnce(Sender s, Registration reg) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int req;
        IdleStrategy idle = IdleStrategy.controlPlane();
        while ((req = s.isend(reg, 0, PROBE_BYTES, 0)) == Status.NOT_READY) {
            if (System.nanoTime() - deadline > 0) {
                throw new IOException("the peer posted no receive within " + timeout.toSeconds() + " s");
            }
            idle.idle();
        }
        if (req < 0) {
            return req;
        }
        int t;
        while ((t = s.test(req)) == 0) {
            if (System.nanoTime() - deadline > 0) {
                throw new IOException("the probe message did not complete within " + timeout.toSeconds() + " s");
            }
            idle.idle();
        }
        return t < 0 ? t : req;
    }

    static void pattern(MemorySegment m, int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < n; i++) {
            m.set(JAVA_BYTE, i, (byte) r.nextInt());
        }
    }

    static long crc(MemorySegment m, int n) {
        CRC32C c = new CRC32C();
        c.update(m.asSlice(0, n).asByteBuffer());
        return c.getValue();
    }

    // ---------------------------------------------------------------------------------------------- serving

    private int serve(long count) throws IOException {
        NodeReport me = null;
        if (!tcp()) { // shown before the fabric opens, so that they explain why it cannot
            DiscoveryResult found = FabricSupport.discover(config);
            me = NodeReport.of(NodeReport.safe(name), found);
            printServing(me, Checks.local(found, Memlock.read()));
        }
        try (ServerSocket ss = Oob.listen(port); Fabric fabric = FabricSupport.open(config);
             Listener listener = fabric.listen(); Arena arena = Arena.ofShared()) {
            if (me == null) { // the TCP provider's links are known once it runs
                me = TcpChecks.node(NodeReport.safe(name), fabric.links());
                printServing(me, TcpChecks.local(me, null));
            }
            MemorySegment buf = arena.allocate(PROBE_BYTES, 4096);
            MemorySegment expected = arena.allocate(PROBE_BYTES, 4096);
            try (Registration reg = fabric.register(buf)) {
                out.println("  ready: run 'jmesh doctor " + (tcp() ? "--provider tcp " : "") + me.name() + "' (or this "
                        + "node's address) on the peers");
                out.flush();
                for (long served = 0; count == 0 || served < count; served++) {
                    try (Oob oob = Oob.accept(ss, count == 0 ? Duration.ofDays(365) : timeout.multipliedBy(10),
                            timeout)) {
                        answer(oob, fabric, listener, reg, buf, expected, me);
                    } catch (IOException e) {
                        emit(Check.fail("a peer's check: " + e.getMessage(), "the peer's own output names "
                                + "the cause and its fix"));
                        if (count != 0 && e.getMessage().startsWith("no client connected")) {
                            return 1;
                        }
                    }
                }
            }
        }
        return 0;
    }

    /** One check: its text lines, and with --json its JSON object. */
    private void emit(Check c) {
        out.println("  " + c.render().replace("\n", "\n  "));
        out.flush();
        if (json != null) {
            json.println(new Json().put("type", "check").put("status", c.status().name().toLowerCase(
                    java.util.Locale.ROOT)).put("title", c.title()).put("fix", c.fix()));
            json.flush();
        }
    }

    private static long count(List<Check> checks, Check.Status status) {
        return checks.stream().filter(c -> c.status() == status).count();
    }

    private void printServing(NodeReport me, List<Check> checks) {
        out.println("jmesh doctor on " + me.name() + " (serving peers on TCP port " + port + ")");
        checks.forEach(this::emit);
        out.flush();
    }

    private void answer(Oob oob, Fabric fabric, Listener listener, Registration reg, MemorySegment buf,
                        MemorySegment expected, NodeReport me) throws IOException {
        Map<String, String> hello = oob.expect("hello");
        if (Oob.number(hello, "version", 0, Integer.MAX_VALUE) != PROTOCOL) {
            oob.send("error this node runs doctor protocol " + PROTOCOL + ": use the same jmesh version");
            throw new IOException("a peer speaks doctor protocol " + hello.get("version"));
        }
        NodeReport peer;
        try {
            peer = NodeReport.decode(hello.get("name"), hello.get("links"));
        } catch (IllegalArgumentException e) {
            oob.send("error bad hello: " + e.getMessage().replaceAll("[^ -~]", "?"));
            throw new IOException("a peer (" + oob.peer() + ") sent a bad report: " + e.getMessage());
        }
        long seed;
        try {
            seed = Long.parseLong(hello.getOrDefault("seed", "x"));
        } catch (NumberFormatException e) {
            throw new IOException("a peer (" + oob.peer() + ") sent a bad seed");
        }
        int bytes = (int) Oob.number(hello, "bytes", 1, PROBE_BYTES);
        oob.send("node " + me.encode());
        oob.send("handle handle=" + listener.handleText());
        long deadline = System.nanoTime() + timeout.toNanos();
        Receiver r = null;
        IdleStrategy idle = IdleStrategy.controlPlane();
        while (r == null) {
            r = listener.accept();
            if (r == null) {
                if (oob.ready()) {
                    String line = oob.receive();
                    emit(Check.fail("peer " + peer.name() + " could not connect: " + line, "the peer's own output "
                            + "names the cause and its fix"));
                    return;
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new IOException("peer " + peer.name() + " did not connect within " + timeout.toSeconds()
                            + " s");
                }
                idle.idle();
            }
        }
        try (Receiver rx = r) {
            buf.fill((byte) 0);
            int req = rx.irecv(1, new Registration[] {reg}, new long[] {0}, new long[] {PROBE_BYTES}, new int[] {0});
            if (req < 0) {
                oob.send("error irecv failed: " + Status.describe(req));
                throw new IOException("irecv failed: " + Status.describe(req) + " " + rx.error());
            }
            int t;
            while ((t = rx.test(req)) == 0) {
                if (System.nanoTime() - deadline > 0) {
                    oob.send("error nothing arrived within " + timeout.toSeconds() + " s");
                    throw new IOException("peer " + peer.name() + ": the probe message did not arrive");
                }
                idle.idle();
            }
            if (t < 0 || rx.size(req, 0) != bytes) {
                oob.send("error receive: " + (t < 0 ? Status.describe(t) : rx.size(req, 0) + " bytes, not " + bytes));
                throw new IOException("peer " + peer.name() + ": the probe message failed");
            }
            pattern(expected, bytes, seed);
            if (crc(buf, bytes) != crc(expected, bytes) || buf.asSlice(0, bytes).mismatch(
                    expected.asSlice(0, bytes)) >= 0) {
                oob.send("error the " + bytes + " bytes arrived corrupted");
                throw new IOException("peer " + peer.name() + ": the probe message arrived corrupted");
            }
            oob.send("verified bytes=" + bytes);
        }
        List<Check> mtu = new ArrayList<>();
        Checks.mtuMismatch(me, peer, mtu);
        emit(Check.ok("peer " + peer.name() + " (" + oob.peer() + "): connected over " + fabric.provider() + ", "
                + bytes + " bytes verified"));
        mtu.forEach(this::emit);
    }
}
