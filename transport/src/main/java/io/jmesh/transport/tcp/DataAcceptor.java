package io.jmesh.transport.tcp;

import io.jmesh.transport.log.WarnLimiter;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A listener's data ports and the data sockets that have not yet said which connection they belong to. One data
 * server per link address, opened when the first connection arrives on that link, bound to that address only. A new
 * socket must send its {@link AttachHeader} (right token, an index not yet taken, from the connector's address)
 * before its deadline; anything else (garbage, a wrong token, silence) is closed and logged, and nothing else is
 * disturbed. At most {@value #MAX_UNATTACHED} sockets wait at once; a new one evicts the oldest.
 *
 * <p>Driven by {@link TcpListener#accept()}; not thread-safe (the listener serialises calls).
 */
final class DataAcceptor implements AutoCloseable {
    private static final Logger LOG = JmeshLog.logger(DataAcceptor.class);
    static final int MAX_UNATTACHED = 64;
    private static final int ACCEPTS_PER_POLL = 64;
    /** Room for many peers' data sockets arriving at once, before accept() runs (the kernel caps it at somaxconn). */
    private static final int BACKLOG = 1024;

    /** A data socket that has not finished its header. */
    private static final class Unattached {
        final SocketChannel channel;
        final String peer;
        final InetAddress remote;
        final long deadlineNanos;
        final ByteBuffer header = ByteBuffer.allocate(AttachHeader.LENGTH);

        Unattached(SocketChannel channel, long deadlineNanos) {
            this.channel = channel;
            this.peer = DataSockets.remote(channel);
            InetSocketAddress r = DataSockets.remoteAddress(channel);
            this.remote = r == null ? null : r.getAddress();
            this.deadlineNanos = deadlineNanos;
        }
    }

    private final long timeoutNanos;
    private final Map<InetAddress, ServerSocketChannel> servers = new LinkedHashMap<>();
    private final ArrayDeque<Unattached> unattached = new ArrayDeque<>();
    private final WarnLimiter warnings = new WarnLimiter(LOG, "jmesh tcp: ", 20, TimeUnit.SECONDS.toNanos(1));
    private final AtomicLong dropped = new AtomicLong();
    private volatile String lastDropReason;

    DataAcceptor(long timeoutNanos) {
        this.timeoutNanos = timeoutNanos;
    }

    /**
     * The data port on {@code local}, opening it on first use.
     *
     * @throws IOException naming the address when it cannot be bound
     */
    int port(InetAddress local) throws IOException {
        ServerSocketChannel server = servers.get(local);
        if (server == null) {
            try {
                server = DataSockets.listen(local, BACKLOG);
            } catch (IOException e) {
                throw new IOException("cannot open a data port on " + DataSockets.host(local) + ": " + e.getMessage()
                        + "; the address must be up on this host (check 'ip addr')", e);
            }
            servers.put(local, server);
        }
        return ((InetSocketAddress) server.getLocalAddress()).getPort();
    }

    /** Accepts new data sockets, reads their headers, attaches the good ones to {@code pending}, drops the rest. */
    void poll(List<PendingAccept> pending, long now) {
        for (ServerSocketChannel server : servers.values()) {
            acceptFrom(server, now);
        }
        for (Iterator<Unattached> it = unattached.iterator(); it.hasNext(); ) {
            Unattached u = it.next();
            String problem;
            try {
                problem = advance(u, pending);
            } catch (IOException e) {
                problem = "socket error: " + e.getMessage();
            }
            if (problem == null && u.header.hasRemaining() && now - u.deadlineNanos >= 0) {
                problem = "sent " + u.header.position() + " of the " + AttachHeader.LENGTH + " header bytes within "
                        + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms";
            }
            if (problem != null) {
                it.remove();
                drop(u.channel, u.peer, problem);
            } else if (!u.header.hasRemaining()) {
                it.remove(); // attached
            }
        }
    }

    private void acceptFrom(ServerSocketChannel server, long now) {
        for (int i = 0; i < ACCEPTS_PER_POLL; i++) {
            SocketChannel ch;
            try {
                ch = server.accept();
            } catch (IOException e) {
                warnings.warn("data port {} cannot accept: {}", DataSockets.describe(localAddress(server)),
                        e.getMessage());
                return;
            }
            if (ch == null) {
                return;
            }
            try {
                ch.configureBlocking(false);
                DataSockets.configure(ch);
            } catch (IOException e) {
                DataSockets.closeQuietly(ch);
                continue;
            }
            if (unattached.size() >= MAX_UNATTACHED) {
                Unattached oldest = unattached.removeFirst();
                drop(oldest.channel, oldest.peer, "evicted: " + MAX_UNATTACHED + " data sockets were already waiting "
                        + "to say which connection they belong to");
            }
            unattached.addLast(new Unattached(ch, now + timeoutNanos));
        }
    }

    /** Reads what the socket has sent; attaches it once the header is complete. Returns a problem, or null. */
    private static String advance(Unattached u, List<PendingAccept> pending) throws IOException {
        if (!u.header.hasRemaining()) {
            return null;
        }
        int got = u.channel.read(u.header);
        if (got < 0) {
            return "closed after " + u.header.position() + " of the " + AttachHeader.LENGTH + " header bytes";
        }
        if (u.header.hasRemaining()) {
            return null;
        }
        AttachHeader h;
        try {
            h = AttachHeader.decode(u.header);
        } catch (IllegalArgumentException e) {
            return "bad data socket header: " + e.getMessage();
        }
        byte[] token = h.token();
        PendingAccept match = null;
        for (PendingAccept p : pending) {
            if (p.hasToken(token)) {
                match = p;
            }
        }
        if (match == null) {
            return "unknown token: not a data socket of a connection this listener has accepted";
        }
        if (u.remote == null || !u.remote.equals(match.remote)) {
            return "it connected from " + (u.remote == null ? "?" : DataSockets.host(u.remote))
                    + ", but its connection's handshake came from " + DataSockets.host(match.remote);
        }
        if (h.sockets() != match.socketCount()) {
            return "it says its connection has " + h.sockets() + " data sockets, the listener granted "
                    + match.socketCount();
        }
        if (match.has(h.index())) {
            return "data socket " + h.index() + " of its connection is already attached";
        }
        match.attach(h.index(), u.channel);
        return null;
    }

    private void drop(SocketChannel ch, String peer, String problem) {
        DataSockets.closeQuietly(ch);
        lastDropReason = problem;
        dropped.incrementAndGet();
        warnings.warn("dropped a data socket from {}: {}", peer, problem);
    }

    /** Data sockets dropped for misbehaving, since this listener started. */
    long dropped() {
        return dropped.get();
    }

    /** Why the latest counted drop happened, or null. */
    String lastDropReason() {
        return lastDropReason;
    }

    /** The data port on {@code local}, or 0 when none is open there. */
    int openPort(InetAddress local) {
        ServerSocketChannel s = servers.get(local);
        InetSocketAddress a = s == null ? null : localAddress(s);
        return a == null ? 0 : a.getPort();
    }

    private static InetSocketAddress localAddress(ServerSocketChannel server) {
        try {
            return (InetSocketAddress) server.getLocalAddress();
        } catch (IOException e) {
            return null;
        }
    }

    /** Closes the data ports, then every socket still waiting. */
    @Override
    public void close() {
        for (ServerSocketChannel s : servers.values()) {
            DataSockets.closeQuietly(s);
        }
        servers.clear();
        for (Unattached u : unattached) {
            DataSockets.closeQuietly(u.channel);
        }
        unattached.clear();
    }
}
