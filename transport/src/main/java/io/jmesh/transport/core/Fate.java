package io.jmesh.transport.core;

import io.jmesh.api.Status;

/**
 * What became of one end of a connection: open, failed (the first failure wins and is what {@code error()} reports:
 * it names the peer, the cause and what it means), closed by its owner, or ended by the peer's orderly close. An
 * ended end still delivers what the peer sent before its close (a receive posted later takes it from the eager ring);
 * only a request nothing more can complete answers {@link Status#CLOSED}, and no failure replaces the end: whatever
 * goes wrong after the peer said goodbye (its process exits, liveness stops hearing it) is the close's own doing.
 * Both the core and the provider's wire read it on every call, so it is a few fields and no lock; only the failure
 * and end paths synchronize, so that two threads at once (a caller and a progress agent) keep one reason.
 */
public class Fate {
    private volatile String error;
    private volatile String ended;
    private volatile boolean closed;

    /** Why the connection failed, or why it ended when the peer closed it; null while it is open. */
    public final String error() {
        String e = error;
        return e != null ? e : ended;
    }

    /** Whether the peer closed its end in order: everything it sent has arrived, nothing more will. */
    public final boolean ended() {
        return ended != null;
    }

    /**
     * The peer closed its end in order, once everything it sent is in (the provider's wire decides that: a goodbye
     * frame and the end of every stream, or the goodbye's completion behind the last data). Ignored once failed.
     */
    public final void end(String why) {
        synchronized (this) {
            if (error == null && ended == null) {
                ended = why;
            }
        }
    }

    public final boolean failed() {
        return error != null;
    }

    public final boolean closed() {
        return closed;
    }

    /**
     * What a request still in flight answers after the wire's progress: {@link Status#FAILED} once failed, {@link
     * Status#CLOSED} once the peer ended the connection (nothing more will arrive for it), else 0.
     */
    public final int inFlight() {
        return error != null ? Status.FAILED : ended != null ? Status.CLOSED : 0;
    }

    /** {@link Status#CLOSED} once closed, {@link Status#FAILED} once failed, else 0: what a data-path call answers. */
    public final int state() {
        return closed ? Status.CLOSED : error != null ? Status.FAILED : 0;
    }

    /**
     * Fails the connection; the first reason wins and {@link #failed(String)} runs once for it.
     *
     * @return {@link Status#FAILED}, or {@link Status#CLOSED} when the owner closed it already or the peer ended it (a
     *         failure after a close is the close's own doing: sockets and queue pairs torn down under the last calls)
     */
    public final int fail(String why) {
        if (closed || ended != null) {
            return Status.CLOSED;
        }
        boolean first = false;
        synchronized (this) {
            if (ended != null) {
                return Status.CLOSED;
            }
            if (error == null) {
                error = why;
                first = true;
            }
        }
        if (first) {
            failed(why);
        }
        return Status.FAILED;
    }

    /**
     * Whether the peer's close reaches this end in its own data path even through relays (TCP: the goodbye and the end
     * of every stream pass through the relays' splices behind the last data, both ways), so that a relay's report that
     * the far side closed only races it. False (verbs): a receiver still gets its sender's goodbye through the relays
     * (liveness leaves a receiving end alone on that report), but a sender learns of its receiver's close only from
     * the report, which then fails it.
     */
    public boolean closeArrivesInBand() {
        return false;
    }

    /** Runs once, for the first failure: a provider logs it and tears down what tells the peer (its sockets). */
    protected void failed(String why) {
    }

    /** Marks the end closed; true only for the first call, which then releases the wire. */
    final boolean close() {
        if (closed) {
            return false;
        }
        closed = true;
        return true;
    }
}
