package io.jmesh.transport.rdma;

import io.jmesh.api.CloseHelper;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.verbs.Wr;
import io.jmesh.verbs.Errno;
import io.jmesh.verbs.ffi.verbs_h;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * One relayed connection on the relay node: the sender's queue pair ({@code up}) and the receiver's ({@code down}),
 * each on the device of its own link, and a ring of chunks in memory registered on both. It forwards the receiver's
 * clear-to-send entries up unchanged; takes the sender's descriptors ({@link RelayLayout}); RDMA-reads each message
 * chunk by chunk into the ring and RDMA-writes each chunk from the same memory into the receiver's buffer at the same
 * offset (a small buffer the sender wrote inline goes straight from the descriptor ring); then ends the request
 * towards the receiver exactly as a direct sender would (a write with the size as immediate, or the size array), and
 * tells the sender its buffers are free (the done word). Reads and writes run in order on their queue pairs, so the
 * ring is a FIFO of chunks: chunk k is read, written, and free again in turn. An inline buffer's space is written
 * again only after the receiver has taken the message (the receiver's next clear-to-send for that position comes
 * after the end of message, which follows the inline write on the same queue pair).
 *
 * <p>Memory per connection is the descriptor ring and the chunk ring, whatever the message sizes; a receiver that posts nothing gets nothing
 * pulled. Everything the sender wrote is checked against the receiver's entries before it is used (a length beyond
 * the posted buffer fails the connection). Any failure closes both queue pairs, after telling the sender why through
 * the done word: both ends see their connection fail. Runs on the relay's thread only.
 */
final class RelayPipe implements AutoCloseable {
    private static final long READ = 1L << 40;
    private static final long WRITE = 2L << 40;
    private static final long END = 3L << 40;
    private static final long CONTROL = 4L << 40;
    private static final long INLINE = 5L << 40;
    private static final long KIND = 0xffL << 40;
    private static final long FAIL_GRACE_NANOS = 200_000_000L;

    private final String name;
    private final Endpoint up;
    private final Endpoint down;
    private final long upControl;
    private final int upRkey;
    private final long downSizes;
    private final int downSizesRkey;
    private final RdmaRegistration ring;
    private final AutoCloseable ringOwner;
    private final long chunkBytes;
    private final long chunkBase;
    private final int chunks;
    private final MemorySegment fifo;
    private final MemorySegment sizesStaging;
    private final MemorySegment descs;
    private final MemorySegment ctsStaging;
    private final MemorySegment doneStaging;
    private final int opWrite = verbs_h.IBV_WR_RDMA_WRITE();
    private final int opWriteImm = verbs_h.IBV_WR_RDMA_WRITE_WITH_IMM();
    private final int opRead = verbs_h.IBV_WR_RDMA_READ();
    private final int flagSignaled = verbs_h.IBV_SEND_SIGNALED();
    private final int wcSuccess = verbs_h.IBV_WC_SUCCESS();

    /** per slot (request - 1 mod MAX_REQUESTS): its first entry's position, its buffers, the chunk count after it */
    private final long[] entryOf = new long[Cts.MAX_REQUESTS];
    private final int[] buffersOf = new int[Cts.MAX_REQUESTS];
    private final long[] chunkEnd = new long[Cts.MAX_REQUESTS];
    /** per chunk of the ring: which slot, buffer and offset it carries, and its length */
    private final int[] chunkSlot;
    private final int[] chunkBuffer;
    private final long[] chunkOffset;
    private final long[] chunkLength;

    private long ctsRequest = 1;
    private long ctsPosition;
    private long pullRequest = 1;
    private boolean pulling;
    private int pullBuffer;
    private long pullOffset;
    /** chunk sequence numbers: reads posted and completed, writes posted and completed */
    private long reads;
    private long readsDone;
    private long writes;
    private long writesDone;
    private long endRequest = 1;
    private long released;
    private long doneSent;
    private int upOut;
    private int downOut;
    private String failure;
    private long failDeadline;
    private boolean closed;

