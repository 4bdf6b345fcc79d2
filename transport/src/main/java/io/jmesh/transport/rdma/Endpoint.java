package io.jmesh.transport.rdma;

import io.jmesh.transport.lifecycle.Closer;
import io.jmesh.transport.verbs.CompletionQueue;
import io.jmesh.transport.verbs.DeviceContext;
import io.jmesh.transport.verbs.MemoryRegion;
import io.jmesh.transport.verbs.ProtectionDomain;
import io.jmesh.transport.verbs.QpEndpoint;
import io.jmesh.transport.verbs.QpOptions;
import io.jmesh.transport.verbs.QueuePair;
import io.jmesh.transport.verbs.Wr;
import io.jmesh.verbs.DataPath;
import io.jmesh.verbs.ffi.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One side of a verbs connection: its completion queue, its RC queue pair, and one registered control region (the
 * CTS FIFO on a sender, CTS staging plus received sizes on a receiver) with scratch space for work requests. It owns
 * all of these and frees them in order on close: QP, control MR, CQ, memory. The device and PD belong to the fabric.
 */
final class Endpoint implements AutoCloseable {
    static final int WC_BATCH = 16;
    /** Work requests built per post_send call; the provider copies them, so the scratch is reused at once. */
    static final int SCRATCH_WRS = 64;
    /** wr_id of a liveness probe (see {@link #idle}); no data or clear-to-send request uses it. */
    static final long PROBE_WR = 0x7fff_fffeL;
    /** Empty polls between two looks at the clock in {@link #idle}, so waiting stays cheap. */
    private static final int IDLE_POLLS_PER_CHECK = 256;

    final DeviceContext device;
    /** Registrations are usable here only when made in this protection domain (one per fabric and device). */
    final ProtectionDomain pd;
    final DataPath ops;
    final CompletionQueue cq;
    final QueuePair qp;
    final MemorySegment control;
    final MemoryRegion controlMr;
    final MemorySegment wcs;
    final MemorySegment badWr;
    final MemorySegment scratchWrs;
    final MemorySegment scratchSges;
    final MemorySegment recvWr;
    final int port;
    final int gidIndex;
    final byte[] gid;
    final long maxMessage;
    final int sendDepth;
    /** Bytes a send may carry inline (0: none): what the device granted this queue pair. */
    final int maxInline;
    /** The device's index in the provider, which picks a registration's keys for this device. */
    final int deviceIndex;
    /** One RC ACK timeout (4.096 us * 2^timeout): how often a waiting side probes its peer. */
    private final long probeIntervalNanos;
    private final MemorySegment probeWr;
    private int idlePolls;
    private long lastProbe = System.nanoTime();
    private boolean probeInFlight;
    private final Arena arena;
    private boolean closed;

    Endpoint(ProtectionDomain pd, int deviceIndex, int port, int gidIndex, byte[] gid, long controlBytes,
             QpOptions options) {
        this.pd = pd;
        this.device = pd.device();
        this.deviceIndex = deviceIndex;
        this.ops = device.dataPath();
        this.port = port;
        this.gidIndex = gidIndex;
        this.gid = gid.clone();
        this.sendDepth = options.maxSendWr();
        this.probeIntervalNanos = 4096L << options.timeout();
        Arena a = Arena.ofShared();
        CompletionQueue c = null;
        QueuePair q = null;
        MemoryRegion m = null;
        try {
            c = new CompletionQueue(device, options.maxSendWr() + options.maxRecvWr());
            q = new QueuePair(pd, c, c, options);
            MemorySegment ctl = a.allocate(controlBytes, 4096);
            m = new MemoryRegion(pd, ctl, MemoryRegion.defaultAccess());
            q.toInit(port);
            this.arena = a;
            this.cq = c;
            this.qp = q;
            this.control = ctl;
            this.controlMr = m;
            this.wcs = a.allocate(Wr.WC_SIZE * WC_BATCH, 8);
            this.badWr = a.allocate(8, 8);
            this.scratchWrs = a.allocate(Wr.SEND_SIZE * SCRATCH_WRS, 8);
            this.scratchSges = a.allocate(Wr.SGE_SIZE * SCRATCH_WRS, 8);
            this.recvWr = a.allocate(Wr.RECV_SIZE, 8);
            this.probeWr = a.allocate(Wr.SEND_SIZE, 8);
            for (int i = 0; i < SCRATCH_WRS; i++) {
                wr[i] = scratchWrs.asSlice(i * Wr.SEND_SIZE, Wr.SEND_SIZE);
                sge[i] = scratchSges.asSlice(i * Wr.SGE_SIZE, Wr.SGE_SIZE);
            }
            this.maxMessage = Math.max(4096, Math.min(device.port(port).maxMessageSize(), 1L << 30));
            this.maxInline = q.maxInline();
        } catch (RuntimeException e) {
            closeQuietly(q, m, c, a);
            throw e;
        }
    }

