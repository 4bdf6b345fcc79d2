package io.jmesh.cli.perf;

import io.jmesh.api.IdleStrategy;

/**
 * {@code --poll}: what a measurement loop does when a pass found nothing to do. spin: a tight loop (perftest's way);
 * yield: give the CPU away; park: spin a little, then park for a few microseconds. Parking matters where the RDMA
 * work is done by the kernel on the same CPU as the loop (Soft-RoCE): a spinning loop takes half the CPU from it. A
 * bandwidth run with many messages in flight loses nothing by sleeping until the next completion is due; a ping-pong
 * does, so the latency test spins by default.
 */
enum PollMode {
    SPIN, YIELD, PARK;

    /**
     * Idle passes spun before the first park: a completion that is about to arrive costs no sleep. Few, and long
     * parks: with a bandwidth run's window in flight a late look costs nothing, while every pass and every wake-up
     * is CPU taken from the RDMA work where the kernel does it (Soft-RoCE: 100 passes and 10 us parks cost 5-10 %).
     */
    static final int SPINS_BEFORE_PARK = 20;
    /** Parks start this short and double while nothing happens, up to MAX_PARK_NANOS. */
    static final long MIN_PARK_NANOS = 50_000;
    static final long MAX_PARK_NANOS = 2_000_000;

    static PollMode parse(String text) {
        return switch (text) {
            case "spin" -> SPIN;
            case "yield" -> YIELD;
            case "park" -> PARK;
            default -> throw new IllegalArgumentException("--poll " + text + ": expected spin, yield or park");
        };
    }

    /** A new strategy for one loop (they keep state). spin has no PAUSE: see {@link io.jmesh.api.BusySpinIdleStrategy}. */
    IdleStrategy idleStrategy() {
        return switch (this) {
            case SPIN -> IdleStrategy.busySpin();
            case YIELD -> IdleStrategy.yielding();
            case PARK -> IdleStrategy.backoff(SPINS_BEFORE_PARK, 0, MIN_PARK_NANOS, MAX_PARK_NANOS);
        };
    }

    String describe() {
        return switch (this) {
            case SPIN -> "spin";
            case YIELD -> "yield the CPU when idle";
            case PARK -> "park when idle (" + SPINS_BEFORE_PARK + " empty polls, then " + MIN_PARK_NANOS / 1000
                    + " us to " + MAX_PARK_NANOS / 1000 + " us)";
        };
    }
}
