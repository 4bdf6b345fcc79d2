package io.jmesh.transport.tcp;

import io.jmesh.api.Connector;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.Eager;
import io.jmesh.transport.handshake.HandshakeStatus;
import io.jmesh.transport.handshake.OutboundHandshake;
import io.jmesh.api.ListenHandle;
import io.jmesh.transport.net.Route;
import io.jmesh.transport.route.MeshKey;
import io.jmesh.transport.route.RelayRequest;
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
 *
 * <p>A relayed route opens every socket (the handshake's and each data socket) to the first relay's endpoint,
 * behind a {@link RelayRequest} naming the listener's address and port; the relays splice the sockets through
 * ({@link TcpRelay}), so everything after the request is the same protocol as on a direct link. A connect made while
 * route discovery is still settling and no route is known yet waits for one, up to the handshake timeout.
 */
public final class TcpConnect implements Connector {
    private static final Logger LOG = LogManager.getLogger(TcpConnect.class);

    private final TcpProvider provider;
    private final ListenHandle peer;
    private final int requested;
    private final long routeDeadlineNanos;
    private Route route;
    private OutboundHandshake handshake;
    private SocketChannel[] sockets;
    private boolean[] connected;
    private ByteBuffer[] greetings;
    private CoreSender sender;
    private boolean confirmed;
    /** The listener's eager ring for this connection, as its ACCEPT described it; null: nothing goes eagerly. */
    private Eager eager;
    private boolean done;
    /** Why the connect ended without a sender; every later poll throws it. */
    private String failure;

    /** @param route the route, or null to wait for route discovery to find one */
    TcpConnect(TcpProvider provider, ListenHandle peer, Route route) {
        this.provider = provider;
        this.peer = peer;
        this.requested = provider.sockets();
        this.routeDeadlineNanos = System.nanoTime() + provider.handshakeTimeout().toNanos();
        if (route != null) {
            start(route);
        } else {
            LOG.info("no route to {} yet: waiting for route discovery", peer.prefixes());
        }
    }

    private void start(Route r) {
        route = r;
        handshake = provider.agent().connect(peer, r, new ConnectRequest(requested, provider.eagerThreshold()).encode());
        LOG.info("connecting to {} over {} -> {}{}", peer.prefixes(), r.local().prefix(), r.peer().prefix(),
                r.isRelayed() ? " " + r.via() : "");
    }

    @Override
    public String route() {
        Route r = route;
        if (r == null) {
            return "tcp to " + peer.prefixes() + ": waiting for route discovery";
        }
        return "tcp " + r.local().prefix() + " -> " + r.peer().prefix() + (r.isRelayed() ? " " + r.via() : "");
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
            if (sender == null) {
                throw new IllegalStateException(failure);  // every poll after a failure or close says why
            }
            return sender;
        }
        if (handshake == null && !awaitRoute()) {
            return null;
        }
        HandshakeStatus s = handshake.poll();
        try {
            switch (s) {
                case IN_PROGRESS -> {
                    return null;
                }
                case ACTION_REQUIRED -> {
                    if (sockets == null) {
                        AcceptReply reply = AcceptReply.decode(handshake.peerPayload(), requested,
                                provider.eagerThreshold());
                        eager = reply.slots() > 0 ? Eager.of(reply.slots(), reply.eager()) : null;
                        openSockets(reply);
                    }
                    if (!confirmed && advanceSockets()) {
                        String via = route.isRelayed() ? route.peer().prefix().address().getHostAddress()
                                + " through the relay " + DataSockets.remote(sockets[0]) : null;
                        sender = TcpSendWire.sender(new DataConnection(sockets, "sender", via), provider.registry(),
                                provider.pumps(), eager, provider.socket0Max(), provider::release);
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
                    // the neighbour is who this route says, whatever the ACCEPT claims: the first relay put its
                    // own liveness port there, and a peer beyond it is no neighbour to ping
                    provider.agent().liveness().watch(handshake.connectionId(), true, route.neighbour(),
                            handshake.peerLivenessPort(), route.local().prefix().address(),
                            ((TcpSendWire) sender.wire()).connection(), route.isRelayed()
                                    ? route.peer().prefix().address().getHostAddress() : null);
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
            failure = e instanceof IllegalArgumentException
                    ? "connecting to " + route.peer().prefix() + " failed: " + why : why;
            close();
            if (e instanceof RuntimeException r && !(e instanceof IllegalArgumentException)) {
                throw r;
            }
            throw new IllegalStateException(failure, e);
        }
    }

    /** True once a route is known and the handshake started; throws when none came within the timeout. */
    private boolean awaitRoute() {
        Route r = provider.relayedRoute(peer);
        if (r == null) {
            if (System.nanoTime() - routeDeadlineNanos < 0) {
                return false;
            }
            done = true;
            provider.release(this);
            failure = "connecting to " + peer.prefixes() + " failed: no route within the handshake timeout; "
                    + provider.noRouteReason(peer);
            throw new IllegalStateException(failure);
        }
        start(r);
        return true;
    }

    private void openSockets(AcceptReply reply) throws IOException {
        InetAddress local = route.local().prefix().address();
        InetSocketAddress target = new InetSocketAddress(route.peer().prefix().address(), reply.port());
        InetSocketAddress dial = route.isRelayed() ? route.via().endpoint() : target;
        sockets = new SocketChannel[reply.sockets()];
        connected = new boolean[reply.sockets()];
        greetings = new ByteBuffer[reply.sockets()];
        byte[] token = reply.token();
        for (int i = 0; i < sockets.length; i++) {
            sockets[i] = DataSockets.open(local);
            ByteBuffer header = new AttachHeader(i, sockets.length, token).encode();
            if (route.isRelayed()) {
                MeshKey key = provider.agent().settings().meshKey();
                ByteBuffer b = ByteBuffer.allocate(RelayRequest.BYTES + key.requestTrailer() + header.remaining());
                RelayRequest.encode(b, target, RelayRequest.MAX_HOPS, key);
                header = b.put(header).flip();
            }
            greetings[i] = header;
            connected[i] = sockets[i].connect(dial);
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
            if (failure == null) {
                failure = "the connect to " + peer.prefixes() + " was closed before it completed (Connector.close())";
            }
            if (handshake != null) {
                handshake.close();
            }
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
