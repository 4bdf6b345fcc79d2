package io.jmesh.transport.core;

/** The sending half of a provider's wire under a {@link CoreSender}. */
public interface SendWire extends Wire {
    /**
     * Buffer {@code i} of {@code slot} has its send (registration, offset and length are in the slot). A wire that
     * moves each message on its own starts it now; one that posts a grouped receive's data together waits until
     * {@link SendSlot#full()}. Slots fill strictly in ring order. When an eager send fills a slot, {@code i} is its
     * buffer, which has no data to post ({@link SendSlot#eager(int)}).
     */
    void matched(SendSlot slot, int i);

    /**
     * Every buffer of {@code slot} took an eager send: the core moves on to the next receive with nothing for the
     * wire to post, and will reuse the slot. A wire that counts the receives it may be told about next counts it.
     */
    default void eagerOnly(SendSlot slot) {
    }

    /**
     * Starts a one-sided write or read (its arguments are in {@code op}; the local range is checked, the remote one is
     * the wire's to check).
     *
     * @return 0 once started, or {@link io.jmesh.api.Status#NOT_READY} (no room now: nothing was started), {@link
     *         io.jmesh.api.Status#BAD_ARGUMENT} (a region this connection cannot reach), {@link
     *         io.jmesh.api.Status#FAILED}
     */
    int start(Op op);

    /**
     * Whether this wire sends a message of {@code length} bytes from {@code registration}'s memory eagerly ({@link
     * Eager}): never when the peer announced no ring, the eager path is off, the CPU cannot read that memory (GPU
     * memory), or the message is larger than the threshold.
     */
    default boolean sendsEagerly(io.jmesh.api.Registration registration, long length) {
        return false;
    }

    /**
     * The core needs the clear-to-send entries from ring position {@code from} on and does not have them: a wire
     * whose receiver may keep entries back (verbs: the receives of an eager connection small enough for its ring)
     * goes and gets them, without the peer's application; the entries land in the FIFO as pushed ones do. Non-blocking;
     * at most one fetch is in flight, and a call while one is does nothing.
     */
    default void fetch(long from) {
    }

    /**
     * Whether eager record {@code record} (the wire's count of successful {@link #eager} calls, from 1) has left:
     * verbs, at once (the NIC moves it without this thread); TCP, once all its bytes are in the kernel, so a thread
     * that stops driving this sender after its send completed strands nothing.
     */
    default boolean eagerSent(long record) {
        return true;
    }

    /**
     * Writes one eager record into the peer's ring: the message at stream {@code position}, for buffer {@code
     * buffer} of its grouped receive (-1: the receiver picks it by tag). The bytes are copied before this returns;
     * the send is complete once {@link #eagerSent} says so.
     *
     * @return 0, or {@link io.jmesh.api.Status#NOT_READY} (no free slot in the peer's ring or no room in the send
     *         queue now: nothing was written), {@link io.jmesh.api.Status#FAILED}
     */
    default int eager(long position, int tag, io.jmesh.api.Registration registration, long offset, int length,
                      int buffer) {
        return io.jmesh.api.Status.FAILED;
    }
}
