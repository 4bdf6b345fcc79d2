/**
 * FFM bindings for libibverbs: the jextract-generated classes ({@code io.jmesh.verbs.ffi}) and the hand-written Java
 * for what jextract cannot bind ({@code io.jmesh.verbs}): the static-inline data path, the {@code ibv_query_port} and
 * {@code ibv_reg_mr} macros, errno capture, and a clear diagnosis when libibverbs or kernel RDMA is missing; and
 * errno itself ({@code io.jmesh.posix}), which the transport's TCP relay reads from splice(2) too.
 */
module io.jmesh.verbs {
    exports io.jmesh.verbs;
    exports io.jmesh.verbs.ffi;
    exports io.jmesh.posix;
}
