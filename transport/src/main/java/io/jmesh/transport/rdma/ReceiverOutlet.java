package io.jmesh.transport.rdma;

import io.jmesh.transport.core.Cts;
import io.jmesh.transport.verbs.Wr;
import io.jmesh.transport.core.Slots;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The outlet to the receiver: each piece is RDMA-written from the relay's memory into the receiver's posted buffer at
 * its offset, and each message ends exactly as a direct sender ends it ({@link RdmaSendWire}): a zero-length write
 * whose immediate is the size, or the size array with its immediate (grouped receives, huge messages). The queue
 * pair runs in order, so the end of a message follows its data.
 */
final class ReceiverOutlet extends RelayOutlet {
    private final MemorySegment sizesStaging;
    private long endRequest = 1;

    ReceiverOutlet(RelayPipe pipe) {
        super(pipe);
        this.sizesStaging = ControlRegion.sizes(pipe.down.control);
    }

    @Override
    int poll() {
        int work = 0;
        Endpoint down = pipe.down;
        while (pipe.posted < pipe.arrived && !pipe.failed()) {
            RelayPiece p = pipe.piece(pipe.posted);
            if (p.length > 0) {
                if (pipe.downOut + 3 >= down.sendDepth) {
                    break;                         // room for the end of message and a probe stays
                }
                long e = Cts.at(pipe.entryOf[p.slot] + p.buffer);
                Wr.sge(down.sge[0], p.address, (int) p.length, pipe.memory.lkey(down.deviceIndex));
                Wr.send(down.wr[0], RelayPipe.WRITE | pipe.index(pipe.posted), MemorySegment.NULL, down.sge[0], 1,
                        pipe.opWrite, pipe.flagSignaled, 0, Cts.addr(pipe.fifo, e) + p.offset,
                        Cts.rkey(pipe.fifo, e, 0));
                if (!pipe.postDown("write")) {
                    return work;
                }
                p.pending = 1;
            }
            pipe.posted++;
            work++;
        }
        return work + endMessages();
    }

    /** Ends each message whose pieces are all posted, in order. */
    private int endMessages() {
        int work = 0;
        Endpoint down = pipe.down;
        while (endRequest < pipe.taken && pipe.posted >= pipe.pieceEnd[RelayPipe.slot(endRequest)]
                && pipe.downOut + 1 < down.sendDepth && !pipe.failed()) {
            int slot = RelayPipe.slot(endRequest);
            long position = pipe.entryOf[slot];
            int n = pipe.buffersOf[slot];
            long size0 = pipe.sizes[Slots.key(slot, 0)];
            int slotBits = slot << RdmaSendWire.IMM_SLOT_SHIFT;  // the receiver's slot: requests from 1, slots from 0
            if (n == 1 && size0 <= RdmaSendWire.IMM_SIZE_MASK) {
                long e = Cts.at(position);
                Wr.send(down.wr[0], RelayPipe.END, MemorySegment.NULL, MemorySegment.NULL, 0, pipe.opWriteImm,
                        pipe.flagSignaled, slotBits | (int) size0, Cts.addr(pipe.fifo, e),
                        Cts.rkey(pipe.fifo, e, 0));
            } else {
                long at = Slots.key(slot, 0) * 8L;
                for (int i = 0; i < n; i++) {
                    sizesStaging.set(JAVA_LONG, at + 8L * i, pipe.sizes[Slots.key(slot, i)]);
                }
                Wr.sge(down.sge[0], sizesStaging.address() + at, n * 8, down.controlMr.lkey());
                Wr.send(down.wr[0], RelayPipe.END, MemorySegment.NULL, down.sge[0], 1, pipe.opWriteImm,
                        pipe.flagSignaled, RdmaSendWire.IMM_SIZES | slotBits | n, pipe.downAddress + at,
                        pipe.downRkey);
            }
            if (!pipe.postDown("end of message")) {
                return work;
            }
            endRequest++;
            work++;
        }
        return work;
    }

    /** The receiver's goodbye is a direct sender's ({@link Goodbye}): the receiver then ends as it does there. */
    @Override
    boolean goodbye(long messages) {
        if (pipe.posted < pipe.added || endRequest < pipe.taken || pipe.downOut + 1 >= pipe.down.sendDepth) {
            return false;
        }
        Wr.send(pipe.down.wr[0], RelayPipe.BYE, MemorySegment.NULL, MemorySegment.NULL, 0, pipe.opWriteImm,
                pipe.flagSignaled, RdmaSendWire.IMM_BYE, pipe.downAddress, pipe.downRkey);
        return pipe.postDown("goodbye");
    }

    @Override
    String describe() {
        return "the receiver";
    }
}
