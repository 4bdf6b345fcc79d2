package io.jmesh.soak;

import io.jmesh.api.Setting;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The chaos soak's driver: starts a ring of {@link SoakNode} processes, and while every ordered pair streams checked
 * messages, freezes (SIGSTOP, held past the detection bound, then SIGCONT) or kills and restarts one node at a time,
 * at times and on nodes drawn from a fixed seed. After each fault it waits until every connection has reconnected,
 * then lets the mesh run a quiet spell before the next. At the end every node closes gracefully and reports its
 * counts, and the {@link Summary} says whether each goal held. Exit status 0: all held; 1: one did not; 2: bad use.
 *
 * <p>Every node is a child process: the driver kills them all when it ends, however it ends (a shutdown hook too).
 */
public final class ChaosSoak {
    /** The soak's settings; {@link #parse} reads them from "--name value" arguments. */
    public record Options(long seconds, long seed, int nodes, long livenessMs, double rate, String net, int firstLink,
                          int routePort, Path out, long quietMinMs, long quietMaxMs) {
        /** Detection bound: two liveness timeouts, the issue's promise. */
        long boundMs() {
            return 2 * livenessMs;
        }
    }

    /** What the soak found: whether every goal held, how many faults it injected, each goal that failed. */
    public record Outcome(boolean ok, int faults, List<String> failures) {
    }

    private final Options o;
    private final Ring ring;
    private final Ledger ledger;
    private final LinkedBlockingQueue<NodeProcess.Line> lines = new LinkedBlockingQueue<>();
    private final NodeProcess[] procs;
    private final int[] incarnations;
    private final PrintStream log;
    private final PrintStream out;