    /**
     * @param ring      the descriptor ring then the chunks, registered on both devices; {@code ringOwner} frees it
     *                  (after the queue pairs)
     * @param upControl the sender's control region (its FIFO at 0, its done word at {@link RelayLayout#DONE_AT})
     * @param downSizes the receiver's size array
     */
    RelayPipe(String name, Endpoint up, long upControl, int upRkey, Endpoint down, long downSizes, int downSizesRkey,
              RdmaRegistration ring, AutoCloseable ringOwner, long chunkBytes) {
        this.name = name;
        this.up = up;
        this.down = down;
        this.upControl = upControl;
        this.upRkey = upRkey;
        this.downSizes = downSizes;
        this.downSizesRkey = downSizesRkey;
        this.ring = ring;
        this.ringOwner = ringOwner;
        this.chunkBytes = chunkBytes;
        this.chunkBase = ring.address + RelayLayout.DESCS;
        this.chunks = (int) ((ring.length - RelayLayout.DESCS) / chunkBytes);
        this.chunkSlot = new int[chunks];
        this.chunkBuffer = new int[chunks];
        this.chunkOffset = new long[chunks];
        this.chunkLength = new long[chunks];
        this.fifo = down.control.asSlice(0, Cts.FIFO_BYTES);
        this.sizesStaging = down.control.asSlice(Cts.FIFO_BYTES, RdmaSendWire.SIZES_BYTES);
        this.descs = ring.memory().asSlice(0, RelayLayout.DESCS);
        this.ctsStaging = up.control.asSlice(0, Cts.FIFO_BYTES);
        this.doneStaging = up.control.asSlice(Cts.FIFO_BYTES, 64);
    }

    /** Bounded work; returns how much was done (0: idle). Once it returns -1 the pipe is closed. */
    int poll() {
        if (closed) {
            return -1;
        }
        if (failure != null) {
            drainAfterFailure();
            return closed ? -1 : 0;
        }
        int work = forwardClearToSends() + pollUp() + pull() + pushWrites() + pollDown() + endRequests() + release();
        if (work == 0 && failure == null) {
            probe();
        }
        return work;
    }

    /** The receiver's new clear-to-send entries, copied to the sender's FIFO at the same positions. */
    private int forwardClearToSends() {
        int work = 0;
        while (failure == null) {
            long first = Cts.at(ctsPosition);
            if (Cts.seq(fifo, first) != ctsRequest) {
                return work;
            }
            int n = Cts.nreqs(fifo, first);
            if (n < 1 || n > Cts.MAX_RECVS) {
                fail("the receiver sent a clear-to-send for " + n + " buffers (1.." + Cts.MAX_RECVS + ")");
                return work;
            }
            for (int i = 1; i < n; i++) {
                if (Cts.seq(fifo, Cts.at(ctsPosition + i)) != ctsRequest) {
                    return work;                   // the rest of the group is on its way
                }
            }
            if (upOut + 2 >= up.sendDepth) {
                return work;
            }
            for (int i = 0; i < n; i++) {
                long e = Cts.at(ctsPosition + i);
                MemorySegment.copy(fifo, e, ctsStaging, e, Cts.ENTRY_BYTES);
            }
            long from = ctsPosition & (Cts.ENTRIES - 1);
            int run = (int) Math.min(n, Cts.ENTRIES - from);
            postUpWrite(0, ctsStaging.address() + from * Cts.ENTRY_BYTES, run * Cts.ENTRY_BYTES,
                    upControl + from * Cts.ENTRY_BYTES);
            if (run < n) {
                postUpWrite(1, ctsStaging.address(), (n - run) * Cts.ENTRY_BYTES, upControl);
                Wr.link(up.wr[0], up.wr[1]);
            }
            if (!postUp(run < n ? 2 : 1, "clear-to-send")) {
                return work;
            }
            int slot = slot(ctsRequest);
            entryOf[slot] = ctsPosition;
            buffersOf[slot] = n;
            ctsRequest++;
            ctsPosition += n;
            work++;
        }
        return work;
    }

