package io.jmesh.cli.demo;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs 'jmesh demo --ring' and checks its output for facts: neighbours connect directly, the two diagonals (both
 * ways) through a neighbour, and every transfer, direct or relayed, was verified.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RingDemoTest {
    @Test
    void theDiagonalsAreRelayedAndEveryTransferIsVerified() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = DemoCommand.run(List.of("--ring", "--sizes", "64K,1M", "--seconds", "0.05"),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, rc, text + err.toString(StandardCharsets.UTF_8));
        String nodes = "ABCD";
        int rows = 0;
        for (int i = 0; i < 4; i++) {
            for (int j = 0; j < 4; j++) {
                if (i == j) {
                    continue;
                }
                boolean diagonal = Math.abs(i - j) == 2;
                String from = nodes.substring(i, i + 1);
                String to = nodes.substring(j, j + 1);
                Matcher route = Pattern.compile("(?m)^  " + from + " -> " + to + "  (\\S+)\\s+(.*)$").matcher(text);
                assertTrue(route.find(), from + "->" + to + " in\n" + text);
                assertEquals(diagonal ? "relayed" : "direct", route.group(1), route.group());
                assertEquals(diagonal, route.group(2).contains(" via 127.0.11"), route.group());
                Matcher row = Pattern.compile("(?m)^  " + from + "\\s+" + to + "\\s+(relayed|direct)\\s+\\d+ \\w+"
                        + "\\s+(\\d+)\\s+[0-9.]+\\s+(.*)$").matcher(text);
                int found = 0;
                while (row.find()) {
                    found++;
                    rows++;
                    assertEquals(diagonal ? "relayed" : "direct", row.group(1), row.group());
                    assertEquals("verified", row.group(3), row.group());
                    assertTrue(Long.parseLong(row.group(2)) > 0, "no message measured: " + row.group());
                }
                assertEquals(2, found, "two sizes for " + from + "->" + to);
            }
        }
        assertEquals(24, rows);
        assertTrue(text.contains("12 connections, 4 of them relayed; 24 of 24 transfers verified."), text);
        assertTrue(Pattern.compile("(?m)^  1 MiB\\s+[0-9.]+\\s+[0-9.]+\\s+[0-9.]+$").matcher(text).find(),
                "the direct/relayed summary in\n" + text);
    }
}