    /** Pre-sliced so the data path takes the i-th scratch WR or SGE without allocating. */
    final MemorySegment[] wr = new MemorySegment[SCRATCH_WRS];
    final MemorySegment[] sge = new MemorySegment[SCRATCH_WRS];

    QpEndpoint local() {
        return qp.endpoint(gid, device.port(port).activeIbvMtu());
    }

    /** INIT → RTR → RTS towards the peer. */
    void connect(QpEndpoint remote) {
        qp.toRtr(port, gidIndex, remote);
        qp.toRts();
    }

    /**
     * Called after a poll that found nothing while a caller waits. A side that only waits (a receiver with receives
     * posted, a sender waiting for a clear-to-send) has nothing in flight, so a peer that died or closed would never
     * show as a failed completion and the caller would wait forever. So once per ACK timeout a waiting side posts a
     * signalled zero-length RDMA write (no bytes land; address and key are the peer's control region's): a live peer
     * acknowledges it in hardware, a gone one makes it fail after the configured retries, and that failed completion
     * fails the connection.
     *
     * @return 1 when a probe was posted (it takes a send-queue entry until its completion, see {@link #probeDone}),
     *         0 when none was due, or the negative errno of {@code ibv_post_send}
     */
    int idle(long remoteAddr, int rkey) {
        if (++idlePolls < IDLE_POLLS_PER_CHECK) {
            return 0;
        }
        idlePolls = 0;
        long now = System.nanoTime();
        if (probeInFlight || now - lastProbe < probeIntervalNanos) {
            return 0;
        }
        lastProbe = now;
        Wr.send(probeWr, PROBE_WR, MemorySegment.NULL, MemorySegment.NULL, 0, verbs_h.IBV_WR_RDMA_WRITE(),
                verbs_h.IBV_SEND_SIGNALED(), 0, remoteAddr, rkey);
        int rc = ops.postSend(qp.handle(), probeWr, badWr);
        if (rc != 0) {
            return -rc;
        }
        probeInFlight = true;
        return 1;
    }

    /** The probe's successful completion: the peer is alive; the next one is due an ACK timeout from now. */
    void probeDone() {
        probeInFlight = false;
        lastProbe = System.nanoTime();
    }

    /** Closes each even when one before it failed (the arena last); rethrows the first failure. */
    private static void closeQuietly(QueuePair q, MemoryRegion m, CompletionQueue c, Arena a) {
        Closer.closeAll(q, m, c, a);
    }

    /** Closes every rail, all of them even when one fails; rethrows the first failure. */
    static void closeAll(Endpoint[] rails) {
        Closer.closeAll(rails);
    }

    /** Closes what a failed set-up created (null entries skipped), logging a failed close and going on. */
    static void closeQuietly(Endpoint[] rails, org.apache.logging.log4j.Logger log) {
        Closer.closeAll(t -> log.warn("{}", t.getMessage()), rails);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeQuietly(qp, controlMr, cq, arena);
    }
}
