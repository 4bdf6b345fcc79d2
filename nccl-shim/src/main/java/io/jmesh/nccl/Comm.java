package io.jmesh.nccl;

/**
 * A connection NCCL holds: the sending end ({@link SendComm}) or the receiving end ({@link RecvComm}). Requests NCCL
 * gets back encode the comm's handle and the transport's request id: {@code handle << 32 | id}, never 0.
 */
abstract sealed class Comm permits SendComm, RecvComm {
    /** The handle NCCL holds; set once when the comm enters the table. */
    long handle;
    /** The NCCL device the connection was made for, for log lines. */
    final int dev;
    /** Error results already logged: the first failure of a connection is logged, repeats are not. */
    boolean failureLogged;
    /** Step timings (JMESH_NCCL_TRACE=1), else null. */
    final StepTrace trace = StepTrace.forComm();

    Comm(int dev) {
        this.dev = dev;
    }

    static long request(long commHandle, int id) {
        return commHandle << 32 | (id & 0xFFFF_FFFFL);
    }

    static long commOf(long request) {
        return request >>> 32;
    }

    static int idOf(long request) {
        return (int) request;
    }

    /**
     * Tests a request: 1 done (sizes written to {@code sizesAddress} unless it is 0), 0 in flight, or a negative
     * transport status.
     */
    abstract int test(int id, long sizesAddress);

    /** Why the connection failed, or null. */
    abstract String error();

    abstract void close();
}
