package io.jmesh.nccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
 * The installed plugin's CollNet (ncclCollNetPlugin_v11) driven by {@code nccl-net-driver --coll} in separate
 * processes, over jmesh's TCP provider on loopback, as NCCL's proxy drives it: one connect with every rank's handle,
 * all-reduces of every (type, op) reduceSupport accepts with several in flight, each element checked bit for bit by
 * the driver against the rank-order rule computed in C, and bad input refused, naming the cause.
 */
class NcclCollNetDriverTest {
    private static final Map<String, String> TCP = Map.of("JMESH_PROVIDER", "tcp", "JMESH_ADDRESSES", "127.0.0.1/8",
            "NCCL_DEBUG", "INFO");
    private static final List<String> TYPES = List.of("int8", "uint8", "int32", "uint32", "int64", "uint64", "fp16",
            "fp32", "fp64", "bf16");
    private static final List<String> OPS = List.of("sum", "prod", "max", "min");

    /**
     * Two ranks, the default maxCollBytes (1 MiB): every pair up to a 1 MiB all-reduce, 4 in flight; then 20 timed
     * ones at each size from 4 KiB, one at a time.
     */
    @Test
    void twoRanksEveryTypeAndOpUpToOneMebibyte(@TempDir Path dir) throws Exception {
        List<DriverRun.Rank> ranks = DriverRun.run(dir, 2, TCP, 300, "--coll", "--max", "1M", "--window", "4",
                "--log-level", "3", "--timeout", "240", "--calls", "20", "--warmup", "10", "--min", "4K");
        String all = DriverRun.describe(ranks);
        for (int r = 0; r < ranks.size(); r++) {
            String out = ranks.get(r).output();
            assertEquals(0, ranks.get(r).exit(), all);
            assertTrue(out.contains("ptrSupport=0x1 maxCollBytes=1048576 iallgather=no ireducescatter=no"), all);
            assertEveryPairChecked(out, 1048576, 4, all);
            assertTrue(out.contains("jmesh CollNet: rank " + r + " of 2 connected to every other node"), all);
            assertTrue(out.contains("one-shot all-reduce up to 1048576 bytes, 16 in flight"), all);
            assertBadInputRefusedNamingTheCause(out, all);
            Matcher pass = Pattern.compile("coll PASS: 40 \\(type, op\\) pairs, ([0-9]+) all-reduces of up to 1048576 "
                    + "bytes checked").matcher(out);
            assertTrue(pass.find(), all);
            assertEquals(40 * 4 * 4 + 4, Integer.parseInt(pass.group(1)), all); // 4 sizes x 4 in flight, and the last
            for (long bytes = 4096; bytes <= 1 << 20; bytes *= 4) { // --calls: timed one at a time, result checked
                assertTrue(Pattern.compile("coll timed +" + bytes + " +[0-9]+\\.[0-9] +[0-9]+\\.[0-9]\n").matcher(out)
                        .find(), bytes + " bytes: " + all);
            }
            assertTrue(out.contains("driver: rank " + r + ": PASS"), all);
        }
    }

    /**
     * Three ranks, each connected to both others; maxCollBytes lowered to 32 KiB by JMESH_COLLNET_MAX_BYTES, 24
     * all-reduces in flight where the communicator holds 16: iallreduce answers NULL requests ("try again") and the
     * driver retries them, as NCCL's proxy does.
     */
    @Test
    void threeRanksWithMoreInFlightThanTheWindow(@TempDir Path dir) throws Exception {
        Map<String, String> env = new HashMap<>(TCP);
        env.put("JMESH_COLLNET_MAX_BYTES", "32768");
        List<DriverRun.Rank> ranks = DriverRun.run(dir, 3, env, 300, "--coll", "--max", "1M", "--window", "24",
                "--timeout", "240");
        String all = DriverRun.describe(ranks);
        long retried = 0;
        for (DriverRun.Rank rank : ranks) {
            String out = rank.output();
            assertEquals(0, rank.exit(), all);
            assertTrue(out.contains("coll connected to 2 rank(s)"), all);
            assertTrue(out.contains("maxCollBytes=32768"), all);
            assertEveryPairChecked(out, 32768, 24, all);
            Matcher pass = Pattern.compile("coll PASS: 40 \\(type, op\\) pairs, ([0-9]+) all-reduces of up to 32768 "
                    + "bytes checked \\([0-9]+ elements\\) in [0-9.]+ s, ([0-9]+) NULL requests retried, 7 bad inputs "
                    + "refused").matcher(out);
            assertTrue(pass.find(), all);
            assertEquals(40 * 4 * 24 + 24, Integer.parseInt(pass.group(1)), all);
            retried += Long.parseLong(pass.group(2));
        }
        assertTrue(retried > 0, "24 in flight on a 16-slot communicator must meet NULL requests\n" + all);
    }

