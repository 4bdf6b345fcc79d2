package io.jmesh.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The jmesh command with a bad JMESH_LOG_LEVEL, in a JVM of its own as ./jmesh starts it (Log4j Core and the command's
 * log4j2.xml on the class path): one line naming the setting and exit 2, as for any bad setting, not Log4j's stack
 * trace and a run at the default level.
 */
class LogLevelSettingTest {
    @Test
    @Timeout(60)
    void aBadJmeshLogLevelStopsTheCommandWithOneLineAndExit2() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED", "-Xmx128m", "-cp",
                System.getProperty("java.class.path"), Jmesh.class.getName(), "devices"));
        pb.environment().put("JMESH_LOG_LEVEL", "LOUD");
        pb.redirectErrorStream(true);
        Process p = pb.start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(50, TimeUnit.SECONDS), "the command did not end");
        assertEquals(2, p.exitValue(), out);
        assertEquals("jmesh: JMESH_LOG_LEVEL='LOUD' is not valid: JMESH_LOG_LEVEL (-Djmesh.log.level) takes off, "
                + "fatal, error, warn, info, debug, trace or all (the level of jmesh's log lines; unset: warn, or what "
                + "the application's Log4j configuration says)", out.strip(), out);
        assertFalse(out.contains("Exception"), out);
    }
}