    private ChaosSoak(Options o, PrintStream out) throws IOException {
        this.o = o;
        this.out = out;
        this.ring = new Ring(o.nodes(), o.net(), o.firstLink());
        this.ledger = new Ledger(ring, o.boundMs());
        this.procs = new NodeProcess[o.nodes()];
        this.incarnations = new int[o.nodes()];
        Files.createDirectories(o.out());
        this.log = new PrintStream(Files.newOutputStream(o.out().resolve("events.log")), true);
    }

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("chaos soak: " + e.getMessage());
            System.exit(2);
            return;
        }
        System.exit(run(o, System.out).ok() ? 0 : 1);
    }

    /** Runs the soak; returns whether every goal held. The summary goes to {@code out} and OUT/summary.txt. */
    public static Outcome run(Options o, PrintStream out) throws Exception {
        ChaosSoak soak = new ChaosSoak(o, out);
        Thread hook = new Thread(soak::destroyAll, "chaos-soak-cleanup");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            return soak.soak();
        } finally {
            soak.destroyAll();
            soak.log.close();
            Runtime.getRuntime().removeShutdownHook(hook);
        }
    }

    private Outcome soak() throws Exception {
        long start = System.currentTimeMillis();
        long end = start + TimeUnit.SECONDS.toMillis(o.seconds());
        Random random = new Random(o.seed());
        out.printf("chaos soak: seed %d, %d nodes, %d s, liveness timeout %d ms, %.0f messages/s per pair, logs in %s%n",
                o.seed(), o.nodes(), o.seconds(), o.livenessMs(), o.rate(), o.out());
        for (int i = 0; i < o.nodes(); i++) {
            start(i);
        }
        if (!pump(90_000, ledger::healed)) {
            String why = "the mesh never connected fully within 90 s: see " + o.out() + "/events.log and node-*.err";
            out.println(why);
            return new Outcome(false, 0, List.of(why));
        }
        ledger.healedMs = System.currentTimeMillis();
        out.printf("all %d connections up after %d ms%n", o.nodes() * (o.nodes() - 1),
                System.currentTimeMillis() - start);
        long faultSpanMs = o.boundMs() + 4_000 + 5_000;     // the longest hold, and a reconnect
        while (true) {
            pump(o.quietMinMs() + (long) (random.nextDouble() * (o.quietMaxMs() - o.quietMinMs())), () -> false);
            if (System.currentTimeMillis() + faultSpanMs > end) {
                break;
            }
            int node = random.nextInt(o.nodes());
            boolean freeze = random.nextBoolean();
            long holdMs = freeze ? o.boundMs() + 1_000 + random.nextInt(2_000) : 1_000 + random.nextInt(3_000);
            fault(freeze ? Fault.Kind.FREEZE : Fault.Kind.KILL, node, holdMs, start);
        }
        drain();
        ledger.markSteady();
        ledger.stopping = true;
        for (NodeProcess p : procs) {
            p.send("STOP");
        }
        pump(60_000, () -> all(ledger.done));
        for (NodeProcess p : procs) {
            p.send("EXIT");
        }
        pump(30_000, () -> all(ledger.exited));
        for (NodeProcess p : procs) {
            p.awaitExit(10_000);
        }
        drain();
        Summary summary = new Summary(ledger);
        String header = String.format("chaos soak summary: seed %d, %d nodes, liveness timeout %d ms (bound %d ms),"
                + " %.0f messages/s per pair", o.seed(), o.nodes(), o.livenessMs(), o.boundMs(), o.rate());
        boolean ok;
        try (PrintStream file = new PrintStream(Files.newOutputStream(o.out().resolve("summary.txt")), true)) {
            ok = summary.print(file, header, System.currentTimeMillis() - start);
        }
        out.print(Files.readString(o.out().resolve("summary.txt")));
        summary.write(o.out(), start);
        return new Outcome(ok, ledger.faults.size(), summary.failures);
    }

    private void fault(Fault.Kind kind, int node, long holdMs, long start) throws Exception {
        NodeProcess p = procs[node];
        drain();                    // what happened before the fault belongs to no fault
        long t = System.currentTimeMillis();
        // the ends to report are those of the connections up now: recorded before the signal, whose effects are
        // handled only after, so that no report is read before its fault exists
        Fault f = ledger.inject(kind, node, t);
        if (kind == Fault.Kind.FREEZE) {
            p.freeze();
        } else {
            p.kill();
        }
        pump(holdMs, () -> false);
        ledger.resolve(f, System.currentTimeMillis());
        if (kind == Fault.Kind.FREEZE) {
            p.thaw();
        } else {
            start(node);
        }
        if (pump(90_000, ledger::healed)) {
            f.healedMs = System.currentTimeMillis();
            ledger.healedMs = f.healedMs;
        }
        String line = String.format("fault %d at %.1f s: %s %s for %d ms: %d of %d ends reported, %d within %d ms,"
                + " slowest %d ms; %s", f.number, (t - start) / 1e3, kind, Ring.name(node), holdMs, f.reports.size(),
                f.expected.size(), f.within(o.boundMs()), o.boundMs(), f.maxDetectMs(), f.healedMs < 0
                ? "NOT reconnected within 90 s" : "all reconnected " + (f.healedMs - f.resolvedMs) + " ms after");
        out.println(line);
        log.println("# " + line);
    }

    private void start(int i) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "--add-exports",
                "java.base/sun.nio.ch=ALL-UNNAMED", "-Xms64m", "-Xmx64m", "-XX:+UseSerialGC",
                "-XX:CompileCommand=quiet", "-XX:CompileCommand=CompileThresholdScaling,io.jmesh.*::*,0.1",
                "-D" + Setting.PROVIDER.property() + "=tcp",
                "-D" + Setting.ROUTE_PORT.property() + "=" + o.routePort(),
                "-D" + Setting.LIVENESS_TIMEOUT_MS.property() + "=" + o.livenessMs(),
                "-cp", System.getProperty("java.class.path"), SoakNode.class.getName(), Integer.toString(i),
                Integer.toString(o.nodes()), ring.addressList(i), Integer.toString(++incarnations[i]),
                Double.toString(o.rate()), Long.toString(o.seed())));
        ledger.handles[i] = null;
        procs[i] = new NodeProcess(i, incarnations[i], cmd, o.out().resolve("node-" + Ring.name(i) + ".err").toFile(),
                lines);
    }

    /** Handles node lines until {@code done} holds (true) or {@code ms} pass (false). */
    private boolean pump(long ms, BooleanSupplier done) throws InterruptedException {
        long until = System.currentTimeMillis() + ms;
        while (!done.getAsBoolean()) {
            long left = until - System.currentTimeMillis();
            if (left <= 0) {
                return false;
            }
            NodeProcess.Line l = lines.poll(Math.min(left, 100), TimeUnit.MILLISECONDS);
            if (l != null) {
                handle(l);
            }
        }
        return true;
    }

    private void drain() {
        NodeProcess.Line l;
        while ((l = lines.poll()) != null) {
            handle(l);
        }
    }

    private void handle(NodeProcess.Line l) {
        log.println(Ring.name(l.node()) + "#" + l.incarnation() + " " + l.text());
        if (l.incarnation() != incarnations[l.node()]) {
            return;                 // a killed incarnation's last words: its state went with it
        }
        Ev e = Ev.parse(l.node(), l.incarnation(), l.text());
        if (e == null) {
            return;
        }
        ledger.accept(e);
        if (e.type().equals("HANDLE")) {
            int n = l.node();
            for (int j = 0; j < o.nodes(); j++) {
                if (j != n && ledger.handles[j] != null) {
                    procs[n].send("PEER " + j + " " + ledger.handles[j]);
                    procs[j].send("PEER " + n + " " + ledger.handles[n]);
                }
            }
        }
    }

    private static boolean all(boolean[] flags) {
        for (boolean b : flags) {
            if (!b) {
                return false;
            }
        }
        return true;
    }

    private synchronized void destroyAll() {
        for (NodeProcess p : procs) {
            if (p != null) {
                p.destroy();
            }
        }
    }

    /** "--seconds 3600 --seed 47 ..." over the defaults of the hour-long form; an unknown name is refused. */
    public static Options parse(String... args) {
        java.util.Map<String, String> m = new java.util.HashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("expected --name value pairs, got '" + args[i] + "' (" + NAMES
                        + ")");
            }
            m.put(args[i].substring(2), args[i + 1]);
        }
        try {
            Options o = new Options(num(m, "seconds", 3600), num(m, "seed", 47), (int) num(m, "nodes", 4),
                    num(m, "liveness-ms", 3000), Double.parseDouble(m.getOrDefault("rate", "50")),
                    m.getOrDefault("net", "127.0"), (int) num(m, "first-link", 111),
                    (int) num(m, "route-port", 47_470), Path.of(m.getOrDefault("out", "target/chaos-soak")),
                    num(m, "quiet-min-ms", 10_000), num(m, "quiet-max-ms", 40_000));
            m.keySet().removeAll(java.util.Set.of("seconds", "seed", "nodes", "liveness-ms", "rate", "net",
                    "first-link", "route-port", "out", "quiet-min-ms", "quiet-max-ms"));
            if (!m.isEmpty()) {
                throw new IllegalArgumentException("unknown option --" + m.keySet().iterator().next() + " (" + NAMES
                        + ")");
            }
            if (o.livenessMs() < 500 || o.rate() <= 0 || o.quietMaxMs() < o.quietMinMs()) {
                throw new IllegalArgumentException("--liveness-ms must be at least 500, --rate above 0, and"
                        + " --quiet-max-ms at least --quiet-min-ms");
            }
            new Ring(o.nodes(), o.net(), o.firstLink());
            return o;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a number: " + e.getMessage() + " (" + NAMES + ")");
        }
    }

    private static final String NAMES = "options: --seconds --seed --nodes --liveness-ms --rate --net --first-link"
            + " --route-port --out --quiet-min-ms --quiet-max-ms";

    private static long num(java.util.Map<String, String> m, String key, long dflt) {
        String v = m.get(key);
        return v == null ? dflt : Long.parseLong(v);
    }
}
