package io.jmesh.transport.rdma;

import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.Slots;

import java.lang.foreign.MemorySegment;

/**
 * The intake from the relay before, on a route through several relays: it pushes records ({@link RelayLayout}) into
 * this relay's record ring, one piece each, at most as many as the ring has slots; the credit word tells it how many
 * have been passed on (their slots are free). Each record is checked against the receiver's clear-to-send entries
 * before it is used: the relay before is another node, and what it wrote came from the network.
 */
final class RecordIntake extends RelayIntake {
    private final MemorySegment ring;
    private final long recordBytes;
    private final int records;
    private final long stride;
    /** the buffers of the message being received that have had a record */
    private int seen;

    /** The pipe's memory is the record ring: {@code records} slots of {@code recordBytes} and a trailer. */
    RecordIntake(RelayPipe pipe, long recordBytes, int records) {
        super(pipe);
        this.ring = pipe.memory.memory();
        this.recordBytes = recordBytes;
        this.records = records;
        this.stride = recordBytes + RelayLayout.TRAILER_BYTES;
    }

    /** The ring's size in bytes for this geometry. */
    static long bytes(long recordBytes, int records) {
        return (recordBytes + RelayLayout.TRAILER_BYTES) * records;
    }

    @Override
    int capacity() {
        return records;
    }

    @Override
    int poll() {
        int work = 0;
        while (!pipe.failed() && !pipe.full() && pipe.byeAfter < 0) {
            long n = pipe.added;
            long slotAt = (n % records) * stride;
            long t = slotAt + recordBytes;
            if (RelayLayout.trailerSeq(ring, t) != n + 1) {
                return work;
            }
            if (RelayLayout.trailerFlags(ring, t) == RelayLayout.BYE) {
                if (seen != 0 || RelayLayout.trailerLength(ring, t) != 0) {
                    pipe.fail("the relay before sent a goodbye in the middle of message " + pipe.taken + " (run the "
                            + "same jmesh version on every node)");
                } else {
                    pipe.goodbyeFrom(RelayLayout.trailerTotal(ring, t));
                }
                return work + 1;
            }
            String bad = check(t);
            if (bad != null) {
                pipe.fail("the relay before sent a bad record " + (n + 1) + ": " + bad
                        + " (run the same jmesh version on every node)");
                return work;
            }
            int slot = RelayPipe.slot(pipe.taken);
            int buffer = RelayLayout.trailerBuffer(ring, t);
            long length = RelayLayout.trailerLength(ring, t);
            pipe.sizes[Slots.key(slot, buffer)] = RelayLayout.trailerTotal(ring, t);
            seen |= 1 << buffer;
            pipe.add(slot, buffer, RelayLayout.trailerOffset(ring, t), length,
                    pipe.memory.address + t - length, false, true);
            work++;
            if ((RelayLayout.trailerFlags(ring, t) & RelayLayout.LAST) != 0) {
                pipe.messageAdded();
                seen = 0;
            }
        }
        return work;
    }

    /** What is wrong with the record whose trailer is at {@code t}, or null. */
    private String check(long t) {
        if (pipe.taken >= pipe.ctsRequest) {
            return "message " + pipe.taken + " has had no clear-to-send yet";
        }
        int slot = RelayPipe.slot(pipe.taken);
        int buffers = pipe.buffersOf[slot];
        int buffer = RelayLayout.trailerBuffer(ring, t);
        int flags = RelayLayout.trailerFlags(ring, t);
        long length = RelayLayout.trailerLength(ring, t);
        long offset = RelayLayout.trailerOffset(ring, t);
        long total = RelayLayout.trailerTotal(ring, t);
        if (buffer >= buffers || (flags & ~RelayLayout.LAST) != 0) {
            return "buffer " + buffer + " of " + buffers + ", flags " + flags;
        }
        long posted = Cts.size(pipe.fifo, Cts.at(pipe.entryOf[slot] + buffer));
        if (length > recordBytes || total < 0 || total > posted || length > total || offset < 0
                || offset > total - length) {
            return length + " bytes at " + offset + " of a buffer of " + total + " for a receive of " + posted;
        }
        if ((flags & RelayLayout.LAST) != 0 && (seen | 1 << buffer) != (1 << buffers) - 1) {
            return "message " + pipe.taken + " ends before every buffer had a record";
        }
        return null;
    }

    /** Records passed on: their slots are free again. */
    @Override
    long status() {
        return pipe.freed;
    }

    @Override
    long statusAt() {
        return RelayLayout.CREDIT_AT;
    }

    @Override
    String describe() {
        return "the relay before";
    }
}
