package io.jmesh.examples;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The example program runs to its end over TCP loopback: its main in a child JVM (exit code and output), and its run
 * method in this one (to check the steps it prints). JMESH_PROVIDER=tcp keeps it on TCP where RDMA exists too.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HelloMeshTest {
    private static final List<String> STEPS = List.of("1. opened two nodes on tcp: A on [127.0.0.1/8",
            "2. registered", "3. B listens", "4. A sent three messages", "5. B sent A its region",
            "6. A read", "   futures:", "7. closed the connections", "8. closed the registrations",
            "HelloMesh: OK");

    @Test
    void mainRunsToTheEndAndExitsZero() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), HelloMesh.class.getName());
        pb.environment().put("JMESH_PROVIDER", "tcp");
        pb.environment().remove("JMESH_ADDRESSES");
        pb.redirectErrorStream(true);
        Process p = pb.start();
        p.getOutputStream().close();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "HelloMesh did not exit:\n" + output);
        assertEquals(0, p.exitValue(), output);
        assertSteps(output);
    }

    @Test
    void runPrintsEveryStep() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = HelloMesh.run(new String[0], new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), Map.of("jmesh.provider", "tcp"), Map.of());
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, rc, text + err.toString(StandardCharsets.UTF_8));
        assertSteps(text);
    }

    @Test
    void argumentsAreRefusedWithTheUsage() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = HelloMesh.run(new String[] {"x"}, new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(err, true, StandardCharsets.UTF_8), Map.of(), Map.of());
        assertEquals(2, rc);
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("usage: HelloMesh"));
    }

    @Test
    void anAddressThatIsNotOnThisHostIsASetupErrorNamingIt() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = HelloMesh.run(new String[0], new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(err, true, StandardCharsets.UTF_8),
                Map.of("jmesh.provider", "tcp", "jmesh.addresses", "203.0.113.77/24"), Map.of());
        String text = err.toString(StandardCharsets.UTF_8);
        assertEquals(2, rc, text);
        assertTrue(text.startsWith("HelloMesh: cannot run: ") && text.contains("203.0.113.77"), text);
    }

    /** Every step's line, in order (log lines may come in between). */
    private static void assertSteps(String output) {
        List<String> lines = output.lines().toList();
        int next = 0;
        for (String step : STEPS) {
            while (next < lines.size() && !lines.get(next).startsWith(step)) {
                next++;
            }
            assertTrue(next < lines.size(), "step '" + step + "' missing or out of order in:\n" + output);
            next++;
        }
        assertEquals("HelloMesh: OK", lines.getLast(), output);
    }
}
