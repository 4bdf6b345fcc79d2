package io.jmesh.transport.tcp;

import io.jmesh.transport.core.Eager;
import io.jmesh.transport.handshake.InboundHandshake;

import java.net.InetAddress;
import java.nio.channels.SocketChannel;
import java.security.MessageDigest;

/**
 * A connection this listener accepted in the handshake, waiting for its data sockets: each must arrive from the
 * connector's address with the connection's token and its own index. Owns the sockets attached so far until they are
 * handed to a receiver or closed.
 */
final class PendingAccept {
    final InboundHandshake handshake;
    final InetAddress remote;
    final long deadlineNanos;
    /** The eager ring agreed in the ACCEPT, or null. */
    final Eager eager;
    private final byte[] token;
    private final SocketChannel[] sockets;
    private int attached;

    PendingAccept(InboundHandshake handshake, byte[] token, int sockets, Eager eager, long deadlineNanos) {
        this.eager = eager;
        this.handshake = handshake;
        this.remote = handshake.remoteAddress().getAddress();
        this.token = token.clone();
        this.sockets = new SocketChannel[sockets];
        this.deadlineNanos = deadlineNanos;
    }

    /** Compares in constant time, so the token cannot be guessed byte by byte. */
    boolean hasToken(byte[] candidate) {
        return MessageDigest.isEqual(token, candidate);
    }

    int socketCount() {
        return sockets.length;
    }

    boolean has(int index) {
        return sockets[index] != null;
    }

    void attach(int index, SocketChannel ch) {
        sockets[index] = ch;
        attached++;
    }

    boolean ready() {
        return attached == sockets.length;
    }

    /** The attached sockets, in index order; the caller owns them from now on. */
    SocketChannel[] takeSockets() {
        SocketChannel[] out = sockets.clone();
        java.util.Arrays.fill(sockets, null);
        attached = 0;
        return out;
    }

    /** Fails the handshake if it has not completed and closes the sockets attached so far. */
    void close() {
        handshake.close();
        for (int i = 0; i < sockets.length; i++) {
            DataSockets.closeQuietly(sockets[i]);
            sockets[i] = null;
        }
        attached = 0;
    }
}
