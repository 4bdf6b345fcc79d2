package io.jmesh.transport.core;

/**
 * The arithmetic of the request ring, named: a connection has {@link Cts#MAX_REQUESTS} request slots (a power of
 * two), each with up to {@link Cts#MAX_RECVS} buffers. Requests are numbered from 1 as they are posted; counters of
 * posted or completed requests count from 0. A buffer of the whole ring has one key, {@code slot * MAX_RECVS +
 * buffer}, which the wires use to index their per-buffer arrays and, on the send side, as the request id.
 */
public final class Slots {
    /** Buffers in the whole ring: the length of a per-buffer array. */
    public static final int BUFFERS = Cts.MAX_REQUESTS * Cts.MAX_RECVS;
    private static final int MASK = Cts.MAX_REQUESTS - 1;

    private Slots() {
    }

    /** The slot of request number {@code request} (1 is the first posted). */
    public static int ofRequest(long request) {
        return (int) ((request - 1) & MASK);
    }

    /** The slot of the {@code count}-th request counted from 0 (a head or tail counter). */
    public static int ofCount(long count) {
        return (int) (count & MASK);
    }

    /** The key of buffer {@code buffer} of slot {@code slot}. */
    public static int key(int slot, int buffer) {
        return slot * Cts.MAX_RECVS + buffer;
    }

    /** The slot a buffer key belongs to. */
    public static int slotOf(int key) {
        return key / Cts.MAX_RECVS;
    }

    /** The buffer a key names within its slot. */
    public static int bufferOf(int key) {
        return key % Cts.MAX_RECVS;
    }
}
