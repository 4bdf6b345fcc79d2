package io.jmesh.cli.perf;

import java.util.concurrent.locks.LockSupport;

/**
 * What a measurement loop does when a pass found nothing to do, as Agrona's idle strategies: spin (perftest's way),
 * yield the CPU, or spin a little and then park for a few microseconds. Parking matters where the RDMA work is done by
 * the kernel on the same CPU as the loop (Soft-RoCE): a spinning loop takes half the CPU from it. A bandwidth run
 * with many messages in flight loses nothing by sleeping until the next completion is due; a ping-pong does, so the
 * latency test spins by default.
 */
final class Idler {
    enum Mode { SPIN, YIELD, PARK }

    /**
     * Idle passes spun before the first park: a completion that is about to arrive costs no sleep. Few, and long
     * parks: with a bandwidth run's window in flight a late look costs nothing, while every pass and every wake-up
     * is CPU taken from the RDMA work where the kernel does it (Soft-RoCE: 100 passes and 10 us parks cost 5-10 %).
     */
    static final int SPINS_BEFORE_PARK = 20;
    /** Parks start this short and double while nothing happens, up to MAX_PARK_NANOS (Agrona's backoff). */
    static final long MIN_PARK_NANOS = 50_000;
    static final long MAX_PARK_NANOS = 2_000_000;

    private final Mode mode;
    private int idle;
    private long park = MIN_PARK_NANOS;

    Idler(Mode mode) {
        this.mode = mode;
    }

    static Mode parse(String text) {
        return switch (text) {
            case "spin" -> Mode.SPIN;
            case "yield" -> Mode.YIELD;
            case "park" -> Mode.PARK;
            default -> throw new IllegalArgumentException("--poll " + text + ": expected spin, yield or park");
        };
    }

    /** A pass found nothing. */
    void idle() {
        switch (mode) {
            case SPIN -> {
                // no Thread.onSpinWait(): perftest's loops have no PAUSE either, and under emulation (the testbed)
                // each PAUSE leaves the translated code: it raised the latency test's median 6-50 % in two runs
            }
            case YIELD -> Thread.yield();
            case PARK -> {
                if (++idle > SPINS_BEFORE_PARK) {
                    LockSupport.parkNanos(park);
                    park = Math.min(MAX_PARK_NANOS, park * 2);
                } else {
                    Thread.onSpinWait();
                }
            }
        }
    }

    /** A pass did something: spin again before the next park. */
    void reset() {
        idle = 0;
        park = MIN_PARK_NANOS;
    }

    static String describe(Mode mode) {
        return switch (mode) {
            case SPIN -> "spin";
            case YIELD -> "yield the CPU when idle";
            case PARK -> "park when idle (" + SPINS_BEFORE_PARK + " empty polls, then " + MIN_PARK_NANOS / 1000 + " us to "
                    + MAX_PARK_NANOS / 1000 + " us)";
        };
    }
}