    /** JMESH_COLLNET=0 hides the CollNet (its init fails: NCCL reads "none"); another value says what to set. */
    @Test
    void jmeshCollnetZeroHidesItAndAnotherValueIsNamed(@TempDir Path dir) throws Exception {
        for (String value : List.of("0", "yes")) {
            Map<String, String> env = new HashMap<>(TCP);
            env.put("JMESH_COLLNET", value);
            List<DriverRun.Rank> ranks = DriverRun.run(Files.createDirectories(dir.resolve("v" + value)), 1, env, 120,
                    "--nranks", "2", "--coll", "--log-level", "3", "--timeout", "60");
            String out = ranks.getFirst().output();
            assertTrue(ranks.getFirst().exit() != 0, out);
            assertTrue(out.contains("coll->init(&ctx, 0x1234, driver_logger()) returned 3"), out);
            // INFO under INIT|NET when hidden on purpose; a WARN (every subsystem flag) for a value it does not know
            String line = value.equals("0")
                    ? "level=3 flags=0x11 [^]]*collnet\\.c:[0-9]+\\] jmesh: CollNet hidden \\(JMESH_COLLNET=0\\)"
                    : "level=2 flags=0xffffffffffffffff [^]]*collnet\\.c:[0-9]+\\] jmesh: "
                    + "JMESH_COLLNET=yes is neither 0 \\(hide the CollNet\\) nor 1 \\(offer it\\): CollNet hidden; "
                    + "set it to 0 or 1";
            assertTrue(Pattern.compile(line).matcher(out).find(), line + "\n" + out);
        }
    }

    /** One "coll ok" line per (type, op), each with the largest size, and reduceSupport's answer: fp8 and avg no. */
    private static void assertEveryPairChecked(String out, int most, int window, String all) {
        assertTrue(out.contains("coll reduceSupport: 40 of 60 (type, op) pairs; refused: int8/avg"), all);
        assertTrue(out.contains("fp8e4m3/sum fp8e4m3/prod fp8e4m3/max fp8e4m3/min fp8e4m3/avg fp8e5m2/sum"), all);
        int lines = 0;
        for (String type : TYPES) {
            int size = switch (type) {
                case "int8", "uint8" -> 1;
                case "fp16", "bf16" -> 2;
                case "int32", "uint32", "fp32" -> 4;
                default -> 8;
            };
            for (String op : OPS) {
                assertTrue(out.contains("coll ok " + type + " " + op + ": counts 1, 3, 1000 and " + most / size + " ("
                        + most + " bytes), " + window + " in flight, every element as the reference"), type + " " + op
                        + "\n" + all);
                lines++;
            }
        }
        assertEquals(lines, Pattern.compile("coll ok ").matcher(out).results().count(), all);
    }

    /** Each refusal, and the plugin's WARN saying why (the driver prints the plugin's log lines up to WARN). */
    private static void assertBadInputRefusedNamingTheCause(String out, String all) {
        assertEquals(7, Pattern.compile("coll refused as it should: ").matcher(out).results().count(), all);
        for (String why : List.of("fp8e4m3 sum is not reduced by jmesh's CollNet (reduceSupport said no)",
                "fp32 avg is not reduced by jmesh's CollNet",
                "1048577 x int8 = 1048577 bytes is more than maxCollBytes 1048576: raise JMESH_COLLNET_MAX_BYTES",
                "send 0x0 (memory handle", "not a CollNet registration), receive 0x",
                "are not inside their registrations",
                "CUDA memory: the CollNet reduces on the CPU and takes host memory only")) {
            assertTrue(out.contains(why), why + "\n" + all);
        }
        assertTrue(out.contains("coll still in step after the refusals"), all);
    }
}
