package io.jmesh.nccl;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The arithmetic of JMESH_NCCL_TRACE's figures: size classes, log-scale buckets, quantiles. */
class StepTraceTest {
    @Test
    void sizeClassesArePowersOfTwoNotExceeded() {
        assertEquals(0, StepTrace.sizeClass(0));
        assertEquals(0, StepTrace.sizeClass(1));
        assertEquals(12, StepTrace.sizeClass(4096));
        assertEquals(13, StepTrace.sizeClass(4097));
        assertEquals(20, StepTrace.sizeClass(1 << 20));
        assertEquals(31, StepTrace.sizeClass(1L << 40));
    }

    @Test
    void bucketsHaveFourStepsPerPowerOfTwoAndTheirEdgesBoundTheValue() {
        for (long ns : new long[] {1, 3, 1000, 1234, 65_536, 99_999, 12_345_678_901L}) {
            int b = StepTrace.bucket(ns);
            assertTrue(StepTrace.lowerEdge(b) <= ns && ns < StepTrace.lowerEdge(b + 1),
                    ns + " ns in bucket " + b + " [" + StepTrace.lowerEdge(b) + ", " + StepTrace.lowerEdge(b + 1) + ")");
        }
        assertEquals(StepTrace.bucket(1024) + 4, StepTrace.bucket(2048));
    }

    @Test
    void quantilesReadTheHistogram() {
        long[] h = new long[160];
        h[StepTrace.bucket(10_000)] = 5;       // five at 10 us
        h[StepTrace.bucket(100_000)] = 5;      // five at 100 us
        double median = StepTrace.quantile(h, 0, 0.5);
        double p90 = StepTrace.quantile(h, 0, 0.9);
        assertTrue(median > 8 && median <= 10, "median " + median);
        assertTrue(p90 > 80 && p90 <= 100, "p90 " + p90);
        assertEquals(0.0, StepTrace.quantile(new long[160], 0, 0.5));
    }

    @Test
    void aRequestIsCountedInItsSizeClassWithTheTestCallsItTook() {
        StepTrace t = new StepTrace();
        t.posted(5, 4096);
        t.tested(5, false);
        t.tested(5, false);
        t.tested(5, true);
        t.tested(5, true);                     // a test after completion is not a second request
        t.posted(6, 60_000);
        t.tested(6, true);
        StringBuilder b = new StringBuilder();
        t.report(b, "isend");
        String r = b.toString();
        assertTrue(r.contains("isend <=4K: 1, ") && r.contains("us, 3.0 tests"), r);
        assertTrue(r.contains("isend <=64K: 1, ") && r.contains("us, 1.0 tests"), r);
        assertTrue(r.contains("isend: done to next post "), r);
        assertEquals(4, r.split("\n").length, r);
    }
}
