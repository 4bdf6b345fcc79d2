package io.jmesh.cli.demo;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs 'jmesh demo' (the TCP triangle on loopback) and checks its output for facts: every connection took the link of
 * the subnet the two nodes share (the seeds' table: A-B 101, A-C 100, B-C 102), and every transfer was verified.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DemoCommandTest {
    /** The seeds' triangle: which subnet joins each pair of nodes. */
    private static final Map<String, String> LINK = Map.of("AB", "101", "BA", "101", "AC", "100", "CA", "100",
            "BC", "102", "CB", "102");
    private static final Map<String, Integer> HOST = Map.of("A", 1, "B", 2, "C", 3);

    @Test
    void everyConnectionTakesTheLinkOfItsSubnetAndEveryTransferIsVerified() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = DemoCommand.run(List.of("--sizes", "64K,1M", "--seconds", "0.05"),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, rc, text + err.toString(StandardCharsets.UTF_8));

        // each node's handle carries both of its addresses
        for (String node : List.of("A", "B", "C")) {
            Matcher m = Pattern.compile("(?m)^  " + node + "  links .* handle (jmesh1\\S+)$").matcher(text);
            assertTrue(m.find(), "handle line of " + node + " in\n" + text);
            for (Map.Entry<String, String> e : LINK.entrySet()) {
                if (e.getKey().charAt(0) == node.charAt(0)) {
                    String addr = "127.0." + e.getValue() + "." + HOST.get(node) + "/24";
                    assertTrue(m.group(1).contains(addr), node + "'s handle lacks " + addr + ": " + m.group(1));
                }
            }
        }
        // the route of each of the six connections, and the table's link column
        int rows = 0;
        for (Map.Entry<String, String> e : LINK.entrySet()) {
            String from = e.getKey().substring(0, 1);
            String to = e.getKey().substring(1);
            String net = "127.0." + e.getValue();
            String route = "  " + from + " -> " + to + "  tcp " + net + "." + HOST.get(from) + "/24 -> " + net + "."
                    + HOST.get(to) + "/24";
            assertTrue(text.contains(route), "expected route '" + route + "' in\n" + text);
            Matcher row = Pattern.compile("(?m)^  " + from + "\\s+" + to + "\\s+(\\S+)\\s+(\\d+ \\w+)\\s+(\\d+)\\s+"
                    + "([0-9.]+)\\s+(.*)$").matcher(text);
            int found = 0;
            while (row.find()) {
                found++;
                rows++;
                assertEquals(net + ".0/24", row.group(1), row.group());
                assertEquals("verified", row.group(5), row.group());
                assertTrue(Long.parseLong(row.group(3)) > 0, "no message measured: " + row.group());
            }
            assertEquals(2, found, "two sizes for " + from + "->" + to + " in\n" + text);
        }
        assertEquals(12, rows);
        assertTrue(text.contains("6 connections, each over the link of its own subnet; 12 of 12 transfers verified."),
                text);
    }

    @Test
    void badOptionsAreRefusedWithTheReason() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = DemoCommand.run(List.of("--seconds", "0"), new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(2, rc, "a bad option is a usage error");
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("--seconds 0.0: expected more than 0"),
                err.toString(StandardCharsets.UTF_8));
    }
}
