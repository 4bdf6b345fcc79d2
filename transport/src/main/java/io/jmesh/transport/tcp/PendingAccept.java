package io.jmesh.transport.tcp;

import io.jmesh.transport.connect.AcceptLoop;
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
final class PendingAccept extends AcceptLoop.Pending {
    final InetAddress remote;
    /** The eager ring agreed in the ACCEPT, or null. */
    final Eager eager;
    /** What the ACCEPT says: the data port, the socket count, the eager ring, the token. */
    final AcceptReply reply;
    private final byte[] token;
    private final SocketChannel[] sockets;
    private final String link;
    private int attached;

    PendingAccept(InboundHandshake handshake, AcceptReply reply, Eager eager, String link) {
        super(handshake);
        this.eager = eager;
        this.reply = reply;
        this.remote = handshake.remoteAddress().getAddress();
        this.token = reply.token();
        this.sockets = new SocketChannel[reply.sockets()];
        this.link = link;
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

    @Override
    protected boolean ready() {
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
    @Override
    protected void close() {
        handshake.close();
        for (int i = 0; i < sockets.length; i++) {
            DataSockets.closeQuietly(sockets[i]);
            sockets[i] = null;
        }
        attached = 0;
    }

    @Override
    public String toString() {
        return "on " + link + ", " + sockets.length + " data sockets on port " + reply.port();
    }
}
