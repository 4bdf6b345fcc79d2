package io.jmesh.transport.core;

import io.jmesh.api.Registration;

/**
 * What a provider puts under the core: the bytes on its wire. The core ({@link CoreSender}, {@link CoreReceiver})
 * keeps the request rings, ids, matching and the whole test/size/close contract; a wire only moves data and reports
 * what completed by marking the core's slots and ops. Every method runs on the caller's thread, never blocks, and
 * allocates nothing in normal flow; failures go to the connection's {@link Fate}.
 */
public interface Wire {
    /** Bounded, non-blocking work: read completions or the peer's frames, push queued data, probe an idle peer. */
    void progress();

    /** Whether [offset, offset + length) of {@code registration} is memory this provider can move (its own kind). */
    boolean owns(Registration registration, long offset, long length);

    /** Releases the wire's resources (queue pairs, sockets); called once, by the core's close. */
    void close();
}
