package io.jmesh.api;

/**
 * Return codes of the data path: a request id (>= 0) or one of these. Nothing on the data path throws.
 *
 * <pre>{@code
 * int req = sender.isend(reg, 0, 4096, tag);
 * if (req == Status.NOT_READY) { ... call again later ... }
 * else if (req < 0) throw new IllegalStateException(Status.describe(req) + ": " + sender.failure(req));
 * }</pre>
 */
public final class Status {
    /** Not possible yet (no matching receive posted by the peer, or all request slots busy): call again later. */
    public static final int NOT_READY = -1;
    /** The message is larger than the buffer the receiver posted for it. */
    public static final int TRUNCATED = -2;
    /** The connection failed; {@code error()} says why. */
    public static final int FAILED = -3;
    /** An argument is out of range (bad request id, too many buffers, a range outside the registration). */
    public static final int BAD_ARGUMENT = -4;
    /** The connection is closed. */
    public static final int CLOSED = -5;
    /**
     * The peer refused a one-sided operation: no open registration has the region's id (closed, or a region not from
     * that peer), or the range lies outside it; {@link Sender#failure(int)} says which. Only the TCP provider reports
     * this and keeps the connection; on verbs the NIC fails the connection instead.
     */
    public static final int REFUSED = -6;

    private Status() {
    }

    public static String describe(int code) {
        return switch (code) {
            case NOT_READY -> "not ready";
            case TRUNCATED -> "message larger than the posted receive buffer";
            case FAILED -> "connection failed";
            case BAD_ARGUMENT -> "bad argument";
            case CLOSED -> "closed";
            case REFUSED -> "refused by the peer";
            default -> code >= 0 ? "request " + code : "status " + code;
        };
    }
}
