package io.jmesh.cli.perf;

import io.jmesh.api.BackoffIdleStrategy;
import io.jmesh.api.BusySpinIdleStrategy;
import io.jmesh.api.YieldingIdleStrategy;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** --poll keeps its meaning: spin is a tight loop, park is 20 empty polls and then parks of 50 us doubling to 2 ms. */
class PollModeTest {
    @Test
    void eachModeIsItsIdleStrategy() {
        assertInstanceOf(BusySpinIdleStrategy.class, PollMode.parse("spin").idleStrategy());
        assertInstanceOf(YieldingIdleStrategy.class, PollMode.parse("yield").idleStrategy());
        BackoffIdleStrategy park = (BackoffIdleStrategy) PollMode.parse("park").idleStrategy();
        for (int i = 0; i < 20; i++) {
            assertEquals(BackoffIdleStrategy.Phase.SPINNING, park.phase(), "empty poll " + (i + 1));
            park.idle();
        }
        assertEquals(BackoffIdleStrategy.Phase.PARKING, park.phase(), "no yields between the spins and the parks");
        long[] parks = new long[8];
        for (int i = 0; i < parks.length; i++) {
            parks[i] = park.parkNanos();
            park.idle();
        }
        assertEquals(java.util.List.of(50_000L, 100_000L, 200_000L, 400_000L, 800_000L, 1_600_000L, 2_000_000L,
                2_000_000L), java.util.Arrays.stream(parks).boxed().toList());
    }

    @Test
    void theHeaderTextsAndTheErrorStayAsTheyWere() {
        assertEquals("spin", PollMode.SPIN.describe());
        assertEquals("yield the CPU when idle", PollMode.YIELD.describe());
        assertEquals("park when idle (20 empty polls, then 50 us to 2000 us)", PollMode.PARK.describe());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PollMode.parse("nap"));
        assertEquals("--poll nap: expected spin, yield or park", e.getMessage());
    }
}
