package io.jmesh.cli.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Result lines end at their last figure, whatever its width, so scripts can parse them as perftest's. */
class PerfReportTest {
    @Test
    void latencyLineEndsWithItsLastFigureEvenWhenItIsShort() {
        long[] rtt = new long[100];
        for (int i = 0; i < rtt.length; i++) {
            rtt[i] = 20_000 + i; // half a round trip: about 10 us, narrower than the 7-wide column
        }
        String line = PerfReport.latLine(2, rtt, rtt.length);
        assertEquals(line.stripTrailing(), line, "'" + line + "'");
        String[] f = line.trim().split("\\s+");
        assertEquals(9, f.length, line);
        assertEquals("2", f[0]);
        assertEquals("100", f[1]);
        assertTrue(line.endsWith(f[8]), line);
    }

    @Test
    void bandwidthLineEndsWithItsLastFigure() {
        String line = PerfReport.bwLine(4096, 10, 1 << 20, 1 << 20, 1, false);
        assertEquals(line.stripTrailing(), line, "'" + line + "'");
        assertEquals(5, line.trim().split("\\s+").length, line);
    }
}
