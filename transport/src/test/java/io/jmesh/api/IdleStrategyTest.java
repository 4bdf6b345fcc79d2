package io.jmesh.api;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.jmesh.api.BackoffIdleStrategy.Phase.PARKING;
import static io.jmesh.api.BackoffIdleStrategy.Phase.SPINNING;
import static io.jmesh.api.BackoffIdleStrategy.Phase.YIELDING;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What each idle strategy does, pass by pass; no assertion on how long anything took. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class IdleStrategyTest {
    @Test
    void backoffSpinsThenYieldsThenParksDoublingUpToTheMaximum() {
        BackoffIdleStrategy s = new BackoffIdleStrategy(3, 2, 1_000, 5_000);
        List<BackoffIdleStrategy.Phase> phases = new ArrayList<>();
        List<Long> parks = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            phases.add(s.phase());
            parks.add(s.parkNanos());
            s.idle();
        }
        assertEquals(List.of(SPINNING, SPINNING, SPINNING, YIELDING, YIELDING, PARKING, PARKING, PARKING, PARKING),
                phases);
        assertEquals(List.of(1_000L, 1_000L, 1_000L, 1_000L, 1_000L, 1_000L, 2_000L, 4_000L, 5_000L), parks);
        assertEquals(5_000, s.parkNanos(), "the park stays at the maximum");
        s.reset();
        assertEquals(SPINNING, s.phase());
        assertEquals(1_000, s.parkNanos());
    }

    @Test
    void backoffWithoutSpinsOrYieldsParksAtOnce() {
        BackoffIdleStrategy s = new BackoffIdleStrategy(0, 0, 1_000, 1_000);
        assertEquals(PARKING, s.phase());
        s.idle();
        assertEquals(1_000, s.parkNanos());
    }

    @Test
    void idleWithAWorkCountResetsOnWorkAndIdlesOtherwise() {
        BackoffIdleStrategy s = new BackoffIdleStrategy(1, 0, 1_000, 8_000);
        s.idle(0);
        s.idle(0);
        assertEquals(2_000, s.parkNanos());
        s.idle(3);
        assertEquals(SPINNING, s.phase());
        assertEquals(1_000, s.parkNanos());
    }

    @Test
    void aParkedThreadIsWokenByUnpark() throws Exception {
        // parks of an hour: the thread can only come back through unpark, as Progress's agent does on new work
        IdleStrategy s = IdleStrategy.backoff(0, 0, TimeUnit.HOURS.toNanos(1), TimeUnit.HOURS.toNanos(1));
        Thread t = Thread.ofPlatform().start(s::idle);
        while (t.getState() != Thread.State.TIMED_WAITING) {
            Thread.onSpinWait();
        }
        assertTrue(t.isAlive());
        java.util.concurrent.locks.LockSupport.unpark(t);
        t.join();
        assertFalse(t.isAlive());
    }

    @Test
    void spinAndYieldNeverPark() throws Exception {
        for (IdleStrategy s : List.of(IdleStrategy.busySpin(), IdleStrategy.yielding())) {
            Thread t = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 1_000_000; i++) {
                    s.idle(i & 1);
                }
            });
            t.join();   // a park would hold it (the test's timeout fails it): neither strategy parks or sleeps
        }
        assertEquals("BusySpinIdleStrategy", IdleStrategy.busySpin().toString());
    }

    @Test
    void badSettingsAreRefusedNamingThem() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new BackoffIdleStrategy(-1, 0, 1, 1));
        assertTrue(e.getMessage().contains("maxSpins"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new BackoffIdleStrategy(0, 0, 10, 5));
        assertTrue(e.getMessage().contains("minParkNanos <= maxParkNanos"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new BackoffIdleStrategy(0, 0, 0, 5));
    }

    @Test
    void theControlPlaneStrategySpinsYieldsAndParksAMillisecond() {
        BackoffIdleStrategy s = (BackoffIdleStrategy) IdleStrategy.controlPlane();
        for (int i = 0; i < 1_000; i++) {
            assertEquals(SPINNING, s.phase());
            s.idle();
        }
        for (int i = 0; i < 9_000; i++) {
            assertEquals(YIELDING, s.phase());
            s.idle();
        }
        assertEquals(PARKING, s.phase());
        assertEquals(1_000_000, s.parkNanos());
    }
}
