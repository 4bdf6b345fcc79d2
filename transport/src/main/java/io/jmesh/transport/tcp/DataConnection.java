package io.jmesh.transport.tcp;

import io.jmesh.api.Status;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.nio.channels.SocketChannel;

/**
 * The data sockets of one connection and its fate: it owns the sockets and closes them once, on failure or on close.
 * The first failure wins and is kept as the error both ends' {@code error()} report; it names the peer, the cause and
 * what it means.
 */
final class DataConnection {
    private static final Logger LOG = LogManager.getLogger(DataConnection.class);

    final SocketChannel[] sockets;
    /** The peer's end of socket 0, e.g. "127.0.101.3:40123". */
    final String peer;
    private final String role;
    private volatile String error;
    private volatile boolean closed;

    DataConnection(SocketChannel[] sockets, String role) {
        this.sockets = sockets.clone();
        this.peer = DataSockets.remote(sockets[0]);
        this.role = role;
    }

    String error() {
        return error;
    }

    boolean failed() {
        return error != null;
    }

    boolean closed() {
        return closed;
    }

    /** Fails the connection (first failure wins) and closes the sockets so the peer learns at once. */
    int fail(String why) {
        if (closed) {
            return Status.CLOSED;
        }
        boolean first = false;
        synchronized (this) { // failure path only
            if (error == null) {
                error = why;
                first = true;
            }
        }
        if (first) {
            LOG.warn("jmesh tcp {}: {}", role, why);
            closeSockets();
        }
        return Status.FAILED;
    }

    /** A socket call failed: reset, broken pipe, or this side closed it (then the result is CLOSED). */
    int lost(IOException e) {
        if (closed) {
            return Status.CLOSED;
        }
        String what = e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
        return fail("connection to " + peer + " lost: " + what + "; the peer process died or closed the connection");
    }

    /** The peer closed its end. */
    int lostEndOfStream(String detail) {
        if (closed) {
            return Status.CLOSED;
        }
        return fail("connection to " + peer + " lost: the peer closed the connection" + detail
                + "; the peer process died or closed the connection");
    }

    /** The registered memory went away under a transfer (its arena was closed). */
    int memoryGone(RuntimeException e) {
        return fail("the memory of a transfer on the connection to " + peer + " is no longer accessible ("
                + e.getMessage() + "); close the connection before freeing registered memory");
    }

    /** The peer broke the protocol. */
    int violation(String what) {
        return fail("protocol violation by " + peer + ": " + what + "; the connection was dropped (run the same "
                + "jmesh version on every node)");
    }

    private void closeSockets() {
        for (SocketChannel ch : sockets) {
            DataSockets.closeQuietly(ch);
        }
    }

    void close() {
        if (!closed) {
            closed = true;
            closeSockets();
        }
    }

    @Override
    public String toString() {
        return role + " " + DataSockets.describe(DataSockets.localAddress(sockets[0])) + " -> " + peer;
    }
}
