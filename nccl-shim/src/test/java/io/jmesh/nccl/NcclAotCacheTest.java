package io.jmesh.nccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The layout's AOT cache (scripts/nccl-aot.sh, docs/nccl.md): built in a copy of the install layout (moved, as a
 * layout is when carried to another machine), the library starts its JVM with it and says so; once a jar changed
 * after the cache was built, the JVM starts without it, the job still runs, and the log names the fix; with another
 * runtime than the layout's, the cache is not offered at all. Start-up times are in docs/benchmarks.md, not asserted.
 */
class NcclAotCacheTest {
    /** The layout's own runtime: JAVA_HOME and JMESH_JAVA_HOME empty count as unset. */
    private static final Map<String, String> OWN_RUNTIME = Map.of("JMESH_PROVIDER", "tcp", "JMESH_ADDRESSES",
            "127.0.0.1/8", "JAVA_HOME", "", "JMESH_JAVA_HOME", "", "NCCL_DEBUG", "INFO");

    @Test
    void aCacheBuiltForTheLayoutIsUsedAndAStaleOneIsReportedWithTheFix(@TempDir Path dir) throws Exception {
        Path layout = copyLayout(dir.resolve("moved/nccl-plugin"));
        Process build = new ProcessBuilder("bash", Path.of("../scripts/nccl-aot.sh").toString(), layout.toString())
                .redirectErrorStream(true).redirectOutput(dir.resolve("aot.log").toFile()).start();
        assertTrue(build.waitFor(300, TimeUnit.SECONDS), "scripts/nccl-aot.sh did not finish in 300 s");
        String buildLog = Files.readString(dir.resolve("aot.log"));
        assertEquals(0, build.exitValue(), buildLog);
        Path cache = layout.resolve("lib/jmesh.aot");
        assertTrue(Files.size(cache) > 1 << 20, buildLog);

        Path run1 = Files.createDirectories(dir.resolve("run1"));
        for (DriverRun.Rank r : DriverRun.run(layout, run1, 2, OWN_RUNTIME, 180, "--min", "4K", "--max", "4K",
                "--iters", "4", "--log-level", "3", "--timeout", "120")) {
            assertEquals(0, r.exit(), r.output());
            assertTrue(r.output().contains("AOT cache " + cache.toRealPath() + " in use"), r.output());
            assertFalse(r.output().contains("[error"), r.output());
        }

        Path jar = layout.resolve("lib/jmesh-transport-0.1.0-SNAPSHOT.jar");
        Files.setLastModifiedTime(jar, FileTime.fromMillis(Files.getLastModifiedTime(jar).toMillis() + 60_000));
        Path run2 = Files.createDirectories(dir.resolve("run2"));
        for (DriverRun.Rank r : DriverRun.run(layout, run2, 2, OWN_RUNTIME, 180, "--min", "4K", "--max", "4K",
                "--iters", "4", "--log-level", "3", "--timeout", "120")) {
            assertEquals(0, r.exit(), r.output());
            assertTrue(r.output().contains("the AOT cache " + cache.toRealPath() + " does not fit this layout"),
                    r.output());
            assertTrue(r.output().contains("rebuild it: scripts/nccl-aot.sh " + layout.toRealPath()), r.output());
            assertFalse(r.output().contains("[error"), r.output()); // the JVM's own lines are silenced
        }

        Path run3 = Files.createDirectories(dir.resolve("run3"));
        Path jdk = Path.of(System.getProperty("java.home"));
        for (DriverRun.Rank r : DriverRun.run(layout, run3, 2, Map.of("JMESH_PROVIDER", "tcp", "JMESH_ADDRESSES",
                "127.0.0.1/8", "JMESH_JAVA_HOME", jdk.toString(), "NCCL_DEBUG", "INFO"), 180, "--min", "4K", "--max",
                "4K", "--iters", "4", "--log-level", "3", "--timeout", "120")) {
            assertEquals(0, r.exit(), r.output());
            boolean same = jdk.toRealPath().equals(javaHome(layout).toRealPath());
            assertTrue(r.output().contains(same ? "AOT cache" : "no AOT cache: the JVM is not the layout's runtime"),
                    r.output());
        }
    }

    /** The install layout without its cache, file times kept (the JVM checks the jars by size and time). */
    private static Path copyLayout(Path to) throws IOException {
        Path from = DriverRun.PLUGIN_DIR.toRealPath();
        try (Stream<Path> files = Files.walk(from)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Path target = to.resolve(from.relativize(f).toString());
                if (Files.isDirectory(f)) {
                    Files.createDirectories(target);
                } else if (!f.getFileName().toString().startsWith("jmesh.aot")) {
                    Files.copy(f, target, StandardCopyOption.COPY_ATTRIBUTES);
                }
            }
        }
        return to;
    }

    private static Path javaHome(Path layout) throws IOException {
        String home = Files.readAllLines(layout.resolve("java-home")).getFirst().trim();
        return home.startsWith("/") ? Path.of(home) : layout.resolve(home);
    }
}
