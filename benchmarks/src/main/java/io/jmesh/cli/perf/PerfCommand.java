package io.jmesh.cli.perf;

import io.jmesh.api.Connector;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.Listener;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;
import io.jmesh.cli.FabricSupport;
import io.jmesh.transport.discovery.RdmaPort;
import io.jmesh.transport.net.ListenHandle;
import io.jmesh.transport.net.LocalLink;
import io.jmesh.transport.net.NoRouteException;
import io.jmesh.transport.net.Route;
import io.jmesh.transport.net.RouteSelector;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * 'jmesh bw' and 'jmesh lat': perftest-style measurements of jmesh's isend/irecv between two nodes. The server
 * listens on an out-of-band TCP port; the client connects there, the two exchange jmesh listen handles and then talk
 * over jmesh. For bw the client sends and the server is a sink that keeps {@code depth} receives posted per
 * connection; for lat the server echoes each message back over a second connection.
 *
 * <p>Out-of-band protocol (one ASCII line each, see {@link Oob}):
 * <pre>
 * client: hello version=1 test=bw|lat qps=Q maxsize=M [handle=H]     (H: the client's handle, for lat)
 * server: handle handle=H                                           (or: error TEXT)
 * client: jit                    server: jit ms=N     (N: the server JVM's total JIT compilation time, -1: unknown)
 * client: end totals=T1,T2,..    server: done        (after each size: messages per connection so far, cumulative)
 * client: report TEXT                                (a result line for the server to print)
 * client: bye
 * </pre>
 * The hot loops allocate nothing: request ids live in preallocated rings and times in preallocated arrays.
 */
public final class PerfCommand {
    static final int PROTOCOL = 3;
    /** A warm-up round in which a JVM's JIT compiled for at most this long counts as quiet. */
    private static final long QUIET_MS = 10;
    private static final long ROUND_NS = 1_000_000_000L;
    private static final int RING = 32;
    /** Latency samples kept per size in duration mode. */
    private static final int MAX_SAMPLES = 1 << 20;

    private final PerfOptions o;
    private final PrintStream out;
    private final PrintStream err;
    private io.jmesh.transport.discovery.DiscoveryResult found;

    private PerfCommand(PerfOptions o, PrintStream out, PrintStream err) {
        this.o = o;
        this.out = out;
        this.err = err;
    }

    /** Runs 'jmesh bw' or 'jmesh lat' with the given arguments; returns the exit status. */
    public static int run(String test, List<String> argv, PrintStream out, PrintStream err) {
        PerfOptions o = PerfOptions.parse(test, argv, out);
        if (o == null) {
            return 0;
        }
        try {
            PerfCommand c = new PerfCommand(o, out, err);
            if (o.isServer()) {
                c.server();
            } else {
                c.client();
            }
            return 0;
        } catch (IOException | RuntimeException | NoRouteException e) {
            err.println("jmesh " + test + ": " + e.getMessage());
            return 1;
        }
    }

    // ------------------------------------------------------------------------------------------------ server

    private void server() throws IOException, NoRouteException {
        try (ServerSocket ss = Oob.listen(o.port())) {
            out.println(" Waiting for a client on TCP port " + ss.getLocalPort() + " ...");
            out.flush();
            try (Oob oob = Oob.accept(ss, o.timeout().multipliedBy(10), o.timeout())) {
                serve(oob);
            }
        }
    }

    private void serve(Oob oob) throws IOException, NoRouteException {
        Map<String, String> hello = oob.expect("hello");
        String test = hello.getOrDefault("test", "?");
        if (Oob.number(hello, "version", 0, Integer.MAX_VALUE) != PROTOCOL) {
            oob.send("error the server speaks protocol " + PROTOCOL + ": run the same jmesh version on both ends");
            throw new IOException("the client speaks protocol " + hello.get("version") + ", this server "
                    + PROTOCOL + ": run the same jmesh version on both ends");
        }
        if (!test.equals(o.test())) {
            oob.send("error this server runs 'jmesh " + o.test() + "', not '" + test + "'");
            throw new IOException("the client runs 'jmesh " + test + "' against this 'jmesh " + o.test()
                    + "' server: run the same command on both ends");
        }
        int qps = (int) Oob.number(hello, "qps", 1, 64);
        long maxSize = Oob.number(hello, "maxsize", 1, PerfOptions.MAX_SIZE);
        boolean write = test.equals("lat") && hello.getOrDefault("op", "send").equals("write");
        if (!hello.getOrDefault("op", "send").equals(write ? "write" : "send")) {
            oob.send("error this server knows --op send and, for lat, --op write, not '" + hello.get("op")
                    + "': run the same jmesh version on both ends");
            throw new IOException("the client asked for op '" + hello.get("op") + "' with 'jmesh " + test
                    + "': run the same jmesh version on both ends");
        }
        RemoteRegion peerRegion = write ? region(hello, 2 * maxSize) : null;
        Context config = o.context();
        found = FabricSupport.discover(config); // before the fabric opens: see printHeader
        try (Fabric fabric = FabricSupport.open(config); Listener listener = fabric.listen();
             Arena arena = Arena.ofShared()) {
            ListenHandle own = FabricSupport.restrictOwn(ListenHandle.parse(listener.handleText()), fabric.links(),
                    o.device());
            List<AutoCloseable> open = new ArrayList<>();
            try {
                // registered before the connections, so that closing in reverse order closes them first; lat: the
                // second half is where the peer's one-sided writes land (--op write)
                Registration reg = fabric.register(arena.allocate(test.equals("lat") ? 2 * maxSize : maxSize, 4096));
                open.add(reg);
                oob.send("handle handle=" + own + (write ? " region=" + hex(reg) : ""));
                Receiver[] receivers = new Receiver[qps];
                for (int i = 0; i < qps; i++) {
                    receivers[i] = FabricSupport.awaitReceiver(listener, o.timeout());
                    open.add(receivers[i]);
                }
                Sender echo = null;
                String route = "(accepting)";
                if (test.equals("lat")) {
                    ListenHandle peer = ListenHandle.parse(requireField(hello, "handle"));
                    Route r = RouteSelector.best(fabric.links(), FabricSupport.restrictPeer(peer, fabric.links(),
                            o.device()));
                    Connector c = fabric.connect(FabricSupport.restrictPeer(peer, fabric.links(), o.device())
                            .encode());
                    open.add(c);
                    echo = FabricSupport.awaitSender(c, o.timeout());
                    open.add(echo);
                    route = c.route();
                    printHeader(fabric, config, r.local(), route, qps, write);
                } else {
                    printHeader(fabric, config, null, "accepted " + qps + " connection(s) on " + own, qps, false);
                }
                oob.send("ready");
                if (echo == null) {
                    sink(oob, receivers, reg, maxSize);
                } else if (write) {
                    echoWrites(oob, receivers[0], echo, reg, maxSize, peerRegion);
                } else {
                    echo(oob, receivers[0], echo, reg, maxSize);
                }
            } finally {
                closeAll(open);
            }
        }
    }

    private static String hex(Registration reg) {
        return java.util.HexFormat.of().formatHex(reg.remote().encode());
    }

    /** The peer's memory for --op write, from its message; checked, since it comes from the network. */
    private static RemoteRegion region(Map<String, String> f, long need) throws IOException {
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

    private static String requireField(Map<String, String> f, String key) throws IOException {
        String v = f.get(key);
        if (v == null || v.isEmpty()) {
            throw new IOException("protocol error: the client sent no " + key);
        }
        return v;
    }

    /** bw server: keeps {@code depth} receives posted on every connection, counts completions, obeys the client. */
    private void sink(Oob oob, Receiver[] rs, Registration reg, long maxSize) throws IOException {
        int q = rs.length;
        int[][] ring = new int[q][RING];
        long[] posted = new long[q];
        long[] done = new long[q];
        long[] target = new long[q];
        boolean waiting = false;
        Registration[] regs = {reg};
        long[] offsets = {0};
        long[] max = {maxSize};
        int[] tags = {0};
        long lastProgress = System.nanoTime();
        long timeoutNs = o.timeout().toNanos();
        Idler idler = new Idler(o.poll());
        int refill = Math.max(1, o.depth() / 4);
        for (long spin = 0; ; spin++) {
            boolean progress = false;
            for (int c = 0; c < q; c++) {
                Receiver r = rs[c];
                // refill a quarter window at a time, announced with one write (MORE on all but the last):
                // fewer passes through irecv and fewer clear-to-send writes while data streams in
                if (o.depth() - (posted[c] - done[c]) >= refill) {
                    while (posted[c] - done[c] < o.depth()) {
                        int flags = posted[c] + 1 - done[c] < o.depth() ? Receiver.MORE : 0;
                        int req = r.irecv(1, regs, offsets, max, tags, flags);
                        if (req == Status.NOT_READY) {
                            break;
                        } else if (req < 0) {
                            throw new IOException("irecv failed: " + Status.describe(req) + " " + r.error());
                        }
                        ring[c][(int) (posted[c] & (RING - 1))] = req;
                        posted[c]++;
                    }
                }
                if (done[c] < posted[c]) {
                    int t = r.test(ring[c][(int) (done[c] & (RING - 1))]);
                    if (t == 1) {
                        done[c]++;
                        progress = true;
                    } else if (t < 0) {
                        throw new IOException("receive failed: " + Status.describe(t) + " " + r.error());
                    }
                }
            }
            if (waiting) {
                boolean all = true;
                for (int c = 0; c < q; c++) {
                    if (done[c] > target[c]) {
                        throw new IOException("received more messages on connection " + c + " (" + done[c]
                                + ") than the client sent (" + target[c] + ")");
                    }
                    all &= done[c] == target[c];
                }
                if (all) {
                    oob.send("done");
                    waiting = false;
                }
            }
            if (progress) {
                idler.reset();
            } else {
                idler.idle();
            }
            long now = progress || (spin & 255) == 0 ? System.nanoTime() : 0;
            if (progress) {
                lastProgress = now;
            } else if ((spin & 255) == 0) {
                if (oob.ready()) {
                    String line = control(oob);
                    if (line == null) {
                        // answered
                    } else if (line.equals("bye")) {
                        oob.send("bye");
                        return;
                    } else {
                        long[] t = totals(Oob.fields(line, "end"), q);
                        System.arraycopy(t, 0, target, 0, q);
                        waiting = true;
                    }
                    lastProgress = now;
                } else if (waiting && now - lastProgress > timeoutNs) {
                    throw new IOException("no message arrived for " + o.timeout().toSeconds() + " s although the "
                            + "client sent " + java.util.Arrays.toString(target) + " (received "
                            + java.util.Arrays.toString(done) + "): the link stalled");
                }
            }
        }
    }

    /** The client's "end totals=T" in an echo loop: T, the messages to echo in all, checked against those echoed. */
    private static long echoTarget(String line, long echoed) throws IOException {
        long target = totals(Oob.fields(line, "end"), 1)[0];
        if (echoed > target) {
            throw new IOException("echoed " + echoed + " messages but the client sent " + target);
        }
        return target;
    }

    private IOException stalled(long echoed, long target) {
        return new IOException("no message for " + o.timeout().toSeconds() + " s (echoed " + echoed + " of " + target
                + "): the link stalled");
    }

    /**
     * Reads one out-of-band line in a server loop and answers what every loop answers alike: "jit" (this JVM's
     * compilation time) and "report" (the client's result line, printed here too). Returns any other line, or null.
     */
    private String control(Oob oob) throws IOException {
        String line = oob.receive();
        if (line.equals("jit")) {
            oob.send("jit ms=" + compileMillis());
            return null;
        }
        if (line.startsWith("report ")) {
            out.println(line.substring(7));
            out.flush();
            return null;
        }
        return line;
    }

    private static long[] totals(Map<String, String> f, int q) throws IOException {
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

    /**
     * lat server: sends every message it receives straight back, with its size. Like the client, it keeps {@link
     * #LAT_AHEAD} receives posted and reposts them in batches.
     */
    private void echo(Oob oob, Receiver r, Sender s, Registration reg, long maxSize) throws IOException {
        Registration[] regs = {reg};
        long[] max = {maxSize};
        int[] ring = new int[LAT_AHEAD];
        long posted = 0;
        long received = 0;
        posted = refillAhead(r, regs, max, ring, posted, received);
        int send = -1;
        Idler idler = new Idler(o.poll());
        long echoed = 0;
        long target = -1;
        long lastProgress = System.nanoTime();
        long timeoutNs = o.timeout().toNanos();
        for (long spin = 0; ; spin++) {
            int recv = ring[(int) (received % LAT_AHEAD)];
            int t = r.test(recv);
            if (t == 1) {
                long n = r.size(recv, 0);
                received++;
                int previous = send;
                send = sendOrFail(s, reg, n);      // the echo first: it is what the client waits for
                if (previous >= 0) {
                    completeSend(s, previous);
                }
                posted = refillAhead(r, regs, max, ring, posted, received);
                echoed++;
                lastProgress = System.nanoTime();
                idler.reset();
            } else if (t < 0) {
                throw new IOException("receive failed: " + Status.describe(t) + " " + r.error());
            } else {
                idler.idle();
            }
            if (target >= 0 && echoed == target) {
                if (send >= 0) {
                    completeSend(s, send);
                    send = -1;
                }
                oob.send("done");
                target = -1;
            }
            if ((spin & 8191) == 0 && t != 1) { // the check is a syscall: rarely, between echoes
                long now = System.nanoTime();
                if (oob.ready()) {
                    String line = control(oob);
                    if (line == null) {
                        // answered
                    } else if (line.equals("bye")) {
                        if (send >= 0) {
                            completeSend(s, send);
                        }
                        oob.send("bye");
                        return;
                    } else {
                        target = echoTarget(line, echoed);
                    }
                    lastProgress = now;
                } else if (target >= 0 && now - lastProgress > timeoutNs) {
                    throw stalled(echoed, target);
                }
            }
        }
    }

    /**
     * lat server with --op write: polls the last byte of its landing zone for the client's next mark, writes the
     * same number of bytes back with that mark into the client's landing zone, and reaps the write's completion, as
     * ib_write_lat's server does. The client names each size over the out-of-band channel first.
     */
    private void echoWrites(Oob oob, Receiver r, Sender s, Registration reg, long maxSize, RemoteRegion peer)
            throws IOException {
        MemorySegment mem = reg.memory();
        Idler idler = new Idler(o.poll());
        long size = -1;
        long echoed = 0;
        long target = -1;
        long lastProgress = System.nanoTime();
        long timeoutNs = o.timeout().toNanos();
        for (long spin = 0; ; spin++) {
            boolean got = size > 0 && (byte) BYTE.getAcquire(mem, maxSize + size - 1) == mark(echoed);
            if (got) {
                mem.set(JAVA_BYTE, size - 1, mark(echoed));
                int w = writeOrFail(s, reg, size, peer, maxSize);
                completeSend(s, w);
                echoed++;
                lastProgress = System.nanoTime();
                idler.reset();
            } else {
                r.poll();
                idler.idle();
            }
            if (target >= 0 && echoed == target) {
                oob.send("done");
                target = -1;
            }
            if ((spin & 8191) == 0 && !got) { // the check is a syscall: rarely, between echoes
                long now = System.nanoTime();
                if (oob.ready()) {
                    String line = control(oob);
                    if (line == null) {
                        // answered
                    } else if (line.equals("bye")) {
                        oob.send("bye");
                        return;
                    } else if (line.startsWith("size ")) {
                        size = Oob.number(Oob.fields(line, "size"), "bytes", 1, maxSize);
                        mem.set(JAVA_BYTE, maxSize + size - 1, (byte) 0);
                        oob.send("ok");
                    } else {
                        target = echoTarget(line, echoed);
                    }
                    lastProgress = now;
                } else if (target >= 0 && now - lastProgress > timeoutNs) {
                    throw stalled(echoed, target);
                }
            }
        }
    }

    /**
     * Receives the latency test keeps posted at each end, reposted LAT_AHEAD / 2 at a time after an echo with
     * {@link Receiver#MORE}: the clear-to-send write that announces them leaves between round trips, not inside one
     * (where a receiver-driven transport would otherwise pay one more RDMA write than ib_write_lat per message on the
     * measured path), and one write announces the whole batch.
     */
    static final int LAT_AHEAD = 32;

    /** Tops the posted receives up to LAT_AHEAD once half of them are used; returns the new posted count. */
    private long refillAhead(Receiver r, Registration[] regs, long[] max, int[] ring, long posted, long received)
            throws IOException {
        if (posted - received > LAT_AHEAD / 2) {
            return posted;
        }
        while (posted - received < LAT_AHEAD) {
            // all but the last with MORE: the batch is announced with one RDMA write
            int flags = posted + 1 - received < LAT_AHEAD ? Receiver.MORE : 0;
            ring[(int) (posted % LAT_AHEAD)] = postOrFail(r, regs, ZERO_OFFSET, max, ZERO_TAG, flags);
            posted++;
        }
        return posted;
    }

    // ------------------------------------------------------------------------------------------------ client

    private void client() throws IOException, NoRouteException {
        boolean lat = o.test().equals("lat");
        try (Oob oob = Oob.connect(o.server(), o.port(), o.timeout(), o.timeout())) {
            Context config = o.context();
            found = FabricSupport.discover(config); // before the fabric opens: see printHeader
            List<AutoCloseable> open = new ArrayList<>();
            try (Fabric fabric = FabricSupport.open(config); Arena arena = Arena.ofShared()) {
                Registration reg = fabric.register(arena.allocate(lat ? 2 * o.maxSize() : o.maxSize(), 4096));
                open.add(reg);
                boolean write = lat && o.op().equals("write");
                Listener listener = null;
                if (lat) {
                    listener = fabric.listen();
                    open.add(listener);
                }
                oob.send("hello version=" + PROTOCOL + " test=" + o.test() + " qps=" + o.qps() + " maxsize="
                        + o.maxSize() + (listener == null ? "" : " handle=" + FabricSupport.restrictOwn(
                        ListenHandle.parse(listener.handleText()), fabric.links(), o.device()))
                        + (lat ? " op=" + o.op() : "") + (write ? " region=" + hex(reg) : ""));
                Map<String, String> handle = oob.expect("handle");
                ListenHandle peer = ListenHandle.parse(requireField(handle, "handle"));
                peerRegion = write ? region(handle, 2 * o.maxSize()) : null;
                ListenHandle target = FabricSupport.restrictPeer(peer, fabric.links(), o.device());
                Route route = RouteSelector.best(fabric.links(), target);
                Sender[] senders = new Sender[o.qps()];
                String routeText = null;
                for (int i = 0; i < o.qps(); i++) {
                    Connector c = fabric.connect(target.encode());
                    open.add(c);
                    routeText = c.route();
                    senders[i] = FabricSupport.awaitSender(c, o.timeout());
                    open.add(senders[i]);
                }
                Receiver back = null;
                if (lat) {
                    back = FabricSupport.awaitReceiver(listener, o.timeout());
                    open.add(back);
                }
                oob.expect("ready");
                printHeader(fabric, config, route.local(), routeText, o.qps(), write);
                String columns = lat ? PerfReport.LAT_COLUMNS : o.gbits() ? PerfReport.BW_COLUMNS_GB
                        : PerfReport.BW_COLUMNS_MB;
                out.println(columns);
                oob.send("report " + columns);
                long[] totals = new long[o.qps()];
                for (long size : o.sizes()) {
                    String line = lat ? latency(oob, senders[0], back, reg, size, totals)
                            : bandwidth(oob, senders, reg, size, totals);
                    out.println(line);
                    out.flush();
                    oob.send("report " + line);
                }
                out.println(PerfReport.RULE);
                oob.send("report " + PerfReport.RULE);
                oob.send("bye");
                oob.expect("bye"); // the server has stopped using the connections: now they may close
            } finally {
                closeAll(open);
            }
        }
    }

    private void printHeader(Fabric fabric, Context config, LocalLink local, String route, int qps,
                             boolean write) {
        boolean lat = o.test().equals("lat");
        String mtu = "-";
        String device = local == null ? (o.device() == null ? "(any)" : o.device()) : local.device();
        String gid = local == null || local.gidIndex() < 0 ? "-" : Integer.toString(local.gidIndex());
        if (fabric.provider().equals("rdma") && local != null) {
            // from the discovery made before the fabric opened: a second discovery while verbs connections are
            // open was followed by EBADF from ibv_destroy_qp/ibv_dereg_mr at close in the testbed (reported)
            RdmaPort p = FabricSupport.portOf(found, local.device(), local.prefix().address());
            if (p != null) {
                mtu = p.activeMtu() + "[B]";
            }
        }
        PerfReport.header(out, lat ? (write ? "jmesh Latency Test (one-sided RDMA write ping-pong)"
                        : "jmesh Latency Test (isend/irecv ping-pong)")
                        : "jmesh BW Test (isend/irecv, receiver-driven)",
                "Provider", fabric.provider(), "Device", device, "GID index", gid, "Number of qps",
                Integer.toString(qps), lat ? "Depth" : "Tx depth", Integer.toString(o.depth()), "Mtu", mtu,
                "Route", route, "Polling", Idler.describe(o.poll()), "Warmup", o.warmupFor() + (lat ? " round trips" : " messages") + " per size"
                        + (o.settle().isZero() ? "" : ", then until the JIT is quiet (at most " + o.settle().toSeconds()
                        + " s)"),
                "Data ex. method", "TCP port " + o.port() + " (jmesh listen handles)");
        out.flush();
    }

    /** Sends warm-up and then measured messages round-robin over the connections; returns the result line. */
    private String bandwidth(Oob oob, Sender[] s, Registration reg, long size, long[] totals) throws IOException {
        int q = s.length;
        int[][] ring = new int[q][RING];
        // the peak is the best rate over this many consecutive completions: several windows of requests in flight,
        // so that completions reported in bursts do not count as a rate
        int peakWindow = (int) Math.max(4L * o.depth() * q, Math.min(o.iterations() / 16, 4096));
        long[] window = new long[peakWindow];
        long[] posted = new long[q];
        long[] done = new long[q];
        long warm = o.warmupFor();
        // warm-up takes the measurement's code path (peak window too): a branch first taken when measuring would be
        // compiled then, on the measurement's CPU time
        long[] scratch = new long[peakWindow];
        stream(s, reg, size, ring, posted, done, warm, 0, scratch);
        settle(oob, size, () -> stream(s, reg, size, ring, posted, done, -1, ROUND_NS, scratch));
        long start = System.nanoTime();
        long measured = o.duration() > 0 ? stream(s, reg, size, ring, posted, done, -1,
                o.duration() * 1_000_000_000L, window) : stream(s, reg, size, ring, posted, done, o.iterations(), 0,
                window);
        long elapsed = System.nanoTime() - start;
        double peakNs = window[0];
        for (int c = 0; c < q; c++) {
            totals[c] += posted[c];
        }
        StringBuilder sb = new StringBuilder("end totals=");
        for (int c = 0; c < q; c++) {
            sb.append(c == 0 ? "" : ",").append(totals[c]);
        }
        oob.send(sb.toString());
        oob.expect("done");
        double avg = (double) size * measured * 1e9 / elapsed;
        double peak = peakNs > 0 ? (double) size * peakWindow * 1e9 / peakNs : avg;
        return PerfReport.bwLine(size, measured, Math.max(peak, avg), avg, measured * 1e9 / elapsed, o.gbits());
    }

    /**
     * Keeps up to depth messages in flight per connection until {@code count} messages (or, when count < 0, until
     * {@code durationNs}) have completed. {@code peak}, when given, receives in [0] the shortest time taken by
     * {@code peak.length} consecutive completions. Returns the messages completed.
     */
    private long stream(Sender[] s, Registration reg, long size, int[][] ring, long[] posted, long[] done, long count,
                        long durationNs, long[] peak) throws IOException {
        int q = s.length;
        long sent = 0;
        long completed = 0;
        long start = System.nanoTime();
        long lastProgress = start;
        long timeoutNs = o.timeout().toNanos();
        long best = Long.MAX_VALUE;
        int w = peak == null ? 1 : peak.length;
        long[] times = peak == null ? null : new long[w];
        boolean stop = count == 0;
        long now = start;
        Idler idler = new Idler(o.poll());
        for (long spin = 0; ; spin++) {
            boolean progress = false;
            for (int c = 0; c < q; c++) {
                Sender x = s[c];
                if (!stop && posted[c] - done[c] < o.depth()) {
                    int req = x.isend(reg, 0, size, 0);
                    if (req >= 0) {
                        ring[c][(int) (posted[c] & (RING - 1))] = req;
                        posted[c]++;
                        sent++;
                        if (count >= 0 && sent == count) {
                            stop = true;
                        }
                    } else if (req != Status.NOT_READY) {
                        throw new IOException("isend failed: " + Status.describe(req) + " " + x.error());
                    }
                }
                if (done[c] < posted[c]) {
                    int t = x.test(ring[c][(int) (done[c] & (RING - 1))]);
                    if (t == 1) {
                        done[c]++;
                        if (times != null) {
                            now = System.nanoTime();
                            int slot = (int) (completed % w);
                            long prev = times[slot];
                            times[slot] = now;
                            if (completed >= w && now - prev < best) {
                                best = now - prev;
                            }
                        }
                        completed++;
                        progress = true;
                    } else if (t < 0) {
                        throw new IOException("send failed: " + Status.describe(t) + " " + x.error());
                    }
                }
            }
            if (stop && completed == sent) {
                break;
            }
            if (progress) {
                idler.reset();
            } else {
                idler.idle();
            }
            if (progress || (spin & 255) == 0) {
                now = System.nanoTime();
                if (progress) {
                    lastProgress = now;
                } else if (now - lastProgress > timeoutNs) {
                    throw new IOException("no send completed for " + o.timeout().toSeconds() + " s (" + completed
                            + " of " + sent + " done): the receiver stopped posting or the link stalled");
                }
                if (count < 0 && !stop && now - start >= durationNs) {
                    stop = true;
                }
            }
        }
        if (peak != null) {
            peak[0] = best == Long.MAX_VALUE ? 0 : best;
        }
        return completed;
    }

    /** Ping-pong: warm-up, then measured round trips; returns the result line. */
    private String latency(Oob oob, Sender s, Receiver back, Registration reg, long size, long[] totals)
            throws IOException {
        latRegs = new Registration[] {reg};
        idler = new Idler(o.poll());
        latMax = new long[] {o.maxSize()};
        long warm = o.warmupFor();
        int capacity = (int) (o.duration() > 0 ? MAX_SAMPLES : Math.min(o.iterations(), Integer.MAX_VALUE - 8));
        long[] rtt = new long[capacity];
        if (peerRegion == null) {
            latPosted = refillAhead(back, latRegs, latMax, latRing, latPosted, latRounds);
        } else {
            // the peer polls the last byte of a size-dependent place: tell it the size; both clear that byte
            reg.memory().set(JAVA_BYTE, o.maxSize() + size - 1, (byte) 0);
            oob.send("size bytes=" + size);
            oob.expect("ok");
        }
        for (long i = 0; i < warm; i++) {
            trip(s, back, reg, size);
        }
        settle(oob, size, () -> {
            long end = System.nanoTime() + ROUND_NS;
            do {
                trip(s, back, reg, size);
            } while (System.nanoTime() - end < 0);
        });
        int n = 0;
        if (o.duration() > 0) {
            long durationNs = o.duration() * 1_000_000_000L;
            long measureStart = System.nanoTime();
            while (n < capacity && System.nanoTime() - measureStart < durationNs) {
                rtt[n++] = trip(s, back, reg, size);
            }
        } else {
            while (n < o.iterations()) {
                rtt[n++] = trip(s, back, reg, size);
            }
        }
        // the receives posted ahead stay for the next size; the server's count is cumulative
        totals[0] = latRounds;
        oob.send("end totals=" + totals[0]);
        oob.expect("done");
        return PerfReport.latLine(size, rtt, n);
    }

    private long trip(Sender s, Receiver back, Registration reg, long size) throws IOException {
        return peerRegion == null ? roundTrip(s, back, reg, size) : writeTrip(s, back, reg, size);
    }

    /** --op write: the peer's memory, whose second half takes this side's writes; null for isend/irecv. */
    private RemoteRegion peerRegion;
    private static final VarHandle BYTE = JAVA_BYTE.varHandle();

    /** The mark of round trip {@code round} in the last byte of a --op write message: 1..255, never the cleared 0. */
    static byte mark(long round) {
        return (byte) (1 + round % 255);
    }

    /**
     * One round trip of --op write, ib_write_lat's algorithm through jmesh's one-sided API: write the message into
     * the peer's memory with the round's mark in its last byte, poll the last byte of this side's landing zone until
     * the peer's echo brings the same mark, then reap the write's completion.
     */
    private long writeTrip(Sender s, Receiver back, Registration reg, long size) throws IOException {
        MemorySegment mem = reg.memory();
        byte mark = mark(latRounds);
        long landing = o.maxSize() + size - 1;
        long t0 = System.nanoTime();
        mem.set(JAVA_BYTE, size - 1, mark);
        int w = writeOrFail(s, reg, size, peerRegion, o.maxSize());
        long spins = 0;
        idler.reset();
        while ((byte) BYTE.getAcquire(mem, landing) != mark) {
            back.poll();            // TCP applies the peer's writes only while the receiver is polled
            idler.idle();
            if ((++spins & 1023) == 0 && System.nanoTime() - t0 > o.timeout().toNanos()) {
                throw new IOException("no echo for " + o.timeout().toSeconds() + " s after " + latRounds
                        + " round trips: the server or the link stalled");
            }
        }
        long t1 = System.nanoTime();
        latRounds++;
        completeSend(s, w);
        return t1 - t0;
    }

    private int writeOrFail(Sender s, Registration reg, long size, RemoteRegion remote, long remoteOffset)
            throws IOException {
        int req;
        long start = System.nanoTime();
        while ((req = s.write(reg, 0, size, remote, remoteOffset)) == Status.NOT_READY) {
            if (System.nanoTime() - start > o.timeout().toNanos()) {
                throw new IOException("write stayed NOT_READY for " + o.timeout().toSeconds() + " s");
            }
        }
        if (req == Status.BAD_ARGUMENT) {
            throw new IOException("write failed: the peer's memory region " + remote + " does not take " + size
                    + " bytes at " + remoteOffset + " over this connection (another provider, or too small)");
        }
        if (req < 0) {
            throw new IOException("write failed: " + Status.describe(req) + " " + s.error());
        }
        return req;
    }

    private static final long[] ZERO_OFFSET = {0};
    private static final int[] ZERO_TAG = {0};
    private Registration[] latRegs;
    private long[] latMax;
    private Idler idler;
    /** Round trips made so far, over all sizes: also the echoes received. */
    private long latRounds;
    /** Receives posted for echoes so far, and their request ids: they stay posted from one size to the next. */
    private long latPosted;
    private final int[] latRing = new int[LAT_AHEAD];

    /** One ping and its echo; returns the round-trip time in nanoseconds. Leaves a receive posted for the next. */
    private long roundTrip(Sender s, Receiver back, Registration reg, long size) throws IOException {
        long t0 = System.nanoTime();
        int send = sendOrFail(s, reg, size);
        long spins = 0;
        int t;
        int recv = latRing[(int) (latRounds % LAT_AHEAD)];
        idler.reset();
        while ((t = back.test(recv)) == 0) {
            idler.idle();
            if ((++spins & 1023) == 0 && System.nanoTime() - t0 > o.timeout().toNanos()) {
                throw new IOException("no echo for " + o.timeout().toSeconds() + " s after " + latRounds
                        + " round trips: the server or the link stalled");
            }
        }
        long t1 = System.nanoTime();
        if (t < 0) {
            throw new IOException("receive failed: " + Status.describe(t) + " " + back.error());
        }
        if (back.size(recv, 0) != size) {
            throw new IOException("the echo has " + back.size(recv, 0) + " bytes, not " + size);
        }
        latRounds++;
        latPosted = refillAhead(back, latRegs, latMax, latRing, latPosted, latRounds);
        completeSend(s, send);
        return t1 - t0;
    }

    /** A warm-up round of about a second. */
    private interface Round {
        void run() throws IOException;
    }

    /**
     * Goes on warming up in rounds until neither JVM's JIT compiler worked during a round, for at most {@code
     * --settle}: a C2 compilation of the hot loop that outlasts the counted warm-up would share the CPU with the
     * measurement (under emulation, the testbed's, it takes tens of seconds and halved the figures).
     */
    private void settle(Oob oob, long size, Round round) throws IOException {
        if (o.settle().isZero()) {
            return;
        }
        long start = System.nanoTime();
        long local = compileMillis();
        long peer = peerCompileMillis(oob);
        while (true) {
            round.run();
            long l = compileMillis();
            long p = peerCompileMillis(oob);
            boolean quiet = l - local <= QUIET_MS && p - peer <= QUIET_MS;
            local = l;
            peer = p;
            if (quiet) {
                return;
            }
            if (System.nanoTime() - start > o.settle().toNanos()) {
                err.println(" jmesh " + o.test() + ": size " + size + ": the JIT compiler was still busy after "
                        + o.settle().toSeconds() + " s of warm-up, measuring anyway (raise --settle)");
                err.flush();
                return;
            }
        }
    }

    private static long peerCompileMillis(Oob oob) throws IOException {
        oob.send("jit");
        return Oob.number(oob.expect("jit"), "ms", -1, Long.MAX_VALUE);
    }

    /** This JVM's total JIT compilation time in milliseconds, or -1 where the JVM does not tell. */
    static long compileMillis() {
        java.lang.management.CompilationMXBean c = java.lang.management.ManagementFactory.getCompilationMXBean();
        return c != null && c.isCompilationTimeMonitoringSupported() ? c.getTotalCompilationTime() : -1;
    }


    private int postOrFail(Receiver r, Registration[] regs, long[] offsets, long[] max, int[] tags)
            throws IOException {
        return postOrFail(r, regs, offsets, max, tags, 0);
    }

    private int postOrFail(Receiver r, Registration[] regs, long[] offsets, long[] max, int[] tags, int flags)
            throws IOException {
        int req;
        long start = System.nanoTime();
        while ((req = r.irecv(1, regs, offsets, max, tags, flags)) == Status.NOT_READY) {
            if (System.nanoTime() - start > o.timeout().toNanos()) {
                throw new IOException("irecv stayed NOT_READY for " + o.timeout().toSeconds() + " s");
            }
        }
        if (req < 0) {
            throw new IOException("irecv failed: " + Status.describe(req) + " " + r.error());
        }
        return req;
    }

    private int sendOrFail(Sender s, Registration reg, long size) throws IOException {
        int req;
        long spins = 0;
        long start = 0;
        while ((req = s.isend(reg, 0, size, 0)) == Status.NOT_READY) {
            if ((++spins & 1023) == 0) {
                long now = System.nanoTime();
                if (start == 0) {
                    start = now;
                } else if (now - start > o.timeout().toNanos()) {
                    throw new IOException("the peer posted no receive for " + o.timeout().toSeconds() + " s");
                }
            }
        }
        if (req < 0) {
            throw new IOException("isend failed: " + Status.describe(req) + " " + s.error());
        }
        return req;
    }

    private void completeSend(Sender s, int req) throws IOException {
        int t;
        long spins = 0;
        long start = 0;
        while ((t = s.test(req)) == 0) {
            if ((++spins & 1023) == 0) {
                long now = System.nanoTime();
                if (start == 0) {
                    start = now;
                } else if (now - start > o.timeout().toNanos()) {
                    throw new IOException("a send did not complete for " + o.timeout().toSeconds() + " s");
                }
            }
        }
        if (t < 0) {
            throw new IOException("send failed: " + Status.describe(t) + " " + s.error());
        }
    }

    /** Closes in reverse order of opening, so connections go before the registrations and listeners they use. */
    static void closeAll(List<AutoCloseable> open) {
        for (int i = open.size() - 1; i >= 0; i--) {
            try {
                open.get(i).close();
            } catch (Exception e) {
                // keep closing the rest: one failed close must not leak the others; but say so
                System.err.println("jmesh: closing " + open.get(i).getClass().getSimpleName() + " failed: " + e);
            }
        }
    }
}
