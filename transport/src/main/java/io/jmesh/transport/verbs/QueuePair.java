package io.jmesh.transport.verbs;

import io.jmesh.posix.Errno;
import io.jmesh.verbs.VerbsException;
import io.jmesh.verbs.ffi.ibv_ah_attr;
import io.jmesh.verbs.ffi.ibv_global_route;
import io.jmesh.verbs.ffi.ibv_qp;
import io.jmesh.verbs.ffi.ibv_qp_attr;
import io.jmesh.verbs.ffi.ibv_qp_cap;
import io.jmesh.verbs.ffi.ibv_qp_init_attr;
import io.jmesh.verbs.ffi.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;

/**
 * A reliable-connected queue pair with an explicit state machine: {@link #toInit}, {@link #toRtr}, {@link #toRts} in
 * that order (see {@link QpState}); an illegal transition is refused with a message before the driver sees it. The
 * attributes are NCCL's: path MTU the smaller of both ends', the peer's real GID as destination, the configured
 * timeout, retry and RNR retry.
 *
 * <pre>{@code
 * QueuePair qp = new QueuePair(pd, cq, cq, QpOptions.from(config));
 * qp.toInit(1);
 * QpEndpoint mine = qp.endpoint(gid, dev.port(1).activeIbvMtu());   // send to the peer
 * qp.toRtr(1, gidIndex, peerEndpoint);                                // from the peer
 * qp.toRts();
 * }</pre>
 */
public final class QueuePair implements AutoCloseable {
    private static final SecureRandom RANDOM = new SecureRandom();

    private final ProtectionDomain pd;
    private final QpOptions options;
    private final MemorySegment qp;
    private final int qpn;
    private final int maxInline;
    private final int psn = RANDOM.nextInt(1 << 24);
    private QpState state = QpState.RESET;
    private boolean closed;

