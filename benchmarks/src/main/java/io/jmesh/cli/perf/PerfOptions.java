package io.jmesh.cli.perf;

import java.time.Duration;
import java.util.List;

/**
 * The options of 'jmesh bw' and 'jmesh lat', named as perftest's where perftest has them, so that the two can be run
 * side by side with the same arguments.
 *
 * @param test        "bw" or "lat"
 * @param server      the server's address (client mode), or null (server mode)
 * @param device      the RDMA device to use, or null for the one that shares a subnet with the peer
 * @param gidIndex    the forced GID index, or -1 for the RoCE v2 GID of each address
 * @param sizes       message sizes, run in order
 * @param iterations  measured messages per size (bw) or round trips (lat)
 * @param warmup      unmeasured messages before each size, -1 for the default
 * @param qps         connections (one queue pair each on verbs) used in parallel
 * @param depth       messages in flight per connection
 * @param duration    seconds per size instead of a count, 0 when counting
 * @param port        the out-of-band TCP port
 * @param provider    "rdma", "tcp" or "auto"
 * @param timeout     how long any single step may take before the run fails
 * @param gbits       report Gb/s instead of MB/s (perftest's --report_gbits)
 * @param addresses   the local addresses to use (JMESH_ADDRESSES), or null for the configured ones
 * @param poll        what a loop does when a poll finds nothing: spin, yield the CPU, or park briefly
 * @param settle      after the counted warm-up, go on warming up in one-second rounds until neither JVM's JIT
 *                    compiler worked during a round, for at most this long (zero: no such rounds)
 * @param op          lat only: "send" (isend/irecv ping-pong) or "write" (one-sided RDMA writes into the peer's
 *                    memory, polled there, as ib_write_lat does)
 * @param oobBind     server: where the out-of-band port listens: null for the mesh links' addresses, "any" for every
 *                    address, or one address
 * @param repostEach  lat only: repost each receive on its own as soon as its echo is in, announced at once (as NCCL's
 *                    proxy posts them), instead of LAT_AHEAD / 2 at a time with one announcement
 * @param json        print each result as one JSON object (docs/cli.md) instead of perftest's columns
 */
