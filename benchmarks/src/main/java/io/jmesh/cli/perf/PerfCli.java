package io.jmesh.cli.perf;

import io.jmesh.cli.Cli;
import io.jmesh.cli.Sizes;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * The options of 'jmesh bw' and 'jmesh lat' as picocli parses them, named as perftest's where perftest has them;
 * {@link #options()} checks them into a {@link PerfOptions}. One class for both, because the two share all but a
 * few options, and a few that only one takes are refused by the other with the reason.
 */
public abstract sealed class PerfCli implements Callable<Integer>, Cli.HelpText permits PerfCli.Bw, PerfCli.Lat {
    @Option(names = {"-d", "--ib-dev"})
    String device;
    @Option(names = {"-x", "--gid-index"})
    Long gidIndex;
    @Option(names = {"-s", "--size"})
    String size;
    @Option(names = {"-a", "--all"})
    boolean all;
    @Option(names = {"-n", "--iters"})
    Long iters;
    @Option(names = {"-q", "--qp"})
    Long qps;
    @Option(names = {"-D", "--duration"})
    Long duration;
    @Option(names = {"-p", "--port"})
    Long port;
    @Option(names = {"-t", "--tx-depth"})
    Long depth;
    @Option(names = {"-R", "--rdma_cm"})
    boolean rdmaCm;
    // perftest's CPU-frequency check: accepted so that perftest's command lines run unchanged
    @Option(names = {"-F", "--CPU-freq"})
    boolean cpuFreq;
    @Option(names = "--provider")
    String provider = "auto";
    @Option(names = "--timeout")
    Long timeout;
    @Option(names = "--warmup")
    Long warmup;
    @Option(names = "--addresses")
    String addresses;
    @Option(names = "--poll")
    String poll;
    @Option(names = "--settle")
    Long settle;
    @Option(names = "--op")
    String op = "send";
    @Option(names = "--oob-bind")
    String oobBind;
    @Option(names = "--repost")
    String repost = "batch";
    @Option(names = {"--report_gbits", "--report-gbits"})
    boolean gbits;
    @Option(names = "--json")
    boolean json;
    @Parameters
    List<String> server = new ArrayList<>();

    private final String test;
    private final PrintStream out;
    private final PrintStream err;

    PerfCli(String test, PrintStream out, PrintStream err) {
        this.test = test;
        this.out = out;
        this.err = err;
    }

    /** 'jmesh bw'. */
    @Command(name = "bw", mixinStandardHelpOptions = true)
    public static final class Bw extends PerfCli {
        public Bw(PrintStream out, PrintStream err) {
            super("bw", out, err);
        }
    }

    /** 'jmesh lat'. */
    @Command(name = "lat", mixinStandardHelpOptions = true)
    public static final class Lat extends PerfCli {
        public Lat(PrintStream out, PrintStream err) {
            super("lat", out, err);
        }
    }

    /** Parses {@code argv} as 'jmesh TEST' would; null when --help was asked for (the usage is printed then). */
    static PerfOptions parse(String test, List<String> argv, PrintStream out) {
        PerfCli cli = test.equals("bw") ? new Bw(out, out) : new Lat(out, out);
        CommandLine cl = new CommandLine(cli);
        try {
            cl.parseArgs(argv.toArray(String[]::new));
        } catch (CommandLine.ParameterException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        if (cl.isUsageHelpRequested()) {
            out.print(cli.helpText());
            return null;
        }
        return cli.options();
    }

    @Override
    public Integer call() throws Exception {
        PerfOptions o = options();
        o.context(); // a bad JMESH_* setting or option value is a usage error, before any socket is opened
        // --json: stdout carries only the JSON objects, the text a person reads goes to stderr
        PrintStream text = o.json() ? err : out;
        PrintStream json = o.json() ? out : null;
        if (o.isServer()) {
            new PerfServer(o, text, json).run();
        } else {
            new PerfClient(o, text, err, json).run();
        }
        return Cli.OK;
    }

    @Override
    public String helpText() {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        PerfOptions.usage(test, new PrintStream(b, true, StandardCharsets.UTF_8));
        return b.toString(StandardCharsets.UTF_8);
    }

    /** The checked options; a bad one throws a {@link Cli.UsageError} that names it and what it takes. */
    PerfOptions options() {
        try {
            return check();
        } catch (Cli.UsageError e) {
            throw e;
        } catch (IllegalArgumentException e) {
            throw new Cli.UsageError(e.getMessage());
        }
    }

    private PerfOptions check() {
        if (rdmaCm) {
            throw new IllegalArgumentException("-R/--rdma_cm: jmesh connects with its own handshake, not rdma_cm; "
                    + "leave the option out");
        }
        boolean bw = test.equals("bw");
        if (all && size != null) {
            throw new IllegalArgumentException("-a and -s both choose the sizes: give one of them");
        }
        if (iters != null && duration != null && duration > 0) {
            throw new IllegalArgumentException("-n and -D both end a size's run (-n after a count, -D after a time): "
                    + "give one of them");
        }
        if (server.size() > 1) {
            throw new IllegalArgumentException("too many arguments " + server + ": give at most the server's "
                    + "address (client mode)");
        }
        List<Long> sizes;
        if (all) {
            sizes = new ArrayList<>();
            for (int e = 1; e <= 23; e++) {
                sizes.add(1L << e);
            }
        } else {
            sizes = size == null ? List.of(bw ? 65536L : 2L) : Sizes.list("--size", size, 1, PerfOptions.MAX_SIZE);
        }
        int q = (int) range("--qp", qps, 1, 1, 64);
        if (!bw && q != 1) {
            throw new IllegalArgumentException("-q " + q + ": the latency test uses one connection, as "
                    + "ib_write_lat does; leave -q out");
        }
        int d = (int) range("--tx-depth", depth, bw ? PerfOptions.MAX_DEPTH : 1, 1, bw ? PerfOptions.MAX_DEPTH : 1);
        if (!op.equals("send") && !op.equals("write")) {
            throw new IllegalArgumentException("--op " + op + ": expected send or write");
        }
        if (bw && op.equals("write")) {
            throw new IllegalArgumentException("--op write: only for 'jmesh lat'; 'jmesh bw' measures isend/irecv");
        }
        if (!repost.equals("batch") && !repost.equals("each")) {
            throw new IllegalArgumentException("--repost " + repost + ": expected batch or each");
        }
        if (bw && repost.equals("each")) {
            throw new IllegalArgumentException("--repost each: only for 'jmesh lat'; 'jmesh bw' reposts every receive "
                    + "as its message arrives");
        }
        String p = provider.toLowerCase(Locale.ROOT);
        if (!Set.of("auto", "rdma", "tcp").contains(p)) {
            throw new IllegalArgumentException("--provider " + provider + ": expected rdma, tcp or auto");
        }
        return new PerfOptions(test, server.isEmpty() ? null : server.getFirst(), device,
                (int) range("--gid-index", gidIndex, -1, 0, 65535), List.copyOf(sizes),
                range("--iters", iters, bw ? 5000 : 1000, 1, 100_000_000), range("--warmup", warmup, -1, 0,
                100_000_000), q, d, (int) range("--duration", duration, 0, 0, 3600),
                (int) range("--port", port, PerfOptions.DEFAULT_PORT, 1, 65535), p,
                Duration.ofSeconds(range("--timeout", timeout, 60, 1, 86_400)), gbits, addresses,
                PollMode.parse(poll == null ? (bw ? "park" : "spin") : poll),
                Duration.ofSeconds(range("--settle", settle, 60, 0, 3600)), op, oobBind(oobBind),
                repost.equals("each"), json);
    }

    private static long range(String name, Long v, long defaultValue, long min, long max) {
        if (v == null) {
            return defaultValue;
        }
        if (v < min || v > max) {
            throw new IllegalArgumentException(name + " " + v + " is not valid: expected an integer from " + min
                    + " to " + max);
        }
        return v;
    }

    private static String oobBind(String v) {
        if (v == null || v.equals("any")) {
            return v;
        }
        try {
            if (!v.contains("/")) {
                return io.jmesh.api.IpPrefix.parse(v).address().getHostAddress();
            }
        } catch (IllegalArgumentException e) {
            // said below
        }
        throw new IllegalArgumentException("--oob-bind " + v + ": expected an address of this node (no prefix length) "
                + "or any");
    }
}
