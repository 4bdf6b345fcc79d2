package io.jmesh.transport.rdma;

import io.jmesh.transport.core.Cts;
import io.jmesh.transport.verbs.Wr;
import io.jmesh.transport.core.Slots;

import java.lang.foreign.MemorySegment;

/**
 * The intake from a relayed sender ({@link RelayedSendWire}): the sender writes one descriptor per buffer into the
 * relay's descriptor ring ({@link RelayLayout}), with the payload inline up to {@link RelayLayout#INLINE_MAX} bytes;
 * a larger buffer is RDMA-read chunk by chunk into the chunks that follow the ring, as chunks are free. The sender's
 * done word says which messages have been read whole: their buffers are the sender's again.
 *
 * <p>Pieces beyond the chunks (inline and empty buffers) need no chunk, so the FIFO holds a clear-to-send window's
 * worth of them besides. An inline buffer's space is written again only after the receiver has taken the message: its
 * next clear-to-send for that position comes after the end of message, which follows the inline piece downstream.
 */
final class PullIntake extends RelayIntake {
    private final MemorySegment descs;
    private final long chunkBase;
    private final long chunkBytes;
    private final int chunks;
    private long chunksAdded;
    private long chunksFreed;
    private boolean pulling;
    private int pullBuffer;
    private long pullOffset;
    private long released;

    /** The pipe's memory: the descriptor ring ({@link RelayLayout#DESCS} bytes), the goodbye word, the chunks. */
    PullIntake(RelayPipe pipe, long chunkBytes) {
        super(pipe);
        this.chunkBytes = chunkBytes;
        this.descs = pipe.memory.memory().asSlice(0, RelayLayout.CHUNKS_AT);
        this.chunkBase = pipe.memory.address + RelayLayout.CHUNKS_AT;
        this.chunks = (int) ((pipe.memory.length - RelayLayout.CHUNKS_AT) / chunkBytes);
    }

    @Override
    int capacity() {
        return chunks + Cts.ENTRIES;
    }

    /** Takes the sender's descriptors in message order and reads their chunks while chunks are free. */
    @Override
    int poll() {
        int work = 0;
        if (pipe.byeAfter < 0) {
            long bye = RelayLayout.bye(descs);
            if (bye != 0) {
                pipe.goodbyeFrom(bye - 1);
                work++;
            }
        }
        while (!pipe.failed()) {
            if (!pulling) {
                if (pipe.taken >= pipe.ctsRequest || !descriptorsArrived(pipe.taken)) {
                    return work;
                }
                pulling = true;
                pullBuffer = 0;
                pullOffset = 0;
            }
            int slot = RelayPipe.slot(pipe.taken);
            long position = pipe.entryOf[slot];
            while (pullBuffer < pipe.buffersOf[slot]) {
                long d = RelayLayout.at(position + pullBuffer);
                long length = RelayLayout.length(descs, d);
                boolean whole = length == 0 || RelayLayout.flags(descs, d) == RelayLayout.INLINE;
                if (!whole && pullOffset >= length) {
                    pullBuffer++;                  // before any return: the message's last piece gets marked
                    pullOffset = 0;
                    continue;
                }
                if (pipe.full()) {
                    return work;
                }
                if (whole) {
                    pipe.add(slot, pullBuffer, 0, length, length == 0 ? 0 : pipe.memory.address + d - length, false,
                            true);
                    pullBuffer++;
                    work++;
                    continue;
                }
                if (chunksAdded - chunksFreed >= chunks || pipe.upOut + 1 >= pipe.up.sendDepth) {
                    return work;
                }
                long at = chunkBase + (chunksAdded % chunks) * chunkBytes;
                long c = Math.min(chunkBytes, length - pullOffset);
                Endpoint up = pipe.up;
                Wr.sge(up.sge[0], at, (int) c, pipe.memory.lkey(up.deviceIndex));
                Wr.send(up.wr[0], RelayPipe.READ | pipe.index(pipe.added), MemorySegment.NULL, up.sge[0], 1,
                        pipe.opRead, pipe.flagSignaled, 0, RelayLayout.addr(descs, d) + pullOffset,
                        RelayLayout.rkey(descs, d));
                Wr.link(up.wr[0], MemorySegment.NULL);
                if (!pipe.postUp(1, "read")) {
                    return work;
                }
                pipe.add(slot, pullBuffer, pullOffset, c, at, true, false);
                chunksAdded++;
                pullOffset += c;
                work++;
            }
            pipe.messageAdded();
            pulling = false;
        }
        return work;
    }

    /**
     * Whether all descriptors of {@code request} are there, each within the buffer the receiver posted for it; notes
     * their lengths as the message's sizes.
     */
    private boolean descriptorsArrived(long request) {
        int slot = RelayPipe.slot(request);
        long position = pipe.entryOf[slot];
        for (int i = 0; i < pipe.buffersOf[slot]; i++) {
            if (RelayLayout.seq(descs, RelayLayout.at(position + i)) != request) {
                return false;
            }
        }
        for (int i = 0; i < pipe.buffersOf[slot]; i++) {
            long d = RelayLayout.at(position + i);
            long length = RelayLayout.length(descs, d);
            long posted = Cts.size(pipe.fifo, Cts.at(position + i));
            int flags = RelayLayout.flags(descs, d);
            if (length < 0 || length > posted || (flags & ~RelayLayout.INLINE) != 0
                    || (flags == RelayLayout.INLINE && length > RelayLayout.INLINE_MAX)) {
                pipe.fail("the sender's message " + request + " buffer " + i + " has " + length + " bytes (flags "
                        + flags + ") for a receive of " + posted + " (run the same jmesh version on every node)");
                return false;
            }
            pipe.sizes[Slots.key(slot, i)] = length;
        }
        return true;
    }

    @Override
    void freed(RelayPiece piece) {
        if (piece.chunk) {
            chunksFreed++;
        }
    }

    /** Messages whose pieces are all in the relay's memory: the sender's buffers are free. */
    @Override
    long status() {
        while (released + 1 < pipe.taken && pipe.arrived >= pipe.pieceEnd[RelayPipe.slot(released + 1)]) {
            released++;
        }
        return released;
    }

    @Override
    long statusAt() {
        return RelayLayout.DONE_AT;
    }

    @Override
    String describe() {
        return "the sender";
    }
}
