package io.jmesh.api;

/**
 * A tight loop: {@link #idle()} returns at once. Unlike Agrona's busy spin it does not call {@link
 * Thread#onSpinWait()}: perftest's loops have no PAUSE either, and where the CPU is emulated (the testbed) each PAUSE
 * leaves the translated code, which raised the latency test's median 6-50 % in two runs. Takes a whole core.
 */
public final class BusySpinIdleStrategy implements IdleStrategy {
    @Override
    public void idle() {
        // nothing: the next poll comes as soon as possible
    }

    @Override
    public void reset() {
        // stateless
    }

    @Override
    public String toString() {
        return "BusySpinIdleStrategy";
    }
}