    /** Takes the sender's descriptors in request order and reads their chunks into the ring while chunks are free. */
    private int pull() {
        int work = 0;
        while (failure == null) {
            if (!pulling) {
                if (pullRequest >= ctsRequest || !descriptorsArrived(pullRequest)) {
                    return work;
                }
                pulling = true;
                pullBuffer = 0;
                pullOffset = 0;
            }
            int slot = slot(pullRequest);
            long position = entryOf[slot];
            while (pullBuffer < buffersOf[slot]) {
                long d = RelayLayout.at(position + pullBuffer);
                long length = RelayLayout.length(descs, d);
                if (pullOffset >= length) {
                    pullBuffer++;
                    pullOffset = 0;
                    continue;
                }
                if (RelayLayout.flags(descs, d) == RelayLayout.INLINE) {
                    if (downOut + 3 >= down.sendDepth) {
                        return work;               // room for the end of message and a probe stays
                    }
                    long e = Cts.at(position + pullBuffer);
                    Wr.sge(down.sge[0], ring.address + d - length, (int) length, ring.lkey(down.deviceIndex));
                    Wr.send(down.wr[0], INLINE, MemorySegment.NULL, down.sge[0], 1, opWrite, flagSignaled, 0,
                            Cts.addr(fifo, e), Cts.rkey(fifo, e, 0));
                    if (!postDown("inline write")) {
                        return work;
                    }
                    pullOffset = length;
                    work++;
                    continue;
                }
                if (reads - writesDone >= chunks || upOut + 1 >= up.sendDepth) {
                    return work;
                }
                int k = (int) (reads % chunks);
                long c = Math.min(chunkBytes, length - pullOffset);
                Wr.sge(up.sge[0], chunkBase + k * chunkBytes, (int) c, ring.lkey(up.deviceIndex));
                Wr.send(up.wr[0], READ | (reads & 0xffff_ffffL), MemorySegment.NULL, up.sge[0], 1, opRead,
                        flagSignaled, 0, RelayLayout.addr(descs, d) + pullOffset, RelayLayout.rkey(descs, d));
                Wr.link(up.wr[0], MemorySegment.NULL);
                if (!postUp(1, "read")) {
                    return work;
                }
                chunkSlot[k] = slot;
                chunkBuffer[k] = pullBuffer;
                chunkOffset[k] = pullOffset;
                chunkLength[k] = c;
                reads++;
                pullOffset += c;
                work++;
            }
            chunkEnd[slot] = reads;
            pulling = false;
            pullRequest++;
        }
        return work;
    }

    /** Whether all descriptors of {@code request} are there, each within the buffer the receiver posted for it. */
    private boolean descriptorsArrived(long request) {
        int slot = slot(request);
        long position = entryOf[slot];
        for (int i = 0; i < buffersOf[slot]; i++) {
            if (RelayLayout.seq(descs, RelayLayout.at(position + i)) != request) {
                return false;
            }
        }
        for (int i = 0; i < buffersOf[slot]; i++) {
            long d = RelayLayout.at(position + i);
            long length = RelayLayout.length(descs, d);
            long posted = Cts.size(fifo, Cts.at(position + i));
            int flags = RelayLayout.flags(descs, d);
            if (length < 0 || length > posted || (flags & ~RelayLayout.INLINE) != 0
                    || (flags == RelayLayout.INLINE && length > RelayLayout.INLINE_MAX)) {
                fail("the sender's message " + request + " buffer " + i + " has " + length + " bytes (flags " + flags
                        + ") for a receive of " + posted + " (run the same jmesh version on every node)");
                return false;
            }
        }
        return true;
    }

    /** Writes chunks whose reads completed into the receiver's buffers, in order. */
    private int pushWrites() {
        int work = 0;
        while (writes < readsDone && downOut + 2 < down.sendDepth && failure == null) {
            int k = (int) (writes % chunks);
            long e = Cts.at(entryOf[chunkSlot[k]] + chunkBuffer[k]);
            Wr.sge(down.sge[0], chunkBase + k * chunkBytes, (int) chunkLength[k], ring.lkey(down.deviceIndex));
            Wr.send(down.wr[0], WRITE, MemorySegment.NULL, down.sge[0], 1, opWrite, flagSignaled, 0,
                    Cts.addr(fifo, e) + chunkOffset[k], Cts.rkey(fifo, e, 0));
            if (!postDown("write")) {
                return work;
            }
            writes++;
            work++;
        }
        return work;
    }

