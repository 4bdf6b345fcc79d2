package io.jmesh.nccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The installed plugin (target/nccl-plugin: the .so, its lib/ jars, the JVM it starts) driven exactly as NCCL drives
 * it, by nccl-net-driver in separate processes, over jmesh's TCP provider on loopback: non-blocking connect/accept,
 * registrations, isend/irecv with grouped receives and many requests in flight, test() with real sizes (sends one
 * byte shorter than the posted receive), every byte verified, orderly close, finalize, dlclose and reload.
 */
class NcclDriverTcpTest {
    private static final Map<String, String> TCP = Map.of("JMESH_PROVIDER", "tcp", "JMESH_ADDRESSES", "127.0.0.1/8",
            "NCCL_DEBUG", "INFO");

    @Test
    void twoRanksNewestApiWithReload(@TempDir Path dir) throws Exception {
        List<DriverRun.Rank> ranks = DriverRun.run(dir, 2, TCP, 240, "--min", "0", "--max", "1M", "--iters", "32",
                "--window", "8", "--group", "4", "--log-level", "3", "--reload", "--timeout", "180");
        String all = DriverRun.describe(ranks);
        for (DriverRun.Rank r : ranks) {
            assertEquals(0, r.exit(), all);
            assertTrue(r.output().contains("through ncclNetPlugin_v12"), all);
            assertTrue(r.output().contains("PASS"), all);
            // as NCCL 2.28 loads it for a communicator after the last one ended: by the default name, from the layout
            assertTrue(r.output().contains("libnccl-net.so (dlclose, dlopen, init"), all);
            // a line logged by Java (Log4j -> appender -> C helper -> the driver's NCCL-style logger), at NCCL INFO
            // with the NET subsystem flag, so NCCL_DEBUG_SUBSYS=NET shows it
            assertTrue(Pattern.compile("level=3 flags=0x1[01] NcclPlugin:0\\] jmesh NCCL plugin v12 API: tcp provider")
                    .matcher(r.output()).find(), all);
            assertTrue(r.output().contains("joining the JVM already in this process"), all);
        }
    }

    @ParameterizedTest(name = "ncclNetPlugin_v{0}")
    @ValueSource(ints = {11, 10, 9, 8})
    void everyOlderApiVersion(int api, @TempDir Path dir) throws Exception {
        List<DriverRun.Rank> ranks = DriverRun.run(dir, 2, TCP, 180, "--api", Integer.toString(api), "--min", "4K",
                "--max", "64K", "--iters", "16", "--group", "2", "--timeout", "120");
        String all = DriverRun.describe(ranks);
        for (DriverRun.Rank r : ranks) {
            assertEquals(0, r.exit(), all);
            assertTrue(r.output().contains("through ncclNetPlugin_v" + api), all);
            assertTrue(r.output().contains("maxRecvs=8"), all);
            assertTrue(r.output().contains("PASS"), all);
        }
    }

    /** An API version the driver does not speak is refused at once, saying which it speaks. */
    @Test
    void anApiVersionOutsideV8ToV12IsRefusedNamingTheRange(@TempDir Path dir) throws Exception {
        for (String api : List.of("7", "13", "x")) {
            List<DriverRun.Rank> ranks = DriverRun.run(dir, 1, TCP, 60, "--api", api);
            String all = DriverRun.describe(ranks);
            assertEquals(1, ranks.size(), all);
            assertTrue(ranks.getFirst().exit() != 0, all);
            assertTrue(ranks.getFirst().output().contains("--api " + api
                    + ": this driver speaks the net plugin API v8 to v12"), all);
        }
    }

    /**
     * --oneway: only rank 0 sends (its line says bytes sent, rank 1's bytes received), every byte still verified;
     * --calls: the idle test() figure, the ping-pong figures, and the warm-up/measured/end phases agreed by both
     * ranks through the messages themselves (rank 1 echoed the measured round trips, then more for the phases).
     * Both with --settle: the ranks agree on the round after which the plugin's JIT was quiet (or the time ran out).
     */
    @Test
    void measurementModesOneWayAndCalls(@TempDir Path dir) throws Exception {
        List<DriverRun.Rank> ranks = DriverRun.run(Files.createDirectories(dir.resolve("oneway")), 2, TCP, 180,
                "--oneway", "--min", "64K", "--max", "256K", "--iters", "32", "--warmup", "16", "--group", "1",
                "--timeout", "120", "--settle", "20");
        String all = DriverRun.describe(ranks);
        for (DriverRun.Rank r : ranks) {
            assertEquals(0, r.exit(), all);
            assertTrue(r.output().contains("verified every byte of"), all);
            assertTrue(r.output().contains("PASS"), all);
        }
        assertTrue(ranks.get(0).output().contains("bytes sent (--oneway)"), all);
        assertTrue(ranks.get(1).output().contains("bytes received (--oneway)"), all);
        assertTrue(Pattern.compile(" 262144 +32 +[0-9.]+ +[0-9.]+\n").matcher(ranks.get(1).output()).find(), all);
        Pattern settled = Pattern.compile("bandwidth: (the JIT was quiet|measuring anyway[^\n]*) after ([0-9]+) "
                + "settle round");
        Matcher m0 = settled.matcher(ranks.get(0).output());
        Matcher m1 = settled.matcher(ranks.get(1).output());
        assertTrue(m0.find() && m1.find(), all);
        assertEquals(m0.group(2), m1.group(2), "both ranks stop settling after the same round\n" + all);

        ranks = DriverRun.run(Files.createDirectories(dir.resolve("calls")), 2, TCP, 180, "--calls", "500", "--min", "8", "--max", "8",
                "--window", "4", "--warm-seconds", "0.5", "--timeout", "120", "--settle", "20");
        all = DriverRun.describe(ranks);
        for (DriverRun.Rank r : ranks) {
            assertEquals(0, r.exit(), all);
            assertTrue(Pattern.compile("test\\(\\) that finds nothing: [0-9.]+ ns per call \\(500 calls\\)")
                    .matcher(r.output()).find(), all);
            assertTrue(r.output().contains("PASS"), all);
        }
        assertTrue(Pattern.compile("ping-pong of 8-byte messages \\(500 round trips, 4 receives ahead\\), half a round "
                + "trip: typical [0-9.]+ us, average [0-9.]+ us; isend [0-9.]+ ns, irecv [0-9.]+ ns per call")
                .matcher(ranks.get(0).output()).find(), all);
        assertTrue(Pattern.compile("echoed [0-9]+ messages \\(500 measured\\)").matcher(ranks.get(1).output()).find(),
                all);
        assertTrue(Pattern.compile("ping-pong: (the JIT was quiet|measuring anyway[^\n]*) after [0-9.]+ s of warm-up")
                .matcher(ranks.get(0).output()).find(), all);
    }

