package io.jmesh.api;

/**
 * The sending end of a connection (what {@link Connector#poll()} yields). Poll-style and allocation-free: {@link
 * #isend} returns a request id (>= 0) or a {@link Status} code, {@link #test} reports on it. One thread at a time
 * uses a sender.
 *
 * <pre>{@code
 * int req;
 * while ((req = sender.isend(reg, 0, reg.length(), tag)) == Status.NOT_READY) { }   // waits for the receiver
 * while (sender.test(req) == 0) { }
 * }</pre>
 */
public interface Sender extends AutoCloseable {
    /**
     * Sends bytes [offset, offset + length) of {@code memory} (registered as {@code registration}) to the receive
     * buffer the peer posted with {@code tag}.
     *
     * @return a request id, or {@link Status#NOT_READY} (the receiver has not posted a matching buffer yet: call
     *         again), {@link Status#TRUNCATED}, {@link Status#FAILED}, {@link Status#BAD_ARGUMENT}, {@link
     *         Status#CLOSED}
     */
    int isend(Registration registration, long offset, long length, int tag);

    /**
     * One-sided RDMA WRITE: copies bytes [localOffset, localOffset + length) of {@code local} into the peer's
     * registered memory at {@code remoteOffset} of {@code remote} (from the peer's {@link Registration#remote()}),
     * without the peer posting a receive. The peer learns nothing of it: tell it with a message when it must know
     * (a send issued after the write is received only once the write is in place; a read sees the writes issued
     * before it). The write is complete once it is in the peer's memory. TCP reports the requests of a connection
     * in issue order; verbs may report a write before an earlier send (see docs/api.md).
     *
     * <p>Verbs: the peer's NIC applies it. TCP: the peer's {@link Receiver} applies it, and only while the peer's
     * application polls that receiver ({@link Receiver#test}, {@link Receiver#poll()}, or a {@link Progress} agent
     * serving it); a region the peer does not know, or a range outside its registration, is refused by the peer:
     * {@link #test} reports {@link Status#REFUSED}, {@link #failure(int)} says why, and the connection stays up.
     *
     * <pre>{@code
     * int req;
     * while ((req = sender.write(local, 0, 4096, peerRegion, 8192)) == Status.NOT_READY) { }
     * while (sender.test(req) == 0) { }
     * }</pre>
     *
     * @return a request id for {@link #test}, or {@link Status#NOT_READY} (too many operations in flight: call
     *         again), {@link Status#BAD_ARGUMENT} (a range outside either region, or a region of another provider),
     *         {@link Status#FAILED}, {@link Status#CLOSED}
     */
    int write(Registration local, long localOffset, long length, RemoteRegion remote, long remoteOffset);

    /**
     * One-sided RDMA READ: copies {@code length} bytes of the peer's registered memory at {@code remoteOffset} of
     * {@code remote} into {@code local} at {@code localOffset}. Same return values as {@link #write}.
     */
    int read(Registration local, long localOffset, long length, RemoteRegion remote, long remoteOffset);

    /** @return 1 when the request completed, 0 while in flight, or a negative {@link Status} */
    int test(int request);

    /** Bytes sent by a completed request. */
    long size(int request);

    /** Why the connection failed, or null. */
    String error();

    /**
     * Why request {@code request} failed: for a one-sided operation that {@link #test} reported as {@link
     * Status#REFUSED}, the peer's reason (until the request id is reused); otherwise {@link #error()}.
     */
    default String failure(int request) {
        return error();
    }

    /** Closes the connection; requests in flight fail. */
    @Override
    void close();
}
