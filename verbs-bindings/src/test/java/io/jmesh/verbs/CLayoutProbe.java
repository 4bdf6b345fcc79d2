package io.jmesh.verbs;

import java.io.IOException;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.PaddingLayout;
import java.lang.foreign.UnionLayout;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Compares the Java layouts of the generated bindings with what gcc compiles from the same verbs.h: for each struct
 * and each named member (anonymous unions and structs are transparent, as in C) the offset and size, each struct's
 * size and alignment, and each constant's value. Rows are "kind|name|value..." and a C program printing the same rows
 * is generated, compiled and run.
 */
final class CLayoutProbe {
    /** Generated classes that name a typedef rather than a struct or union tag. */
    private static final Set<String> TYPEDEFS = Set.of("pthread_mutex_t", "pthread_cond_t", "__atomic_wide_counter");

    record Row(String key, String value) {
    }

    /**
     * The layouts of glibc's own types (pthread_mutex_t, its internal structs): compared by size and alignment only,
     * wherever they appear. Their members are glibc's private business, named differently from one architecture or
     * glibc release to the next (aarch64 has no {@code __elision}; glibc 2.41 renamed {@code __g_refs}), and the
     * bindings never read them.
     */
    private final Set<MemoryLayout> opaque = new HashSet<>();
    private final List<Row> javaRows = new ArrayList<>();
    private final List<String> cStatements = new ArrayList<>();

    /** Adds a struct or union class of the bindings (anything with a static {@code layout()}). */
    void addStruct(String name, GroupLayout layout) {
        String cType = TYPEDEFS.contains(name) ? name : (layout instanceof UnionLayout ? "union " : "struct ") + name;
        javaRows.add(new Row("sizeof|" + name, layout.byteSize() + "/" + layout.byteAlignment()));
        cStatements.add("printf(\"sizeof|%s|%zu/%zu\\n\", \"" + name + "\", sizeof(" + cType + "), _Alignof(" + cType
                + "));");
        if (!isGlibcPrivate(name)) {
            walk(name, cType, layout, "", 0);
        }
    }

    static boolean isGlibcPrivate(String name) {
        return name.startsWith("pthread_") || name.startsWith("__pthread") || name.equals("__atomic_wide_counter");
    }

    private void walk(String name, String cType, GroupLayout group, String prefix, long base) {
        for (MemoryLayout m : group.memberLayouts()) {
            if (m instanceof PaddingLayout || m.name().isEmpty()) {
                continue;
            }
            long offset = base + group.byteOffset(MemoryLayout.PathElement.groupElement(m.name().get()));
            String member = m.name().get();
            if (member.startsWith("$anon$") && m instanceof GroupLayout g) {
                walk(name, cType, g, prefix, offset); // anonymous in C: its members belong to the enclosing struct
                continue;
            }
            String path = prefix.isEmpty() ? member : prefix + "." + member;
            javaRows.add(new Row("member|" + name + "." + path, offset + "/" + m.byteSize()));
            cStatements.add("printf(\"member|%s|%zu/%zu\\n\", \"" + name + "." + path + "\", offsetof(" + cType + ", "
                    + path + "), sizeof(((" + cType + "*)0)->" + path + "));");
            if (m instanceof GroupLayout g && !opaque.contains(g.withoutName())) {
                walk(name, cType, g, path, offset);
            }
        }
    }

    void addConstant(String name, long value) {
        javaRows.add(new Row("const|" + name, Long.toString(value)));
        cStatements.add("printf(\"const|%s|%lld\\n\", \"" + name + "\", (long long)(" + name + "));");
    }

    /** Adds every generated struct class and every IBV_ constant of the header class. */
    void addBindings(Path generatedClasses, String packageName, Class<?> headerClass) throws ReflectiveOperationException,
            IOException {
        List<Path> classes;
        try (var files = Files.list(generatedClasses)) {
            classes = files.filter(p -> p.toString().endsWith(".class") && !p.getFileName().toString().contains("$"))
                    .sorted().toList();
        }
        List<Path> structs = classes.stream()
                .filter(p -> !p.getFileName().toString().startsWith("verbs_h")).toList();
        for (Path p : structs) {
            String simple = p.getFileName().toString().replace(".class", "");
            if (isGlibcPrivate(simple)) {
                opaque.add(layoutOf(packageName + "." + simple).withoutName());
            }
        }
        for (Path p : structs) {
            String simple = p.getFileName().toString().replace(".class", "");
            addStruct(simple, layoutOf(packageName + "." + simple));
        }
        for (Method m : headerClass.getMethods()) {
            if (m.getName().startsWith("IBV_") && m.getParameterCount() == 0 && Modifier.isStatic(m.getModifiers())
                    && (m.getReturnType() == int.class || m.getReturnType() == long.class)) {
                addConstant(m.getName(), ((Number) m.invoke(null)).longValue());
            }
        }
    }

    private static GroupLayout layoutOf(String className) throws ReflectiveOperationException {
        Method layout = Class.forName(className).getMethod("layout");
        return (GroupLayout) layout.invoke(null);
    }

    List<Row> javaRows() {
        return javaRows;
    }

    String cProgram(String header) {
        StringBuilder sb = new StringBuilder();
        sb.append("#include <stddef.h>\n#include <stdio.h>\n#include <").append(header).append(">\n");
        sb.append("int main(void) {\n");
        for (String s : cStatements) {
            sb.append("    ").append(s).append('\n');
        }
        sb.append("    return 0;\n}\n");
        return sb.toString();
    }

    /** Compiles and runs the C program with gcc; returns its rows. */
    Map<String, String> runC(Path dir, String header) throws IOException, InterruptedException {
        Path src = dir.resolve("layout_probe.c");
        Path exe = dir.resolve("layout_probe");
        Files.writeString(src, cProgram(header));
        String out = exec(dir, "gcc", "-std=gnu11", "-O0", "-o", exe.toString(), src.toString());
        if (!Files.isExecutable(exe)) {
            throw new IllegalStateException("gcc could not compile the layout probe " + src + ":\n" + out);
        }
        Map<String, String> rows = new LinkedHashMap<>();
        for (String line : exec(dir, exe.toString()).split("\n")) {
            int bar = line.lastIndexOf('|');
            if (bar > 0) {
                rows.put(line.substring(0, bar), line.substring(bar + 1));
            }
        }
        return rows;
    }

    /** Every disagreement, one line each, naming the struct and member (or the constant). */
    static List<String> mismatches(List<Row> java, Map<String, String> c) {
        List<String> bad = new ArrayList<>();
        for (Row r : java) {
            String cv = c.get(r.key());
            if (cv == null) {
                bad.add(describe(r.key()) + ": missing from the C probe");
            } else if (!cv.equals(r.value())) {
                bad.add(describe(r.key()) + ": Java " + r.value() + " but C " + cv + unit(r.key()));
            }
        }
        return bad;
    }

    private static String describe(String key) {
        String[] parts = key.split("\\|", 2);
        return switch (parts[0]) {
            case "member" -> "struct " + parts[1].substring(0, parts[1].indexOf('.')) + " member "
                    + parts[1].substring(parts[1].indexOf('.') + 1);
            case "sizeof" -> "struct " + parts[1];
            default -> "constant " + parts[1];
        };
    }

    private static String unit(String key) {
        return key.startsWith("member|") ? " (offset/size in bytes)" : key.startsWith("sizeof|") ? " (size/alignment)" : "";
    }

    private static String exec(Path dir, String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(String.join(" ", command) + " timed out");
        }
        String text = new String(out);
        if (p.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " exited " + p.exitValue() + ":\n" + text);
        }
        return text;
    }
}
