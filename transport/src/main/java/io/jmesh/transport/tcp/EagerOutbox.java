package io.jmesh.transport.tcp;

import io.jmesh.api.Status;
import io.jmesh.transport.core.Eager;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * A TCP sender's eager records on their way to socket 0: each is staged whole (an {@link EagerFrame} header and the
 * payload, in a slot of its own) so one write can take it, and a slot is used again only
 * once the receiver's credits say its record was consumed there, which means it left here long before. Records go
 * out in order.
 *
 * <pre>
 *   record r (from 1) in slot (r - 1) mod slots:  [ header, 32 bytes | payload, up to maxPayload ]
 *   written <= staged <= credited + slots
 * </pre>
 *
 * One thread (the sender's) uses it; the staging memory is freed by {@link #close}.
 */
final class EagerOutbox implements AutoCloseable {
    private final Eager ring;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment staging;
    /** One view per slot over its record, so a write needs no allocation. */
    private final ByteBuffer[] views;
    private long staged;
    private long written;
    private long credited;

    EagerOutbox(Eager ring) {
        this.ring = ring;
        int slotBytes = EagerFrame.BYTES + ring.maxPayload;
        this.staging = arena.allocate((long) ring.slots * slotBytes, 64);
        this.views = new ByteBuffer[ring.slots];
        for (int k = 0; k < views.length; k++) {
            views[k] = staging.asSlice((long) k * slotBytes, slotBytes).asByteBuffer();
        }
    }

    /** The largest message a record carries. */
    int maxPayload() {
        return ring.maxPayload;
    }

    /**
     * Stages the next record: the message's bytes are copied here.
     *
     * @return 0, or {@link Status#NOT_READY} when every slot holds a record the receiver has not consumed
     */
    int stage(long position, int tag, MemorySegment from, long offset, int length, int buffer) {
        if (staged - credited >= ring.slots) {
            return Status.NOT_READY;
        }
        long seq = staged + 1;
        ByteBuffer v = views[(int) ((seq - 1) & (ring.slots - 1))];
        v.clear();
        EagerFrame.record(v, 0, seq, position, tag, length, buffer);
        long at = (long) ((seq - 1) & (ring.slots - 1)) * (EagerFrame.BYTES + ring.maxPayload);
        MemorySegment.copy(from, offset, staging, at + EagerFrame.BYTES, length);
        v.limit(EagerFrame.BYTES + length);
        staged = seq;
        return 0;
    }

    /** The next record to write (its view, from where the last write stopped), or null when all are written. */
    ByteBuffer next() {
        return written == staged ? null : views[(int) (written & (ring.slots - 1))];
    }

    /** The record {@link #next} gave is all written. */
    void wrote() {
        written++;
    }

    /**
     * Takes the receiver's credit frame at {@code at}: its records up to there were consumed.
     *
     * @return null, or what is wrong with it (it came from the network)
     */
    String credit(ByteBuffer b, int at) {
        String bad = EagerFrame.checkCredit(b, at, written, credited);
        if (bad == null) {
            credited = EagerFrame.consumed(b, at);
        }
        return bad;
    }

    @Override
    public void close() {
        arena.close();
    }
}
