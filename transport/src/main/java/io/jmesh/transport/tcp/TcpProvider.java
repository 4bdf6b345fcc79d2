package io.jmesh.transport.tcp;

import io.jmesh.transport.lifecycle.Closer;
import io.jmesh.api.Context;
import io.jmesh.api.Registration;
import io.jmesh.api.spi.Provider;
import io.jmesh.transport.control.ControlPlane;
import io.jmesh.transport.control.RoutePlan;
import io.jmesh.transport.handshake.HandshakeAgent;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.api.NoRouteException;
import io.jmesh.transport.net.RouteSelector;
import io.jmesh.transport.route.RouteService;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * jmesh over TCP sockets, for meshes and machines without RDMA, behind the same API and with the same semantics as
 * the verbs provider: unidirectional connections (connect gives a sender, accept a receiver),
 * receiver-driven flow control with grouped, tagged receives, and up to 32 requests in flight. Each connection runs
 * over the one local link that shares a subnet with the peer, with {@code JMESH_TCP_SOCKETS} data sockets bound to
 * that link's address. One-sided writes and reads name a registration by its random id ({@link TcpRegistry}); the
 * owner's receiver ({@link TcpOpServer}) applies and serves them while its application polls it, where verbs has the NIC do it.
 *
 * <pre>{@code
 * try (TcpProvider tcp = TcpProvider.open(new Context())) {
 *     TcpListener listener = tcp.listen();            // publish listener.handle()
 *     TcpConnect c = tcp.connect(peerHandle);         // then c.poll() until it returns the sender
 * }
 * }</pre>
 *
 * <p>The provider owns what it creates: {@link #close()} closes the listeners, unfinished connects and connections
 * that are still open, in that order, and then its handshake agent (the thread that runs its handshakes with the
 * context's timeout and limit). Registrations stay the caller's.
 */
public final class TcpProvider implements Provider {
    private static final Logger LOG = JmeshLog.logger(TcpProvider.class);

    private final List<LocalLink> links;
    private final int sockets;
    private final Duration handshakeTimeout;
    /** Handshakes, liveness, route discovery and the relay ({@link TcpRelay}): closed last. */
    private final ControlPlane control;
    private final TcpRelay relay;
    private final Set<AutoCloseable> owned = new LinkedHashSet<>();
    private final TcpRegistry registry = new TcpRegistry();
    private final int threads;
    private final int spinUs;
    private final int eagerThreshold;
    private final int socket0Max;
    /** The helper threads that move the bulk sockets; started with the first connection. */
    private TcpPumps pumps;
    /** Where closed senders' sockets finish in order; its thread starts with the first such close. */
    private final TcpLinger linger = new TcpLinger(Integer.toHexString(System.identityHashCode(this)));
    private boolean closed;

    TcpProvider(List<LocalLink> links, int sockets, int threads, int spinUs, int eagerThreshold, int socket0Max,
                Duration handshakeTimeout, ControlPlane control, TcpRelay relay) {
        this.socket0Max = socket0Max;
        this.links = List.copyOf(links);
        this.sockets = sockets;
        this.eagerThreshold = eagerThreshold;
        this.threads = threads;
        this.spinUs = spinUs;
        this.handshakeTimeout = handshakeTimeout;
        this.control = control;
        this.relay = relay;
    }

    /**
     * Finds the usable links and opens the provider.
     *
     * @throws IllegalArgumentException when a configured address is not on this host (the message names it)
     * @throws IllegalStateException    when no interface has a usable address
     */
    public static TcpProvider open(Context context) {
        context.conclude();
        List<LocalLink> links = TcpLinks.discover(context.addresses());
        ControlPlane control = ControlPlane.open(context, links);
        TcpRelay[] relay = new TcpRelay[1];
        try {
            control.startRouting(settings -> relay[0] = TcpRelay.bind(links, settings.timeout().toNanos(),
                    settings.maxPendingPerListener(), settings.meshKey(),
                    Math.min(context.tcpThreads(), Runtime.getRuntime().availableProcessors()),
                    context.tcpRelaySplice()));
        } catch (RuntimeException e) {
            Closer.closeAll(e::addSuppressed, control);
            throw e;
        }
        LOG.info("jmesh tcp: links {}, {} data sockets per connection, {} helper threads ({} CPUs, {} rank(s) on "
                        + "this host, spinning {} us before they sleep), eager up to {} bytes, relay ports {}", links,
                context.tcpSockets(), context.tcpThreads(), Runtime.getRuntime().availableProcessors(),
                context.localRanks(), context.tcpSpinUs(), context.tcpEagerThreshold(), relay[0].ports());
        return new TcpProvider(links, context.tcpSockets(), context.tcpThreads(), context.tcpSpinUs(),
                context.tcpEagerThreshold(), context.tcpSocket0Max(), context.handshakeTimeout(), control, relay[0]);
    }

    @Override
    public String name() {
        return "tcp";
    }

    @Override
    public List<LocalLink> links() {
        return links;
    }

    @Override
    public List<LocalLink> directLinks(ListenHandle peer) {
        return RouteSelector.directLinks(links, peer);
    }

    /** Data sockets per connection this side asks for (the listener may grant fewer). */
    int sockets() {
        return sockets;
    }

    /** The largest message sent eagerly, and the largest this side's rings take (0: none). */
    int eagerThreshold() {
        return eagerThreshold;
    }

    /** The largest message a sender writes on socket 0 itself when it has bulk sockets. */
    int socket0Max() {
        return socket0Max;
    }

    Duration handshakeTimeout() {
        return handshakeTimeout;
    }

    HandshakeAgent agent() {
        return control.agent();
    }

    ControlPlane control() {
        return control;
    }

    /** The local link whose address is {@code local}, or null. */
    LocalLink linkFor(InetAddress local) {
        return RouteSelector.linkAt(links, local);
    }

    /** Listens on every link; the handle carries all their addresses and the TCP flag. */
    @Override
    public TcpListener listen() throws IOException {
        checkOpen();
        TcpListener l = new TcpListener(this, control.agent().listenOn(links, ListenHandle.FLAG_TCP_PROVIDER));
        if (!adopt(l)) {
            l.close();
            throw new IllegalStateException("the TCP provider is closed");
        }
        return l;
    }

    /**
     * Starts connecting to a listener's handle over the best local link that shares a subnet with it; poll the
     * result until it yields the sender.
     *
     * @throws NoRouteException         when no local link shares a subnet with the peer (the message lists both sides)
     * @throws IllegalArgumentException when the peer listens with the rdma provider
     */
    @Override
    public TcpConnect connect(ListenHandle peer) throws NoRouteException {
        return connect(peer, null);
    }

    @Override
    public TcpConnect connect(ListenHandle peer, String preferredLink) throws NoRouteException {
        Objects.requireNonNull(peer, "peer");
        checkOpen();
        if (!peer.isTcpProvider()) {
            throw new IllegalArgumentException("cannot connect to " + peer.prefixes() + ": the peer listens with the "
                    + "rdma provider and this node uses tcp; set JMESH_PROVIDER the same on both nodes");
        }
        RoutePlan plan = control.plan(peer, preferredLink);
        TcpConnect c = new TcpConnect(this, peer, plan.first());
        if (!adopt(c)) {
            c.close();
            throw new IllegalStateException("the TCP provider is closed");
        }
        return c;
    }

    /** The route service, for tests. */
    RouteService routes() {
        return control.routes();
    }

    TcpRelay relay() {
        return relay;
    }

    /**
     * Wraps memory for sending from, receiving into, and one-sided access by peers (it gets a random id, see {@link
     * TcpRegistration#remote()}). Native memory is used as is; a heap segment goes through the
     * JDK's temporary direct buffers.
     *
     * @throws IllegalArgumentException when the segment cannot be viewed as a ByteBuffer
     */
    @Override
    public Registration register(MemorySegment memory) {
        Objects.requireNonNull(memory, "memory");
        checkOpen();
        return new TcpRegistration(memory, registry);
    }

    /**
     * The helper threads for the bulk sockets of a new connection (started now if not yet; no more than the CPUs,
     * as more cannot run at once); null when 0.
     */
    synchronized TcpPumps pumps() {
        if (pumps == null && threads > 0 && sockets > 1 && !closed) {
            pumps = TcpPumps.start(Math.min(threads, Runtime.getRuntime().availableProcessors()), spinUs,
                    Integer.toHexString(System.identityHashCode(this)));
        }
        return pumps;
    }

    /** Where a sender's sockets go when its owner closes it. */
    TcpLinger linger() {
        return linger;
    }

    /** This provider's open registrations by id, for one-sided requests from peers. */
    TcpRegistry registry() {
        return registry;
    }

    private synchronized void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the TCP provider is closed");
        }
    }

    /** Takes ownership of {@code c} until it is released; false (and nothing taken) when the provider is closed. */
    synchronized boolean adopt(AutoCloseable c) {
        if (closed) {
            return false;
        }
        owned.add(c);
        return true;
    }

    synchronized void release(AutoCloseable c) {
        owned.remove(c);
    }

    /**
     * Closes the listeners, then unfinished connects, then open connections, then route discovery and the relay
     * (every connection relayed through this node ends), then the handshake agent; reports the first failure.
     */
    @Override
    public void close() {
        List<AutoCloseable> toClose;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            toClose = new ArrayList<>(owned);
            owned.clear();
        }
        toClose.sort((a, b) -> Integer.compare(rank(a), rank(b)));
        toClose.add(linger);                // after the connections, whose close hands it their sockets
        toClose.add(pumps);                 // after the connections: their lanes are retired by then
        // last, after the connections it routes: discovery, the relay, then the handshake agent, which the
        // connects and listeners closed above hand their sockets back to
        toClose.add(control);
        Closer.closeAll(toClose);      // the first failure, the others suppressed in it
    }

    private static int rank(AutoCloseable c) {
        return c instanceof TcpListener ? 0 : c instanceof TcpConnect ? 1 : 2;
    }

    @Override
    public String toString() {
        return "TcpProvider" + links;
    }
}
