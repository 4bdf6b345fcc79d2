package io.jmesh.nccl;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The installed library's NCCL tuner (ncclTunerPlugin_v5), called by {@code nccl-net-driver --tuner} as NCCL 2.28
 * calls it: init with the node count and a logger, getCollInfo on cost tables NCCL-shaped (entries it cannot run are
 * -1), finalize. No JVM starts: the tuner is plain C.
 */
class NcclTunerDriverTest {
    private static final int ALGOS = 7;
    private static final int PROTOS = 3;
    private static final int COLLNET_DIRECT = 2;
    private static final int COLLNET_CHAIN = 3;
    private static final Pattern TABLE = Pattern.compile("tuner: nodes=([0-9]+) coll=(\\w+) bytes=([0-9]+) "
            + "case=([\\w-]+) before=(\\S+) before_pick=(\\S+) after=(\\S+) after_pick=(\\S+) channels=(-?[0-9]+)");

    record Table(int nodes, String coll, long bytes, String name, float[][] before, String beforePick,
                 float[][] after, String afterPick, int channels) {
        boolean unchanged() {
            for (int a = 0; a < ALGOS; a++) {
                if (!java.util.Arrays.equals(before[a], after[a])) return false;
            }
            return beforePick.equals(afterPick);
        }
    }

    record Run(int exit, String output, List<Table> tables) {
    }

