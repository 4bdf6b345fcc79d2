package io.jmesh.transport.core;

import io.jmesh.api.Status;

/**
 * What became of one end of a connection: open, failed (the first failure wins and is what {@code error()} reports:
 * it names the peer, the cause and what it means), or closed by its owner. Both the core and the provider's wire
 * read it on every call, so it is two fields and no lock; only the failure path synchronizes, so that two threads
 * failing at once (a caller and a progress agent) keep one reason.
 */
public class Fate {
    private volatile String error;
    private volatile boolean closed;

    public final String error() {
        return error;
    }

    public final boolean failed() {
        return error != null;
    }

    public final boolean closed() {
        return closed;
    }

    /** {@link Status#CLOSED} once closed, {@link Status#FAILED} once failed, else 0: what a data-path call answers. */
    public final int state() {
        return closed ? Status.CLOSED : error != null ? Status.FAILED : 0;
    }

    /**
     * Fails the connection; the first reason wins and {@link #failed(String)} runs once for it.
     *
     * @return {@link Status#FAILED}, or {@link Status#CLOSED} when the owner closed it already (a failure after close
     *         is the close's own doing: sockets and queue pairs torn down under the last calls)
     */
    public final int fail(String why) {
        if (closed) {
            return Status.CLOSED;
        }
        boolean first = false;
        synchronized (this) {
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
