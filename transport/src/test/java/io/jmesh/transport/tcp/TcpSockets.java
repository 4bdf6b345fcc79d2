package io.jmesh.transport.tcp;

import io.jmesh.api.Sender;

import java.net.InetSocketAddress;

/** Lets tests outside this package see where a TCP sender's data sockets are bound. */
public final class TcpSockets {
    private TcpSockets() {
    }

    /** This side's address of data socket {@code socket} of a TCP sender. */
    public static InetSocketAddress localAddress(Sender sender, int socket) {
        return TcpTestSupport.conn(sender).localAddress(socket);
    }
}
