package io.jmesh.examples;

import org.junit.jupiter.api.Test;

import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The Java examples of README.md and docs/api.md compile against this build's API: each ```java block becomes the
 * body of a method whose parameters are the names it takes as given (a fabric, a peer's handle, a sender, a receiver,
 * registrations, a peer's region: those it uses without declaring), so an example that names a method or type the API
 * no longer has fails here, in the unit run.
 */
class DocExamplesTest {
    private static final String PRELUDE = """
            import io.jmesh.api.*;
            import java.lang.foreign.Arena;
            import java.time.Duration;
            import java.util.concurrent.CompletableFuture;

            class Example%d {
                void example(%s) throws Exception {
            %s
                }
            }
            """;

    /** What the examples take as given, when they use a name without declaring it. */
    private static final Map<String, String> GIVEN = new LinkedHashMap<>();

    static {
        GIVEN.put("fabric", "Fabric");
        GIVEN.put("handleFromPeer", "byte[]");
        GIVEN.put("handleOfB", "byte[]");
        GIVEN.put("listener", "Listener");
        GIVEN.put("registration", "Registration");
        GIVEN.put("local", "Registration");
        GIVEN.put("in", "Registration");
        GIVEN.put("out", "Registration");
        GIVEN.put("back", "Registration");
        GIVEN.put("peerRegion", "RemoteRegion");
        GIVEN.put("sender", "Sender");
        GIVEN.put("receiver", "Receiver");
    }

    /** The parameters of one example: the given names it uses and does not declare itself. */
    private static String parameters(String block) {
        List<String> params = new ArrayList<>();
        GIVEN.forEach((name, type) -> {
            boolean used = Pattern.compile("\\b" + name + "\\b").matcher(block).find();
            boolean declared = Pattern.compile("\\b[A-Z]\\w*(<[^>]*>)?(\\[\\])?\\s+" + name + "\\s*[=;:]")
                    .matcher(block).find();
            if (used && !declared) {
                params.add(type + " " + name);
            }
        });
        return String.join(", ", params);
    }

    @Test
    void theReadmeAndApiExamplesCompile() throws Exception {
        List<String> blocks = new ArrayList<>();
        for (String doc : List.of("README.md", "docs/api.md")) {
            blocks.addAll(javaBlocks(repositoryRoot().resolve(doc)));
        }
        assertTrue(blocks.size() >= 5, "found only " + blocks.size() + " java examples");
        List<JavaFileObject> units = new ArrayList<>();
        for (int i = 0; i < blocks.size(); i++) {
            String source = PRELUDE.formatted(i, parameters(blocks.get(i)), blocks.get(i));
            units.add(new SimpleJavaFileObject(URI.create("string:///Example" + i + ".java"),
                    JavaFileObject.Kind.SOURCE) {
                @Override
                public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                    return source;
                }
            });
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> problems = new DiagnosticCollector<>();
        Path out = Files.createTempDirectory("jmesh-doc-examples");
        try (StandardJavaFileManager files = javac.getStandardFileManager(problems, null, null)) {
            boolean ok = javac.getTask(null, files, problems, List.of("-d", out.toString(), "-proc:none",
                    "-classpath", System.getProperty("java.class.path")), null, units).call();
            if (!ok) {
                StringBuilder sb = new StringBuilder("a documented example does not compile:");
                for (Diagnostic<? extends JavaFileObject> d : problems.getDiagnostics()) {
                    int block = Integer.parseInt(d.getSource().getName().replaceAll("\\D", ""));
                    sb.append("\n  example ").append(block).append(": ").append(d.getMessage(null))
                            .append("\n    ").append(blocks.get(block).lines().findFirst().orElse(""));
                }
                fail(sb.toString());
            }
        }
    }

    private static List<String> javaBlocks(Path doc) throws Exception {
        List<String> blocks = new ArrayList<>();
        StringBuilder current = null;
        for (String line : Files.readAllLines(doc)) {
            if (current == null && line.strip().equals("```java")) {
                current = new StringBuilder();
            } else if (current != null && line.strip().equals("```")) {
                blocks.add(current.toString());
                current = null;
            } else if (current != null) {
                current.append(line).append('\n');
            }
        }
        return blocks;
    }

    /** The checkout: the first folder above this module that holds README.md and docs/. */
    private static Path repositoryRoot() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("README.md")) && Files.isDirectory(p.resolve("docs"))) {
                return p;
            }
        }
        throw new IllegalStateException("no README.md and docs/ above " + Path.of("").toAbsolutePath());
    }
}
