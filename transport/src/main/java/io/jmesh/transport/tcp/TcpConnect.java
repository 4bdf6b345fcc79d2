package io.jmesh.transport.tcp;

import io.jmesh.api.ListenHandle;
import io.jmesh.transport.connect.ConnectMachine;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.Eager;
import io.jmesh.transport.net.Route;
import io.jmesh.transport.security.MeshKey;
import io.jmesh.transport.route.RelayRequest;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * The TCP side of a connect ({@link ConnectMachine} runs it). The HELLO carries a {@link ConnectRequest}; from the
 * listener's {@link AcceptReply} this side opens the data sockets, each bound to the route's local address (so the
 * data runs over the link's own subnet) and connected to the listener's data port on its address of that link, and
 * writes each one's {@link AttachHeader}; the sender ({@link TcpSendWire} under the core's sender) is built once
 * every header is written.
 *
 * <p>A relayed route opens every socket (the handshake's and each data socket) to the first relay's endpoint,
 * behind a {@link RelayRequest} naming the listener's address and port; the relays splice the sockets through
 * ({@link TcpRelay}), so everything after the request is the same protocol as on a direct link.
 */
public final class TcpConnect extends ConnectMachine {
    private static final Logger LOG = JmeshLog.logger(TcpConnect.class);

    private final TcpProvider provider;
    private final int requested;
    private SocketChannel[] sockets;
    private boolean[] connected;
    private ByteBuffer[] greetings;
    /** The listener's eager ring for this connection, as its ACCEPT described it; null: nothing goes eagerly. */
    private Eager eager;

    /** @param route the route, or null to wait for route discovery to find one */
    TcpConnect(TcpProvider provider, ListenHandle peer, Route route) {
        super(provider.agent(), provider.control(), peer);
        this.provider = provider;
        this.requested = provider.sockets();
        if (route != null) {
            start(route);
        } else {
            LOG.info("no route to {} yet: waiting for route discovery", peer.prefixes());
        }
    }

    @Override
    protected byte[] offer(Route r) {
        return new ConnectRequest(requested, provider.eagerThreshold()).encode();
    }

    @Override
    protected CoreSender build(byte[] answer) throws IOException {
        if (sockets == null) {
            AcceptReply reply = AcceptReply.decode(answer, requested, provider.eagerThreshold());
            eager = reply.slots() > 0 ? Eager.of(reply.slots(), reply.eager()) : null;
            openSockets(reply);
        }
        if (!advanceSockets()) {
            return null;
        }
        Route route = firstRoute();
        String via = route.isRelayed() ? route.peer().prefix().address().getHostAddress() + " through the relay "
                + DataSockets.remote(sockets[0]) : null;
        DataConnection conn = new DataConnection(sockets, "sender", via).lingerWith(provider.linger());
        CoreSender sender = TcpSendWire.sender(conn, provider.registry(), provider.pumps(), eager,
                provider.socket0Max(), provider::release);
        sockets = null; // the sender owns them now
        return sender;
    }

    @Override
    protected String ioFailure(IOException e) {
        Route route = firstRoute();
        return "cannot open the data connections to " + route.peer().prefix().address().getHostAddress() + " over "
                + route.local().prefix() + ": " + e.getMessage() + " (is a firewall blocking the listener's data "
                + "port? check that both ends of the link are up with 'ip addr')";
    }

    @Override
    protected boolean adopt(CoreSender s) {
        return provider.adopt(s);
    }

    @Override
    protected void freeUnowned() {
        if (sockets != null) {
            for (SocketChannel ch : sockets) {
                DataSockets.closeQuietly(ch);
            }
            sockets = null;
        }
    }

    @Override
    protected void ended() {
        provider.release(this);
    }

    @Override
    public String route() {
        Route r = firstRoute();
        if (r == null) {
            return "tcp to " + peer.prefixes() + ": waiting for route discovery";
        }
        return "tcp " + r.local().prefix() + " -> " + r.peer().prefix() + (r.isRelayed() ? " " + r.via() : "");
    }

    private void openSockets(AcceptReply reply) throws IOException {
        Route route = firstRoute();
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
}
