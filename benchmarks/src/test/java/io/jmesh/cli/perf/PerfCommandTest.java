package io.jmesh.cli.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * 'jmesh bw' and 'jmesh lat' end to end with the TCP provider on loopback: a server and a client in one JVM, the
 * perftest columns, the client's lines echoed by the server, and clear failures. Nothing here asserts a speed.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PerfCommandTest {
    record Result(int rc, String out, String err) {
    }

    static Result run(String test, List<String> args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = PerfCommand.run(test, args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static final AtomicInteger NEXT_PORT = new AtomicInteger();

    /**
     * A free port below the kernel's ephemeral range: a port the kernel handed out could be handed out again, to a
     * fabric's handshake listener (port 0) in the server, before the server's out-of-band socket binds it; the
     * client then talks to the handshake port and is reset.
     */
    static int freePort() throws Exception {
        int low = 32768;
        try {
            low = Integer.parseInt(Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim()
                    .split("\\s+")[0]);
        } catch (IOException | NumberFormatException e) {
            // not Linux: keep the usual lower bound
        }
        int span = Math.max(1000, low - 12000);
        NEXT_PORT.compareAndSet(0, (int) (ProcessHandle.current().pid() * 37 % span));
        for (int i = 0; i < span; i++) {
            int port = 11000 + NEXT_PORT.getAndIncrement() % span;
            try (ServerSocket s = new ServerSocket(port)) {
                return s.getLocalPort();
            } catch (IOException taken) {
                // in use: the next one
            }
        }
        throw new IllegalStateException("no free TCP port in 11000.." + (11000 + span));
    }

    static List<String> args(int port, String address, String... more) {
        List<String> a = new ArrayList<>(List.of("--provider", "tcp", "--addresses", address, "-p",
                Integer.toString(port), "--timeout", "30"));
        a.addAll(List.of(more));
        return a;
    }

    @Test
    void bandwidthPrintsIbWriteBwColumnsOnBothEnds() throws Exception {
        int port = freePort();
        CompletableFuture<Result> server = CompletableFuture.supplyAsync(() -> run("bw",
                args(port, "127.0.88.1/24")));
        Result client = run("bw", args(port, "127.0.88.2/24", "-s", "4K,64K", "-n", "300", "-q", "2", "--settle", "2",
                "127.0.88.1"));
        Result srv = server.get(60, TimeUnit.SECONDS);
        assertEquals(0, client.rc(), client.out() + client.err());
        assertEquals(0, srv.rc(), srv.out() + srv.err());
        assertTrue(client.out().contains(PerfReport.BW_COLUMNS_MB), client.out());
        assertTrue(client.out().contains("Route           : tcp 127.0.88.2/24 -> 127.0.88.1/24"), client.out());
        assertTrue(client.out().contains("Number of qps   : 2"), client.out());
        for (String size : List.of("4096", "65536")) {
            Matcher m = Pattern.compile("(?m)^ " + size + "\\s+(\\d+)\\s+([0-9.]+)\\s+([0-9.]+)\\s+([0-9.]+)$")
                    .matcher(client.out());
            assertTrue(m.find(), "no result line for " + size + " in\n" + client.out());
            assertEquals(300, Integer.parseInt(m.group(1)));
            double peak = Double.parseDouble(m.group(2));
            double avg = Double.parseDouble(m.group(3));
            assertTrue(avg > 0 && peak >= avg, m.group());
            assertTrue(srv.out().contains(m.group()), "the server prints the client's line too:\n" + srv.out());
        }
    }

    @Test
    void latencyPrintsIbWriteLatColumns() throws Exception {
        Result client = latency("127.0.89", List.of());
        assertTrue(client.out().contains("reposted 16 at a time"), client.out());
    }

    /** --repost each on both ends: every receive reposted and announced on its own, as NCCL's proxy posts them. */
    @Test
    void latencyWithEachReceiveRepostedAlone() throws Exception {
        Result client = latency("127.0.93", List.of("--repost", "each"));
        assertTrue(client.out().contains("each reposted and announced on its own"), client.out());
    }

    private Result latency(String net, List<String> extra) throws Exception {
        int port = freePort();
        List<String> serverArgs = new ArrayList<>(args(port, net + ".1/24"));
        serverArgs.addAll(extra);
        CompletableFuture<Result> server = CompletableFuture.supplyAsync(() -> run("lat", serverArgs));
        List<String> clientArgs = new ArrayList<>(args(port, net + ".2/24", "-s", "2,4096", "-n", "200",
                "--settle", "2"));
        clientArgs.addAll(extra);
        clientArgs.add(net + ".1");
        Result client = run("lat", clientArgs);
        Result srv = server.get(60, TimeUnit.SECONDS);
        assertEquals(0, client.rc(), client.out() + client.err());
        assertEquals(0, srv.rc(), srv.out() + srv.err());
        assertTrue(client.out().contains(PerfReport.LAT_COLUMNS), client.out());
        for (String size : List.of("2", "4096")) {
            Matcher m = Pattern.compile("(?m)^ " + size + "\\s+(\\d+)((\\s+[0-9.]+){7})$").matcher(client.out());
            assertTrue(m.find(), "no result line for " + size + " in\n" + client.out());
            assertEquals(200, Integer.parseInt(m.group(1)));
            String[] v = m.group(2).trim().split("\\s+");
            double min = Double.parseDouble(v[0]);
            double max = Double.parseDouble(v[1]);
            double typical = Double.parseDouble(v[2]);
            assertTrue(min > 0 && min <= typical && typical <= max, m.group());
        }
        return client;
    }

    /**
     * --op write: ib_write_lat's ping-pong through the one-sided API (the TCP provider applies the writes while the
     * receivers are polled); sizes in descending order, so the server must follow the size changes the client
     * announces.
     */
    @Test
    void oneSidedWriteLatencyPrintsIbWriteLatColumns() throws Exception {
        int port = freePort();
        CompletableFuture<Result> server = CompletableFuture.supplyAsync(() -> run("lat",
                args(port, "127.0.92.1/24")));
        Result client = run("lat", args(port, "127.0.92.2/24", "--op", "write", "-s", "4096,2", "-n", "200",
                "--settle", "2", "127.0.92.1"));
        Result srv = server.get(60, TimeUnit.SECONDS);
        assertEquals(0, client.rc(), client.out() + client.err());
        assertEquals(0, srv.rc(), srv.out() + srv.err());
        assertTrue(client.out().contains("one-sided RDMA write ping-pong"), client.out());
        assertTrue(srv.out().contains("one-sided RDMA write ping-pong"), srv.out());
        for (String size : List.of("4096", "2")) {
            Matcher m = Pattern.compile("(?m)^ " + size + "\\s+(\\d+)((\\s+[0-9.]+){7})$").matcher(client.out());
            assertTrue(m.find(), "no result line for " + size + " in\n" + client.out());
            assertEquals(200, Integer.parseInt(m.group(1)));
            assertTrue(srv.out().contains(m.group()), "the server prints the client's line too:\n" + srv.out());
        }
    }

    /**
     * The out-of-band port listens on the mesh addresses (and 127.0.0.1) only, and a stray connection or a client of
     * the wrong test is dropped (the wrong client is told why) while the server waits on for the right one.
     */
    @Test
    void strayAndWrongClientsAreDroppedAndTheServerServesTheRightOne() throws Exception {
        int port = freePort();
        CompletableFuture<Result> server = CompletableFuture.supplyAsync(() -> run("lat",
                args(port, "127.0.90.1/24")));
        Result elsewhere = run("lat", List.of("--provider", "tcp", "--addresses", "127.0.90.2/24", "-p",
                Integer.toString(port), "--timeout", "1", "127.0.0.2"));
        assertEquals(1, elsewhere.rc());
        assertTrue(elsewhere.err().contains("no jmesh server at 127.0.0.2:" + port), elsewhere.err());
        try (Socket stray = connect("127.0.90.1", port)) {
            stray.getOutputStream().write("GET / HTTP/1.0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            stray.setSoTimeout(30_000);
            try {
                assertEquals(-1, stray.getInputStream().read(), "the server drops a stray client");
            } catch (java.net.SocketException e) {
                // a reset: it closed the socket with the stray bytes unread, as dropped
            }
        }
        Result wrong = run("bw", args(port, "127.0.90.2/24", "-n", "10", "127.0.90.1"));
        assertEquals(1, wrong.rc());
        assertTrue(wrong.err().contains("this server runs 'jmesh lat', not 'bw'"), wrong.err());
        Result right = run("lat", args(port, "127.0.90.2/24", "-s", "2", "-n", "20", "--settle", "0",
                "127.0.90.1"));
        assertEquals(0, right.rc(), right.out() + right.err());
        Result srv = server.get(60, TimeUnit.SECONDS);
        assertEquals(0, srv.rc(), srv.out() + srv.err());
        assertTrue(srv.out().contains("of 127.0.90.1, 127.0.0.1 ..."), srv.out());
        assertTrue(srv.out().contains("a non-printable byte 0xd") && srv.out().contains("run the same command on "
                + "both ends; still waiting"), srv.out());
    }

    private static Socket connect(String host, int port) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                return new Socket(host, port);
            } catch (java.net.ConnectException e) {
                if (System.nanoTime() - deadline > 0) {
                    throw e;
                }
                Thread.sleep(50);
            }
        }
    }

    @Test
    void aClientWithoutServerGivesUpWithTheFix() throws Exception {
        int port = freePort();
        Result client = run("bw", List.of("--provider", "tcp", "--addresses", "127.0.91.2/24", "-p",
                Integer.toString(port), "--timeout", "1", "127.0.0.1"));
        assertEquals(1, client.rc());
        assertTrue(client.err().contains("no jmesh server at 127.0.0.1:" + port) && client.err()
                .contains("start the server side first"), client.err());
        assertTrue(client.err().startsWith(" No jmesh server at 127.0.0.1:" + port + " yet ("), "said at once, "
                + "not only after --timeout:\n" + client.err());
    }

    /** --json: stdout has one object per result (and per second of a -D run) on both ends, nothing else. */
    @Test
    void jsonResultsAndIntervalsOnBothEnds() throws Exception {
        int port = freePort();
        CompletableFuture<Result> server = CompletableFuture.supplyAsync(() -> run("bw",
                args(port, "127.0.97.1/24", "--json")));
        Result client = run("bw", args(port, "127.0.97.2/24", "-D", "2", "--settle", "0", "--json", "127.0.97.1"));
        assertEquals(0, client.rc(), client.out() + client.err());
        Result srv = server.get(60, TimeUnit.SECONDS);
        assertEquals(0, srv.rc(), srv.out() + srv.err());
        List<String> lines = io.jmesh.cli.CliTest.jsonLines(client.out());
        assertTrue(lines.getFirst().matches("\\{\"type\":\"interval\",\"test\":\"bw\",\"bytes\":65536,"
                + "\"start_s\":0.0,\"end_s\":1\\.[0-9]+,\"messages\":[0-9]+,\"bw\":[0-9.]+,\"unit\":\"MB/s\"}"),
                lines.getFirst());
        String result = "\"bytes\":65536,\"iterations\":[1-9][0-9]*,\"bw_peak\":[0-9.]+,\"bw_average\":[0-9.]+,"
                + "\"unit\":\"MB/s\",\"msg_rate_mpps\":[0-9.]+}";
        assertTrue(lines.getLast().matches("\\{\"type\":\"result\",\"test\":\"bw\",\"role\":\"client\","
                + "\"provider\":\"tcp\",\"route\":\"tcp 127.0.97.2/24 -> 127.0.97.1/24\"," + result), lines.getLast());
        assertTrue(client.err().contains("BW average[MB/sec]"), "the table goes to stderr:\n" + client.err());
        List<String> mine = io.jmesh.cli.CliTest.jsonLines(srv.out());
        assertEquals(1, mine.size(), srv.out());
        assertTrue(mine.getFirst().matches("\\{\"type\":\"result\",\"test\":\"bw\",\"role\":\"server\","
                + "\"provider\":\"tcp\",\"route\":null," + result), mine.getFirst());
    }

    @Test
    void latencyJsonNamesEveryColumn() throws Exception {
        int port = freePort();
        CompletableFuture<Result> server = CompletableFuture.supplyAsync(() -> run("lat",
                args(port, "127.0.98.1/24", "--json")));
        Result client = run("lat", args(port, "127.0.98.2/24", "-n", "50", "--settle", "0", "--json",
                "127.0.98.1"));
        assertEquals(0, client.rc(), client.out() + client.err());
        assertEquals(0, server.get(60, TimeUnit.SECONDS).rc());
        List<String> lines = io.jmesh.cli.CliTest.jsonLines(client.out());
        assertEquals(1, lines.size(), client.out());
        assertTrue(lines.getFirst().matches("\\{\"type\":\"result\",\"test\":\"lat\",\"role\":\"client\","
                + "\"provider\":\"tcp\",\"route\":\"[^\"]+\",\"bytes\":2,\"iterations\":50,\"t_min_us\":[0-9.]+,"
                + "\"t_max_us\":[0-9.]+,\"t_typical_us\":[0-9.]+,\"t_avg_us\":[0-9.]+,\"t_stdev_us\":[0-9.]+,"
                + "\"t_p99_us\":[0-9.]+,\"t_p999_us\":[0-9.]+,\"op\":\"send\"}"), lines.getFirst());
    }

    /**
     * A parking latency server looks at its control channel by time: a short run ends in seconds, not in the up
     * to ~16 s per control message that 8,192 parked polls of up to 2 ms each took.
     */
    @Test
    void aParkingLatencyServerEndsWithItsClient() throws Exception {
        int port = freePort();
        CompletableFuture<Result> server = CompletableFuture.supplyAsync(() -> run("lat",
                args(port, "127.0.96.1/24", "--poll", "park", "--settle", "0")));
        long t0 = System.nanoTime();
        Result client = run("lat", args(port, "127.0.96.2/24", "--poll", "park", "-n", "100", "--settle", "0",
                "127.0.96.1"));
        assertEquals(0, client.rc(), client.out() + client.err());
        Result srv = server.get(60, TimeUnit.SECONDS);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(0, srv.rc(), srv.out() + srv.err());
        // the client's 'end' and 'bye' each wait for the server's next look at the channel
        System.out.println("parking lat run: " + ms + " ms");
        assertTrue(ms < 8000, "the run took " + ms + " ms");
    }

    /**
     * One machine, as a new user tries it: the client gives 127.0.0.1, which is none of the server's mesh addresses
     * (here a loopback subnet of its own, as eth0's would be), and still finds the server there.
     */
    @Test
    void aClientOnTheServersMachineFindsItAt127001() throws Exception {
        int port = freePort();
        CompletableFuture<Result> server = CompletableFuture.supplyAsync(() -> run("bw",
                args(port, "127.0.94.1/24", "--settle", "0")));
        Result client = run("bw", args(port, "127.0.94.2/24", "-n", "200", "-s", "4K", "--settle", "0",
                "127.0.0.1"));
        assertEquals(0, client.rc(), client.out() + client.err());
        Result srv = server.get(60, TimeUnit.SECONDS);
        assertEquals(0, srv.rc(), srv.out() + srv.err());
        assertTrue(srv.out().contains("Waiting for a client on TCP port " + port + " of 127.0.94.1, 127.0.0.1 ..."),
                srv.out());
        assertTrue(Pattern.compile("(?m)^ 4096\\s+200\\s").matcher(client.out()).find(), client.out());
    }

    @Test
    void optionsArePerftestsAndBadOnesAreRefused() {
        PerfOptions o = PerfOptions.parse("bw", List.of("-d", "rxe0", "-x", "3", "-s", "64K", "-q", "4",
                "-D", "2", "-p", "9999", "host"), System.out);
        assertEquals("rxe0", o.device());
        assertEquals(3, o.gidIndex());
        assertEquals(List.of(65536L), o.sizes());
        assertEquals(4, o.qps());
        assertEquals(2, o.duration());
        assertEquals(9999, o.port());
        assertEquals("host", o.server());
        assertEquals(23, PerfOptions.parse("bw", List.of("-a"), System.out).sizes().size());
        assertEquals(10, PerfOptions.parse("bw", List.of("-n", "10"), System.out).iterations());
        assertEquals("write", PerfOptions.parse("lat", List.of("--op", "write"), System.out).op());
        assertEquals("send", PerfOptions.parse("lat", List.of(), System.out).op());
        assertTrue(PerfOptions.parse("lat", List.of("--repost", "each"), System.out).repostEach());
        assertTrue(!PerfOptions.parse("lat", List.of(), System.out).repostEach());
        try {
            PerfOptions.parse("bw", List.of("--op", "write"), System.out);
            throw new AssertionError("bw accepted --op write");
        } catch (IllegalArgumentException expected) {
            assertTrue(expected.getMessage().contains("only for 'jmesh lat'"), expected.getMessage());
        }
        try {
            PerfOptions.parse("bw", List.of("--repost", "each"), System.out);
            throw new AssertionError("bw accepted --repost each");
        } catch (IllegalArgumentException expected) {
            assertTrue(expected.getMessage().contains("only for 'jmesh lat'"), expected.getMessage());
        }
        for (List<String> bad : List.of(List.of("-q", "2"), List.of("-s", "0"), List.of("--frob"), List.of("-R"),
                List.of("a", "b"), List.of("--op", "read"), List.of("--repost", "some"))) {
            try {
                PerfOptions.parse("lat", bad, System.out);
                throw new AssertionError("accepted " + bad);
            } catch (IllegalArgumentException expected) {
                assertTrue(!expected.getMessage().isBlank());
            }
        }
    }
}
