package io.jmesh.nccl;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.abort;

/**
 * jmesh's own declaration of NCCL's plugin ABI (src/main/c/nccl_net_abi.h) against NVIDIA's real headers.
 *
 * <p>For every NCCL version found, two checks: (1) src/test/c/abi_dump.c, compiled once against each, prints every
 * struct size, field offset and constant the plugin relies on, and the outputs must be identical; (2) the plugin's
 * entry points (net.c) compile with -Werror against NVIDIA's headers, so every function's signature matches the
 * function-pointer type NCCL declares.
 *
 * <p>The headers are NVIDIA's public plugin headers (plugins/net/example/nccl, ext-net/example/nccl before 2.29) from:
 * {@code JMESH_NCCL_SRC} (an NVIDIA/nccl checkout, or a git directory of one), else {@code
 * /work/.mirror/NVIDIA+nccl/repo} when present. From a git directory the refs in {@code JMESH_NCCL_REFS} are checked
 * (default: HEAD and v2.28.9-1, the NCCL of the GPU machines). Without any of these the test is skipped, saying so:
 * NCCL's headers are not on Maven Central or in Debian's archive, the only package sources CI reaches, and copying
 * them into this repository is not allowed.
 */
class NcclAbiCheckTest {
    private static final Path TEST_C = Path.of(System.getProperty("jmesh.nccl.test.c.dir", "src/test/c"));
    private static final Path MAIN_C = Path.of(System.getProperty("jmesh.nccl.main.c.dir", "src/main/c"));
    private static final Path MIRROR = Path.of("/work/.mirror/NVIDIA+nccl/repo");
    private static final List<String> HEADER_DIRS = List.of("plugins/net/example/nccl", "ext-net/example/nccl");

    @TempDir
    static Path work;

    @TestFactory
    Stream<DynamicTest> ourAbiEqualsNcclsRealHeaders() throws Exception {
        Map<String, Path> sets = headerSets();
        if (sets.isEmpty()) {
            abort("NVIDIA/nccl headers not available here: set JMESH_NCCL_SRC to an NVIDIA/nccl checkout (git clone "
                    + "https://github.com/NVIDIA/nccl) to run this check; CI reaches only Maven Central and Debian's "
                    + "archive, neither of which ships NCCL's net-plugin headers, and the project may not copy them");
        }
        Path ours = compile("ours", List.of());
        String expected = run(ours);
        List<DynamicTest> tests = new ArrayList<>();
        for (Map.Entry<String, Path> e : sets.entrySet()) {
            String label = e.getKey();
            Path headers = e.getValue();
            tests.add(DynamicTest.dynamicTest("sizes and offsets vs NCCL " + label, () -> {
                Path theirs = compile(label.replaceAll("[^A-Za-z0-9.]", "_"), List.of("-DJMESH_USE_NCCL_HEADERS",
                        "-I" + headers));
                String actual = run(theirs);
                List<String> theirLines = Arrays.asList(actual.split("\n"));
                assertTrue(theirLines.size() > 150, "too few lines from NCCL's headers:\n" + actual);
                // NCCL before 2.30 has no v12: our extra v12 lines must then be the only difference
                List<String> ourLines = Arrays.stream(expected.split("\n"))
                        .filter(l -> actual.contains("_v12_t") || !l.contains("_v12_t")).toList();
                assertEquals(String.join("\n", ourLines), String.join("\n", theirLines),
                        "nccl_net_abi.h differs from NVIDIA's headers (" + headers + ")");
            }));
            tests.add(DynamicTest.dynamicTest("entry point signatures vs NCCL " + label, () -> {
                String out = gcc(List.of("-std=gnu11", "-c", "-o", work.resolve("net-" + label.hashCode() + ".o")
                        .toString(), "-Wall", "-Werror", "-Wno-unused-parameter", "-DJMESH_USE_NCCL_HEADERS",
                        "-I" + headers, "-I" + MAIN_C, "-I" + javaHome().resolve("include"),
                        "-I" + javaHome().resolve("include/linux"), MAIN_C.resolve("net.c").toString()));
                assertEquals("", out.strip(), "net.c does not type-check against NVIDIA's headers " + headers);
            }));
        }
        return tests.stream();
    }

    private static Path javaHome() {
        return Path.of(System.getProperty("java.home"));
    }

    /** Label -> header directory, extracted from git where needed. */
    private static Map<String, Path> headerSets() throws Exception {
        Map<String, Path> out = new LinkedHashMap<>();
        String src = System.getenv("JMESH_NCCL_SRC");
        Path root = src != null && !src.isBlank() ? Path.of(src) : Files.isDirectory(MIRROR) ? MIRROR : null;
        if (root == null) {
            return out;
        }
        for (String d : HEADER_DIRS) {
            if (Files.isRegularFile(root.resolve(d).resolve("net.h"))) {
                out.put(root + " (work tree)", root.resolve(d));
                return out;
            }
        }
        if (!isGitDir(root)) {
            throw new IllegalStateException(root + " has neither " + HEADER_DIRS + " nor is it a git repository of "
                    + "NVIDIA/nccl; point JMESH_NCCL_SRC at an NVIDIA/nccl checkout");
        }
        String refs = System.getenv().getOrDefault("JMESH_NCCL_REFS", "HEAD v2.28.9-1");
        for (String ref : refs.trim().split("\\s+")) {
            String commit = git(root, "rev-parse", "--verify", "-q", ref + "^{commit}").strip();
            if (commit.isEmpty()) {
                continue;
            }
            for (String d : HEADER_DIRS) {
                if (!git(root, "ls-tree", "--name-only", commit, d + "/net.h").isBlank()) {
                    Path target = work.resolve("nccl-" + commit.substring(0, 12));
                    Files.createDirectories(target);
                    Process p = new ProcessBuilder("sh", "-c", "git --git-dir='" + root + "' archive " + commit + " "
                            + d + " | tar -x -C '" + target + "'").redirectErrorStream(true).start();
                    String msg = new String(p.getInputStream().readAllBytes());
                    assertEquals(0, waitFor(p), "extracting " + d + " at " + ref + ": " + msg);
                    out.put(ref + " (" + commit.substring(0, 12) + ")", target.resolve(d));
                    break;
                }
            }
        }
        return out;
    }

    private static boolean isGitDir(Path root) throws Exception {
        return Files.isDirectory(root.resolve("objects")) || Files.isDirectory(root.resolve(".git"));
    }

    private static String git(Path root, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("git", "--git-dir=" + (Files.isDirectory(root.resolve(".git"))
                ? root.resolve(".git") : root)));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(p.getInputStream().readAllBytes());
        waitFor(p);
        return out;
    }

    private static Path compile(String name, List<String> extra) throws Exception {
        Path exe = work.resolve("abi_dump_" + name);
        List<String> args = new ArrayList<>(List.of("-std=gnu11", "-Wall", "-Werror", "-o", exe.toString()));
        args.addAll(extra);
        args.addAll(List.of("-I" + MAIN_C, TEST_C.resolve("abi_dump.c").toString()));
        String out = gcc(args);
        assertTrue(Files.isExecutable(exe), "abi_dump did not compile (" + name + "):\n" + out);
        return exe;
    }

    private static String gcc(List<String> args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("gcc"));
        cmd.addAll(args);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        int rc = waitFor(p);
        return rc == 0 ? out : "gcc exit " + rc + ":\n" + out;
    }

    private static String run(Path exe) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(exe.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, waitFor(p), out);
        return out;
    }

    private static int waitFor(Process p) throws InterruptedException {
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return -1;
        }
        return p.exitValue();
    }
}
