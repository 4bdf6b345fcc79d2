package io.jmesh.nccl;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs nccl-net-driver as N processes (one per rank) against a plugin, the way the CI test and the testbed use it,
 * and collects each rank's exit status and output. Processes still running at the deadline are killed.
 */
final class DriverRun {
    static final Path PLUGIN_DIR = Path.of(System.getProperty("jmesh.nccl.plugin.dir", "target/nccl-plugin"));
    static final Path DRIVER = PLUGIN_DIR.resolve("bin/nccl-net-driver");
    static final Path LIBRARY = PLUGIN_DIR.resolve("libnccl-net-jmesh.so");

    record Rank(int exit, String output) {
    }

    private DriverRun() {
    }

    /** Runs ranks 0..n-1 with {@code args} each, in {@code dir}, with extra environment; waits up to seconds. */
    static List<Rank> run(Path dir, int n, Map<String, String> env, long seconds, String... args)
            throws IOException, InterruptedException {
        return run(PLUGIN_DIR, dir, n, env, seconds, args);
    }

    /** {@link #run(Path, int, Map, long, String...)} with the install layout at {@code pluginDir}. */
    static List<Rank> run(Path pluginDir, Path dir, int n, Map<String, String> env, long seconds, String... args)
            throws IOException, InterruptedException {
        List<Process> procs = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            List<String> cmd = new ArrayList<>(List.of(pluginDir.resolve("bin/nccl-net-driver").toString(), "--plugin",
                    pluginDir.resolve("libnccl-net-jmesh.so").toString(), "--rank",
                    Integer.toString(r), "--nranks", Integer.toString(n), "--dir", dir.toString()));
            cmd.addAll(List.of(args));
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
            Path log = dir.resolve("rank" + r + ".log");
            pb.redirectOutput(log.toFile());
            pb.environment().remove("JAVA_TOOL_OPTIONS"); // surefire's, not meant for the embedded JVM
            pb.environment().putAll(env);
            procs.add(pb.start());
            logs.add(log);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        List<Rank> out = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            Process p = procs.get(r);
            long left = Math.max(0, deadline - System.nanoTime());
            int exit;
            if (p.waitFor(left, TimeUnit.NANOSECONDS)) {
                exit = p.exitValue();
            } else {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
                exit = -1;
            }
            out.add(new Rank(exit, Files.readString(logs.get(r))));
        }
        return out;
    }

    static String describe(List<Rank> ranks) {
        StringBuilder sb = new StringBuilder();
        for (int r = 0; r < ranks.size(); r++) {
            sb.append("--- rank ").append(r).append(" exit ").append(ranks.get(r).exit()).append('\n')
                    .append(ranks.get(r).output()).append('\n');
        }
        return sb.toString();
    }
}