    private static Run run(Map<String, String> env, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(DriverRun.DRIVER.toString(), "--plugin",
                DriverRun.LIBRARY.toString(), "--tuner", "--log-level", "5"));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().keySet().removeIf(k -> k.startsWith("JMESH_") || k.equals("JAVA_TOOL_OPTIONS"));
        pb.environment().putAll(env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("nccl-net-driver --tuner did not finish in 60 s:\n" + out);
        }
        List<Table> tables = new ArrayList<>();
        Matcher m = TABLE.matcher(out);
        while (m.find()) {
            tables.add(new Table(Integer.parseInt(m.group(1)), m.group(2), Long.parseLong(m.group(3)), m.group(4),
                    parse(m.group(5)), m.group(6), parse(m.group(7)), m.group(8), Integer.parseInt(m.group(9))));
        }
        return new Run(p.exitValue(), out, tables);
    }

    /** "TREE:1.0,2.0,3.0;RING:..." into [algo][proto] */
    private static float[][] parse(String s) {
        String[] rows = s.split(";");
        assertEquals(ALGOS, rows.length, s);
        float[][] t = new float[ALGOS][PROTOS];
        for (int a = 0; a < ALGOS; a++) {
            String[] v = rows[a].substring(rows[a].indexOf(':') + 1).split(",");
            assertEquals(PROTOS, v.length, s);
            for (int p = 0; p < PROTOS; p++) t[a][p] = Float.parseFloat(v[p]);
        }
        return t;
    }

    private static boolean isCollNet(int a) {
        return a == COLLNET_DIRECT || a == COLLNET_CHAIN;
    }

    /** NCCL's -1 entries stay -1, and only CollNet entries ever change, in every table of a run. */
    private static void assertOnlyUsableCollNetEntriesChange(Run r) {
        for (Table t : r.tables()) {
            for (int a = 0; a < ALGOS; a++) {
                for (int p = 0; p < PROTOS; p++) {
                    if (t.before()[a][p] == -1.0f || !isCollNet(a)) {
                        assertEquals(t.before()[a][p], t.after()[a][p], "entry [" + a + "][" + p + "] of " + t
                                + "\n" + r.output());
                    }
                }
            }
            assertEquals(0, t.channels(), "the tuner leaves NCCL's channel count\n" + r.output());
        }
    }

    /** At 2 nodes: every usable CollNet entry of an all_reduce costs more than the best other entry, NCCL picks that. */
    private static void assertCollNetAvoided(Table t, String out) {
        float best = Float.MAX_VALUE;
        for (int a = 0; a < ALGOS; a++) {
            for (int p = 0; p < PROTOS; p++) {
                if (!isCollNet(a) && t.after()[a][p] >= 0) best = Math.min(best, t.after()[a][p]);
            }
        }
        assertTrue(best < Float.MAX_VALUE, out);
        int usable = 0;
        for (int a : new int[] {COLLNET_DIRECT, COLLNET_CHAIN}) {
            for (int p = 0; p < PROTOS; p++) {
                if (t.before()[a][p] >= 0) {
                    usable++;
                    assertTrue(t.after()[a][p] > best, "CollNet [" + a + "][" + p + "] " + t.after()[a][p]
                            + " not above the best other entry " + best + "\n" + out);
                }
            }
        }
        assertTrue(usable > 0, "the case must offer a CollNet entry\n" + out);
        assertTrue(t.beforePick().startsWith("COLLNET_"), "NCCL's model picks CollNet before\n" + out);
        assertFalse(t.afterPick().startsWith("COLLNET_"), "and no longer after: " + t.afterPick() + "\n" + out);
    }

    private static List<Table> tables(Run r, int nodes) {
        return r.tables().stream().filter(t -> t.nodes() == nodes).toList();
    }

    private static void assertDefaultBehaviour(Run r) {
        String out = r.output();
        assertEquals(0, r.exit(), out);
        assertTrue(out.contains("tuner: done"), out);
        assertEquals(10, r.tables().size(), out);
        assertOnlyUsableCollNetEntriesChange(r);
        for (Table t : tables(r, 2)) {
            if (t.coll().equals("all_reduce") && !t.name().equals("collnet-only")) {
                assertCollNetAvoided(t, out);
                assertEquals("RING/LL", t.afterPick(), out);
            } else {
                // all_gather is not the tuner's business; a table with only CollNet left must keep it usable
                assertTrue(t.unchanged(), t + "\n" + out);
            }
        }
        for (Table t : tables(r, 4)) assertTrue(t.unchanged(), t + "\n" + out);
        // at INFO under INIT and TUNING, once per communicator
        assertEquals(1, count(out, "level=3 flags=0x41 .*\\] jmesh tuner: 2 nodes, CollNet for all_reduce off below "
                + "3 nodes \\(JMESH_COLLNET_MIN_NODES\\): avoided in this communicator"), out);
        assertTrue(out.contains("] jmesh tuner: 4 nodes, CollNet for all_reduce off below 3 nodes "
                + "(JMESH_COLLNET_MIN_NODES): NCCL's own choice in this communicator"), out);
    }

    @Test
    void belowThreeNodesCollNetCostsMoreAndMinusOneStays() throws Exception {
        Run r = run(Map.of());
        assertDefaultBehaviour(r);
        String out = r.output();
        assertTrue(out.contains("through ncclTunerPlugin_v5") && out.contains("\"jmesh\""), out);
        assertFalse(out.contains("level=2 "), "no warning with the defaults\n" + out);
        // the changed choice is said once per size class: 4096 and 6000 share one, 16384 has its own
        assertEquals(1, count(out, "level=3 flags=0x40 "
                + ".*jmesh tuner: all_reduce of 4096 bytes on 2 nodes: RING/LL \\(46\\.0 us in NCCL's model\\) "
                + "instead of COLLNET_CHAIN/SIMPLE \\(30\\.0 us\\)"), out);
        assertEquals(0, count(out, "all_reduce of 6000 bytes"), out);
        assertEquals(1, count(out, "jmesh tuner: all_reduce of 16384 bytes on 2 nodes: RING/LL \\(58\\.0 us in "
                + "NCCL's model\\) instead of COLLNET_DIRECT/SIMPLE"), out);
        assertEquals(2, count(out, "jmesh tuner: all_reduce of"), out);
    }

    @Test
    void offLeavesEveryTableAsNcclFilledIt() throws Exception {
        Run r = run(Map.of("JMESH_TUNER", "0"));
        assertEquals(0, r.exit(), r.output());
        assertEquals(10, r.tables().size(), r.output());
        for (Table t : r.tables()) assertTrue(t.unchanged(), t + "\n" + r.output());
        assertTrue(r.output().contains("jmesh tuner: off (JMESH_TUNER=0): NCCL's own algorithm choices (2 ranks, "
                + "2 nodes)"), r.output());
        assertEquals(0, count(r.output(), "jmesh tuner: all_reduce of"), r.output());
    }

    @Test
    void badMinNodesWarnsNamingItAndUsesThree() throws Exception {
        for (String bad : List.of("abc", "1", "0", "-3", "2.5", "3x")) {
            Run r = run(Map.of("JMESH_COLLNET_MIN_NODES", bad));
            assertDefaultBehaviour(r);
            // once per communicator (2 and 4 nodes), as WARN with every subsystem flag so NCCL never filters it
            assertEquals(2, count(r.output(), "level=2 flags=0xffffffffffffffff .*\\] jmesh tuner: "
                    + "JMESH_COLLNET_MIN_NODES=" + Pattern.quote(bad) + " is not an integer from 2 to 1000000: "
                    + "using 3"), r.output());
        }
    }

    @Test
    void minNodesMovesTheThreshold() throws Exception {
        Run r = run(Map.of("JMESH_COLLNET_MIN_NODES", "5"), "--nodes", "4,5");
        assertEquals(0, r.exit(), r.output());
        assertOnlyUsableCollNetEntriesChange(r);
        for (Table t : tables(r, 4)) {
            if (t.coll().equals("all_reduce") && !t.name().equals("collnet-only")) assertCollNetAvoided(t, r.output());
        }
        for (Table t : tables(r, 5)) assertTrue(t.unchanged(), t + "\n" + r.output());
        assertTrue(r.output().contains("jmesh tuner: 4 nodes, CollNet for all_reduce off below 5 nodes"), r.output());

        Run two = run(Map.of("JMESH_COLLNET_MIN_NODES", "2"), "--nodes", "2");
        for (Table t : two.tables()) assertTrue(t.unchanged(), t + "\n" + two.output());
        assertEquals(5, two.tables().size(), two.output());
    }

    @Test
    void aBadSwitchWarnsAndStaysOn() throws Exception {
        Map<String, String> env = new HashMap<>();
        env.put("JMESH_TUNER", "yes");
        Run r = run(env);
        assertDefaultBehaviour(r);
        assertTrue(r.output().contains("jmesh tuner: JMESH_TUNER=yes is neither 0 (NCCL's own choices) nor 1 (on): "
                + "tuner on; set it to 0 or 1"), r.output());
    }

    private static int count(String out, String regex) {
        Matcher m = Pattern.compile(regex).matcher(out);
        int n = 0;
        while (m.find()) n++;
        return n;
    }

    /** The parser and the comparison the other tests rely on: a table that differs must not read as unchanged. */
    @Test
    void tableParserSeesADifference() {
        float[][] a = new float[ALGOS][PROTOS];
        float[][] b = new float[ALGOS][PROTOS];
        b[COLLNET_CHAIN][2] = 1;
        assertFalse(new Table(2, "x", 0, "x", a, "p", b, "p", 0).unchanged());
        assertArrayEquals(new float[] {1.5f, -1f, 3f},
                parse("A:1.5,-1.0,3;B:0,0,0;C:0,0,0;D:0,0,0;E:0,0,0;F:0,0,0;G:0,0,0")[0]);
    }
}
