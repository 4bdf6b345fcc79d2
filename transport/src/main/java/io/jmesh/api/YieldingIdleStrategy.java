package io.jmesh.api;

/** Yields the CPU ({@link Thread#yield()}) on every idle pass: other runnable threads go first, none sleeps. */
public final class YieldingIdleStrategy implements IdleStrategy {
    @Override
    public void idle() {
        Thread.yield();
    }

    @Override
    public void reset() {
        // stateless
    }

    @Override
    public String toString() {
        return "YieldingIdleStrategy";
    }
}
