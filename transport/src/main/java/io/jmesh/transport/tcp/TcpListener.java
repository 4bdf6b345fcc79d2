package io.jmesh.transport.tcp;

import io.jmesh.api.Listener;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.Eager;
import io.jmesh.transport.handshake.HandshakeListener;
import io.jmesh.transport.handshake.HandshakeStatus;
import io.jmesh.transport.handshake.InboundHandshake;
import io.jmesh.transport.liveness.Liveness;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.channels.SocketChannel;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Accepts TCP connections: {@link #accept()} never blocks; it returns a receiver whose handshake has completed and
 * whose data sockets have all attached, or null. A connector's request is checked before anything is created for it;
 * a bad one is rejected with the reason. Accepting a connection opens (once per link address) a data port on the
 * address the handshake arrived on and answers with its port and a fresh random token ({@link AcceptReply}); the
 * connector's data sockets present that token ({@link AttachHeader}). The data sockets attach while the application
 * calls {@link #accept()}, as NCCL does until it gets its connection.
 */
public final class TcpListener implements Listener {
    private static final Logger LOG = LogManager.getLogger(TcpListener.class);
    private static final SecureRandom RANDOM = new SecureRandom();
    /** Slots of a connection's eager ring: more than NCCL keeps in flight per connection (8 steps). */
    static final int EAGER_SLOTS = 16;

    private final TcpProvider provider;
    private final HandshakeListener listener;
    private final DataAcceptor data;
    private final long timeoutNanos;
    private final List<PendingAccept> pending = new ArrayList<>();
    private boolean closed;

    TcpListener(TcpProvider provider, HandshakeListener listener) {
        this.provider = provider;
        this.listener = listener;
        this.timeoutNanos = provider.handshakeTimeout().toNanos();
        this.data = new DataAcceptor(timeoutNanos);
    }

    /** The handle to give connectors: every local address with its prefix, the ports, the secret, the TCP flag. */
    public ListenHandle listenHandle() {
        return listener.handle();
    }

    @Override
    public byte[] handle() {
        return listener.handle().encode();
    }

    @Override
    public String handleText() {
        return listener.handle().toString();
    }

    /**
     * A connected receiver, or null while none is ready.
     *
     * @throws IllegalStateException when the listener is closed
     */
    @Override
    public synchronized CoreReceiver accept() {
        if (closed) {
            throw new IllegalStateException("the listener is closed");
        }
        InboundHandshake in;
        while ((in = listener.pollInbound()) != null) {
            start(in);
        }
        long now = System.nanoTime();
        data.poll(pending, now);
        for (Iterator<PendingAccept> it = pending.iterator(); it.hasNext(); ) {
            PendingAccept p = it.next();
            HandshakeStatus s = p.handshake.poll();
            if (s == HandshakeStatus.FAILED) {
                it.remove();
                LOG.warn("a connection from {} failed during the handshake: {}", p.handshake.remoteAddress(),
                        p.handshake.failure());
                p.close();
            } else if (s == HandshakeStatus.COMPLETE && p.ready()) {
                it.remove();
                SocketChannel[] sockets = p.takeSockets();
                DataConnection connection = new DataConnection(sockets, "receiver");
                CoreReceiver r = TcpReceiveWire.receiver(connection, provider.registry(), provider.pumps(),
                        p.eager, provider::release);
                if (!provider.adopt(r)) {
                    r.close();
                    throw new IllegalStateException("the TCP provider is closed");
                }
                provider.agent().liveness().watch(p.handshake.connectionId(), false,
                        Liveness.host(p.handshake.remoteAddress()), p.handshake.peerLivenessPort(),
                        Liveness.host(p.handshake.localAddress()), connection);
                LOG.info("accepted a connection from {} with {} data sockets", p.handshake.remoteAddress(),
                        sockets.length);
                return r;
            } else if (now - p.deadlineNanos >= 0) {
                it.remove();
                LOG.warn("dropped a connection from {}: its data sockets did not all attach within {} ms (a firewall "
                        + "on the data port? the connector died?)", p.handshake.remoteAddress(),
                        TimeUnit.NANOSECONDS.toMillis(timeoutNanos));
                p.close();
            }
        }
        return null;
    }

    private void start(InboundHandshake in) {
        try {
            ConnectRequest request = ConnectRequest.decode(in.peerPayload());
            InetAddress local = in.localAddress().getAddress();
            LocalLink link = provider.linkFor(local);
            if (link == null) {
                throw new IllegalStateException("the connection arrived on " + in.localAddress()
                        + ", which is not one of this listener's TCP links");
            }
            int port = data.port(local);
            int sockets = Math.min(request.sockets(), provider.sockets());
            byte[] token = new byte[AcceptReply.TOKEN_BYTES];
            RANDOM.nextBytes(token);
            int eager = Math.min(request.eager(), provider.eagerThreshold());
            Eager ring = eager > 0 ? Eager.of(EAGER_SLOTS, eager) : null;
            PendingAccept p = new PendingAccept(in, token, sockets, ring, System.nanoTime() + timeoutNanos);
            pending.add(p);
            if (!in.accept(new AcceptReply(sockets, port, ring == null ? 0 : EAGER_SLOTS, eager, token).encode())) {
                pending.remove(p);
                throw new IllegalStateException("the handshake ended before it could be accepted: " + in.failure());
            }
            LOG.info("accepting a connection from {} on {} ({} data sockets on port {})", in.remoteAddress(),
                    link.prefix(), sockets, port);
        } catch (IOException | RuntimeException e) {
            LOG.warn("rejected a connection from {}: {}", in.remoteAddress(), e.getMessage());
            in.reject(e.getMessage() == null ? e.toString() : e.getMessage());
        }
    }

    /** Data sockets this listener dropped for misbehaving (for tests and diagnostics). */
    long droppedDataSockets() {
        return data.dropped();
    }

    /** Why the latest dropped data socket was dropped, or null. */
    String lastDropReason() {
        return data.lastDropReason();
    }

    /** The data port open on {@code local}, or 0. */
    synchronized int dataPort(InetAddress local) {
        return data.openPort(local);
    }

    /** Stops listening: closes the handshake listener, the data ports, and connections not yet handed out. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        listener.close();
        data.close();
        for (PendingAccept p : pending) {
            p.close();
        }
        pending.clear();
        provider.release(this);
    }

    @Override
    public String toString() {
        return "TcpListener[" + listener.handle() + "]";
    }
}
