package io.jmesh.transport.rdma;

import io.jmesh.api.Status;
import io.jmesh.transport.verbs.Wr;
import io.jmesh.verbs.Errno;
import io.jmesh.verbs.ffi.verbs_h;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The sending half of a verbs connection, receiver-driven as NCCL's IB transport: the receiver RDMA-writes a
 * clear-to-send entry per posted buffer into this side's FIFO, and {@link #isend} answers {@link Status#NOT_READY}
 * until the entry for its message is there, so data is only written into a buffer that waits for it: no RNR stalls,
 * no copies. Data goes as unsignalled RDMA WRITEs; the last carries an immediate (the size, or a marker when the
 * sizes go into the receiver's size array for grouped receives and very large messages) and is the message's only
 * signalled request. Up to {@link Cts#MAX_REQUESTS} messages are in flight.
 *
 * <p>One thread calls {@link #isend} and {@link #test}. Nothing here allocates, locks, or throws on the normal path:
 * results are request ids (>= 0) or {@link Status} codes.
 */
public final class RdmaSender implements io.jmesh.api.Sender {
    static final long SIZES_BYTES = (long) Cts.MAX_REQUESTS * Cts.MAX_RECVS * 8;
    static final long CONTROL_BYTES = Cts.FIFO_BYTES + SIZES_BYTES;
    /** Immediate meaning "read the sizes from the size array"; a plain immediate is a size below 2^31. */
    static final int IMM_SIZES = 0x80000000;

    private final Endpoint ep;
    private final long peerSizesAddress;
    private final int peerSizesRkey;
    private final MemorySegment fifo;
    private final MemorySegment sizesStaging;
    private final long sizesStagingAddress;
    private final int controlLkey;
    private final int opWrite = verbs_h.IBV_WR_RDMA_WRITE();
    private final int opWriteImm = verbs_h.IBV_WR_RDMA_WRITE_WITH_IMM();
    private final int flagSignaled = verbs_h.IBV_SEND_SIGNALED();
    private final int wcSuccess = verbs_h.IBV_WC_SUCCESS();

    // per slot * MAX_RECVS + entry: what isend was given, until the slot's last write completes and is reported
    private final long[] addr = new long[Cts.MAX_REQUESTS * Cts.MAX_RECVS];
    private final long[] size = new long[Cts.MAX_REQUESTS * Cts.MAX_RECVS];
    private final long[] remoteAddr = new long[Cts.MAX_REQUESTS * Cts.MAX_RECVS];
    private final int[] remoteKey = new int[Cts.MAX_REQUESTS * Cts.MAX_RECVS];
    private final int[] lkey = new int[Cts.MAX_REQUESTS * Cts.MAX_RECVS];
    private final int[] matched = new int[Cts.MAX_REQUESTS];
    private final int[] nreqs = new int[Cts.MAX_REQUESTS];
    private final int[] wrCount = new int[Cts.MAX_REQUESTS];
    private final int[] unreported = new int[Cts.MAX_REQUESTS];
    /** Per slot, the entries whose completion {@link #test} has already reported. */
    private final int[] reported = new int[Cts.MAX_REQUESTS];
    private final boolean[] posted = new boolean[Cts.MAX_REQUESTS];
    private final boolean[] complete = new boolean[Cts.MAX_REQUESTS];
    private long head;
    /** Sequence of the next fully matched slot to post: slots are posted strictly in order (see drainPosts). */
    private long nextPost;
    private int outstandingWrs;
    private volatile String error;
    private boolean closed;

    RdmaSender(Endpoint ep, long peerSizesAddress, int peerSizesRkey) {
        this.ep = ep;
        this.peerSizesAddress = peerSizesAddress;
        this.peerSizesRkey = peerSizesRkey;
        this.fifo = ep.control.asSlice(0, Cts.FIFO_BYTES);
        this.sizesStaging = ep.control.asSlice(Cts.FIFO_BYTES, SIZES_BYTES);
        this.sizesStagingAddress = sizesStaging.address();
        this.controlLkey = ep.controlMr.lkey();
    }

    @Override
    public int isend(io.jmesh.api.Registration registration, long offset, long length, int tag) {
        if (!(registration instanceof RdmaRegistration r) || !r.contains(offset, length)) {
            return Status.BAD_ARGUMENT;
        }
        return isend(r.address + offset, length, r.lkey(ep.deviceIndex), tag);
    }

    /**
     * Sends [address, address + length) registered with {@code lkey} to the receive buffer posted with {@code tag}.
     *
     * @return a request id for {@link #test}, or {@link Status#NOT_READY} (no matching clear-to-send yet: call again),
     *         {@link Status#TRUNCATED}, {@link Status#FAILED}, {@link Status#BAD_ARGUMENT}, {@link Status#CLOSED}
     */
    public int isend(long address, long length, int lkey, int tag) {
        if (error != null) {
            return Status.FAILED;
        }
        if (closed) {
            return Status.CLOSED;
        }
        if (length < 0) {
            return Status.BAD_ARGUMENT;
        }
        int slot = (int) (head & (Cts.MAX_REQUESTS - 1));
        if (posted[slot]) {
            progress();          // the previous message in this slot is not reported yet, or waits for queue room
            return Status.NOT_READY;
        }
        long seq = head + 1;
        long e0 = Cts.entry(slot, 0);
        if (Cts.seq(fifo, e0) != seq) {
            return waitForCts();
        }
        int n = Cts.nreqs(fifo, e0);
        if (n < 1 || n > Cts.MAX_RECVS) {
            return fail("the receiver sent a clear-to-send for " + n + " buffers (1.." + Cts.MAX_RECVS + " allowed)");
        }
        int match = -1;
        for (int i = 0; i < n; i++) {
            long e = Cts.entry(slot, i);
            if (Cts.seq(fifo, e) != seq) {
                return waitForCts();
            }
            if (match < 0 && (matched[slot] & (1 << i)) == 0 && Cts.tag(fifo, e) == tag) {
                match = i;
            }
        }
        if (match < 0) {
            return waitForCts();
        }
        long e = Cts.entry(slot, match);
        if (length > Cts.size(fifo, e)) {
            return Status.TRUNCATED;
        }
        int k = slot * Cts.MAX_RECVS + match;
        addr[k] = address;
        size[k] = length;
        this.lkey[k] = lkey;
        remoteAddr[k] = Cts.addr(fifo, e);
        remoteKey[k] = Cts.rkey(fifo, e);
        matched[slot] |= 1 << match;
        nreqs[slot] = n;
        if (Integer.bitCount(matched[slot]) == n) {
            posted[slot] = true;
            unreported[slot] = n;
            head++;
            drainPosts();
        }
        return k;
    }

    /**
     * The answer while no clear-to-send matches yet: polls, so that a waiting sender runs its liveness probe and
     * notices a receiver that died or closed (see {@link Endpoint#idle}).
     */
    private int waitForCts() {
        progress();
        return error != null ? Status.FAILED : Status.NOT_READY;
    }

    private int chunks(long bytes) {
        return bytes == 0 ? 0 : (int) ((bytes + ep.maxMessage - 1) / ep.maxMessage);
    }

    /**
     * Posts fully matched slots in order while the send queue has room. Order matters: the receiver's posted
     * receives take the immediates in arrival order, so slot s+1 must never overtake slot s.
     */
    private void drainPosts() {
        while (nextPost < head && error == null) {
            if (!post((int) (nextPost & (Cts.MAX_REQUESTS - 1)))) {
                return;
            }
            nextPost++;
        }
    }

    /** Posts every write of a fully matched slot, or returns false when the send queue has no room for them yet. */
    private boolean post(int slot) {
        int n = nreqs[slot];
        int base = slot * Cts.MAX_RECVS;
        boolean inlineSize = n == 1 && size[base] < Integer.MAX_VALUE;
        int total = inlineSize ? Math.max(1, chunks(size[base])) : 1;
        if (!inlineSize) {
            for (int i = 0; i < n; i++) {
                total += chunks(size[base + i]);
            }
        }
        if (total > ep.sendDepth) {
            fail("a message needs " + total + " work requests, more than the send queue's " + ep.sendDepth
                    + " (messages are cut into " + ep.maxMessage + "-byte writes): send it in smaller parts");
            return false;
        }
        if (outstandingWrs + total > ep.sendDepth) {
            return false;
        }
        int w = 0;
        for (int i = 0; i < n; i++) {
            int k = base + i;
            long done = 0;
            long len = size[k];
            while (done < len || (inlineSize && len == 0 && done == 0)) {
                long chunk = Math.min(ep.maxMessage, len - done);
                boolean last = inlineSize && done + chunk == len;
                Wr.sge(ep.sge[w], addr[k] + done, (int) chunk, lkey[k]);
                Wr.send(ep.wr[w], slot, MemorySegment.NULL, ep.sge[w], chunk == 0 ? 0 : 1,
                        last ? opWriteImm : opWrite, last ? flagSignaled : 0, last ? (int) len : 0,
                        remoteAddr[k] + done, remoteKey[k]);
                done += chunk;
                if ((w = flush(w)) < 0) {
                    return true;
                }
                if (last) {
                    break;
                }
            }
        }
        if (!inlineSize) {
            for (int i = 0; i < n; i++) {
                sizesStaging.setAtIndex(JAVA_LONG, base + i, size[base + i]);
            }
            Wr.sge(ep.sge[w], sizesStagingAddress + base * 8L, n * 8, controlLkey);
            Wr.send(ep.wr[w], slot, MemorySegment.NULL, ep.sge[w], 1, opWriteImm, flagSignaled, IMM_SIZES | n,
                    peerSizesAddress + base * 8L, peerSizesRkey);
            w = flush(w);
        }
        if (w > 0) {
            postChain(w);
        }
        wrCount[slot] = total;
        outstandingWrs += total;
        return true;
    }

    /** Links WR w to the chain; posts the chain when the scratch is full. Returns the next index, or -1 on failure. */
    private int flush(int w) {
        if (w > 0) {
            Wr.link(ep.wr[w - 1], ep.wr[w]);
        }
        w++;
        if (w == Endpoint.SCRATCH_WRS) {
            if (!postChain(w)) {
                return -1;
            }
            return 0;
        }
        return w;
    }

    private boolean postChain(int count) {
        Wr.link(ep.wr[count - 1], MemorySegment.NULL);
        int rc = ep.ops.postSend(ep.qp.handle(), ep.wr[0], ep.badWr);
        if (rc != 0) {
            fail("ibv_post_send on " + ep.device.name() + " failed: " + Errno.describe(rc));
            return false;
        }
        return true;
    }

    /**
     * Polls for progress and reports on one request.
     *
     * @return 1 when the request is complete (its size is {@link #size(int)}), 0 while in flight, or a {@link Status}
     */
    @Override
    public int test(int request) {
        if (closed) {
            return Status.CLOSED;
        }
        if (request < 0 || request >= Cts.MAX_REQUESTS * Cts.MAX_RECVS) {
            return Status.BAD_ARGUMENT;
        }
        int slot = request / Cts.MAX_RECVS;
        int bit = 1 << (request % Cts.MAX_RECVS);
        if ((matched[slot] & bit) == 0 || (reported[slot] & bit) != 0) {
            return Status.BAD_ARGUMENT; // never sent, or already reported
        }
        if (!complete[slot] && error == null) {
            progress();
        }
        if (!complete[slot]) {
            return error != null ? Status.FAILED : 0;
        }
        reported[slot] |= bit;
        if (--unreported[slot] == 0) {
            posted[slot] = false;
            complete[slot] = false;
            matched[slot] = 0;
            reported[slot] = 0;
        }
        return 1;
    }

    /** The size sent by a completed request. */
    @Override
    public long size(int request) {
        return size[request];
    }

    /** Reads completions; retries a slot that waited for send-queue room. */
    void progress() {
        if (closed || error != null) {
            return;
        }
        int n = ep.cq.poll(ep.wcs, Endpoint.WC_BATCH);
        if (n < 0) {
            fail("ibv_poll_cq on " + ep.device.name() + " failed: " + n);
            return;
        }
        if (n == 0) {
            probeIfIdle();
        }
        for (int i = 0; i < n; i++) {
            int status = Wr.wcStatus(ep.wcs, i);
            long wrId = Wr.wcWrId(ep.wcs, i);
            if (status != wcSuccess) {
                fail((wrId == Endpoint.PROBE_WR ? "the peer stopped answering: a liveness probe on "
                        : "a send on ") + ep.device.name() + " failed: " + ep.device.verbs().wcStatusString(status)
                        + " (the peer died, closed, or is unreachable)");
                return;
            }
            if (wrId == Endpoint.PROBE_WR) {
                ep.probeDone();
                outstandingWrs--;
                continue;
            }
            int slot = (int) wrId;
            if (slot >= 0 && slot < Cts.MAX_REQUESTS) {
                complete[slot] = true;
                outstandingWrs -= wrCount[slot];
            }
        }
        drainPosts();
    }

    /** Lets the endpoint probe the peer while nothing completes; the probe holds a send-queue entry meanwhile. */
    private void probeIfIdle() {
        if (outstandingWrs >= ep.sendDepth) {
            return;      // the queue is full of writes: their completions (or failures) will come
        }
        int p = ep.idle(peerSizesAddress, peerSizesRkey);
        if (p > 0) {
            outstandingWrs++;
        } else if (p < 0) {
            fail("ibv_post_send (liveness probe) on " + ep.device.name() + " failed: " + Errno.describe(-p));
        }
    }

    private int fail(String why) {
        if (error == null) {
            error = why;
        }
        return Status.FAILED;
    }

    /** Why the connection failed, or null. */
    @Override
    public String error() {
        return error;
    }

    /** The device this connection runs on: register its buffers there ({@link RdmaProvider#register}). */
    public String device() {
        return ep.device.name();
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            ep.close();
        }
    }
}