    /**
     * The plugin's JVM compiles jmesh's own methods at a tenth of the JIT's thresholds (jvm.c), so 2,000 receives
     * bring {@code irecv} to C2 (tier 4), where the default threshold alone (5,000 calls) leaves it in C1. With
     * background compilation off the call that crosses the threshold waits for its compile, so the log has it
     * however busy the machine is (no settle rounds: on this host one is ~100,000 messages). The JIT's log goes to a
     * file per rank, beside the run.
     */
    @Test
    void theDataPathReachesC2WithinTheFirstThousandsOfMessages(@TempDir Path dir) throws Exception {
        Path jit = Files.createDirectories(dir.resolve("jit"));
        Map<String, String> env = new HashMap<>(TCP);
        env.put("JMESH_JVM_OPTS", "-XX:-BackgroundCompilation -Xlog:jit+compilation=debug:file=" + jit
                + "/jit-%p.log");
        List<DriverRun.Rank> ranks = DriverRun.run(Files.createDirectories(dir.resolve("run")), 2, env, 180,
                "--oneway", "--min", "1M", "--max", "1M", "--iters", "8", "--warmup", "2000", "--group", "1",
                "--timeout", "120");
        String all = DriverRun.describe(ranks);
        for (DriverRun.Rank r : ranks) {
            assertEquals(0, r.exit(), all);
        }
        Pattern c2 = Pattern.compile("\\s4\\s+io\\.jmesh\\.nccl\\.NcclPlugin::irecv \\(");
        StringBuilder logs = new StringBuilder();
        boolean found = false;
        try (var files = Files.list(jit)) {
            for (Path f : files.toList()) {
                String text = Files.readString(f);
                found |= c2.matcher(text).find();
                text.lines().filter(l -> l.contains("NcclPlugin::")).forEach(l -> logs.append(l).append('\n'));
            }
        }
        assertTrue(found, "no C2 compile of NcclPlugin::irecv after 2,000 receives; the plugin's methods compiled:\n"
                + logs + all);
    }

    /** A folder a finished run left would hand the next run stale handles and barriers: refused, naming the fix. */
    @Test
    void aFolderAFinishedRunLeftIsRefused(@TempDir Path dir) throws Exception {
        List<DriverRun.Rank> ranks = DriverRun.run(dir, 2, TCP, 120, "--min", "4K", "--max", "4K", "--iters", "8");
        for (DriverRun.Rank r : ranks) {
            assertEquals(0, r.exit(), DriverRun.describe(ranks));
        }
        ranks = DriverRun.run(dir, 2, TCP, 60, "--min", "4K", "--max", "4K", "--iters", "8");
        String all = DriverRun.describe(ranks);
        for (DriverRun.Rank r : ranks) {
            assertTrue(r.exit() != 0, all);
            assertTrue(r.output().contains("holds the files of a run that already finished")
                    && r.output().contains("give every run an empty folder"), all);
        }
    }

    /** The measurement modes need exactly two ranks and a message to carry the phase: refused with the reason. */
    @Test
    void measurementModesRefuseWhatTheyCannotMeasure(@TempDir Path dir) throws Exception {
        List<DriverRun.Rank> ranks = DriverRun.run(dir, 1, TCP, 60, "--nranks", "3", "--calls", "10");
        assertTrue(ranks.getFirst().exit() != 0, DriverRun.describe(ranks));
        assertTrue(ranks.getFirst().output().contains("--oneway and --calls measure between 2 ranks, not 3"),
                DriverRun.describe(ranks));
        ranks = DriverRun.run(Files.createDirectories(dir.resolve("settle")), 1, TCP, 60, "--nranks", "2", "--settle",
                "-1");
        assertTrue(ranks.getFirst().exit() != 0, DriverRun.describe(ranks));
        assertTrue(ranks.getFirst().output().contains("--settle -1.0: give 0 (no wait) or more seconds"),
                DriverRun.describe(ranks));
    }

    @Test
    void threeRanksEachConnectedToBoth(@TempDir Path dir) throws Exception {
        List<DriverRun.Rank> ranks = DriverRun.run(dir, 3, TCP, 240, "--min", "64K", "--max", "256K", "--iters",
                "16", "--timeout", "180");
        String all = DriverRun.describe(ranks);
        for (DriverRun.Rank r : ranks) {
            assertEquals(0, r.exit(), all);
            assertTrue(r.output().contains("connected to 2 peer(s)"), all);
            assertTrue(r.output().contains("PASS"), all);
        }
    }
}
