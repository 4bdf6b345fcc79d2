package io.jmesh.soak;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The chaos soak's short form (scripts/chaos-soak.sh runs the long one): a ring of 4 node processes on loopback
 * subnets, every ordered pair streaming checked messages, with seed 1's faults (a kill, a freeze, another kill, ...
 * one at a time, each node back before the next) for about 90 s. It passes only if every goal of the soak held:
 * each fault reported by every connection end it cut, naming the node, within two liveness timeouts; no connection
 * not through the faulty node failed or stalled; every connection reconnected once the node was back; no message
 * wrong, repeated, out of order or lost at the graceful close; the survivors' threads and descriptors flat.
 *
 * <p>The liveness timeout is 3 s, so the bound is 6 s: a frozen node is noticed after one timeout plus at most a
 * ping interval (a sixth of it), and a killed one at once (its sockets reset), so the bound leaves more than 2 s for
 * a loaded 2-core machine; only a missing report or a hang can miss it. The route port is random and the subnets
 * (127.76) are no other test's, so a parallel run of another test's fabrics takes no part.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class ChaosSoakTest {
    @Test
    void aRingSurvivesFreezesAndKillsWithEveryMessageChecked() throws Exception {
        assumeTrue(Files.isExecutable(Path.of("/bin/kill")) && Files.isDirectory(Path.of("/proc/self/fd")),
                "needs Linux's /proc and /bin/kill to freeze, thaw and sample the nodes");
        Path out = Path.of("target", "chaos-soak-short");
        ChaosSoak.Options o = ChaosSoak.parse("--seconds", "90", "--seed", "1", "--liveness-ms", "3000",
                "--rate", "50", "--net", "127.76", "--route-port",
                Integer.toString(ThreadLocalRandom.current().nextInt(41_000, 49_000)), "--out", out.toString(),
                "--quiet-min-ms", "3000", "--quiet-max-ms", "6000");
        ChaosSoak.Outcome r = ChaosSoak.run(o, System.out);
        assertTrue(r.faults() >= 2, "only " + r.faults() + " faults in 90 s (see " + out + "/events.log)");
        assertTrue(r.ok(), () -> "the soak's goals did not all hold (see " + out + "/summary.txt and events.log):\n  "
                + String.join("\n  ", r.failures()));
    }
}
