package io.jmesh.verbs;

import io.jmesh.verbs.ffi.ibv_context;
import io.jmesh.verbs.ffi.ibv_context_ops;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * The four static-inline verbs of the data path, which jextract cannot bind: {@code ibv_post_send},
 * {@code ibv_post_recv}, {@code ibv_poll_cq} and {@code ibv_req_notify_cq}. In C each one loads a function pointer from
 * {@code ctx->ops} and calls it; here the pointers are read once per device context, when the {@code DataPath} is
 * made, and each call goes through one {@code static final} address-taking downcall handle, which the JIT inlines.
 *
 * <p>The handles are {@linkplain Linker.Option#critical(boolean) critical}: these calls never block and never call
 * back into Java, so they skip the thread-state transition. Nothing here allocates or throws on the normal path; the
 * results are the provider's return codes, exactly as in C.
 *
 * <pre>{@code
 * DataPath ops = DataPath.of(context);
 * int rc = ops.postSend(qp, wr, badWr);   // 0 or an errno value
 * int n  = ops.pollCq(cq, 16, wcArray);   // completions read, or negative on error
 * }</pre>
 */
public final class DataPath {
    private static final Linker LINKER = Linker.nativeLinker();
    // int (*post_send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **); post_recv has the same shape
    private static final MethodHandle POST = LINKER.downcallHandle(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), Linker.Option.critical(false));
    // int (*poll_cq)(struct ibv_cq *, int num_entries, struct ibv_wc *)
    private static final MethodHandle POLL_CQ = LINKER.downcallHandle(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS), Linker.Option.critical(false));
    // int (*req_notify_cq)(struct ibv_cq *, int solicited_only)
    private static final MethodHandle REQ_NOTIFY_CQ = LINKER.downcallHandle(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), Linker.Option.critical(false));

    private final MemorySegment postSend;
    private final MemorySegment postRecv;
    private final MemorySegment pollCq;
    private final MemorySegment reqNotifyCq;

    private DataPath(MemorySegment postSend, MemorySegment postRecv, MemorySegment pollCq, MemorySegment reqNotifyCq) {
        this.postSend = postSend;
        this.postRecv = postRecv;
        this.pollCq = pollCq;
        this.reqNotifyCq = reqNotifyCq;
    }

    /**
     * Reads the provider's data-path function pointers out of {@code context->ops}.
     *
     * @throws VerbsException when the provider left one of them NULL
     */
    public static DataPath of(MemorySegment context) {
        MemorySegment ops = ibv_context.ops(context.reinterpret(ibv_context.sizeof()));
        return new DataPath(
                required(ibv_context_ops.post_send(ops), "post_send"),
                required(ibv_context_ops.post_recv(ops), "post_recv"),
                required(ibv_context_ops.poll_cq(ops), "poll_cq"),
                required(ibv_context_ops.req_notify_cq(ops), "req_notify_cq"));
    }

    private static MemorySegment required(MemorySegment fn, String name) {
        if (fn.equals(MemorySegment.NULL)) {
            throw new VerbsException("the RDMA provider has no " + name + " in ibv_context_ops: it cannot run an RC "
                    + "data path; update rdma-core (ibverbs-providers) or use another device");
        }
        return fn;
    }

    /** {@code ibv_post_send}: 0, or an errno value with {@code *badWr} set to the first failed request. */
    public int postSend(MemorySegment qp, MemorySegment wr, MemorySegment badWr) {
        try {
            return (int) POST.invokeExact(postSend, qp, wr, badWr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ibv_post_recv}: 0, or an errno value with {@code *badWr} set to the first failed request. */
    public int postRecv(MemorySegment qp, MemorySegment wr, MemorySegment badWr) {
        try {
            return (int) POST.invokeExact(postRecv, qp, wr, badWr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ibv_poll_cq}: the number of completions written to {@code wc} (0..max), or negative on error. */
    public int pollCq(MemorySegment cq, int max, MemorySegment wc) {
        try {
            return (int) POLL_CQ.invokeExact(pollCq, cq, max, wc);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ibv_req_notify_cq}: 0, or an errno value. */
    public int reqNotifyCq(MemorySegment cq, boolean solicitedOnly) {
        try {
            return (int) REQ_NOTIFY_CQ.invokeExact(reqNotifyCq, cq, solicitedOnly ? 1 : 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // A downcall throws only for a JVM-level failure (e.g. a closed arena); that is a bug, not a flow to handle.
    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }
}
