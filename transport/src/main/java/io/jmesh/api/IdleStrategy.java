package io.jmesh.api;

/**
 * What a polling loop does when a pass found nothing to do, as Agrona's idle strategies: call {@link #idle()} after an
 * empty pass and {@link #reset()} after one that did work (or {@link #idle(int)} with the pass's work count). An
 * instance keeps state (how long the loop has been idle), so each polling thread has its own. None allocates.
 *
 * <pre>{@code
 * IdleStrategy idle = IdleStrategy.backoff(100, 10, 1_000, 1_000_000);
 * while (running) {
 *     idle.idle(doWork());     // resets when work was done, idles otherwise
 * }
 * }</pre>
 */
public interface IdleStrategy {
    /** A pass found nothing to do. */
    void idle();

    /** A pass did work: the next idle pass starts again from the cheapest step. */
    void reset();

    /** {@link #reset()} when {@code workCount > 0}, otherwise {@link #idle()}. */
    default void idle(int workCount) {
        if (workCount > 0) {
            reset();
        } else {
            idle();
        }
    }

    /** Returns at once: a tight loop that never gives the CPU away ({@link BusySpinIdleStrategy}). */
    static IdleStrategy busySpin() {
        return new BusySpinIdleStrategy();
    }

    /** Yields the CPU on every idle pass ({@link YieldingIdleStrategy}). */
    static IdleStrategy yielding() {
        return new YieldingIdleStrategy();
    }

    /**
     * Spins ({@link Thread#onSpinWait()}) {@code maxSpins} idle passes, then yields {@code maxYields}, then parks,
     * from {@code minParkNanos} doubling up to {@code maxParkNanos} ({@link BackoffIdleStrategy}).
     */
    static IdleStrategy backoff(int maxSpins, int maxYields, long minParkNanos, long maxParkNanos) {
        return new BackoffIdleStrategy(maxSpins, maxYields, minParkNanos, maxParkNanos);
    }

    /**
     * For waits on the network on the control path (connects, accepts): a thousand spins, then yields, then 1 ms
     * parks. A handshake takes hundreds of microseconds at best, so a wait needs no core of its own.
     */
    static IdleStrategy controlPlane() {
        return new BackoffIdleStrategy(1_000, 9_000, 1_000_000, 1_000_000);
    }
}
