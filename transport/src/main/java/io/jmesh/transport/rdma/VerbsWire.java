package io.jmesh.transport.rdma;

import io.jmesh.api.Registration;
import io.jmesh.transport.core.Fate;
import io.jmesh.transport.verbs.Wr;
import io.jmesh.posix.Errno;
import io.jmesh.verbs.ffi.verbs_h;

import java.lang.foreign.MemorySegment;

/**
 * What the three verbs wires share ({@link RdmaSendWire}, {@link RdmaReceiveWire}, {@link RelayedSendWire}): rail 0
 * and the connection's fate; the registrations they take; posting a chain of work requests and reading completions,
 * where a refusal fails the connection naming the call, what the requests were for and the device; the liveness probe
 * while nothing completes. Failures are strings built only when they happen: the hot path allocates nothing.
 */
abstract class VerbsWire {
    static final int OP_WRITE = verbs_h.IBV_WR_RDMA_WRITE();
    static final int OP_WRITE_IMM = verbs_h.IBV_WR_RDMA_WRITE_WITH_IMM();
    static final int OP_READ = verbs_h.IBV_WR_RDMA_READ();
    static final int WC_RECV_IMM = verbs_h.IBV_WC_RECV_RDMA_WITH_IMM();
    static final int SIGNALED = verbs_h.IBV_SEND_SIGNALED();
    static final int INLINE = verbs_h.IBV_SEND_INLINE();
    static final int WC_SUCCESS = verbs_h.IBV_WC_SUCCESS();

    final Fate fate;
    /** Rail 0: the control region, the flow control, one-sided operations and the liveness probe go over it. */
    final Endpoint ep;

    VerbsWire(Fate fate, Endpoint ep) {
        this.fate = fate;
        this.ep = ep;
    }

    /** Memory registered by this provider on rail 0's device, covering the range. */
    public final boolean owns(Registration registration, long offset, long length) {
        return registration instanceof RdmaRegistration r && r.contains(offset, length) && r.usableOn(ep);
    }

    /**
     * Ends the chain {@code r.wr[0..count)} and posts it.
     *
     * @param what what the requests are for, in the error ("clear-to-send", "flush"): a constant, so nothing is
     *             built unless the post fails
     * @return false, with the connection failed, when the NIC refuses the chain
     */
    final boolean post(Endpoint r, int count, String what) {
        Wr.link(r.wr[count - 1], MemorySegment.NULL);
        int rc = r.ops.postSend(r.qp.handle(), r.wr[0], r.badWr);
        if (rc != 0) {
            fate.fail("ibv_post_send (" + what + ") on " + r.device.name() + " failed: " + Errno.describe(rc));
            return false;
        }
        return true;
    }

    /** Reads {@code r}'s completions into {@code r.wcs}: how many, or -1 with the connection failed. */
    final int completions(Endpoint r) {
        int n = r.cq.poll(r.wcs, Endpoint.WC_BATCH);
        if (n < 0) {
            fate.fail("ibv_poll_cq on " + r.device.name() + " failed: " + n);
            return -1;
        }
        return n;
    }

    /**
     * Lets rail 0 probe the peer's memory at {@code remote} while nothing completes ({@link Endpoint#idle}).
     *
     * @return 1 when a probe was posted (it holds a send-queue entry until its completion), 0 when none was due, -1
     *         with the connection failed
     */
    final int probe(long remote, int rkey) {
        int p = ep.idle(remote, rkey);
        if (p < 0) {
            fate.fail("ibv_post_send (liveness probe) on " + ep.device.name() + " failed: " + Errno.describe(-p));
            return -1;
        }
        return p;
    }
}
