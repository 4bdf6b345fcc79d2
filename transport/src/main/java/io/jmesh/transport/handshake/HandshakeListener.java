package io.jmesh.transport.handshake;

import io.jmesh.api.ListenHandle;
import java.net.InetAddress;
import java.nio.channels.ServerSocketChannel;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Listens on each mesh address separately (never on the wildcard address) and hands out connectors that proved the
 * secret. Made by {@link HandshakeAgent#listen}; {@link #pollInbound()} follows NCCL's accept contract: it never
 * blocks and returns null while nothing is ready.
 *
 * <pre>{@code
 * HandshakeListener l = agent.listen(List.of(IpPrefix.parse("192.168.101.2/24"), IpPrefix.parse("192.168.100.2/24")));
 * byte[] ncclHandle = l.handle().encode();   // <= 128 bytes
 * InboundHandshake in = l.pollInbound();     // null until a connector has sent a valid HELLO
 * }</pre>
 */
public final class HandshakeListener implements AutoCloseable {
    private final HandshakeAgent agent;
    private final ListenHandle handle;
    private final byte[] secret;
    private final List<ServerSocketChannel> servers;
    private final Queue<InboundHandshake> ready = new ConcurrentLinkedQueue<>();
    /** Agent thread only: open inbound sessions, oldest first, for the pending cap. */
    final ArrayDeque<InboundSession> sessions = new ArrayDeque<>();
    private volatile boolean closed;

    HandshakeListener(HandshakeAgent agent, ListenHandle handle, List<ServerSocketChannel> servers) {
        this.agent = agent;
        this.handle = handle;
        this.secret = handle.secretBytes();
        this.servers = List.copyOf(servers);
    }

    /** What peers need to connect: every address with its bound port, and this listener's secret. */
    public ListenHandle handle() {
        return handle;
    }

    /** The next connector waiting for accept/reject, or null when none is ready. Never blocks. */
    public InboundHandshake pollInbound() {
        InboundHandshake h;
        while ((h = ready.poll()) != null) {
            if (h.poll() != HandshakeStatus.FAILED) { // expired while queued
                return h;
            }
        }
        return null;
    }

    public boolean isClosed() {
        return closed;
    }

    /**
     * Stops listening and fails handshakes that have not completed; those already handed out keep their outcome if
     * it is final. Never blocks: the agent releases the ports shortly after.
     */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            agent.execute(() -> agent.closeListener(this), null);
        }
    }

    byte[] secret() {
        return secret;
    }

    List<ServerSocketChannel> servers() {
        return servers;
    }

    /**
     * Whom this listener, when full, drops for a newcomer: a socket that has not proven the secret (only those can a stranger
     * or a replay create), the oldest of the address that holds the most of them, so that a flood from one address
     * evicts its own sockets and never a legit peer's, which is unproven for one round trip; else the oldest whose
     * connector has not confirmed our ACCEPT (it idles on a reply it has); never one that waits for this process,
     * which a newcomer could not get further than.
     */
    InboundSession victim() {
        Map<InetAddress, Integer> unproven = new HashMap<>();
        int most = 0;
        InboundSession idle = null;
        for (InboundSession s : sessions) {
            if (!s.authenticated()) {
                most = Math.max(most, unproven.merge(s.remoteHost(), 1, Integer::sum));
            } else if (idle == null && s.state() == InboundSession.State.AWAIT_READY) {
                idle = s;
            }
        }
        for (InboundSession s : sessions) {
            if (!s.authenticated() && unproven.get(s.remoteHost()) == most) {
                return s;
            }
        }
        return idle;
    }

    void offer(InboundHandshake h) {
        ready.offer(h);
    }
}