    public QueuePair(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq, QpOptions options) {
        this.pd = pd;
        this.options = options;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment init = ibv_qp_init_attr.allocate(arena);
            ibv_qp_init_attr.send_cq(init, sendCq.handle());
            ibv_qp_init_attr.recv_cq(init, recvCq.handle());
            ibv_qp_init_attr.qp_type(init, verbs_h.IBV_QPT_RC());
            ibv_qp_init_attr.sq_sig_all(init, 0); // selective signalling: only requests flagged SIGNALED complete
            MemorySegment cap = ibv_qp_init_attr.cap(init);
            ibv_qp_cap.max_send_wr(cap, options.maxSendWr());
            ibv_qp_cap.max_recv_wr(cap, options.maxRecvWr());
            ibv_qp_cap.max_send_sge(cap, options.maxSendSge());
            ibv_qp_cap.max_recv_sge(cap, options.maxRecvSge());
            ibv_qp_cap.max_inline_data(cap, options.maxInline());
            MemorySegment created;
            try {
                created = pd.device().verbs().createQp(pd.handle(), init, pd.device().name());
            } catch (VerbsException e) {
                if (options.maxInline() == 0) {
                    throw e;
                }
                ibv_qp_cap.max_inline_data(cap, 0); // a device that inlines less: no inline sends, same queue pair
                created = pd.device().verbs().createQp(pd.handle(), init, pd.device().name());
            }
            this.qp = created;
            this.maxInline = ibv_qp_cap.max_inline_data(cap); // what the device granted, at least what was asked
        }
        this.qpn = ibv_qp.qp_num(qp);
    }

    /** Bytes a send on this queue pair may carry inline ({@code IBV_SEND_INLINE}): copied at post time. */
    public int maxInline() {
        return maxInline;
    }

    /** The {@code struct ibv_qp*}. */
    public MemorySegment handle() {
        return qp;
    }

    /** What the peer needs to connect to this queue pair. */
    public QpEndpoint endpoint(byte[] gid, int activeIbvMtu) {
        return new QpEndpoint(qpn, psn, gid, activeIbvMtu);
    }

    private String describe() {
        return "0x" + Integer.toHexString(qpn) + " on " + pd.device().name();
    }

    private void modify(QpState next, MemorySegment attr, int mask) {
        state.checkMoveTo(next, describe());
        ibv_qp_attr.qp_state(attr, next.ibvValue());
        int rc = pd.device().verbs().modifyQp(qp, attr, mask | verbs_h.IBV_QP_STATE());
        if (rc != 0) {
            throw new VerbsException("ibv_modify_qp " + state + " -> " + next + " of queue pair " + describe()
                    + " failed: " + Errno.describe(rc) + hint(next, rc), rc);
        }
        state = next;
    }

    private static String hint(QpState next, int rc) {
        if (next == QpState.RTR && rc == Errno.EINVAL) {
            return "; the peer's GID, QPN or MTU is not valid for this port (check the GID index: 'jmesh devices')";
        }
        return "";
    }

    /** RESET → INIT on {@code port}, allowing local write and remote write and read. */
    public void toInit(int port) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = ibv_qp_attr.allocate(arena);
            ibv_qp_attr.pkey_index(a, (short) 0);
            ibv_qp_attr.port_num(a, (byte) port);
            ibv_qp_attr.qp_access_flags(a, MemoryRegion.defaultAccess());
            modify(QpState.INIT, a, verbs_h.IBV_QP_PKEY_INDEX() | verbs_h.IBV_QP_PORT() | verbs_h.IBV_QP_ACCESS_FLAGS());
        }
    }

    /**
     * INIT → RTR towards {@code remote}: path MTU = min(local active MTU, remote's), destination = the peer's GID,
     * source GID = {@code gidIndex}.
     */
    public void toRtr(int port, int gidIndex, QpEndpoint remote) {
        int localMtu = pd.device().port(port).activeIbvMtu();
        int pathIbvMtu = QpEndpoint.pathMtu(localMtu, remote.ibvMtu());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = ibv_qp_attr.allocate(arena);
            ibv_qp_attr.path_mtu(a, pathIbvMtu);
            ibv_qp_attr.dest_qp_num(a, remote.qpn());
            ibv_qp_attr.rq_psn(a, remote.psn());
            ibv_qp_attr.max_dest_rd_atomic(a, (byte) 16);
            ibv_qp_attr.min_rnr_timer(a, (byte) 12);
            MemorySegment ah = ibv_qp_attr.ah_attr(a);
            ibv_ah_attr.is_global(ah, (byte) 1);
            ibv_ah_attr.port_num(ah, (byte) port);
            ibv_ah_attr.sl(ah, (byte) options.serviceLevel());
            MemorySegment grh = ibv_ah_attr.grh(ah);
            ibv_global_route.dgid(grh).copyFrom(MemorySegment.ofArray(remote.gid()));
            ibv_global_route.sgid_index(grh, (byte) gidIndex);
            ibv_global_route.hop_limit(grh, (byte) options.hopLimit());
            ibv_global_route.traffic_class(grh, (byte) options.trafficClass());
            modify(QpState.RTR, a, verbs_h.IBV_QP_AV() | verbs_h.IBV_QP_PATH_MTU() | verbs_h.IBV_QP_DEST_QPN()
                    | verbs_h.IBV_QP_RQ_PSN() | verbs_h.IBV_QP_MAX_DEST_RD_ATOMIC() | verbs_h.IBV_QP_MIN_RNR_TIMER());
        }
    }

    /** RTR → RTS with the configured timeout, retry count and RNR retry. */
    public void toRts() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = ibv_qp_attr.allocate(arena);
            ibv_qp_attr.timeout(a, (byte) options.timeout());
            ibv_qp_attr.retry_cnt(a, (byte) options.retryCount());
            ibv_qp_attr.rnr_retry(a, (byte) options.rnrRetry());
            ibv_qp_attr.sq_psn(a, psn);
            ibv_qp_attr.max_rd_atomic(a, (byte) 16);
            modify(QpState.RTS, a, verbs_h.IBV_QP_TIMEOUT() | verbs_h.IBV_QP_RETRY_CNT() | verbs_h.IBV_QP_RNR_RETRY()
                    | verbs_h.IBV_QP_SQ_PSN() | verbs_h.IBV_QP_MAX_QP_RD_ATOMIC());
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        int rc = pd.device().verbs().destroyQp(qp);
        if (rc != 0) {
            throw new VerbsException("ibv_destroy_qp of queue pair " + describe() + " failed: " + Errno.describe(rc), rc);
        }
    }
}
