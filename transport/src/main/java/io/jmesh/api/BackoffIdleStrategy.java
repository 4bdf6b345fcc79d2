package io.jmesh.api;

import java.util.concurrent.locks.LockSupport;

/**
 * Spins, then yields, then parks for longer and longer (Agrona's backoff): idle passes 1 to {@code maxSpins} call
 * {@link Thread#onSpinWait()}, the next {@code maxYields} {@link Thread#yield()}, and every later one parks, first for
 * {@code minParkNanos}, each park twice as long as the one before, up to {@code maxParkNanos}. {@link #reset()}
 * starts again from the spins. Parking matters where the work a loop waits for runs on the same CPU (Soft-RoCE does
 * RDMA in the kernel): a spinning loop takes that CPU from it. A parked thread wakes early on {@link
 * LockSupport#unpark(Thread)}.
 */
public final class BackoffIdleStrategy implements IdleStrategy {
    /** Which step the next idle pass takes. */
    public enum Phase { SPINNING, YIELDING, PARKING }

    private final int maxSpins;
    private final int maxYields;
    private final long minParkNanos;
    private final long maxParkNanos;
    private int spins;
    private int yields;
    private long parkNanos;

    /**
     * @throws IllegalArgumentException naming the argument when a count is negative or the parks are not
     *                                  {@code 0 < minParkNanos <= maxParkNanos}
     */
    public BackoffIdleStrategy(int maxSpins, int maxYields, long minParkNanos, long maxParkNanos) {
        if (maxSpins < 0 || maxYields < 0) {
            throw new IllegalArgumentException("maxSpins and maxYields must be at least 0; got " + maxSpins + " and "
                    + maxYields);
        }
        if (minParkNanos <= 0 || maxParkNanos < minParkNanos) {
            throw new IllegalArgumentException("parks must satisfy 0 < minParkNanos <= maxParkNanos; got "
                    + minParkNanos + " and " + maxParkNanos);
        }
        this.maxSpins = maxSpins;
        this.maxYields = maxYields;
        this.minParkNanos = minParkNanos;
        this.maxParkNanos = maxParkNanos;
        this.parkNanos = minParkNanos;
    }

    @Override
    public void idle() {
        if (spins < maxSpins) {
            spins++;
            Thread.onSpinWait();
        } else if (yields < maxYields) {
            yields++;
            Thread.yield();
        } else {
            LockSupport.parkNanos(parkNanos);
            parkNanos = parkNanos > maxParkNanos >> 1 ? maxParkNanos : parkNanos << 1;
        }
    }

    @Override
    public void reset() {
        spins = 0;
        yields = 0;
        parkNanos = minParkNanos;
    }

    /** The step the next idle pass takes. */
    public Phase phase() {
        return spins < maxSpins ? Phase.SPINNING : yields < maxYields ? Phase.YIELDING : Phase.PARKING;
    }

    /** How long the next park lasts, in nanoseconds. */
    public long parkNanos() {
        return parkNanos;
    }

    @Override
    public String toString() {
        return "BackoffIdleStrategy[spins=" + maxSpins + ", yields=" + maxYields + ", park=" + minParkNanos + ".."
                + maxParkNanos + " ns]";
    }
}
