package io.jmesh.transport.rdma;

import io.jmesh.api.Status;
import io.jmesh.transport.verbs.Wr;
import io.jmesh.verbs.Errno;
import io.jmesh.verbs.ffi.verbs_h;

import java.lang.foreign.MemorySegment;
import java.util.function.Supplier;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The receiving half of a verbs connection. {@link #irecv} posts up to {@link Cts#MAX_RECVS} buffers as one grouped
 * receive: it posts a zero-length receive on every rail to catch the sender's writes-with-immediate and RDMA-writes
 * one clear-to-send entry per buffer (address, size, tag, an rkey per rail) into the sender's FIFO over rail 0,
 * signalling only every 16th such write. The entries are written when the receive is posted; only a receive posted
 * with {@link io.jmesh.api.Receiver#MORE} lets them wait, so that receives posted in a row leave in one write. Never
 * later on the receiver's own initiative: a thread that posts receives and then drives only a sender never calls
 * {@link #test}, and the peer's sender would wait for entries nobody writes. {@link #test} reports the real received
 * sizes, from the immediate or from the size array the sender wrote for grouped receives, once every rail has
 * delivered its slice.
 *
 * <p>{@link #iflush} reads one byte of each received buffer by RDMA READ through a queue pair connected to itself,
 * made on first use: the NIC answers the read only after its earlier writes into that memory have landed.
 *
 * <p>One thread calls {@link #irecv}, {@link #iflush} and {@link #test}. Nothing here allocates, locks, or throws on
 * the normal path.
 */
public final class RdmaReceiver implements io.jmesh.api.Receiver {
    static final long SIZES_BYTES = (long) Cts.MAX_REQUESTS * Cts.MAX_RECVS * 8;
    static final long CONTROL_BYTES = Cts.FIFO_BYTES + SIZES_BYTES;
    /** Request ids of flushes start here, above every receive's id. */
    static final int FLUSH_BASE = Cts.MAX_REQUESTS;
    static final int FLUSH_SLOTS = 32;
    /** The flush queue pair's control region: where the flush reads land, one 64-byte cell per buffer. */
    static final long FLUSH_BYTES = (long) FLUSH_SLOTS * Cts.MAX_RECVS * 64;
    /** wr_id bit of clear-to-send writes, whose completions only free send-queue entries. */
    private static final long CTS_WR = 1L << 32;
    private static final int SIGNAL_EVERY = 16;

    private final Endpoint[] rails;
    private final int nrails;
    private final Endpoint ep;
    private final long peerFifoAddress;
    private final int peerFifoRkey;
    private final MemorySegment staging;
    private final MemorySegment sizes;
    private final int controlLkey;
    private final Supplier<Endpoint> flushFactory;
    private final java.util.function.Consumer<AutoCloseable> onClose;
    private final int opWrite = verbs_h.IBV_WR_RDMA_WRITE();
    private final int opRead = verbs_h.IBV_WR_RDMA_READ();
    private final int opRecvImm = verbs_h.IBV_WC_RECV_RDMA_WITH_IMM();
    private final int flagSignaled = verbs_h.IBV_SEND_SIGNALED();
    private final int wcSuccess = verbs_h.IBV_WC_SUCCESS();

    private final int[] nreqs = new int[Cts.MAX_REQUESTS];
    private final long[] received = new long[Cts.MAX_REQUESTS * Cts.MAX_RECVS];
    private final boolean[] busy = new boolean[Cts.MAX_REQUESTS];
    private final boolean[] complete = new boolean[Cts.MAX_REQUESTS];
    /** per slot: rails whose write-with-immediate has not arrived yet */
    private final int[] pendingRails = new int[Cts.MAX_REQUESTS];
    /** per slot: the sizes are in the size array (grouped or very large messages) */
    private final boolean[] sizesInArray = new boolean[Cts.MAX_REQUESTS];
    private final long[] scratchAddrs = new long[Cts.MAX_RECVS];
    /** per buffer * MAX_RAILS + rail */
    private final int[] scratchRkeys = new int[Cts.MAX_RECVS * Cts.MAX_RAILS];
    private long head;
    /** Ring position of the next clear-to-send entry (see {@link Cts}). */
    private long entryHead;
    /** Entries before this position have been written to the peer; the rest wait for {@link #announce}. */
    private long announced;
    private int unsignalledCts;
    private long ctsWrites;

    private Endpoint flushEp;
    private final boolean[] flushBusy = new boolean[FLUSH_SLOTS];
    private final boolean[] flushComplete = new boolean[FLUSH_SLOTS];
    private final int[] flushWrs = new int[FLUSH_SLOTS];
    private int flushHead;
    private int flushOutstanding;

    private volatile String error;
    private boolean closed;

    /**
     * @param rails        the connection's queue pairs, connected; rail 0 holds the size array; the receiver owns them
     * @param flushFactory makes the loopback queue pair for {@link #iflush} (on rail 0's device), on first use
     * @param onClose      run once when the receiver closes (the provider forgets it)
     */
    RdmaReceiver(Endpoint[] rails, long peerFifoAddress, int peerFifoRkey, Supplier<Endpoint> flushFactory,
                 java.util.function.Consumer<AutoCloseable> onClose) {
        this.rails = rails.clone();
        this.nrails = rails.length;
        this.ep = rails[0];
        this.peerFifoAddress = peerFifoAddress;
        this.peerFifoRkey = peerFifoRkey;
        this.flushFactory = flushFactory;
        this.onClose = onClose;
        this.staging = ep.control.asSlice(0, Cts.FIFO_BYTES);
        this.sizes = ep.control.asSlice(Cts.FIFO_BYTES, SIZES_BYTES);
        this.controlLkey = ep.controlMr.lkey();
    }

    /** Queue pairs this connection's messages are split across. */
    public int rails() {
        return nrails;
    }

    @Override
    public int irecv(int n, io.jmesh.api.Registration[] registrations, long[] offsets, long[] maxSizes, int[] tags) {
        return irecv(n, registrations, offsets, maxSizes, tags, 0);
    }

    @Override
    public int irecv(int n, io.jmesh.api.Registration[] registrations, long[] offsets, long[] maxSizes, int[] tags,
                     int flags) {
        if (n < 1 || n > Cts.MAX_RECVS || registrations.length < n || offsets.length < n || maxSizes.length < n
                || tags.length < n) {
            return Status.BAD_ARGUMENT;
        }
        for (int i = 0; i < n; i++) {
            if (!(registrations[i] instanceof RdmaRegistration r) || !r.contains(offsets[i], maxSizes[i])) {
                return Status.BAD_ARGUMENT;
            }
            scratchAddrs[i] = r.address + offsets[i];
            for (int rail = 0; rail < nrails; rail++) {
                scratchRkeys[i * Cts.MAX_RAILS + rail] = r.rkey(rails[rail].deviceIndex);
            }
        }
        return post(n, scratchAddrs, maxSizes, tags, flags);
    }

    /**
     * Posts a grouped receive of {@code n} buffers: buffer i is [addrs[i], addrs[i] + maxSizes[i]) registered with
     * rkeys[i] and takes the message sent with tags[i]. Only for a connection whose rails share one device.
     *
     * @return a request id for {@link #test}, or {@link Status#NOT_READY} (all request slots busy), {@link
     *         Status#BAD_ARGUMENT}, {@link Status#FAILED}, {@link Status#CLOSED}
     */
    public int irecv(int n, long[] addrs, long[] maxSizes, int[] rkeys, int[] tags) {
        if (n < 1 || n > Cts.MAX_RECVS || addrs.length < n || maxSizes.length < n || rkeys.length < n
                || tags.length < n) {
            return Status.BAD_ARGUMENT;
        }
        for (int i = 0; i < n; i++) {
            for (int rail = 0; rail < nrails; rail++) {
                scratchRkeys[i * Cts.MAX_RAILS + rail] = rkeys[i];
            }
        }
        return post(n, addrs, maxSizes, tags, 0);
    }

    private int post(int n, long[] addrs, long[] maxSizes, int[] tags, int flags) {
        if (error != null) {
            return Status.FAILED;
        }
        if (closed) {
            return Status.CLOSED;
        }
        if ((flags & ~io.jmesh.api.Receiver.MORE) != 0) {
            return Status.BAD_ARGUMENT;
        }
        for (int i = 0; i < n; i++) {
            if (maxSizes[i] < 0) {
                return Status.BAD_ARGUMENT;
            }
        }
        int slot = (int) (head & (Cts.MAX_REQUESTS - 1));
        if (busy[slot]) {
            // an application that keeps calling irecv(MORE) until it succeeds must not wait for receives it holds
            if (announce() != 0) {
                return Status.FAILED;
            }
            progress();
            return Status.NOT_READY;
        }
        for (int rail = 0; rail < nrails; rail++) {
            Endpoint r = rails[rail];
            Wr.recv(r.recvWr, slot, MemorySegment.NULL, MemorySegment.NULL, 0);
            int rc = r.ops.postRecv(r.qp.handle(), r.recvWr, r.badWr);
            if (rc != 0) {
                return fail("ibv_post_recv on " + r.device.name() + " failed: " + Errno.describe(rc));
            }
        }
        long seq = head + 1;
        for (int i = 0; i < n; i++) {
            Cts.write(staging, Cts.at(entryHead + i), addrs[i], maxSizes[i], scratchRkeys, i * Cts.MAX_RAILS, nrails,
                    tags[i], n, seq);
        }
        entryHead += n;
        nreqs[slot] = n;
        pendingRails[slot] = nrails;
        sizesInArray[slot] = false;
        busy[slot] = true;
        head++;
        if ((flags & io.jmesh.api.Receiver.MORE) == 0 && announce() != 0) {
            return Status.FAILED;
        }
        return slot;
    }

    /**
     * RDMA-writes the clear-to-send entries staged since the last announcement into the sender's FIFO: one write,
     * two where the range wraps around the ring. Unsignalled but for every SIGNAL_EVERY-th write, which frees the
     * send-queue entries of those before it.
     *
     * @return 0, or {@link Status#FAILED}
     */
    private int announce() {
        long count = entryHead - announced;
        if (count == 0 || error != null) {
            return error != null ? Status.FAILED : 0;
        }
        long from = announced & (Cts.ENTRIES - 1);
        int first = (int) Math.min(count, Cts.ENTRIES - from);
        int wrs = first < count ? 2 : 1;
        unsignalledCts += wrs;
        boolean signal = unsignalledCts >= SIGNAL_EVERY;
        if (signal) {
            unsignalledCts = 0;
        }
        Wr.sge(ep.sge[0], staging.address() + from * Cts.ENTRY_BYTES, first * Cts.ENTRY_BYTES, controlLkey);
        Wr.send(ep.wr[0], CTS_WR, MemorySegment.NULL, ep.sge[0], 1, opWrite, signal && wrs == 1 ? flagSignaled : 0, 0,
                peerFifoAddress + from * Cts.ENTRY_BYTES, peerFifoRkey);
        if (wrs == 2) {
            Wr.sge(ep.sge[1], staging.address(), (int) (count - first) * Cts.ENTRY_BYTES, controlLkey);
            Wr.send(ep.wr[1], CTS_WR, MemorySegment.NULL, ep.sge[1], 1, opWrite, signal ? flagSignaled : 0, 0,
                    peerFifoAddress, peerFifoRkey);
            Wr.link(ep.wr[0], ep.wr[1]);
        }
        int rc = ep.ops.postSend(ep.qp.handle(), ep.wr[0], ep.badWr);
        if (rc != 0) {
            return fail("ibv_post_send (clear-to-send) on " + ep.device.name() + " failed: " + Errno.describe(rc));
        }
        announced = entryHead;
        ctsWrites += wrs;
        return 0;
    }

    /** RDMA writes that carried clear-to-send entries so far (for tests: receives posted with MORE share one). */
    long ctsWrites() {
        return ctsWrites;
    }

    /** Announces receives posted with {@link io.jmesh.api.Receiver#MORE}; nothing else to do on verbs. */
    @Override
    public void poll() {
        if (!closed) {
            announce();
        }
    }

    @Override
    public int iflush(int n, io.jmesh.api.Registration[] registrations, long[] offsets, long[] sizes) {
        if (error != null) {
            return Status.FAILED;
        }
        if (closed) {
            return Status.CLOSED;
        }
        if (announced != entryHead && announce() != 0) {
            return Status.FAILED;
        }
        if (n < 1 || n > Cts.MAX_RECVS || registrations.length < n || offsets.length < n || sizes.length < n) {
            return Status.BAD_ARGUMENT;
        }
        for (int i = 0; i < n; i++) {
            if (!(registrations[i] instanceof RdmaRegistration r) || !r.contains(offsets[i], sizes[i])) {
                return Status.BAD_ARGUMENT;
            }
        }
        int k = flushHead;
        if (flushBusy[k]) {
            progress();
            return Status.NOT_READY;
        }
        if (flushEp == null) {
            try {
                flushEp = flushFactory.get();
            } catch (RuntimeException e) {
                return fail("cannot make the flush queue pair on " + ep.device.name() + ": " + e.getMessage());
            }
        }
        if (flushOutstanding + n > flushEp.sendDepth) {
            progress();
            return Status.NOT_READY;
        }
        int lastRead = -1;
        for (int i = 0; i < n; i++) {
            if (sizes[i] > 0) {
                lastRead = i;
            }
        }
        flushBusy[k] = true;
        flushHead = (k + 1) & (FLUSH_SLOTS - 1);
        if (lastRead < 0) {
            flushComplete[k] = true; // nothing was received: nothing to wait for
            flushWrs[k] = 0;
            return FLUSH_BASE + k;
        }
        int w = 0;
        for (int i = 0; i <= lastRead; i++) {
            if (sizes[i] == 0) {
                continue;
            }
            RdmaRegistration r = (RdmaRegistration) registrations[i];
            Wr.sge(flushEp.sge[w], flushEp.control.address() + ((long) k * Cts.MAX_RECVS + i) * 64, 1,
                    flushEp.controlMr.lkey());
            Wr.send(flushEp.wr[w], k, MemorySegment.NULL, flushEp.sge[w], 1, opRead, i == lastRead ? flagSignaled : 0,
                    0, r.address + offsets[i], r.rkey(flushEp.deviceIndex));
            if (w > 0) {
                Wr.link(flushEp.wr[w - 1], flushEp.wr[w]);
            }
            w++;
        }
        Wr.link(flushEp.wr[w - 1], MemorySegment.NULL);
        int rc = flushEp.ops.postSend(flushEp.qp.handle(), flushEp.wr[0], flushEp.badWr);
        if (rc != 0) {
            return fail("ibv_post_send (flush) on " + flushEp.device.name() + " failed: " + Errno.describe(rc));
        }
        flushComplete[k] = false;
        flushWrs[k] = w;
        flushOutstanding += w;
        return FLUSH_BASE + k;
    }

    /**
     * Polls for progress and reports on one request.
     *
     * @return 1 when complete (sizes from {@link #size(int, int)}), 0 while in flight, or a {@link Status}
     */
    @Override
    public int test(int request) {
        if (closed) {
            return Status.CLOSED;
        }
        if (announced != entryHead) {
            announce();    // a receive waited for must have been announced; a failure shows below
        }
        if (request >= FLUSH_BASE && request < FLUSH_BASE + FLUSH_SLOTS) {
            int k = request - FLUSH_BASE;
            if (!flushBusy[k]) {
                return Status.BAD_ARGUMENT;
            }
            if (!flushComplete[k] && error == null) {
                progress();
            }
            if (!flushComplete[k]) {
                return error != null ? Status.FAILED : 0;
            }
            flushBusy[k] = false;
            return 1;
        }
        if (request < 0 || request >= Cts.MAX_REQUESTS || !busy[request]) {
            return Status.BAD_ARGUMENT;
        }
        if (!complete[request] && error == null) {
            progress();
        }
        if (!complete[request]) {
            return error != null ? Status.FAILED : 0;
        }
        complete[request] = false;
        busy[request] = false;
        return 1;
    }

    /** Bytes received into buffer i of a completed request. */
    @Override
    public long size(int request, int i) {
        return received[request * Cts.MAX_RECVS + i];
    }

    /** The number of buffers of a request. */
    public int buffers(int request) {
        return nreqs[request];
    }

    void progress() {
        if (closed || error != null) {
            return;
        }
        for (int rail = 0; rail < nrails; rail++) {
            if (!poll(rails[rail])) {
                return;
            }
        }
        if (flushEp != null) {
            pollFlush();
        }
    }

    /** Reads one rail's completions; false once the connection failed. */
    private boolean poll(Endpoint r) {
        int n = r.cq.poll(r.wcs, Endpoint.WC_BATCH);
        if (n < 0) {
            fail("ibv_poll_cq on " + r.device.name() + " failed: " + n);
            return false;
        }
        if (n == 0 && r == ep) {
            probeIfIdle();
        }
        for (int i = 0; i < n; i++) {
            int status = Wr.wcStatus(r.wcs, i);
            long wrId = Wr.wcWrId(r.wcs, i);
            if (status != wcSuccess) {
                fail((wrId == Endpoint.PROBE_WR ? "the peer stopped answering: a liveness probe on "
                        : (wrId & CTS_WR) != 0 ? "a clear-to-send write on " : "a receive on ") + r.device.name()
                        + " failed: " + r.device.verbs().wcStatusString(status)
                        + " (the peer died, closed, or is unreachable)");
                return false;
            }
            if (wrId == Endpoint.PROBE_WR) {
                r.probeDone();
                continue;
            }
            if ((wrId & CTS_WR) != 0 || Wr.wcOpcode(r.wcs, i) != opRecvImm) {
                continue;
            }
            int slot = (int) wrId & (Cts.MAX_REQUESTS - 1);
            int imm = Wr.wcImm(r.wcs, i);
            if ((imm & RdmaSender.IMM_SIZES) == 0) {
                received[slot * Cts.MAX_RECVS] = imm;
            } else {
                sizesInArray[slot] = true;
            }
            if (--pendingRails[slot] == 0) {
                if (sizesInArray[slot]) {
                    // rail 0's immediate came after the size array it wrote: the sizes are there
                    int base = slot * Cts.MAX_RECVS;
                    for (int j = 0; j < nreqs[slot]; j++) {
                        received[base + j] = sizes.getAtIndex(JAVA_LONG, base + j);
                    }
                }
                complete[slot] = true;
            }
        }
        return true;
    }

    private void pollFlush() {
        int n = flushEp.cq.poll(flushEp.wcs, Endpoint.WC_BATCH);
        if (n < 0) {
            fail("ibv_poll_cq (flush) on " + flushEp.device.name() + " failed: " + n);
            return;
        }
        for (int i = 0; i < n; i++) {
            int k = (int) Wr.wcWrId(flushEp.wcs, i) & (FLUSH_SLOTS - 1);
            if (Wr.wcStatus(flushEp.wcs, i) != wcSuccess) {
                fail("a flush read on " + flushEp.device.name() + " failed: "
                        + flushEp.device.verbs().wcStatusString(Wr.wcStatus(flushEp.wcs, i))
                        + " (is the buffer still registered?)");
                return;
            }
            flushComplete[k] = true;
            flushOutstanding -= flushWrs[k];
        }
    }

    /**
     * Lets rail 0 probe the sender while nothing completes (see {@link Endpoint#idle}): a receiver with receives
     * posted has nothing in flight, so only a probe can show that the sender died or closed. The probe's send-queue
     * entry needs no accounting: at most one is in flight next to at most MAX_REQUESTS clear-to-sends.
     */
    private void probeIfIdle() {
        int p = ep.idle(peerFifoAddress, peerFifoRkey);
        if (p < 0) {
            fail("ibv_post_send (liveness probe) on " + ep.device.name() + " failed: " + Errno.describe(-p));
        }
    }

    private int fail(String why) {
        if (error == null) {
            error = why;
        }
        return Status.FAILED;
    }

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
            if (flushEp != null) {
                flushEp.close();
            }
            closeRails(rails);
            onClose.accept(this);
        }
    }

    /** Closes every rail, all of them even when one fails; rethrows the first failure. */
    static void closeRails(Endpoint[] rails) {
        RuntimeException first = null;
        for (Endpoint r : rails) {
            try {
                r.close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
