package io.jmesh.transport.rdma;

import io.jmesh.api.Status;
import io.jmesh.transport.verbs.Wr;
import io.jmesh.verbs.Errno;
import io.jmesh.verbs.ffi.verbs_h;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The receiving half of a verbs connection. {@link #irecv} posts up to {@link Cts#MAX_RECVS} buffers as one grouped
 * receive: it posts a zero-length receive to catch the sender's write-with-immediate and RDMA-writes one
 * clear-to-send entry per buffer (address, size, rkey, tag) into the sender's FIFO, signalling only every 16th such
 * write. {@link #test} reports the real received sizes: from the immediate, or from the size array the sender wrote
 * for grouped receives.
 *
 * <p>One thread calls {@link #irecv} and {@link #test}. Nothing here allocates, locks, or throws on the normal path.
 */
public final class RdmaReceiver implements io.jmesh.api.Receiver {
    static final long SIZES_BYTES = (long) Cts.MAX_REQUESTS * Cts.MAX_RECVS * 8;
    static final long CONTROL_BYTES = Cts.FIFO_BYTES + SIZES_BYTES;
    /** wr_id bit of clear-to-send writes, whose completions only free send-queue entries. */
    private static final long CTS_WR = 1L << 32;
    private static final int SIGNAL_EVERY = 16;

    private final Endpoint ep;
    private final long peerFifoAddress;
    private final int peerFifoRkey;
    private final MemorySegment staging;
    private final MemorySegment sizes;
    private final int controlLkey;
    private final int opWrite = verbs_h.IBV_WR_RDMA_WRITE();
    private final int opRecvImm = verbs_h.IBV_WC_RECV_RDMA_WITH_IMM();
    private final int flagSignaled = verbs_h.IBV_SEND_SIGNALED();
    private final int wcSuccess = verbs_h.IBV_WC_SUCCESS();

    private final int[] nreqs = new int[Cts.MAX_REQUESTS];
    private final long[] received = new long[Cts.MAX_REQUESTS * Cts.MAX_RECVS];
    private final boolean[] busy = new boolean[Cts.MAX_REQUESTS];
    private final boolean[] complete = new boolean[Cts.MAX_REQUESTS];
    private final long[] scratchAddrs = new long[Cts.MAX_RECVS];
    private final int[] scratchRkeys = new int[Cts.MAX_RECVS];
    private long head;
    private volatile String error;
    private boolean closed;

    RdmaReceiver(Endpoint ep, long peerFifoAddress, int peerFifoRkey) {
        this.ep = ep;
        this.peerFifoAddress = peerFifoAddress;
        this.peerFifoRkey = peerFifoRkey;
        this.staging = ep.control.asSlice(0, Cts.FIFO_BYTES);
        this.sizes = ep.control.asSlice(Cts.FIFO_BYTES, SIZES_BYTES);
        this.controlLkey = ep.controlMr.lkey();
    }

    @Override
    public int irecv(int n, io.jmesh.api.Registration[] registrations, long[] offsets, long[] maxSizes, int[] tags) {
        if (n < 1 || n > Cts.MAX_RECVS || registrations.length < n || offsets.length < n || maxSizes.length < n
                || tags.length < n) {
            return Status.BAD_ARGUMENT;
        }
        for (int i = 0; i < n; i++) {
            if (!(registrations[i] instanceof RdmaRegistration r) || !r.contains(offsets[i], maxSizes[i])) {
                return Status.BAD_ARGUMENT;
            }
            scratchAddrs[i] = r.address + offsets[i];
            scratchRkeys[i] = r.rkey(ep.deviceIndex);
        }
        return irecv(n, scratchAddrs, maxSizes, scratchRkeys, tags);
    }

    /**
     * Posts a grouped receive of {@code n} buffers: buffer i is [addrs[i], addrs[i] + maxSizes[i]) registered with
     * rkeys[i] and takes the message sent with tags[i].
     *
     * @return a request id for {@link #test}, or {@link Status#NOT_READY} (all request slots busy), {@link
     *         Status#BAD_ARGUMENT}, {@link Status#FAILED}, {@link Status#CLOSED}
     */
    public int irecv(int n, long[] addrs, long[] maxSizes, int[] rkeys, int[] tags) {
        if (error != null) {
            return Status.FAILED;
        }
        if (closed) {
            return Status.CLOSED;
        }
        if (n < 1 || n > Cts.MAX_RECVS || addrs.length < n || maxSizes.length < n || rkeys.length < n
                || tags.length < n) {
            return Status.BAD_ARGUMENT;
        }
        int slot = (int) (head & (Cts.MAX_REQUESTS - 1));
        if (busy[slot]) {
            progress();
            return Status.NOT_READY;
        }
        Wr.recv(ep.recvWr, slot, MemorySegment.NULL, MemorySegment.NULL, 0);
        int rc = ep.ops.postRecv(ep.qp.handle(), ep.recvWr, ep.badWr);
        if (rc != 0) {
            return fail("ibv_post_recv on " + ep.device.name() + " failed: " + Errno.describe(rc));
        }
        long seq = head + 1;
        for (int i = 0; i < n; i++) {
            if (maxSizes[i] < 0) {
                return fail("negative receive size " + maxSizes[i]);
            }
            Cts.write(staging, Cts.entry(slot, i), addrs[i], maxSizes[i], rkeys[i], tags[i], n, seq);
        }
        long offset = Cts.entry(slot, 0);
        boolean signal = (head % SIGNAL_EVERY) == 0;
        Wr.sge(ep.sge[0], staging.address() + offset, n * Cts.ENTRY_BYTES, controlLkey);
        Wr.send(ep.wr[0], CTS_WR | slot, MemorySegment.NULL, ep.sge[0], 1, opWrite, signal ? flagSignaled : 0, 0,
                peerFifoAddress + offset, peerFifoRkey);
        rc = ep.ops.postSend(ep.qp.handle(), ep.wr[0], ep.badWr);
        if (rc != 0) {
            return fail("ibv_post_send (clear-to-send) on " + ep.device.name() + " failed: " + Errno.describe(rc));
        }
        nreqs[slot] = n;
        busy[slot] = true;
        head++;
        return slot;
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
                        : (wrId & CTS_WR) != 0 ? "a clear-to-send write on " : "a receive on ") + ep.device.name()
                        + " failed: " + ep.device.verbs().wcStatusString(status)
                        + " (the peer died, closed, or is unreachable)");
                return;
            }
            if (wrId == Endpoint.PROBE_WR) {
                ep.probeDone();
                continue;
            }
            if ((wrId & CTS_WR) != 0 || Wr.wcOpcode(ep.wcs, i) != opRecvImm) {
                continue;
            }
            int slot = (int) wrId;
            int imm = Wr.wcImm(ep.wcs, i);
            int base = slot * Cts.MAX_RECVS;
            if ((imm & RdmaSender.IMM_SIZES) == 0) {
                received[base] = imm;
            } else {
                for (int j = 0; j < nreqs[slot]; j++) {
                    received[base + j] = sizes.getAtIndex(JAVA_LONG, base + j);
                }
            }
            complete[slot] = true;
        }
    }

    /**
     * Lets the endpoint probe the sender while nothing completes (see {@link Endpoint#idle}): a receiver with
     * receives posted has nothing in flight, so only a probe can show that the sender died or closed. The probe's
     * send-queue entry needs no accounting: at most one is in flight next to at most MAX_REQUESTS clear-to-sends.
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
