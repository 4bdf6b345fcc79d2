package io.jmesh.transport.rdma;

import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.Eager;
import io.jmesh.transport.core.Slots;

import java.lang.foreign.MemorySegment;

/**
 * Rail 0's control region on a direct verbs connection: one registered block at each end, whose parts the peer
 * RDMA-writes or reads. Both ends lay it out alike and each uses the parts of its role, so an offset names the same
 * part at either end: the peer's part is its base address (from the handshake) plus the offset here.
 *
 * <pre>
 *  0            SIZES_AT          CREDIT_AT      RING_AT                PULL_AT                EAGER_BYTES
 *  | CTS FIFO   | size array      | credit word  | eager ring           | pulled entries       |
 *  |<--------- BYTES ------------>|<-- only where the connection has an eager ring ---------->|
 *
 *  sender:    the receiver writes   stages its      the receiver   stages records for     a fetch's READ of
 *             its entries here      sizes for the   writes its     the peer's ring        the receiver's
 *                                   receiver's      credits here                          staged entries
 *  receiver:  stages its entries    the sender      stages its     the sender writes      (unused)
 *             (a fetch reads them)  writes sizes    credits        records here
 * </pre>
 *
 * The listener's ACCEPT names its size array ({@link #SIZES_AT}); the connector's HELLO its FIFO, at offset 0.
 */
final class ControlRegion {
    static final long FIFO_AT = 0;
    static final long SIZES_AT = FIFO_AT + Cts.FIFO_BYTES;
    /** A size per buffer of the ring's requests: u64, the message's real length. */
    static final long SIZES_BYTES = (long) Slots.BUFFERS * 8;
    static final long CREDIT_AT = SIZES_AT + SIZES_BYTES;
    /** The region of a connection without an eager ring. */
    static final long BYTES = CREDIT_AT;
    /** The credit word has a cache line of its own: the receiver's writes into it never touch the ring. */
    static final long RING_AT = CREDIT_AT + 64;
    static final long PULL_AT = RING_AT + Eager.RING_BYTES;
    /** Entries one fetch reads: the ones a send waits for and those after them, a receiver's held-back run. */
    static final int PULL_ENTRIES = 64;
    /** The region of a connection with an eager ring. */
    static final long EAGER_BYTES = PULL_AT + (long) PULL_ENTRIES * Cts.ENTRY_BYTES;

    private ControlRegion() {
    }

    static long bytes(boolean eager) {
        return eager ? EAGER_BYTES : BYTES;
    }

    static MemorySegment fifo(MemorySegment region) {
        return region.asSlice(FIFO_AT, Cts.FIFO_BYTES);
    }

    static MemorySegment sizes(MemorySegment region) {
        return region.asSlice(SIZES_AT, SIZES_BYTES);
    }

    static MemorySegment credit(MemorySegment region) {
        return region.asSlice(CREDIT_AT, 8);
    }

    static MemorySegment ring(MemorySegment region) {
        return region.asSlice(RING_AT, Eager.RING_BYTES);
    }

    static MemorySegment pulled(MemorySegment region) {
        return region.asSlice(PULL_AT, (long) PULL_ENTRIES * Cts.ENTRY_BYTES);
    }

    /** The peer region's base address, from the address of its size array that its ACCEPT gave. */
    static long baseOfSizes(long sizesAddress) {
        return sizesAddress - SIZES_AT;
    }
}