    /**
     * Ends each request whose chunks are all written, in order, as a direct sender does: a zero-length write whose
     * immediate is the size, or (grouped receives, huge messages) the size array with its immediate.
     */
    private int endRequests() {
        int work = 0;
        while (endRequest < pullRequest && writes >= chunkEnd[slot(endRequest)] && downOut + 1 < down.sendDepth
                && failure == null) {
            int slot = slot(endRequest);
            long position = entryOf[slot];
            int n = buffersOf[slot];
            long size0 = RelayLayout.length(descs, RelayLayout.at(position));
            if (n == 1 && size0 < Integer.MAX_VALUE) {
                long e = Cts.at(position);
                Wr.send(down.wr[0], END, MemorySegment.NULL, MemorySegment.NULL, 0, opWriteImm, flagSignaled,
                        (int) size0, Cts.addr(fifo, e), Cts.rkey(fifo, e, 0));
            } else {
                long at = (long) slot * Cts.MAX_RECVS * 8;
                for (int i = 0; i < n; i++) {
                    sizesStaging.set(JAVA_LONG, at + 8L * i, RelayLayout.length(descs, RelayLayout.at(position + i)));
                }
                Wr.sge(down.sge[0], sizesStaging.address() + at, n * 8, down.controlMr.lkey());
                Wr.send(down.wr[0], END, MemorySegment.NULL, down.sge[0], 1, opWriteImm, flagSignaled,
                        RdmaSendWire.IMM_SIZES | n, downSizes + at, downSizesRkey);
            }
            if (!postDown("end of message")) {
                return work;
            }
            endRequest++;
            work++;
        }
        return work;
    }

    /** Tells the sender which requests' buffers are free: those whose chunks have all been read. */
    private int release() {
        while (released + 1 < pullRequest && readsDone >= chunkEnd[slot(released + 1)]) {
            released++;
        }
        if (released == doneSent || upOut + 1 >= up.sendDepth || failure != null) {
            return 0;
        }
        doneStaging.set(JAVA_LONG, 0, released);
        postUpWrite(0, doneStaging.address(), 8, upControl + RelayLayout.DONE_AT);
        if (!postUp(1, "done word")) {
            return 0;
        }
        doneSent = released;
        return 1;
    }

    private int pollUp() {
        int n = up.cq.poll(up.wcs, Endpoint.WC_BATCH);
        if (n < 0) {
            fail("ibv_poll_cq on " + up.device.name() + " failed: " + n);
            return 0;
        }
        for (int i = 0; i < n && failure == null; i++) {
            long wrId = Wr.wcWrId(up.wcs, i);
            upOut--;
            if (Wr.wcStatus(up.wcs, i) != wcSuccess) {
                failUpstream("towards the sender on " + up.device.name() + " failed: "
                        + up.device.verbs().wcStatusString(Wr.wcStatus(up.wcs, i)));
            } else if ((wrId & KIND) == READ) {
                readsDone++;
            } else if (wrId == Endpoint.PROBE_WR) {
                up.probeDone();
            }
        }
        return n;
    }

    private int pollDown() {
        int n = down.cq.poll(down.wcs, Endpoint.WC_BATCH);
        if (n < 0) {
            fail("ibv_poll_cq on " + down.device.name() + " failed: " + n);
            return 0;
        }
        for (int i = 0; i < n && failure == null; i++) {
            long wrId = Wr.wcWrId(down.wcs, i);
            downOut--;
            if (Wr.wcStatus(down.wcs, i) != wcSuccess) {
                fail("a write towards the receiver on " + down.device.name() + " failed: "
                        + down.device.verbs().wcStatusString(Wr.wcStatus(down.wcs, i))
                        + " (the receiver closed or died)");
            } else if ((wrId & KIND) == WRITE) {
                writesDone++;
            } else if (wrId == Endpoint.PROBE_WR) {
                down.probeDone();
            }
        }
        return n;
    }

