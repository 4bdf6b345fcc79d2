package io.jmesh.testbed;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * What a Soft-RoCE testbed guest learns from its environment (see docs/testing.md), and file-based rendezvous. The
 * real-verbs tests of every module use it: verbs-bindings publishes it in its test jar (only this package), and the
 * testbed's class path has verbs-bindings/target/test-classes first.
 */
public final class TestbedEnv {
    private TestbedEnv() {
    }

    /** Skips the calling test, saying why, when it does not run inside a testbed guest. */
    public static void require() {
        assumeTrue(System.getenv("JMESH_TESTBED") != null,
                "real-verbs test: runs only inside the Soft-RoCE testbed (./test or testbed/junit), not on this host");
    }

    public static String get(String name) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            fail("testbed variable " + name + " is not set: run this test through testbed/junit");
        }
        return v.trim();
    }

    /** The other guests of this run. */
    public static List<String> peers() {
        String v = System.getenv("TESTBED_PEERS");
        return v == null || v.isBlank() ? List.of() : Arrays.asList(v.trim().split("\\s+"));
    }

    public static String topology() {
        return get("TESTBED_TOPOLOGY");
    }

    public static String name() {
        return get("TESTBED_NAME");
    }

    public static List<String> devices() {
        return Arrays.asList(get("TESTBED_DEVS").split("\\s+"));
    }

    public static String dev(String device, String field) {
        return get("TESTBED_DEV_" + device + "_" + field);
    }

    public static String devOrEmpty(String device, String field) {
        String v = System.getenv("TESTBED_DEV_" + device + "_" + field);
        return v == null ? "" : v.trim();
    }

    public static Path shared() {
        return Path.of(get("TESTBED_SHARED"));
    }

    /** Publishes {@code content} under {@code key} for the peers (atomically: write, then rename). */
    public static void publish(String key, String content) throws Exception {
        Path tmp = shared().resolve(key + ".tmp-" + name());
        Files.writeString(tmp, content);
        Files.move(tmp, shared().resolve(key), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    /** Waits for a peer to publish {@code key}; fails naming the key after the timeout. */
    public static String await(String key, Duration timeout) throws Exception {
        Path file = shared().resolve(key);
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!Files.exists(file)) {
            if (System.nanoTime() > deadline) {
                fail("timed out after " + timeout.toSeconds() + " s waiting for the peer to publish " + key);
            }
            Thread.sleep(50);
        }
        return Files.readString(file);
    }
}
