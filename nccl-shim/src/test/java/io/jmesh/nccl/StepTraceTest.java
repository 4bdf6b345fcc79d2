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
}
