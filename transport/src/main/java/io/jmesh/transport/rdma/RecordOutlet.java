package io.jmesh.transport.rdma;

import io.jmesh.transport.verbs.Wr;
import io.jmesh.transport.core.Slots;

import java.lang.foreign.MemorySegment;

/**
 * The outlet to the next relay, on a route through several: each piece goes on as records ({@link RelayLayout}), one
 * RDMA write each of the payload and a trailer behind it (two gather entries: the payload from the piece, the trailer
 * from this relay's control region), into the next relay's record ring. A piece larger than a record slot is split.
 * At most as many records are unacknowledged as the ring has slots: the next relay's credit word says how many it has
 * passed on, and bit 63 there means it failed the connection.
 */
final class RecordOutlet extends RelayOutlet {
    private final MemorySegment trailers;
    private final long recordBytes;
    private final int records;
    private final long stride;
    private long sent;
    private long credits;

    /** The next relay's ring ({@code pipe.downAddress}): {@code records} slots of {@code recordBytes} and a trailer. */
    RecordOutlet(RelayPipe pipe, long recordBytes, int records) {
        super(pipe);
        this.recordBytes = recordBytes;
        this.records = records;
        this.stride = recordBytes + RelayLayout.TRAILER_BYTES;
        this.trailers = pipe.down.control.asSlice(RelayLayout.TRAILERS_AT,
                (long) RelayLayout.MAX_RECORDS * RelayLayout.TRAILER_BYTES);
    }

    @Override
    int poll() {
        long c = RelayLayout.credit(pipe.down.control);
        if ((c & RelayLayout.FAILED) != 0) {
            pipe.fail("the next relay failed the connection (see its log)");
            return 0;
        }
        if (c != credits) {
            if (c < credits || c > sent) {
                pipe.fail("the next relay acknowledged " + c + " records of " + sent + " sent (after " + credits
                        + "; run the same jmesh version on every node)");
                return 0;
            }
            credits = c;
        }
        int work = 0;
        Endpoint down = pipe.down;
        while (pipe.posted < pipe.arrived && !pipe.failed()) {
            int index = pipe.index(pipe.posted);
            RelayPiece p = pipe.pieces[index];
            do {
                if (sent - credits >= records || pipe.downOut + 2 >= down.sendDepth) {
                    return work;
                }
                long n = Math.min(p.length - p.sent, recordBytes);
                boolean end = p.sent + n == p.length;
                long slotAt = (sent % records) * stride;
                long t = (sent % records) * RelayLayout.TRAILER_BYTES;
                RelayLayout.trailer(trailers, t, p.offset + p.sent, (int) n, p.buffer,
                        p.last && end ? RelayLayout.LAST : 0, pipe.sizes[Slots.key(p.slot, p.buffer)],
                        sent + 1);
                int sges = 1;
                if (n > 0) {
                    Wr.sge(down.sge[0], p.address + p.sent, (int) n, pipe.memory.lkey(down.deviceIndex));
                    sges = 2;
                }
                Wr.sge(down.sge[sges - 1], trailers.address() + t, RelayLayout.TRAILER_BYTES,
                        down.controlMr.lkey());
                Wr.send(down.wr[0], RelayPipe.WRITE | index, MemorySegment.NULL, down.sge[0], sges, pipe.opWrite,
                        pipe.flagSignaled, 0, pipe.downAddress + slotAt + recordBytes - n, pipe.downRkey);
                if (!pipe.postDown("record")) {
                    return work;
                }
                p.pending++;
                p.sent += n;
                sent++;
                work++;
            } while (p.sent < p.length);
            pipe.posted++;
        }
        return work;
    }

    /** A record with no data and the BYE flag, behind the last message's records; its total is the count. */
    @Override
    boolean goodbye(long messages) {
        Endpoint down = pipe.down;
        if (pipe.posted < pipe.added || sent - credits >= records || pipe.downOut + 1 >= down.sendDepth) {
            return false;
        }
        long t = (sent % records) * RelayLayout.TRAILER_BYTES;
        RelayLayout.trailer(trailers, t, 0, 0, 0, RelayLayout.BYE, messages, sent + 1);
        Wr.sge(down.sge[0], trailers.address() + t, RelayLayout.TRAILER_BYTES, down.controlMr.lkey());
        Wr.send(down.wr[0], RelayPipe.BYE, MemorySegment.NULL, down.sge[0], 1, pipe.opWrite, pipe.flagSignaled, 0,
                pipe.downAddress + (sent % records) * stride + recordBytes, pipe.downRkey);
        if (!pipe.postDown("goodbye record")) {
            return false;
        }
        sent++;
        return true;
    }

    @Override
    String describe() {
        return "the next relay";
    }
}
