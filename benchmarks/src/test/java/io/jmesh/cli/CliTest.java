package io.jmesh.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The rules every subcommand shares: --help, --version, the exit status, one-line usage errors, JMESH_* checks. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public class CliTest {
    static final List<String> COMMANDS = List.of("demo", "devices", "doctor", "bw", "lat", "relay", "jmh");

    record Result(int rc, String out, String err) {
    }

    static Result run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = Jmesh.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** The version in this module's pom (its parent's), which the build filters into the jar. */
    static String pomVersion() throws Exception {
        String pom = Files.readString(Path.of("pom.xml"));
        Matcher m = Pattern.compile("<parent>.*?<version>([^<]+)</version>", Pattern.DOTALL).matcher(pom);
        assertTrue(m.find(), "no parent version in pom.xml");
        return m.group(1);
    }

    @Test
    void everyCommandTakesHelpAndExitsZero() {
        for (String c : COMMANDS) {
            Result r = run(c, "--help");
            assertEquals(0, r.rc(), c + ": " + r.err());
            assertTrue(r.out().startsWith("usage: jmesh " + c), c + ":\n" + r.out());
            assertTrue(r.out().contains("Exit status: 0 ok, 1 the run failed, 2 a usage error"), c + ":\n" + r.out());
            assertEquals("", r.err(), c);
        }
        Result help = run("help", "bw");
        assertEquals(0, help.rc());
        assertTrue(help.out().startsWith("usage: jmesh bw"), help.out());
    }

    @Test
    void everyCommandAndJmeshItselfTakeVersion() throws Exception {
        String expected = "jmesh " + pomVersion();
        assertEquals(expected, run("--version").out().strip());
        for (String c : COMMANDS) {
            Result r = run(c, "--version");
            assertEquals(0, r.rc(), c + ": " + r.err());
            assertEquals(expected, r.out().strip(), c);
        }
    }

    @Test
    void bareJmeshPrintsTheUsageAndExitsTwo() {
        Result r = run();
        assertEquals(2, r.rc());
        assertTrue(r.err().startsWith("usage: jmesh COMMAND"), r.err());
        assertEquals("", r.out());
    }

    /** Each bad command line: exit 2, and one line on stderr that names the command and what was wrong. */
    @Test
    void usageErrorsExitTwoWithOneLine() {
        Map<List<String>, String> cases = Map.ofEntries(
                Map.entry(List.of("demo", "--seconds", "abc"), "'abc' is not a number"),
                Map.entry(List.of("demo", "--seconds", "0"), "--seconds 0.0: expected more than 0"),
                Map.entry(List.of("demo", "--ring", "--softroce"), "mutually exclusive"),
                Map.entry(List.of("demo", "--sizes", "1Q"), "--sizes '1Q' is not a size"),
                Map.entry(List.of("devices", "extra"), "extra"),
                Map.entry(List.of("doctor", "--port", "0"), "--port 0: expected 1 to 65535"),
                Map.entry(List.of("doctor", "--serve", "peer"), "--serve takes no peers"),
                Map.entry(List.of("doctor", "--provider", "pigeon"), "--provider 'pigeon' is not valid"),
                Map.entry(List.of("bw", "--frob"), "Unknown option: '--frob'"),
                Map.entry(List.of("bw", "-n", "x"), "'x' is not a number"),
                Map.entry(List.of("bw", "--op", "write"), "only for 'jmesh lat'"),
                Map.entry(List.of("lat", "-q", "2"), "the latency test uses one connection"),
                Map.entry(List.of("lat", "a", "b"), "too many arguments"),
                Map.entry(List.of("bw", "-a", "-s", "4K"), "-a and -s both choose the sizes"),
                Map.entry(List.of("bw", "-n", "10", "-D", "2"), "-n and -D both end a size's run"),
                Map.entry(List.of("relay", "--seconds", "-1"), "--seconds -1"),
                Map.entry(List.of("relay", "--addresses", "nonsense"), "--addresses 'nonsense' is not valid"));
        cases.forEach((args, expected) -> {
            Result r = run(args.toArray(String[]::new));
            assertEquals(2, r.rc(), args + ": " + r.err());
            assertEquals(1, r.err().lines().count(), args + ": one line:\n" + r.err());
            assertTrue(r.err().startsWith("jmesh " + args.getFirst() + ": ") && r.err().contains(expected),
                    args + ": " + r.err());
        });
    }

    /** A bad --addresses in the command line's terms: the option, once; not the Java call that stores it. */
    @Test
    void aBadAddressIsExplainedOnceInTheCommandLinesTerms() {
        Result r = run("bw", "--addresses", "garbage", "-p", "1");
        assertEquals(2, r.rc(), r.err());
        assertFalse(r.err().contains("Context."), r.err());
        assertTrue(r.err().contains("--addresses 'garbage' is not valid"), r.err());
        assertEquals(1, r.err().split("local addresses with prefixes", -1).length - 1, "said once: " + r.err());
    }

    /** A run-time error about a setting given as an option names the option, not the variable behind it. */
    @Test
    void anAddressOfAnotherHostIsNamedAsTheOption() {
        Result r = run("relay", "--provider", "tcp", "--addresses", "192.0.2.77/24,127.0.95.9/24", "--seconds", "1");
        assertEquals(1, r.rc(), r.out() + r.err());
        assertTrue(r.err().startsWith("jmesh relay: --addresses lists 192.0.2.77/24, which is not an address of this "
                + "host"), r.err());
    }

    @Test
    void aRunThatFailsExitsOne() {
        // nothing listens on 127.0.95.2 (the discard port, to be sure): the peer's check fails
        Result r = run("doctor", "--provider", "tcp", "--addresses", "127.0.95.1/24", "--timeout", "1",
                "-p", "9", "127.0.95.2");
        assertEquals(1, r.rc(), r.out() + r.err());
    }

    @Test
    void aMisspeltSettingIsNamedWithTheLikelyOneAndScriptVariablesAreLeftAlone() {
        List<String> lines = Settings.misspelt(Map.of("JMESH_PROVIDR", "tcp", "JMESH_PROVIDER", "tcp",
                "JMESH_BENCH_WAYS", "api", "JMESH_ADRESSES", "x", "PATH", "/bin"));
        assertEquals(2, lines.size(), lines.toString());
        assertTrue(lines.get(0).startsWith("JMESH_ADRESSES is not a jmesh setting") && lines.get(0)
                .contains("did you mean JMESH_ADDRESSES?"), lines.get(0));
        assertTrue(lines.get(1).startsWith("JMESH_PROVIDR is not a jmesh setting") && lines.get(1)
                .contains("did you mean JMESH_PROVIDER?"), lines.get(1));
    }

    /** In a process of its own, because only there the environment can be set: demo honours JMESH_*. */
    @Test
    void demoRefusesABadJmeshSettingAndWarnsOnceAboutAMisspeltOne() throws Exception {
        ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                Jmesh.class.getName(), "demo").redirectErrorStream(true);
        pb.environment().put("JMESH_PROVIDER", "foo");
        pb.environment().put("JMESH_PROVIDR", "tcp");
        Process p = pb.start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(2, p.exitValue(), text);
        assertTrue(text.contains("jmesh demo: JMESH_PROVIDER='foo' is not valid"), text);
        assertEquals(1, text.split("did you mean JMESH_PROVIDER\\?", -1).length - 1, "warned once:\n" + text);
    }

    /** Every line of a --json run's stdout is one JSON object: no header, table or rule in between. */
    public static List<String> jsonLines(String stdout) {
        List<String> lines = stdout.lines().toList();
        assertFalse(lines.isEmpty(), "no output");
        for (String l : lines) {
            assertTrue(l.startsWith("{\"type\":\"") && l.endsWith("}"), "not a JSON object: " + l);
        }
        return lines;
    }

    @Test
    void demoJsonIsOneObjectPerTransferAndASummary() {
        Result r = run("demo", "--json", "--sizes", "64K", "--seconds", "0.05");
        assertEquals(0, r.rc(), r.err());
        List<String> lines = jsonLines(r.out());
        assertEquals(7, lines.size(), r.out());
        assertTrue(lines.getFirst().matches("\\{\"type\":\"transfer\",\"mesh\":\"triangle\",\"from\":\"A\","
                + "\"to\":\"B\",\"path\":\"127.0.101.0/24\",\"bytes\":65536,\"messages\":[1-9][0-9]*,"
                + "\"mb_per_s\":[0-9.]+,\"verified\":true,\"problem\":null}"), lines.getFirst());
        assertEquals("{\"type\":\"summary\",\"mesh\":\"triangle\",\"connections\":6,\"transfers\":6,"
                + "\"verified\":6,\"ok\":true}", lines.getLast());
        assertTrue(r.err().contains("jmesh demo: a three-node mesh"), "the text goes to stderr:\n" + r.err());
    }

    @Test
    void doctorJsonIsOneObjectPerCheckAndASummary() {
        Result r = run("doctor", "--json", "--provider", "tcp", "--addresses", "127.0.99.1/24", "--name", "n1");
        assertEquals(0, r.rc(), r.err());
        List<String> lines = jsonLines(r.out());
        assertEquals("{\"type\":\"check\",\"status\":\"ok\",\"title\":\"TCP addresses: 127.0.99.1/24 (lo)\","
                + "\"fix\":null}", lines.getFirst());
        assertTrue(lines.getLast().matches("\\{\"type\":\"summary\",\"node\":\"n1\",\"provider\":\"tcp\","
                + "\"ok\":[1-9],\"warnings\":0,\"failed\":0}"), lines.getLast());
    }

    @Test
    void jsonStringsAreEscaped() {
        assertEquals("{\"a\":\"q\\\"b\\\\s\\n\\u0001\",\"n\":null,\"x\":[1,2.5,true],\"d\":null}",
                new Json().put("a", "q\"b\\s\n\u0001").put("n", null).put("x", List.of(1, 2.5, true))
                        .put("d", Double.NaN).toString());
    }
}
