package io.jmesh.api;

import org.apache.logging.log4j.Level;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.File;
import java.net.InetSocketAddress;
import java.nio.channels.DatagramChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a library user sees of jmesh's logging: with only log4j-api beside jmesh (the transport's own dependencies), a
 * jmesh WARN reaches stderr and Log4j prints no ERROR about a missing provider; with Log4j Core (this test JVM), the
 * application's configuration decides; a bad JMESH_LOG_LEVEL is refused like a bad fabric setting.
 */
class JmeshLogTest {
    private static final String NO_PROVIDER = "could not find a logging provider";
    private static final String ROUTE_WARN = "cannot bind the route port";

    @Test
    @Timeout(60)
    void withoutLog4jCoreAJmeshWarnReachesStderrAndLog4jPrintsNoError() throws Exception {
        Run run = child(Map.of());
        assertEquals(0, run.exit, run.toString());
        assertFalse(run.stderr.contains(NO_PROVIDER), run.toString());
        assertFalse(run.stderr.contains("ERROR"), run.toString());
        assertTrue(run.stderr.lines().anyMatch(l -> l.contains(" WARN ") && l.contains(ROUTE_WARN)), run.toString());
    }

    @Test
    @Timeout(60)
    void withoutLog4jCoreJmeshLogLevelErrorHidesTheWarn() throws Exception {
        Run run = child(Map.of(JmeshLog.ENV, "error"));
        assertEquals(0, run.exit, run.toString());
        assertFalse(run.stderr.contains(NO_PROVIDER), run.toString());
        assertFalse(run.stderr.contains(ROUTE_WARN), run.toString());
    }

    @Test
    void withLog4jCoreTheApplicationsConfigurationDecides() {
        assertTrue(JmeshLog.applicationHasProvider());
        assertInstanceOf(org.apache.logging.log4j.core.Logger.class, JmeshLog.logger(JmeshLogTest.class));
    }

    @Test
    void levelNamesAreReadInAnyCaseThePropertyFirst() {
        assertNull(JmeshLog.level(k -> null, k -> null));
        assertEquals(Level.DEBUG, JmeshLog.level(k -> null, Map.of(JmeshLog.ENV, " Debug ")::get));
        assertEquals(Level.TRACE, JmeshLog.level(Map.of(JmeshLog.PROPERTY, "trace")::get,
                Map.of(JmeshLog.ENV, "LOUD")::get));
    }

    @Test
    void aBadLevelIsRefusedNamingTheVariableTheValueAndWhatItTakes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> JmeshLog.level(k -> null, Map.of(JmeshLog.ENV, "LOUD")::get));
        assertEquals("JMESH_LOG_LEVEL='LOUD' is not valid: JMESH_LOG_LEVEL (-Djmesh.log.level) takes off, fatal, "
                + "error, warn, info, debug, trace or all (the level of jmesh's log lines; unset: warn, or what the "
                + "application's Log4j configuration says)", e.getMessage());
    }

    @Test
    void fabricOpenRefusesABadLevelLikeABadSetting() {
        String before = System.getProperty(JmeshLog.PROPERTY);
        System.setProperty(JmeshLog.PROPERTY, "LOUD");
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Fabric.open(new Context().provider("tcp").addresses("127.0.94.2/24").routePort(0))
                            .close());
            assertTrue(e.getMessage().startsWith("-Djmesh.log.level='LOUD' is not valid: JMESH_LOG_LEVEL"),
                    e.getMessage());
        } finally {
            if (before == null) {
                System.clearProperty(JmeshLog.PROPERTY);
            } else {
                System.setProperty(JmeshLog.PROPERTY, before);
            }
        }
    }

    /** This JVM's class path less Log4j Core: what an application that depends on jmesh alone has. */
    private static Run child(Map<String, String> env) throws Exception {
        String cp = Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(e -> !Path.of(e).getFileName().toString().startsWith("log4j-core"))
                .collect(Collectors.joining(File.pathSeparator));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-Xmx128m", "-cp", cp,
                Child.class.getName()));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().remove(JmeshLog.ENV);
        pb.environment().putAll(env);
        pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
        Process p = pb.start();
        p.getOutputStream().close();
        byte[] err = p.getErrorStream().readAllBytes();
        assertTrue(p.waitFor(50, TimeUnit.SECONDS), "the child JVM did not end");
        return new Run(p.exitValue(), new String(err, StandardCharsets.UTF_8));
    }

    private record Run(int exit, String stderr) {
    }

    /**
     * Opens a TCP fabric whose route port another socket holds without SO_REUSEPORT: RouteService then warns that
     * it cannot bind it, a real jmesh WARN that needs no peer.
     */
    public static final class Child {
        public static void main(String[] args) throws Exception {
            try (DatagramChannel holder = DatagramChannel.open()) {
                holder.bind(new InetSocketAddress("127.0.93.2", 0));
                int port = ((InetSocketAddress) holder.getLocalAddress()).getPort();
                try (Fabric f = Fabric.open(new Context().provider("tcp").addresses("127.0.93.2/24")
                        .routePort(port))) {
                    System.out.println("opened " + f);
                }
            }
        }
    }
}
