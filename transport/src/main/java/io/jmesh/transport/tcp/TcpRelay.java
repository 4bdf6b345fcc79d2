package io.jmesh.transport.tcp;

import io.jmesh.transport.control.RelayEndpoint;
import io.jmesh.transport.liveness.Liveness;
import io.jmesh.transport.log.WarnLimiter;
import io.jmesh.api.LocalLink;
import io.jmesh.transport.security.MeshKey;
import io.jmesh.transport.route.PendingRequests;
import io.jmesh.transport.route.RelayPolicy;
import io.jmesh.transport.route.RelayRequest;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import io.jmesh.transport.agent.SelectorAgent;
import io.jmesh.transport.agent.SelectorAgentRunner;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The TCP relay of one fabric: a relay endpoint on each link address; one thread, {@value #THREAD_NAME}, that accepts
 * relayed sockets, reads their requests and routes them; and several {@link SpliceWorker}s that connect them onwards
 * and splice them ({@link Splice}). A socket to the endpoint starts with a {@link RelayRequest} naming
 * where it goes; who may ask, what for, where it goes and how many may wait are the {@link RelayPolicy} every relay
 * shares (the next relay is asked with one hop fewer). A handshake socket's frames pass through a {@link SpliceGate}
 * (in the protocol's order, this relay's liveness port in each HELLO and ACCEPT) and then its bytes as they come; a
 * data socket goes only to a port a jmesh listener announced through this relay, then as is. The end-to-end protocol
 * (the challenge and proofs of the listener's secret, attach headers, frames) is checked by the ends, not here.
 *
 * <p>A request that is malformed, late (the handshake timeout) or refused is dropped with a rate-limited WARN;
 * pending requests are capped (the oldest is evicted) and relayed sockets too, so a flood of hostile sockets cannot
 * block relayed or direct connections. Closing the relay closes every relayed socket: both ends see their connection
 * end at once.
 */
final class TcpRelay implements RelayEndpoint {
    static final String THREAD_NAME = "jmesh-relay";
    static final int MAX_SPLICES = 1024;
    private static final Logger LOG = JmeshLog.logger(TcpRelay.class);
    private static final long MAX_IDLE_MILLIS = 100;
    /** How often held requests ask the table again (adverts come once per round). */
    private static final long ROUTE_RETRY_MILLIS = 50;

    private final List<LocalLink> links;
    private final long timeoutNanos;
    private final int maxPending;
    private final Selector selector;
    private final Map<InetAddress, ServerSocketChannel> servers = new HashMap<>();
    private final PendingRequests<Splice> pending;
    /** Pending requests held while the route to their target, lost moments ago, may come back (the relay thread's). */
    private final List<Splice> awaiting = new ArrayList<>();
    private final MeshKey key;
    /** Whether data sockets may go through kernel pipes (JMESH_TCP_RELAY_SPLICE). */
    private final boolean splice;
    /** Relayed sockets handed to the workers and not yet ended. */
    private final AtomicInteger splices = new AtomicInteger();
    private final AtomicLong spliced = new AtomicLong();
    private final SpliceWorker[] workers;
    private int nextWorker;
    private final WarnLimiter warnings = new WarnLimiter(LOG, "jmesh relay: ", 20, TimeUnit.SECONDS.toNanos(1));
    /** Data ports that jmesh listeners announced in an ACCEPT through this relay, until when they may be dialled. */
    private final Map<InetSocketAddress, Long> dataPorts = new ConcurrentHashMap<>();
    private final SelectorAgentRunner runner;
    private RelayPolicy policy;
    private Liveness liveness;
    private volatile long dropped;
    private volatile String lastDropReason;

    private TcpRelay(List<LocalLink> links, long timeoutNanos, int maxPending, MeshKey key, int threads,
            boolean splice) throws IOException {
        this.key = key;
        this.splice = splice;
        this.workers = new SpliceWorker[Math.max(1, threads)];
        this.links = List.copyOf(links);
        this.timeoutNanos = timeoutNanos;
        this.maxPending = maxPending;
        this.pending = new PendingRequests<>(maxPending);
        this.selector = Selector.open();
        this.runner = new SelectorAgentRunner(THREAD_NAME, selector, new Loop());
    }

    /** Binds an endpoint on each link address (an ephemeral port); {@link #start} begins relaying. */
    static TcpRelay bind(List<LocalLink> links, long timeoutNanos, int maxPending, MeshKey key, int threads,
            boolean splice)
            throws IOException {
        TcpRelay relay = new TcpRelay(links, timeoutNanos, maxPending, key, threads, splice);
        try {
            for (int i = 0; i < relay.workers.length; i++) {
                relay.workers[i] = new SpliceWorker(relay, i);
            }
            for (LocalLink l : links) {
                InetAddress a = l.prefix().address();
                if (!a.isLinkLocalAddress() && !relay.servers.containsKey(a)) {
                    ServerSocketChannel s = ServerSocketChannel.open();
                    relay.servers.put(a, s);
                    s.bind(new InetSocketAddress(a, 0), 64);
                    s.configureBlocking(false);
                    s.register(relay.selector, SelectionKey.OP_ACCEPT);
                }
            }
        } catch (IOException | RuntimeException e) {
            relay.closeAll();
            for (SpliceWorker w : relay.workers) {
                if (w != null) {
                    w.close(); // never started: closes its selector
                }
            }
            throw e;
        }
        return relay;
    }

    /** The endpoint's port on each link address, for the route service to advertise. */
    @Override
    public Map<InetAddress, Integer> ports() {
        Map<InetAddress, Integer> out = new HashMap<>();
        servers.forEach((a, s) -> out.put(a, s.socket().getLocalPort()));
        return out;
    }

    @Override
    public void start(RelayPolicy policy, Liveness liveness) {
        this.policy = policy;
        this.liveness = liveness;
        for (SpliceWorker w : workers) {
            w.start();
        }
        if (!splice) {
            LOG.debug("jmesh relay: relayed data sockets are copied through this process (JMESH_TCP_RELAY_SPLICE=0)");
        } else if (KernelPipe.UNAVAILABLE == null) {
            LOG.debug("jmesh relay: relayed data sockets are spliced in the kernel (splice(2))");
        } else {
            LOG.info("jmesh relay: relayed data sockets are copied through this process: {}", KernelPipe.UNAVAILABLE);
        }
        runner.start();
    }

    /** Relayed sockets whose bytes went through kernel pipes (splice(2)) rather than this process, for tests. */
    long spliced() {
        return spliced.get();
    }

    /** Requests dropped (malformed, refused, late, evicted), for tests. */
    long dropped() {
        return dropped;
    }

    String lastDropReason() {
        return lastDropReason;
    }

    /** The accepting thread's duty cycle: accept and read requests as they come, expire the late ones. */
    private final class Loop implements SelectorAgent {
        @Override
        public String roleName() {
            return "jmesh relay";
        }

        @Override
        public long firstWaitMillis() {
            return MAX_IDLE_MILLIS;
        }

        @Override
        public void onSelected(SelectionKey key) {
            TcpRelay.this.onSelected(key);
        }

        @Override
        public long doWork() {
            long now = System.nanoTime(); // one instant for both: a held request past its deadline is refused by
            retryAwaiting(now);           // the policy, with its reason, before expire could call it late
            expire(now);
            return awaiting.isEmpty() ? MAX_IDLE_MILLIS : ROUTE_RETRY_MILLIS;
        }

        @Override
        public void onClose() {
            closeAll();
        }
    }

    private void onSelected(SelectionKey key) {
        try {
            if (key.channel() instanceof ServerSocketChannel server) {
                acceptAll(server);
                return;
            }
            Splice s = (Splice) key.attachment();
            try {
                if (s.state == Splice.State.REQUEST) {
                    boolean whole = s.readRequest();
                    if (!s.requestChecked && s.request.position() >= s.peekAt) {
                        // judged as soon as the request is here: a refused one waits for nothing more
                        String problem = requestProblem(s.request.duplicate().flip());
                        if (problem != null) {
                            pending.remove(s);
                            drop(s, problem);
                            return;
                        }
                        s.requestChecked = true;
                    }
                    if (whole) {
                        route(s);
                    }
                }
            } catch (IOException e) {
                pending.remove(s);
                drop(s, e.getMessage());
            }
        } catch (CancelledKeyException ignored) {
            // closed while its event was pending
        }
    }

    /**
     * A worker pumped a handshake socket: a data port its listener announced may now be dialled, and once its READY
     * passed both neighbours are watched. Any worker thread.
     */
    void gatePassed(Splice s, SpliceGate g) {
        if (g.dataPort != 0) {
            InetSocketAddress data = new InetSocketAddress(s.target.getAddress(), g.dataPort);
            if (dataPorts.size() < MAX_SPLICES || dataPorts.containsKey(data)) {
                dataPorts.put(data, System.nanoTime() + timeoutNanos);
            }
            g.dataPort = 0;
        }
        if (g.takeCompleted()) {
            watch(s, g);
        }
    }

    /** A worker's splice ended. */
    void spliceEnded() {
        splices.decrementAndGet();
    }

    /** The handshake passed: both neighbours are watched for as long as the connection lives (see Liveness). */
    private void watch(Splice s, SpliceGate g) {
        InetSocketAddress upper = DataSockets.remoteAddress(s.in);
        InetSocketAddress lower = DataSockets.remoteAddress(s.out);
        if (upper == null || lower == null) {
            return;
        }
        liveness.relay(g.connectionId, new InetSocketAddress(upper.getAddress(), g.upPort), localOf(s.in),
                g.connectionId, new InetSocketAddress(lower.getAddress(), g.downPort), localOf(s.out),
                upper.getAddress().getHostAddress() + " -> " + DataSockets.describe(s.target));
    }

    private static InetAddress localOf(SocketChannel ch) {
        try {
            return ((InetSocketAddress) ch.getLocalAddress()).getAddress();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private void acceptAll(ServerSocketChannel server) {
        for (int i = 0; i < 64; i++) {
            SocketChannel ch;
            try {
                ch = server.accept();
            } catch (IOException e) {
                warn("the relay endpoint cannot accept: {}{}", e.getMessage(), "");
                return;
            }
            if (ch == null) {
                return;
            }
            String from = DataSockets.remote(ch);
            InetSocketAddress remote = DataSockets.remoteAddress(ch);
            String refused = policy.admission(localOf(ch), remote == null ? null : remote.getAddress());
            if (refused != null) {
                DataSockets.closeQuietly(ch);
                drop(from, refused);
                continue;
            }
            if (splices.get() + pending.size() >= MAX_SPLICES) {
                DataSockets.closeQuietly(ch);
                drop(from, "this relay already carries its limit of " + MAX_SPLICES + " sockets");
                continue;
            }
            Splice s = new Splice(ch, from, System.nanoTime() + timeoutNanos, key.requestTrailer());
            try {
                ch.configureBlocking(false);
                DataSockets.configure(ch);
                s.inKey = ch.register(selector, SelectionKey.OP_READ, s);
            } catch (IOException e) {
                s.close();
                continue;
            }
            Splice victim = pending.add(s);
            if (victim != null) {
                victim.close();
                drop(victim.from, "evicted: " + maxPending + " relay requests were pending "
                        + "(JMESH_HANDSHAKE_MAX_PENDING)");
            }
        }
    }

    /** Why the relay request at the start of {@code r} is refused (malformed, this node, off the mesh), or null. */
    private String requestProblem(ByteBuffer r) {
        String problem = RelayRequest.problem(r, 0);
        if (problem == null) {
            problem = RelayRequest.unsigned(r, 0, key);
        }
        return problem != null ? problem : policy.refusal(RelayRequest.target(r, 0), System.nanoTime());
    }

    /** Checks a complete request, then sends it on ({@link #onward}); a bad one is dropped with the reason. */
    private void route(Splice s) throws IOException {
        ByteBuffer r = s.request.flip();
        String problem = RelayRequest.problem(r, 0);
        if (problem == null) {
            s.target = RelayRequest.target(r, 0);
            s.hopsLeft = RelayRequest.hopsLeft(r, 0);
            s.handshake = SpliceGate.isHello(r, s.peekAt);
            if (!s.handshake && !dataPortOpen(s.target, r.getInt(s.peekAt))) {
                problem = "it is neither a jmesh handshake nor a data socket for a port that a jmesh listener at "
                        + DataSockets.describe(s.target) + " announced through this relay (a relay forwards only "
                        + "to jmesh listeners)";
            }
        }
        if (problem != null) {
            pending.remove(s);
            drop(s, problem);
            return;
        }
        onward(s, System.nanoTime());
    }

    /**
     * Where a checked request goes: connected onwards by a worker, dropped with the policy's reason, or held (still
     * pending, its socket unread) while its target's route may come back; false only when held.
     */
    private boolean onward(Splice s, long now) throws IOException {
        RelayPolicy.Decision d = policy.decide(s.target, s.hopsLeft, now, s.deadlineNanos);
        if (d.waiting()) {
            if (!s.awaitingRoute) {
                s.awaitingRoute = true;
                s.inKey.interestOps(0);
                awaiting.add(s);
            }
            return false;
        }
        pending.remove(s);
        if (d.refusal() != null) {
            drop(s, d.refusal());
            return true;
        }
        LocalLink via = d.link();
        InetSocketAddress next = d.next();
        ByteBuffer preamble = d.hop() == null ? null : RelayRequest.of(s.target, d.hopsLeft(), key);
        SocketChannel onward = DataSockets.open(via.prefix().address());
        s.connecting(onward, preamble, splice, s.handshake ? new SpliceGate(s.request.slice(s.peekAt,
                SpliceGate.PEEK), ownPort(s.in), liveness.port(via.prefix().address())) : null);
        s.inKey.cancel(); // its worker's selector takes it from here
        splices.incrementAndGet();
        if (s.splicing()) {
            spliced.incrementAndGet();
        }
        workers[nextWorker++ % workers.length].adopt(s, next);
        return true;
    }

    /** Asks again for the held requests: each goes on, or is refused once its deadline passed (or was evicted). */
    private void retryAwaiting(long now) {
        for (Iterator<Splice> it = awaiting.iterator(); it.hasNext(); ) {
            Splice s = it.next();
            try {
                if (s.state == Splice.State.CLOSED || onward(s, now)) {
                    it.remove();
                }
            } catch (IOException | RuntimeException e) {
                it.remove();
                pending.remove(s);
                drop(s, e.toString());
            }
        }
    }

    /** A data socket may go to a port a jmesh listener announced through this relay within the handshake timeout. */
    private boolean dataPortOpen(InetSocketAddress target, int magic) {
        Long until = dataPorts.get(target);
        return magic == AttachHeader.MAGIC && until != null && System.nanoTime() - until < 0;
    }

    private int ownPort(SocketChannel ch) {
        return liveness.port(localOf(ch));
    }

    private void expire(long now) {
        while (pending.oldest() != null && now - pending.oldest().deadlineNanos >= 0) {
            Splice s = pending.poll();
            s.close();
            drop(s.from, "its relay request did not arrive within " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos)
                    + " ms (JMESH_HANDSHAKE_TIMEOUT_MS)");
        }
        dataPorts.values().removeIf(until -> now - until >= 0);
    }

    private void drop(Splice s, String why) {
        s.close();
        drop(s.from, why);
    }

    private void drop(String from, String why) {
        lastDropReason = why;
        dropped++;
        warn("dropped a relayed socket from {}: {}", from, why);
    }

    private void warn(String format, Object a, Object b) {
        warnings.warn(format, a, b);
    }

    /** Stops relaying: every relayed socket and endpoint closes, so both ends of each relayed connection learn it. */
    @Override
    public void close() {
        runner.close(); // closes the endpoints and pending requests, on its thread or here if it never started
        for (SpliceWorker w : workers) {
            if (w != null) {
                w.close();
            }
        }
    }

    private void closeAll() {
        awaiting.clear(); // every one is pending too
        for (Splice s; (s = pending.poll()) != null; ) {
            s.close();
        }
        servers.values().forEach(DataSockets::closeQuietly);
        DataSockets.closeQuietly(selector);
    }
}
