package io.jmesh.transport.core;

/** The receiving half of a provider's wire under a {@link CoreReceiver}. */
public interface ReceiveWire extends Wire {
    /**
     * Posts {@code slot} (filled by the core) and stages its clear-to-send; the announcement to the sender may wait
     * for {@link #announce()} when {@code hold} (the application posts more at once).
     *
     * @return 0, or {@link io.jmesh.api.Status#FAILED}
     */
    int post(ReceiveSlot slot, boolean hold);

    /** Sends the clear-to-sends held back by {@link #post}; 0 or {@link io.jmesh.api.Status#FAILED}. */
    int announce();

    /**
     * Makes received data visible to other readers of the memory (see {@link io.jmesh.api.Receiver#iflush}); {@code
     * op} only carries the window's place, the buffers are the arguments.
     *
     * @return 1 when done at once, 0 once started ({@link Op#finish} marks the end), or {@link
     *         io.jmesh.api.Status#NOT_READY}, {@link io.jmesh.api.Status#FAILED}
     */
    int flush(Op op, int n, io.jmesh.api.Registration[] registrations, long[] offsets, long[] sizes);

    /** The ring the peer writes eager records into ({@link Eager}), or null when it sends none. */
    default java.lang.foreign.MemorySegment eagerRing() {
        return null;
    }

    /** The geometry of {@link #eagerRing()}: the verbs ring's unless the wire agreed another with its peer. */
    default Eager eagerGeometry() {
        return Eager.VERBS;
    }

    /**
     * Records 1..{@code consumed} of the eager ring were consumed: the wire hands their slots back to the sender (in
     * batches of {@link Eager#creditBatch}). 0 or {@link io.jmesh.api.Status#FAILED}.
     */
    default int eagerConsumed(long consumed) {
        return 0;
    }

    /**
     * An eager record was the last of {@code slot}'s buffers to arrive, so the slot completed without the wire: a wire
     * that lets other threads land data for posted receives stops them here.
     */
    default void eagerFilled(ReceiveSlot slot) {
    }

    /** Whether the CPU may copy an eager message into this registration's memory (not GPU memory). */
    default boolean hostMemory(io.jmesh.api.Registration registration) {
        return true;
    }
}
