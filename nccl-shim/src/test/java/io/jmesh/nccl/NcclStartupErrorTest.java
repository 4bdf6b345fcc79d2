package io.jmesh.nccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** What a user sees when the plugin cannot start its JVM: init fails (NCCL falls back) with the cause and the fix. */
class NcclStartupErrorTest {
    @Test
    void noJavaRuntimeNamesTheVariablesAndTheFix(@TempDir Path dir) throws Exception {
        List<DriverRun.Rank> ranks = DriverRun.run(dir, 2, Map.of("JMESH_JAVA_HOME", dir.resolve("no-java").toString(),
                "JMESH_PROVIDER", "tcp"), 60, "--timeout", "20");
        for (DriverRun.Rank r : ranks) {
            assertEquals(1, r.exit(), r.output());
            assertTrue(r.output().contains("JMESH_JAVA_HOME=" + dir.resolve("no-java") + ": no lib/server/libjvm.so"),
                    r.output());
            assertTrue(r.output().contains("Fix: set JMESH_JAVA_HOME to a Java 25+ runtime"), r.output());
            assertTrue(r.output().contains("init"), r.output());
        }
    }

    @Test
    void javaOlderThan25IsSkippedForTheLayoutsRuntime(@TempDir Path dir) throws Exception {
        Path old = Path.of("/usr/lib/jvm/java-17-openjdk-amd64");
        assumeTrue(Files.isRegularFile(old.resolve("lib/server/libjvm.so")), "no Java 17 at " + old + " to try");
        List<DriverRun.Rank> ranks = DriverRun.run(dir, 2, Map.of("JAVA_HOME", old.toString(), "JMESH_PROVIDER", "tcp",
                "JMESH_ADDRESSES", "127.0.0.1/8"), 180, "--min", "4K", "--max", "4K", "--iters", "4", "--log-level",
                "3", "--timeout", "120");
        for (DriverRun.Rank r : ranks) {
            assertEquals(0, r.exit(), r.output());
            assertTrue(r.output().contains("(from " + DriverRun.PLUGIN_DIR.toRealPath().resolve("java-home") + ")"),
                    r.output());
        }
    }

    @Test
    void aBadJmeshLogLevelFailsInitWithOneLineNamingIt(@TempDir Path dir) throws Exception {
        List<DriverRun.Rank> ranks = DriverRun.run(dir, 2, Map.of("JMESH_LOG_LEVEL", "LOUD", "JMESH_PROVIDER", "tcp"),
                60, "--timeout", "20");
        for (DriverRun.Rank r : ranks) {
            assertEquals(1, r.exit(), r.output());
            assertTrue(r.output().contains("jmesh init failed: JMESH_LOG_LEVEL='LOUD' is not valid: JMESH_LOG_LEVEL (-Djmesh.log.level) "
                    + "takes off, fatal, error, warn, info, debug, trace or all"), r.output());
        }
    }

    @Test
    void missingJarsAreReported(@TempDir Path dir) throws Exception {
        List<DriverRun.Rank> ranks = DriverRun.run(dir, 2, Map.of("JMESH_CLASSPATH", dir.resolve("none.jar").toString(),
                "JMESH_PROVIDER", "tcp"), 60, "--timeout", "20");
        for (DriverRun.Rank r : ranks) {
            assertEquals(1, r.exit(), r.output());
            assertTrue(r.output().contains("io/jmesh/nccl/NcclBootstrap") || r.output().contains("NcclBootstrap"),
                    r.output());
        }
    }
}