    /** Both sides are probed while idle, so a peer that went away fails the pipe (see {@link Endpoint#idle}). */
    private void probe() {
        if (upOut + 1 < up.sendDepth) {
            int p = up.idle(upControl, upRkey);
            if (p > 0) {
                upOut++;
            } else if (p < 0) {
                fail("ibv_post_send (probe) on " + up.device.name() + " failed: " + Errno.describe(-p));
                return;
            }
        }
        if (downOut + 1 < down.sendDepth) {
            int p = down.idle(downSizes, downSizesRkey);
            if (p > 0) {
                downOut++;
            } else if (p < 0) {
                fail("ibv_post_send (probe) on " + down.device.name() + " failed: " + Errno.describe(-p));
            }
        }
    }

    private void postUpWrite(int w, long local, int bytes, long remote) {
        Wr.sge(up.sge[w], local, bytes, up.controlMr.lkey());
        Wr.send(up.wr[w], CONTROL, MemorySegment.NULL, up.sge[w], 1, opWrite, flagSignaled, 0, remote, upRkey);
        Wr.link(up.wr[w], MemorySegment.NULL);
    }

    private boolean postUp(int wrs, String what) {
        int rc = up.ops.postSend(up.qp.handle(), up.wr[0], up.badWr);
        if (rc != 0) {
            fail("ibv_post_send (" + what + ") on " + up.device.name() + " failed: " + Errno.describe(rc));
            return false;
        }
        upOut += wrs;
        return true;
    }

    private boolean postDown(String what) {
        Wr.link(down.wr[0], MemorySegment.NULL);
        int rc = down.ops.postSend(down.qp.handle(), down.wr[0], down.badWr);
        if (rc != 0) {
            fail("ibv_post_send (" + what + ") on " + down.device.name() + " failed: " + Errno.describe(rc));
            return false;
        }
        downOut++;
        return true;
    }

    private static int slot(long request) {
        return (int) ((request - 1) & (Cts.MAX_REQUESTS - 1));
    }

    /**
     * Fails the pipe from the receiver's side (or a local error): the sender learns it through the done word, given
     * a moment to arrive, then both queue pairs close.
     */
    private void fail(String why) {
        if (failure != null) {
            return;
        }
        failure = why;
        VerbsRelay.LOG.warn("jmesh relay: {} failed: {}", name, why);
        failDeadline = System.nanoTime() + FAIL_GRACE_NANOS;
        doneStaging.set(JAVA_LONG, 0, RelayLayout.FAILED | released);
        postUpWrite(0, doneStaging.address(), 8, upControl + RelayLayout.DONE_AT);
        if (up.ops.postSend(up.qp.handle(), up.wr[0], up.badWr) != 0) {
            close();
        } else {
            upOut++;                               // the failure word: closing waits for its completion
        }
    }

    /** The sender's side failed: nothing can reach it, so both queue pairs close at once. */
    private void failUpstream(String why) {
        if (failure == null) {
            failure = why;
            VerbsRelay.LOG.warn("jmesh relay: {}: a request {}", name, why);
        }
        close();
    }

    /** After a failure, waits for the failure word's write to complete (or the grace to pass), then closes. */
    private void drainAfterFailure() {
        int n = up.cq.poll(up.wcs, Endpoint.WC_BATCH);
        for (int i = 0; i < n; i++) {
            upOut--;
            if (Wr.wcStatus(up.wcs, i) != wcSuccess) {
                close();
                return;
            }
        }
        if (n < 0 || upOut <= 0 || System.nanoTime() - failDeadline > 0) {
            close();
        }
    }

    String failure() {
        return failure;
    }

    /** Synchronized: a relay closing down and its forwarder may both get here. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        CloseHelper.closeAll(e -> VerbsRelay.LOG.warn("jmesh relay: closing {}: {}", name, e.toString()), up, down,
                ringOwner);
    }

    @Override
    public String toString() {
        return name;
    }
}
