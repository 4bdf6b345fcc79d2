package io.jmesh.nccl;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * jmesh's own declaration of NCCL's plugin ABI (src/main/c/nccl_net_abi.h) against NVIDIA's.
 *
 * <p>In every build: src/test/c/abi_dump.c, compiled against nccl_net_abi.h, prints every struct size, field offset
 * and constant the plugin relies on, and each must equal the value in every release column of
 * src/test/abi/nccl-abi.txt: the numbers abi_dump printed against NVIDIA's headers of those releases (regenerate.sh
 * there makes the table from an NVIDIA/nccl checkout; the project keeps the numbers, never NVIDIA's code).
 *
 * <p>With {@code JMESH_NCCL_SRC} set (an NVIDIA/nccl checkout, or its git directory) also against the headers
 * themselves, for the work tree or for each ref in {@code JMESH_NCCL_REFS} (default: the table's releases): (1) the
 * two dumps are identical, and equal to the table's column for that release; (2) the plugin's entry points (net.c)
 * compile with -Werror against NVIDIA's headers, so every function's signature matches the function-pointer type NCCL
 * declares.
 */
class NcclAbiCheckTest {
    private static final Path TEST_C = Path.of(System.getProperty("jmesh.nccl.test.c.dir", "src/test/c"));
    private static final Path MAIN_C = Path.of(System.getProperty("jmesh.nccl.main.c.dir", "src/main/c"));
    private static final Path TABLE = TEST_C.resolveSibling("abi").resolve("nccl-abi.txt");
    private static final List<String> HEADER_DIRS = List.of("plugins/net/example/nccl", "ext-net/example/nccl");
    private static final String ABSENT = "-";

    @TempDir
    static Path work;

    @TestFactory
    Stream<DynamicTest> ourAbiEqualsNcclsHeaders() throws Exception {
        Map<String, Map<String, String>> table = readTable(TABLE);
        Map<String, String> ours = dump(compile("ours", List.of()));
        List<DynamicTest> tests = new ArrayList<>();
        for (Map.Entry<String, Map<String, String>> column : table.entrySet()) {
            tests.add(DynamicTest.dynamicTest("nccl_net_abi.h vs NCCL " + column.getKey() + " (nccl-abi.txt)", () -> {
                assertTrue(column.getValue().size() > 150, "too few items in " + TABLE + " for " + column.getKey());
                assertEquals("", differences(ours, column.getValue(), "NCCL " + column.getKey(), TABLE));
            }));
        }
        tests.add(DynamicTest.dynamicTest("a changed offset is caught and named", () -> {
            Map<String, String> changed = new LinkedHashMap<>(ours);
            changed.put("offsetof(ncclNet_v11_t,finalize)", "4");
            String diff = differences(changed, ours, "ours", TABLE);
            assertTrue(diff.contains("offsetof(ncclNet_v11_t,finalize): nccl_net_abi.h gives 4, ours says "
                    + ours.get("offsetof(ncclNet_v11_t,finalize)")), diff);
        }));
        String src = System.getenv("JMESH_NCCL_SRC");
        if (src != null && !src.isBlank()) {
            for (Map.Entry<String, Path> e : headerSets(Path.of(src), table.keySet()).entrySet()) {
                tests.addAll(againstHeaders(e.getKey(), e.getValue(), ours, table));
            }
        }
        return tests.stream();
    }

    /** The release's own headers: the same dump as ours and as the table, and net.c type-checks against them. */
    private static List<DynamicTest> againstHeaders(String label, Path headers, Map<String, String> ours,
                                                    Map<String, Map<String, String>> table) {
        return List.of(DynamicTest.dynamicTest("sizes and offsets vs NCCL " + label, () -> {
            Map<String, String> theirs = dump(compile(label.replaceAll("[^A-Za-z0-9.]", "_"),
                    List.of("-DJMESH_USE_NCCL_HEADERS", "-I" + headers)));
            assertTrue(theirs.size() > 150, "too few lines from NCCL's headers: " + theirs);
            Map<String, String> recorded = table.get(label.split(" ")[0]);
            if (recorded != null) {
                Map<String, String> present = new LinkedHashMap<>(recorded);
                present.values().removeIf(ABSENT::equals);
                assertEquals(present, theirs, TABLE + " is not what NCCL " + label + "'s headers give: regenerate it ("
                        + TABLE.resolveSibling("regenerate.sh") + ")");
            }
            // NCCL before 2.30 has no v12 API: ours may have those items on top
            boolean v12 = theirs.keySet().stream().anyMatch(k -> k.contains("_v12_t"));
            ours.keySet().stream().filter(k -> !v12 && k.contains("_v12_t")).forEach(k -> theirs.put(k, ABSENT));
            assertEquals("", differences(ours, theirs, "NCCL " + label, headers));
        }), DynamicTest.dynamicTest("entry point signatures vs NCCL " + label, () -> {
            String out = gcc(List.of("-std=gnu11", "-c", "-o", work.resolve("net-" + label.hashCode() + ".o")
                    .toString(), "-Wall", "-Werror", "-Wno-unused-parameter", "-DJMESH_USE_NCCL_HEADERS",
                    "-I" + headers, "-I" + MAIN_C, "-I" + javaHome().resolve("include"),
                    "-I" + javaHome().resolve("include/linux"), MAIN_C.resolve("net.c").toString()));
            assertEquals("", out.strip(), "net.c does not type-check against NVIDIA's headers " + headers);
        }));
    }

    /**
     * Every item NCCL's side has must be in ours with the same value, one line per difference naming the item.
     * Items NCCL's side lacks are allowed (a release before 2.30 has no v12 API); items nobody has recorded are not.
     */
    static String differences(Map<String, String> ours, Map<String, String> theirs, String theirName, Path where) {
        StringBuilder out = new StringBuilder();
        theirs.forEach((item, value) -> {
            String mine = ours.get(item);
            if (!ABSENT.equals(value) && !value.equals(mine)) {
                out.append(item).append(": nccl_net_abi.h gives ").append(mine == null ? "nothing" : mine)
                        .append(", ").append(theirName).append(" says ").append(value).append('\n');
            }
        });
        ours.keySet().stream().filter(item -> !theirs.containsKey(item)).forEach(item -> out.append(item)
                .append(": abi_dump prints it, but ").append(theirName).append(" has no such item\n"));
        return out.isEmpty() ? "" : "nccl_net_abi.h differs from " + theirName + " (" + where + "); fix it to match "
                + "NCCL (or, for an item just added to abi_dump.c, rerun " + TABLE.resolveSibling("regenerate.sh")
                + "):\n" + out;
    }

    /** nccl-abi.txt: release -> (item -> value), from its "item release..." header and one row per item. */
    static Map<String, Map<String, String>> readTable(Path file) throws IOException {
        Map<String, Map<String, String>> columns = new LinkedHashMap<>();
        List<String> releases = null;
        for (String line : Files.readAllLines(file)) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.trim().split("\\s+");
            if (releases == null) {
                releases = List.of(f).subList(1, f.length);
                releases.forEach(r -> columns.put(r, new LinkedHashMap<>()));
                continue;
            }
            assertEquals(releases.size() + 1, f.length, file + ": row '" + line + "' does not have one value per "
                    + "release " + releases);
            for (int i = 0; i < releases.size(); i++) {
                columns.get(releases.get(i)).put(f[0], f[i + 1]);
            }
        }
        assertTrue(!columns.isEmpty(), file + " has no header row");
        return columns;
    }

    private static Path javaHome() {
        return Path.of(System.getProperty("java.home"));
    }

    /** Label -> header directory: the checkout's work tree, or each ref extracted from its git directory. */
    private static Map<String, Path> headerSets(Path root, Iterable<String> tableReleases) throws Exception {
        Map<String, Path> out = new LinkedHashMap<>();
        for (String d : HEADER_DIRS) {
            if (Files.isRegularFile(root.resolve(d).resolve("net.h"))) {
                out.put("work tree " + root, root.resolve(d));
                return out;
            }
        }
        if (!Files.isDirectory(root.resolve("objects")) && !Files.isDirectory(root.resolve(".git"))) {
            throw new IllegalStateException("JMESH_NCCL_SRC=" + root + " has neither " + HEADER_DIRS + " nor is it a "
                    + "git repository of NVIDIA/nccl; point it at an NVIDIA/nccl checkout");
        }
        String refs = System.getenv().getOrDefault("JMESH_NCCL_REFS", String.join(" ", tableReleases));
        for (String ref : refs.trim().split("\\s+")) {
            String commit = git(root, "rev-parse", "--verify", "-q", ref + "^{commit}").strip();
            assertTrue(!commit.isEmpty(), "JMESH_NCCL_SRC=" + root + " has no " + ref + " (git fetch --tags there, or "
                    + "set JMESH_NCCL_REFS)");
            for (String d : HEADER_DIRS) {
                if (!git(root, "ls-tree", "--name-only", commit, d + "/net.h").isBlank()) {
                    Path target = work.resolve("nccl-" + commit.substring(0, 12));
                    Files.createDirectories(target);
                    Process p = new ProcessBuilder("sh", "-c", "git --git-dir='" + gitDir(root) + "' archive "
                            + commit + " " + d + " | tar -x -C '" + target + "'").redirectErrorStream(true).start();
                    String msg = new String(p.getInputStream().readAllBytes());
                    assertEquals(0, waitFor(p), "extracting " + d + " at " + ref + ": " + msg);
                    out.put(ref + " (" + commit.substring(0, 12) + ")", target.resolve(d));
                    break;
                }
            }
        }
        return out;
    }

    private static Path gitDir(Path root) {
        return Files.isDirectory(root.resolve(".git")) ? root.resolve(".git") : root;
    }

    private static String git(Path root, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("git", "--git-dir=" + gitDir(root)));
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

    /** abi_dump's "item value" lines, in order. */
    private static Map<String, String> dump(Path exe) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(exe.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, waitFor(p), out);
        Map<String, String> items = new LinkedHashMap<>();
        for (String line : out.split("\n")) {
            String[] f = line.trim().split("\\s+");
            assertEquals(2, f.length, exe + " printed a line that is not 'item value': " + line);
            items.put(f[0], f[1]);
        }
        return items;
    }

    private static int waitFor(Process p) throws InterruptedException {
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return -1;
        }
        return p.exitValue();
    }
}
