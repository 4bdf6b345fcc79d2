package io.jmesh.transport.handshake;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.JmeshLog;
import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;

/**
 * The listening side of one {@link HandshakeAgent}: binds a listener's sockets on its mesh addresses, accepts
 * connectors and admits each as an {@link InboundSession} while the listener holds fewer than its cap (evicting the
 * oldest that has not proven the secret when it is full), and closes listeners. Everything but {@link #open} runs
 * on the agent thread, which owns the list of listeners.
 */
final class ListenerSet {
    private static final Logger LOG = JmeshLog.logger(HandshakeAgent.class);
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final int ACCEPTS_PER_CYCLE = 64;
    private static final int BACKLOG = 64;

    private final HandshakeAgent agent;
    private final Selector selector;
    // Agent thread only.
    private final List<HandshakeListener> listeners = new ArrayList<>();

    /** Where a listening socket's accept events go. */
    record Acceptor(HandshakeListener listener, ServerSocketChannel server) {
    }

    ListenerSet(HandshakeAgent agent, Selector selector) {
        this.agent = agent;
        this.selector = selector;
    }

    /**
     * Binds a socket on each prefix's address (ephemeral ports) on the caller's thread and hands the listener to the
     * agent thread; the handle carries each link's speed and {@code flags}.
     */
    HandshakeListener open(List<IpPrefix> prefixes, List<Long> speedsMbps, int flags) throws IOException {
        if (!agent.isRunning()) {
            throw new IOException(HandshakeAgent.CLOSED);
        }
        if (prefixes.isEmpty()) {
            throw new IllegalArgumentException("nothing to listen on: no mesh addresses given");
        }
        List<ListenAddress> planned = new ArrayList<>();
        for (int i = 0; i < prefixes.size(); i++) {
            planned.add(new ListenAddress(prefixes.get(i), 1, ListenAddress.gbpsOf(speedsMbps.get(i))));
        }
        new ListenHandle(flags, 0, planned); // fails before binding anything when they do not fit in 128 bytes
        List<ServerSocketChannel> servers = new ArrayList<>();
        List<ListenAddress> bound = new ArrayList<>();
        try {
            for (ListenAddress p : planned) {
                ServerSocketChannel server = ServerSocketChannel.open();
                servers.add(server);
                server.configureBlocking(false);
                try {
                    server.bind(new InetSocketAddress(p.prefix().address(), 0), BACKLOG);
                } catch (IOException e) {
                    throw new IOException("cannot listen on " + p.prefix() + ": " + e.getMessage()
                            + "; the address must be up on this host (check 'ip addr')", e);
                }
                int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
                bound.add(new ListenAddress(p.prefix(), port, p.speedGbps()));
            }
        } catch (IOException | RuntimeException e) {
            servers.forEach(HandshakeAgent::closeQuietly);
            throw e;
        }
        HandshakeListener listener = new HandshakeListener(agent, new ListenHandle(flags, RANDOM.nextLong(), bound),
                servers);
        if (!agent.execute(() -> register(listener), null)) {
            servers.forEach(HandshakeAgent::closeQuietly);
            throw new IOException(HandshakeAgent.CLOSED);
        }
        return listener;
    }

    void acceptAll(Acceptor a) {
        for (int i = 0; i < ACCEPTS_PER_CYCLE; i++) {
            SocketChannel channel;
            try {
                channel = a.server().accept();
            } catch (IOException e) {
                agent.warn("handshake listener {} cannot accept: {}", Session.describe(localAddress(a.server())),
                        e.getMessage());
                return;
            }
            if (channel == null) {
                return;
            }
            admit(a.listener(), channel);
        }
    }

    private void admit(HandshakeListener listener, SocketChannel channel) {
        String peer;
        InetAddress host;
        try {
            InetSocketAddress remote = (InetSocketAddress) channel.getRemoteAddress();
            peer = Session.describe(remote);
            host = remote.getAddress();
            channel.configureBlocking(false);
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
        } catch (IOException e) {
            HandshakeAgent.closeQuietly(channel);
            return;
        }
        if (listener.isClosed()) {
            HandshakeAgent.closeQuietly(channel);
            return;
        }
        int cap = agent.settings().maxPendingPerListener();
        if (listener.sessions.size() >= cap) {
            InboundSession victim = listener.victim();
            if (victim == null) {
                String reason = "the listener already holds its limit of " + cap + " connectors that proved the "
                        + "secret and wait for this process to accept() them (accept sooner, or raise "
                        + "JMESH_HANDSHAKE_MAX_PENDING)";
                agent.warn("handshake from {} refused: {}", peer, reason);
                agent.countDropped(reason);
                Session.rejectAtOnce(channel, reason);
                return;
            }
            victim.evict(cap);
        }
        byte[] nonce = new byte[Frame.NONCE_LENGTH];
        RANDOM.nextBytes(nonce);
        InboundSession session = new InboundSession(agent, listener, channel, agent.newDeadline(), peer, host,
                nonce);
        try {
            session.key = channel.register(selector, SelectionKey.OP_READ, session);
        } catch (IOException e) {
            HandshakeAgent.closeQuietly(channel);
            return;
        }
        agent.track(session);
        listener.sessions.add(session);
    }

    void register(HandshakeListener listener) {
        try {
            for (ServerSocketChannel server : listener.servers()) {
                server.register(selector, SelectionKey.OP_ACCEPT, new Acceptor(listener, server));
            }
            listeners.add(listener);
        } catch (IOException | RuntimeException e) {
            listener.servers().forEach(HandshakeAgent::closeQuietly);
            if (agent.isRunning()) {
                LOG.error("jmesh handshake agent: cannot register listener {}", listener.handle().prefixes(), e);
            }
        }
    }

    /** Closes the listener's sockets and ends its handshakes that still wait (agent thread). */
    void close(HandshakeListener listener) {
        listener.servers().forEach(HandshakeAgent::closeQuietly);
        for (InboundSession s : new ArrayList<>(listener.sessions)) {
            s.listenerClosed();
        }
        listeners.remove(listener);
    }

    private static InetSocketAddress localAddress(ServerSocketChannel server) {
        try {
            return (InetSocketAddress) server.getLocalAddress();
        } catch (IOException e) {
            return null;
        }
    }

    /** Closes every listener: the agent is stopping. */
    void closeAll() {
        for (HandshakeListener l : new ArrayList<>(listeners)) {
            close(l);
        }
    }
}
