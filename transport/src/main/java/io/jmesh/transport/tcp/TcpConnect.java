package io.jmesh.transport.tcp;

import io.jmesh.api.Connector;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.handshake.HandshakeStatus;
import io.jmesh.transport.handshake.OutboundHandshake;
import io.jmesh.transport.net.ListenHandle;
import io.jmesh.transport.net.Route;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * A TCP connect in progress, as a non-blocking state machine: {@link #poll()} returns null until the connection is
 * ready, then the sender ({@link TcpSendWire} under the core's sender). The handshake carries a {@link ConnectRequest}; when the listener's {@link
 * AcceptReply} arrives, this side opens the data sockets, each bound to the route's local address (so the data runs
 * over the link's own subnet) and connected to the listener's data port on its address of that link, and writes each
 * one's {@link AttachHeader}; once every header is written it confirms the handshake, and the sender is returned when
 * the handshake completes.
 */
public final class TcpConnect implements Connector {
    private static final Logger LOG = LogManager.getLogger(TcpConnect.class);

    private final TcpProvider provider;
    private final Route route;
    private final int requested;
    private final OutboundHandshake handshake;
    private SocketChannel[] sockets;
    private boolean[] connected;
    private ByteBuffer[] greetings;
    private CoreSender sender;
    private boolean confirmed;
    private boolean done;

    TcpConnect(TcpProvider provider, ListenHandle peer, Route route) {
        this.provider = provider;
        this.route = route;
        this.requested = provider.sockets();
        this.handshake = provider.agent().connect(peer, route, new ConnectRequest(requested).encode());
        LOG.info("connecting to {} over {} -> {}", peer.prefixes(), route.local().prefix(), route.peer().prefix());
    }

    @Override
    public String route() {
        return "tcp " + route.local().prefix() + " -> " + route.peer().prefix();
    }

    /**
     * Advances the connect.
     *
     * @return the sender once connected, null while in progress
     * @throws IllegalStateException naming the cause when the connect failed (everything it created is freed)
     */
    @Override
    public CoreSender poll() {
        if (done) {
            return sender;
        }
        HandshakeStatus s = handshake.poll();
        try {
            switch (s) {
                case IN_PROGRESS -> {
                    return null;
                }
                case ACTION_REQUIRED -> {
                    if (sockets == null) {
                        openSockets(AcceptReply.decode(handshake.peerPayload(), requested));
                    }
                    if (!confirmed && advanceSockets()) {
                        sender = TcpSendWire.sender(new DataConnection(sockets, "sender"), provider::release);
                        sockets = null; // the sender owns them now
                        confirmed = true;
                        handshake.confirm();
                    }
                    return null;
                }
                case COMPLETE -> {
                    done = true;
                    provider.release(this);
                    if (!provider.adopt(sender)) {
                        sender.close();
                        throw new IllegalStateException("the TCP provider is closed");
                    }
                    LOG.info("connected to {} over {} ({} data sockets)", route.peer().prefix(),
                            route.local().prefix(), ((TcpSendWire) sender.wire()).connection().count());
                    return sender;
                }
                default -> throw new IllegalStateException("connecting to " + route.peer().prefix() + " over "
                        + route.local().prefix() + " failed: " + handshake.failure());
            }
        } catch (IOException | RuntimeException e) {
            String why = e instanceof IOException
                    ? "cannot open the data connections to " + route.peer().prefix().address().getHostAddress()
                    + " over " + route.local().prefix() + ": " + e.getMessage() + " (is a firewall blocking the "
                    + "listener's data port? check that both ends of the link are up with 'ip addr')"
                    : e.getMessage();
            handshake.abort(why);
            close();
            if (e instanceof RuntimeException r && !(e instanceof IllegalArgumentException)) {
                throw r;
            }
            throw new IllegalStateException(e instanceof IllegalArgumentException
                    ? "connecting to " + route.peer().prefix() + " failed: " + why : why, e);
        }
    }

    private void openSockets(AcceptReply reply) throws IOException {
        InetAddress local = route.local().prefix().address();
        InetSocketAddress target = new InetSocketAddress(route.peer().prefix().address(), reply.port());
        sockets = new SocketChannel[reply.sockets()];
        connected = new boolean[reply.sockets()];
        greetings = new ByteBuffer[reply.sockets()];
        byte[] token = reply.token();
        for (int i = 0; i < sockets.length; i++) {
            sockets[i] = DataSockets.open(local);
            greetings[i] = new AttachHeader(i, sockets.length, token).encode();
            connected[i] = sockets[i].connect(target);
        }
    }

    /** Finishes connecting and writes the headers; true once every socket is connected and its header written. */
    private boolean advanceSockets() throws IOException {
        boolean all = true;
        for (int i = 0; i < sockets.length; i++) {
            if (!connected[i]) {
                connected[i] = sockets[i].finishConnect();
                if (!connected[i]) {
                    all = false;
                    continue;
                }
            }
            if (greetings[i].hasRemaining()) {
                sockets[i].write(greetings[i]);
                all &= !greetings[i].hasRemaining();
            }
        }
        return all;
    }

    /** Abandons a connect that has not completed; a completed one is owned by its sender. */
    @Override
    public void close() {
        if (!done) {
            done = true;
            handshake.close();
            if (sockets != null) {
                for (SocketChannel ch : sockets) {
                    DataSockets.closeQuietly(ch);
                }
                sockets = null;
            }
            if (sender != null) {
                sender.close();
                sender = null;
            }
            provider.release(this);
        }
    }

    @Override
    public String toString() {
        return "TcpConnect[" + route + "]";
    }
}
