package io.jmesh.transport.core;

/** The sending half of a provider's wire under a {@link CoreSender}. */
public interface SendWire extends Wire {
    /**
     * Buffer {@code i} of {@code slot} has its send (registration, offset and length are in the slot). A wire that
     * moves each message on its own starts it now; one that posts a grouped receive's data together waits until
     * {@link SendSlot#full()}. Slots fill strictly in ring order.
     */
    void matched(SendSlot slot, int i);

    /**
     * Starts a one-sided write or read (its arguments are in {@code op}; the local range is checked, the remote one is
     * the wire's to check).
     *
     * @return 0 once started, or {@link io.jmesh.api.Status#NOT_READY} (no room now: nothing was started), {@link
     *         io.jmesh.api.Status#BAD_ARGUMENT} (a region this connection cannot reach), {@link
     *         io.jmesh.api.Status#FAILED}
     */
    int start(Op op);
}
