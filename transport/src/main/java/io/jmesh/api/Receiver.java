package io.jmesh.api;

/**
 * The receiving end of a connection (what {@link Listener#accept()} yields). {@link #irecv} posts up to
 * {@link #MAX_RECVS} buffers as one grouped receive, each matched to a send by tag; {@link #test} reports the real
 * received sizes. Poll-style and allocation-free; one thread at a time uses a receiver.
 *
 * <pre>{@code
 * int req = receiver.irecv(reg, 0, reg.length(), tag);       // one buffer: the whole registration
 * while (receiver.test(req) == 0) { }
 * long got = receiver.size(req, 0);
 * }</pre>
 */
public interface Receiver extends AutoCloseable {
    /** The most buffers in one grouped receive. */
    int MAX_RECVS = 8;

    /**
     * Posts a grouped receive: buffer i is bytes [offsets[i], offsets[i] + maxSizes[i]) of registrations[i], and
     * takes the message sent with tags[i].
     *
     * @return a request id, or {@link Status#NOT_READY} (too many receives in flight), {@link Status#BAD_ARGUMENT},
     *         {@link Status#FAILED}, {@link Status#CLOSED}
     */
    int irecv(int n, Registration[] registrations, long[] offsets, long[] maxSizes, int[] tags);

    /**
     * Posts a receive of one buffer, bytes [offset, offset + maxSize) of {@code registration}, for the message sent
     * with {@code tag}: the grouped {@link #irecv(int, Registration[], long[], long[], int[])} with n = 1, the same
     * answers. jmesh's receivers take it without allocating; this default, for other implementations, allocates.
     */
    default int irecv(Registration registration, long offset, long maxSize, int tag) {
        return irecv(1, new Registration[] {registration}, new long[] {offset}, new long[] {maxSize}, new int[] {tag});
    }

    /**
     * Flag for {@link #irecv(int, Registration[], long[], long[], int[], int)}: more receives follow at once, so the
     * provider may hold this one's announcement to the sender and send it with theirs (on verbs, one RDMA write for
     * the clear-to-send entries of all of them instead of one each), as {@code MSG_MORE} does for a socket. The held
     * announcements leave with the next receive posted without the flag, or at the latest with the next {@link
     * #test}, {@link #iflush}, {@link #poll}, or an {@code irecv} that answers {@link Status#NOT_READY}. Until then
     * the sender cannot send into these buffers: a thread that posts receives with this flag and then waits only on
     * something else (its own sends, say) must end the run with a receive without it.
     */
    int MORE = 1;

    /**
     * {@link #irecv(int, Registration[], long[], long[], int[])} with flags: 0 or {@link #MORE}. A provider that has
     * nothing to gain from {@link #MORE} (TCP) treats it as 0.
     *
     * @return as the plain irecv; {@link Status#BAD_ARGUMENT} for an unknown flag
     */
    default int irecv(int n, Registration[] registrations, long[] offsets, long[] maxSizes, int[] tags, int flags) {
        if ((flags & ~MORE) != 0) {
            return Status.BAD_ARGUMENT;
        }
        return irecv(n, registrations, offsets, maxSizes, tags);
    }

    /**
     * Makes the data of a completed receive visible to this node's readers of that memory, as NCCL's iflush does
     * for GPU memory written by the NIC: on verbs an RDMA READ of the received buffers through a loopback queue
     * pair, which the NIC completes only after its earlier writes into them have landed. Needed only where another
     * device (a GPU) reads the buffers; plain host memory is consistent once {@link #test} returned 1.
     *
     * @return a request id for {@link #test}, or {@link Status#NOT_READY}, {@link Status#BAD_ARGUMENT}, {@link
     *         Status#FAILED}, {@link Status#CLOSED}
     */
    int iflush(int n, Registration[] registrations, long[] offsets, long[] sizes);

    /** @return 1 when the request completed, 0 while in flight, or a negative {@link Status} */
    int test(int request);

    /** Bytes received into buffer i of a completed request. */
    long size(int request, int i);

    /** Why the connection failed, or null. */
    String error();

    /**
     * Makes progress without a request of its own. On TCP the receiving end applies the peer's one-sided writes and
     * serves its reads (see {@link Sender#write}) only while it is polled: through {@link #irecv}, {@link #test},
     * {@link #iflush} or this; an application that posts no receives must call this (or hand the receiver to a
     * {@link Progress} agent) for the peer's one-sided operations to complete. On verbs the NIC does that work; this
     * only announces receives still held by {@link #MORE}. Never blocks.
     */
    default void poll() {
    }

    @Override
    void close();
}