public record PerfOptions(String test, String server, String device, int gidIndex, List<Long> sizes, long iterations,
                          long warmup, int qps, int depth, int duration, int port, String provider, Duration timeout,
                          boolean gbits, String addresses, PollMode poll, Duration settle, String op,
                          String oobBind, boolean repostEach, boolean json) {
    /** perftest's default port is 18515; one above it lets both run at once. */
    public static final int DEFAULT_PORT = 18516;
    /** The transport's limit of requests in flight per connection. */
    public static final int MAX_DEPTH = 32;
    public static final long MAX_SIZE = 1L << 30;

    /** Parses {@code argv} as 'jmesh TEST' would; null when --help was asked for (the usage is printed then). */
    public static PerfOptions parse(String test, List<String> argv, java.io.PrintStream out) {
        return PerfCli.parse(test, argv, out);
    }

    /** The process's settings with these options on top. */
    public io.jmesh.api.Context context() {
        return io.jmesh.cli.Settings.withOptions(provider, addresses, gidIndex);
    }

    public boolean isServer() {
        return server == null;
    }

    public long maxSize() {
        return sizes.stream().mapToLong(Long::longValue).max().orElse(1);
    }

    /** Unmeasured messages before a size: given, or 10 % of the iterations (at least two windows) for counted runs. */
    public long warmupFor() {
        if (warmup >= 0) {
            return warmup;
        }
        long window = (long) depth * qps * 2;
        return duration > 0 ? window : Math.max(window, iterations / 10);
    }

    static void usage(String test, java.io.PrintStream out) {
        boolean bw = test.equals("bw");
        out.println("usage: jmesh " + test + " [options]            server: waits for one client");
        out.println("       jmesh " + test + " [options] SERVER     client: " + (bw ? "sends to" : "ping-pongs with")
                + " the server at SERVER");
        out.println();
        out.println(bw ? "Bandwidth of jmesh isend/irecv, printed in ib_write_bw's columns."
                : "Latency (half the round trip) of jmesh isend/irecv ping-pong, printed in ib_write_lat's columns.");
        out.println("The two ends exchange jmesh listen handles over a TCP connection to SERVER:PORT (like perftest),");
        out.println("then connect over the RDMA link that shares a subnet (or -d DEV).");
        out.println("On one machine: 'jmesh " + test + " --provider tcp' and, in a second terminal, 'jmesh " + test
                + " --provider tcp 127.0.0.1'.");
        out.println();
        out.println("  -d, --ib-dev DEV      RDMA device to use (default: the one on the peer's subnet)");
        out.println("  -x, --gid-index N     GID index (default: the RoCE v2 GID of each address)");
        out.println("  -s, --size BYTES      message size, or a list: 4K,64K,1M (default " + (bw ? "65536" : "2") + ")");
        out.println("  -a, --all             sizes 2 B to 8 MiB in powers of two (not with -s)");
        out.println("  -n, --iters N         measured " + (bw ? "messages" : "round trips") + " per size (default "
                + (bw ? "5000" : "1000") + ")");
        out.println("  -D, --duration SECS   run each size for SECS instead of -n (not with -n)"
                + (bw ? "; prints each second's rate" : ""));
        if (!bw) {
            out.println("      --op send|write   send: isend/irecv ping-pong (default); write: one-sided RDMA writes");
            out.println("                        (Sender.write) into the peer's memory, which polls the last byte, as");
            out.println("                        ib_write_lat does");
            out.println("      --repost batch|each  batch: keep 32 receives posted, reposted 16 at a time and announced");
            out.println("                        together (default); each: repost every receive as its message arrives,");
            out.println("                        announced on its own, as NCCL posts them (use the same on both ends)");
        }
        if (bw) {
            out.println("  -q, --qp N            connections (queue pairs) used in parallel (default 1)");
            out.println("  -t, --tx-depth N      messages in flight per connection, 1 to 32 (default 32)");
        }
        out.println("      --warmup N        unmeasured " + (bw ? "messages" : "round trips")
                + " first (default 10 % of -n)");
        out.println("      --settle SECS     then keep warming up until neither JVM's JIT compiler is busy, at most");
        out.println("                        SECS (default 60; 0: no wait): JIT work would share the CPU with the");
        out.println("                        run; on a busy machine other work keeps the JIT busy: use --settle 0");
        out.println("  -p, --port PORT       out-of-band TCP port (default " + DEFAULT_PORT + ")");
        out.println("      --oob-bind ADDR   server: the address the out-of-band port listens on, or any (default:");
        out.println("                        this node's mesh link addresses and 127.0.0.1, so that a client on the");
        out.println("                        same machine finds it; the port hands out the listen handle)");
        out.println("      --provider P      rdma, tcp or auto (default auto: rdma where a usable link exists)");
        out.println("      --addresses LIST  local addresses with prefixes jmesh may use (JMESH_ADDRESSES), e.g.");
        out.println("                        127.0.101.1/24 for the TCP provider on loopback");
        out.println("      --timeout SECS    fail when a step makes no progress for this long (default 60); a client");
        out.println("                        retries that long until its server is up (saying so), a server waits");
        out.println("                        10 x SECS for a client (600 s by default)");
        out.println("      --poll MODE       when a poll finds nothing: spin (as perftest), yield the CPU, or park (spin");
        out.println("                        a little, then sleep 50 us to 2 ms): leaves the CPU to other work, e.g.");
        out.println("                        Soft-RoCE's kernel threads (default: " + (bw ? "park" : "spin") + ")");
        if (bw) {
            out.println("      --report_gbits    report Gb/s instead of MB/s (1 MB = 2^20 bytes, as perftest)");
        }
        out.println("      --json            each result as one JSON object on stdout (and with -D each second's");
        out.println("                        interval); the text goes to stderr then (fields: docs/cli.md)");
    }
}
