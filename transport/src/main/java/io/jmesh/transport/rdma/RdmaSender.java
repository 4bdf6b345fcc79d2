package io.jmesh.transport.rdma;

import io.jmesh.api.RemoteRegion;
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
 * no copies. Data goes as unsignalled RDMA WRITEs; the last write on each rail carries an immediate (the size, or a
 * marker when the sizes go into the receiver's size array for grouped receives and very large messages) and is the
 * rail's only signalled request for the message. Up to {@link Cts#MAX_REQUESTS} messages are in flight.
 *
 * <p>A connection has one or more rails (queue pairs), on one link or on several links joining the same two nodes:
 * each message is cut into one contiguous slice per rail, so all rails carry data at once. Rail 0 also carries the
 * flow control and the one-sided {@link #write}/{@link #read} operations.
 *
 * <p>One thread calls {@link #isend}, {@link #write}, {@link #read} and {@link #test}. Nothing here allocates,
 * locks, or throws on the normal path: results are request ids (>= 0) or {@link Status} codes.
 */
public final class RdmaSender implements io.jmesh.api.Sender {
    static final long SIZES_BYTES = (long) Cts.MAX_REQUESTS * Cts.MAX_RECVS * 8;
    static final long CONTROL_BYTES = Cts.FIFO_BYTES + SIZES_BYTES;
    /** Immediate meaning "read the sizes from the size array"; a plain immediate is a size below 2^31. */
    static final int IMM_SIZES = 0x80000000;
    /** Slices are cut at this alignment, so a small message stays on rail 0. */
    static final long SLICE_ALIGN = 4096;
    /** Request ids of one-sided operations start here, above every send's id. */
    static final int ONE_SIDED_BASE = Cts.MAX_REQUESTS * Cts.MAX_RECVS;
    static final int ONE_SIDED_SLOTS = 32;
    /** wr_id bit of one-sided operations. */
    private static final long ONE_SIDED_WR = 1L << 32;

    private final Endpoint[] rails;
    private final int nrails;
    private final Endpoint ep;
    private final long peerSizesAddress;
    private final int peerSizesRkey;
    /** The peer's device index of rail 0: which key of a peer's {@link RemoteRegion} this connection uses. */
    private final int peerKeyIndex;
    private final MemorySegment fifo;
    private final MemorySegment sizesStaging;
    private final long sizesStagingAddress;
    private final int controlLkey;
    private final java.util.function.Consumer<AutoCloseable> onClose;
    private final int opWrite = verbs_h.IBV_WR_RDMA_WRITE();
    private final int opWriteImm = verbs_h.IBV_WR_RDMA_WRITE_WITH_IMM();
    private final int opRead = verbs_h.IBV_WR_RDMA_READ();
    private final int flagSignaled = verbs_h.IBV_SEND_SIGNALED();
    private final int wcSuccess = verbs_h.IBV_WC_SUCCESS();

    // per slot * MAX_RECVS + entry: what isend was given, until the slot's last write completes and is reported
    private final long[] addr = new long[Cts.MAX_REQUESTS * Cts.MAX_RECVS];
    private final long[] size = new long[Cts.MAX_REQUESTS * Cts.MAX_RECVS];
    private final long[] remoteAddr = new long[Cts.MAX_REQUESTS * Cts.MAX_RECVS];
    /** per (slot * MAX_RECVS + entry) * MAX_RAILS + rail: the buffer's rkey on that rail's device */
    private final int[] remoteKey = new int[Cts.MAX_REQUESTS * Cts.MAX_RECVS * Cts.MAX_RAILS];
    /** per (slot * MAX_RECVS + entry) * MAX_RAILS + rail: the local buffer's lkey on that rail's device */
    private final int[] lkey = new int[Cts.MAX_REQUESTS * Cts.MAX_RECVS * Cts.MAX_RAILS];
    private final int[] matched = new int[Cts.MAX_REQUESTS];
    private final int[] nreqs = new int[Cts.MAX_REQUESTS];
    /** per slot * MAX_RAILS + rail: work requests a posted message holds in that rail's send queue */
    private final int[] wrCount = new int[Cts.MAX_REQUESTS * Cts.MAX_RAILS];
    /** per slot: rails whose signalled write has not completed yet */
    private final int[] pendingRails = new int[Cts.MAX_REQUESTS];
    private final int[] unreported = new int[Cts.MAX_REQUESTS];
    /** Per slot, the entries whose completion {@link #test} has already reported. */
    private final int[] reported = new int[Cts.MAX_REQUESTS];
    private final boolean[] posted = new boolean[Cts.MAX_REQUESTS];
    private final boolean[] complete = new boolean[Cts.MAX_REQUESTS];
    /** per rail: work requests posted and not yet known complete */
    private final int[] outstandingWrs;
    /** per rail: scratch work request count of the message being posted */
    private final int[] railWrs;

    // one-sided operations, a ring of ONE_SIDED_SLOTS on rail 0
    private final boolean[] osBusy = new boolean[ONE_SIDED_SLOTS];
    private final boolean[] osComplete = new boolean[ONE_SIDED_SLOTS];
    private final long[] osSize = new long[ONE_SIDED_SLOTS];
    private final int[] osWrs = new int[ONE_SIDED_SLOTS];
    private int osHead;

    private long head;
    /** Ring position of the first clear-to-send entry of request {@code head} (see {@link Cts}). */
    private long entryTail;
    /** Sequence of the next fully matched slot to post: slots are posted strictly in order (see drainPosts). */
    private long nextPost;
    private volatile String error;
    private boolean closed;

    /**
     * @param rails            the connection's queue pairs, connected; rail 0 holds the CTS FIFO; the sender owns them
     * @param peerSizesAddress the receiver's size array (on its rail 0 device)
     * @param peerKeyIndex     the peer's device index of rail 0
     * @param onClose          run once when the sender closes (the provider forgets it)
     */
    RdmaSender(Endpoint[] rails, long peerSizesAddress, int peerSizesRkey, int peerKeyIndex,
                java.util.function.Consumer<AutoCloseable> onClose) {
        this.rails = rails.clone();
        this.nrails = rails.length;
        this.ep = rails[0];
        this.peerSizesAddress = peerSizesAddress;
        this.peerSizesRkey = peerSizesRkey;
        this.peerKeyIndex = peerKeyIndex;
        this.onClose = onClose;
        this.fifo = ep.control.asSlice(0, Cts.FIFO_BYTES);
        this.sizesStaging = ep.control.asSlice(Cts.FIFO_BYTES, SIZES_BYTES);
        this.sizesStagingAddress = sizesStaging.address();
        this.controlLkey = ep.controlMr.lkey();
        this.outstandingWrs = new int[nrails];
        this.railWrs = new int[nrails];
    }

    /** Queue pairs this connection splits its messages across. */
    public int rails() {
        return nrails;
    }

    @Override
    public int isend(io.jmesh.api.Registration registration, long offset, long length, int tag) {
        if (!(registration instanceof RdmaRegistration r) || !r.contains(offset, length)) {
            return Status.BAD_ARGUMENT;
        }
        int k = match(length, tag);
        if (k < 0) {
            return k;
        }
        addr[k] = r.address + offset;
        for (int rail = 0; rail < nrails; rail++) {
            lkey[k * Cts.MAX_RAILS + rail] = r.lkey(rails[rail].deviceIndex);
        }
        return accept(k);
    }

    /**
     * Sends [address, address + length) registered with {@code lkey} to the receive buffer posted with {@code tag}.
     * Only for a connection of one rail, or several rails on one device (the key is the same on all of them).
     *
     * @return a request id for {@link #test}, or {@link Status#NOT_READY} (no matching clear-to-send yet: call again),
     *         {@link Status#TRUNCATED}, {@link Status#FAILED}, {@link Status#BAD_ARGUMENT}, {@link Status#CLOSED}
     */
    public int isend(long address, long length, int lkey, int tag) {
        int k = match(length, tag);
        if (k < 0) {
            return k;
        }
        addr[k] = address;
        for (int rail = 0; rail < nrails; rail++) {
            this.lkey[k * Cts.MAX_RAILS + rail] = lkey;
        }
        return accept(k);
    }

    /** Finds the clear-to-send entry for {@code tag}; returns its index k, or a status. Changes nothing. */
    private int match(long length, int tag) {
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
        long e0 = Cts.at(entryTail);
        if (Cts.seq(fifo, e0) != seq) {
            return waitForCts();
        }
        int n = Cts.nreqs(fifo, e0);
        if (n < 1 || n > Cts.MAX_RECVS) {
            return fail("the receiver sent a clear-to-send for " + n + " buffers (1.." + Cts.MAX_RECVS + " allowed)");
        }
        int match = -1;
        for (int i = 0; i < n; i++) {
            long e = Cts.at(entryTail + i);
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
        if (length > Cts.size(fifo, Cts.at(entryTail + match))) {
            return Status.TRUNCATED;
        }
        int k = slot * Cts.MAX_RECVS + match;
        size[k] = length;
        nreqs[slot] = n;
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

    /** Takes the matched entry k (its address and keys are set), and posts the slot once all its entries are. */
    private int accept(int k) {
        int slot = k / Cts.MAX_RECVS;
        long e = Cts.at(entryTail + k % Cts.MAX_RECVS);
        remoteAddr[k] = Cts.addr(fifo, e);
        for (int rail = 0; rail < nrails; rail++) {
            remoteKey[k * Cts.MAX_RAILS + rail] = Cts.rkey(fifo, e, rail);
        }
        matched[slot] |= 1 << (k % Cts.MAX_RECVS);
        if (Integer.bitCount(matched[slot]) == nreqs[slot]) {
            posted[slot] = true;
            unreported[slot] = nreqs[slot];
            entryTail += nreqs[slot];
            head++;
            drainPosts();
        }
        return k;
    }

    private int chunks(long bytes, long maxMessage) {
        return bytes == 0 ? 0 : (int) ((bytes + maxMessage - 1) / maxMessage);
    }

    /** Bytes of each rail's slice of a {@code len}-byte buffer: whole multiples of SLICE_ALIGN, the rest last. */
    private long sliceBytes(long len) {
        if (nrails == 1) {
            return len;
        }
        long per = (len + nrails - 1) / nrails;
        return (per + SLICE_ALIGN - 1) & -SLICE_ALIGN;
    }

    /**
     * Posts fully matched slots in order while the send queues have room. Order matters: the receiver's posted
     * receives take the immediates in arrival order, so slot s+1 must never overtake slot s on any rail.
     */
    private void drainPosts() {
        while (nextPost < head && error == null) {
            if (!post((int) (nextPost & (Cts.MAX_REQUESTS - 1)))) {
                return;
            }
            nextPost++;
        }
    }

    /** Posts every write of a fully matched slot, or returns false when a send queue has no room for them yet. */
    private boolean post(int slot) {
        int n = nreqs[slot];
        int base = slot * Cts.MAX_RECVS;
        boolean inlineSize = n == 1 && size[base] < Integer.MAX_VALUE;
        for (int rail = 0; rail < nrails; rail++) {
            long max = rails[rail].maxMessage;
            int data = 0;
            for (int i = 0; i < n; i++) {
                long slice = sliceBytes(size[base + i]);
                long from = Math.min(size[base + i], slice * rail);
                data += chunks(Math.min(size[base + i], from + slice) - from, max);
            }
            // the immediate rides on the last data write of a single message; otherwise it is a request of its own
            int total = inlineSize ? Math.max(1, data) : data + 1;
            if (total > rails[rail].sendDepth) {
                fail("a message needs " + total + " work requests, more than the send queue's "
                        + rails[rail].sendDepth + " (messages are cut into " + max + "-byte writes): send it in "
                        + "smaller parts");
                return false;
            }
            if (outstandingWrs[rail] + total > rails[rail].sendDepth) {
                return false;
            }
            railWrs[rail] = total;
        }
        if (!inlineSize) {
            for (int i = 0; i < n; i++) {
                sizesStaging.setAtIndex(JAVA_LONG, base + i, size[base + i]);
            }
        }
        for (int rail = 0; rail < nrails && error == null; rail++) {
            postRail(slot, rail, n, base, inlineSize);
        }
        for (int rail = 0; rail < nrails; rail++) {
            wrCount[slot * Cts.MAX_RAILS + rail] = railWrs[rail];
            outstandingWrs[rail] += railWrs[rail];
        }
        pendingRails[slot] = nrails;
        return true;
    }

    /**
     * Posts one rail's share of a slot: unsignalled writes of its slice of each buffer, and one signalled write with
     * the immediate: the slice's last write for a single message, else a write of its own (on rail 0 of a grouped
     * message, the size array; elsewhere zero bytes).
     */
    private void postRail(int slot, int rail, int n, int base, boolean inlineSize) {
        Endpoint r = rails[rail];
        long max = r.maxMessage;
        int imm = inlineSize ? (int) size[base] : IMM_SIZES | n;
        boolean immSent = false;
        int w = 0;
        for (int i = 0; i < n; i++) {
            int k = base + i;
            long len = size[k];
            long slice = sliceBytes(len);
            long from = Math.min(len, slice * rail);
            long to = Math.min(len, from + slice);
            int key = remoteKey[k * Cts.MAX_RAILS + rail];
            int local = lkey[k * Cts.MAX_RAILS + rail];
            for (long done = from; done < to; done += max) {
                long chunk = Math.min(max, to - done);
                boolean last = inlineSize && done + chunk == to;
                Wr.sge(r.sge[w], addr[k] + done, (int) chunk, local);
                Wr.send(r.wr[w], slot, MemorySegment.NULL, r.sge[w], 1, last ? opWriteImm : opWrite,
                        last ? flagSignaled : 0, last ? imm : 0, remoteAddr[k] + done, key);
                immSent |= last;
                if ((w = next(r, w)) < 0) {
                    return;
                }
            }
        }
        if (!immSent) {
            if (!inlineSize && rail == 0) {
                Wr.sge(r.sge[w], sizesStagingAddress + base * 8L, n * 8, controlLkey);
                Wr.send(r.wr[w], slot, MemorySegment.NULL, r.sge[w], 1, opWriteImm, flagSignaled, imm,
                        peerSizesAddress + base * 8L, peerSizesRkey);
            } else {
                Wr.send(r.wr[w], slot, MemorySegment.NULL, MemorySegment.NULL, 0, opWriteImm, flagSignaled, imm,
                        remoteAddr[base], remoteKey[base * Cts.MAX_RAILS + rail]);
            }
            w = next(r, w);
        }
        if (w > 0) {
            postChain(r, w);
        }
    }

    /** Links WR w to the chain; posts the chain when the scratch is full. Returns the next index, or -1 on failure. */
    private int next(Endpoint r, int w) {
        if (w > 0) {
            Wr.link(r.wr[w - 1], r.wr[w]);
        }
        w++;
        if (w == Endpoint.SCRATCH_WRS) {
            return postChain(r, w) ? 0 : -1;
        }
        return w;
    }

    private boolean postChain(Endpoint r, int count) {
        Wr.link(r.wr[count - 1], MemorySegment.NULL);
        int rc = r.ops.postSend(r.qp.handle(), r.wr[0], r.badWr);
        if (rc != 0) {
            fail("ibv_post_send on " + r.device.name() + " failed: " + Errno.describe(rc));
            return false;
        }
        return true;
    }

    @Override
    public int write(io.jmesh.api.Registration local, long localOffset, long length, RemoteRegion remote,
                     long remoteOffset) {
        return oneSided(opWrite, local, localOffset, length, remote, remoteOffset);
    }

    @Override
    public int read(io.jmesh.api.Registration local, long localOffset, long length, RemoteRegion remote,
                    long remoteOffset) {
        return oneSided(opRead, local, localOffset, length, remote, remoteOffset);
    }

    /** A one-sided RDMA WRITE or READ on rail 0: unsignalled pieces, the last one signalled. */
    private int oneSided(int opcode, io.jmesh.api.Registration local, long localOffset, long length,
                         RemoteRegion remote, long remoteOffset) {
        if (error != null) {
            return Status.FAILED;
        }
        if (closed) {
            return Status.CLOSED;
        }
        if (!(local instanceof RdmaRegistration r) || !r.contains(localOffset, length) || remote == null
                || !remote.provider().equals("rdma") || !remote.contains(remoteOffset, length)
                || peerKeyIndex >= remote.keyCount()) {
            return Status.BAD_ARGUMENT;
        }
        int k = osHead;
        if (osBusy[k]) {
            progress();
            return Status.NOT_READY;
        }
        int pieces = Math.max(1, chunks(length, ep.maxMessage));
        if (pieces > ep.sendDepth) {
            return Status.BAD_ARGUMENT;
        }
        if (outstandingWrs[0] + pieces > ep.sendDepth) {
            progress();
            return Status.NOT_READY;
        }
        int lk = r.lkey(ep.deviceIndex);
        int rk = remote.key(peerKeyIndex);
        long from = r.address + localOffset;
        long to = remote.address() + remoteOffset;
        int w = 0;
        long done = 0;
        do {
            long chunk = Math.min(ep.maxMessage, length - done);
            boolean last = done + chunk == length;
            Wr.sge(ep.sge[w], from + done, (int) chunk, lk);
            Wr.send(ep.wr[w], ONE_SIDED_WR | k, MemorySegment.NULL, ep.sge[w], chunk == 0 ? 0 : 1, opcode,
                    last ? flagSignaled : 0, 0, to + done, rk);
            done += chunk;
            if (w > 0) {
                Wr.link(ep.wr[w - 1], ep.wr[w]);
            }
            w++;
            if (w == Endpoint.SCRATCH_WRS || last) {
                if (!postChain(ep, w)) {
                    return Status.FAILED;
                }
                w = 0;
            }
        } while (done < length);
        osBusy[k] = true;
        osComplete[k] = false;
        osSize[k] = length;
        osWrs[k] = pieces;
        outstandingWrs[0] += pieces;
        osHead = (k + 1) & (ONE_SIDED_SLOTS - 1);
        return ONE_SIDED_BASE + k;
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
        if (request >= ONE_SIDED_BASE && request < ONE_SIDED_BASE + ONE_SIDED_SLOTS) {
            return testOneSided(request - ONE_SIDED_BASE);
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

    private int testOneSided(int k) {
        if (!osBusy[k]) {
            return Status.BAD_ARGUMENT;
        }
        if (!osComplete[k] && error == null) {
            progress();
        }
        if (!osComplete[k]) {
            return error != null ? Status.FAILED : 0;
        }
        osBusy[k] = false;
        osComplete[k] = false;
        return 1;
    }

    /** The size sent, written or read by a completed request. */
    @Override
    public long size(int request) {
        if (request >= ONE_SIDED_BASE && request < ONE_SIDED_BASE + ONE_SIDED_SLOTS) {
            return osSize[request - ONE_SIDED_BASE];
        }
        return size[request];
    }

    /** Reads completions on every rail; retries a slot that waited for send-queue room. */
    void progress() {
        if (closed || error != null) {
            return;
        }
        for (int rail = 0; rail < nrails; rail++) {
            Endpoint r = rails[rail];
            int n = r.cq.poll(r.wcs, Endpoint.WC_BATCH);
            if (n < 0) {
                fail("ibv_poll_cq on " + r.device.name() + " failed: " + n);
                return;
            }
            if (n == 0 && rail == 0) {
                probeIfIdle();
            }
            for (int i = 0; i < n; i++) {
                int status = Wr.wcStatus(r.wcs, i);
                long wrId = Wr.wcWrId(r.wcs, i);
                if (status != wcSuccess) {
                    fail((wrId == Endpoint.PROBE_WR ? "the peer stopped answering: a liveness probe on "
                            : (wrId & ONE_SIDED_WR) != 0 ? "a one-sided operation on " : "a send on ")
                            + r.device.name() + " failed: " + r.device.verbs().wcStatusString(status)
                            + ((wrId & ONE_SIDED_WR) != 0 ? " (a remote region that is closed or was never "
                            + "registered there gives REM_ACCESS_ERR; otherwise " : " (")
                            + "the peer died, closed, or is unreachable)");
                    return;
                }
                if (wrId == Endpoint.PROBE_WR) {
                    r.probeDone();
                    outstandingWrs[0]--;
                    continue;
                }
                if ((wrId & ONE_SIDED_WR) != 0) {
                    int k = (int) wrId & (ONE_SIDED_SLOTS - 1);
                    osComplete[k] = true;
                    outstandingWrs[0] -= osWrs[k];
                    continue;
                }
                int slot = (int) wrId;
                if (slot >= 0 && slot < Cts.MAX_REQUESTS) {
                    outstandingWrs[rail] -= wrCount[slot * Cts.MAX_RAILS + rail];
                    if (--pendingRails[slot] == 0) {
                        complete[slot] = true;
                    }
                }
            }
        }
        drainPosts();
    }

    /** Lets rail 0 probe the peer while nothing completes; the probe holds a send-queue entry meanwhile. */
    private void probeIfIdle() {
        if (outstandingWrs[0] >= ep.sendDepth) {
            return;      // the queue is full of writes: their completions (or failures) will come
        }
        int p = ep.idle(peerSizesAddress, peerSizesRkey);
        if (p > 0) {
            outstandingWrs[0]++;
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

    /** The device of rail 0: register buffers there ({@link RdmaProvider#register}). */
    public String device() {
        return ep.device.name();
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            RdmaReceiver.closeRails(rails);
            onClose.accept(this);
        }
    }
}
