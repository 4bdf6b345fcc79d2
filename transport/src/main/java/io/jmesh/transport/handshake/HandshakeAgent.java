package io.jmesh.transport.handshake;

import io.jmesh.transport.liveness.Liveness;
import io.jmesh.transport.log.WarnLimiter;
import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.transport.net.Route;
import io.jmesh.transport.agent.SelectorAgent;
import io.jmesh.transport.agent.SelectorAgentRunner;

import java.io.IOException;
import java.net.InetAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

/**
 * Runs the handshakes of one provider (one fabric) on one daemon thread, {@value #THREAD_NAME}, around an NIO
 * selector, with that fabric's {@link HandshakeSettings}: each fabric starts its own agent and closes it with itself,
 * so two fabrics of one process may have different timeouts and limits. Its duty cycle: wait for socket events (at
 * most until the next deadline), run queued commands, expire deadlines. Public methods may be called from any thread
 * and never wait for the network: they bind sockets or queue a command and return an object whose status is read
 * with a volatile read.
 *
 * <p>Defences: each listener binds its mesh addresses only (no wildcard); every socket has a deadline for the whole
 * handshake; frames are bounded ({@value Frame#MAX_BODY} bytes) and checked (magic, version, type, secret in constant
 * time); each listener holds at most {@link HandshakeSettings#maxPendingPerListener()} sockets, evicting the oldest
 * one that has not proven the secret. A misbehaving socket is closed and logged (rate-limited WARN) and nothing else
 * is disturbed.
 *
 * <pre>{@code
 * HandshakeAgent agent = HandshakeAgent.start(new HandshakeSettings(Duration.ofSeconds(10), 32));
 * HandshakeListener listener = agent.listen(localPrefixes);        // listen side: publish listener.handle()
 * Route route = RouteSelector.best(localLinks, peerHandle);        // connect side
 * OutboundHandshake out = agent.connect(peerHandle, route, myQpInfo);
 * }</pre>
 */
public final class HandshakeAgent implements AutoCloseable {
    public static final String THREAD_NAME = "jmesh-handshake";
    /** The largest payload either side may send. */
    public static final int MAX_PAYLOAD = Frame.MAX_PAYLOAD;
    /** The length of a handshake nonce (a HELLO's first bytes). */
    public static final int NONCE_BYTES = Frame.NONCE_LENGTH;

    private static final Logger LOG = JmeshLog.logger(HandshakeAgent.class);
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final long MAX_IDLE_MILLIS = 100;
    static final String CLOSED = "the jmesh handshake agent is closed (its fabric was closed)";

    private final HandshakeSettings settings;
    private final long timeoutNanos;
    /** Nanosecond time for deadlines: System.nanoTime, or a test's manual clock. */
    private final LongSupplier clock;
    private final Liveness liveness;
    private final Selector selector;
    private final SelectorAgentRunner runner;
    private final Queue<Runnable> commands = new ConcurrentLinkedQueue<>();
    private final AtomicLong dropped = new AtomicLong();
    /** Why the latest counted drop happened; written (agent thread) before {@link #dropped} is incremented. */
    private volatile String lastDropReason;
    private final WarnLimiter warnings = new WarnLimiter(LOG, "jmesh ", 20, TimeUnit.SECONDS.toNanos(1));
    private final ListenerSet listeners;
    // Agent thread only.
    private final List<Session> sessions = new ArrayList<>();

    /** Completed turns of the agent loop, for {@link #awaitFullTurn}. */
    private volatile long turns;
    private volatile boolean terminated;

    private HandshakeAgent(HandshakeSettings settings, LongSupplier clock, Liveness liveness) throws IOException {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.liveness = Objects.requireNonNull(liveness, "liveness");
        this.timeoutNanos = settings.timeout().toNanos();
        this.clock = Objects.requireNonNull(clock, "clock");
        this.selector = Selector.open();
        this.listeners = new ListenerSet(this, selector);
        this.runner = new SelectorAgentRunner(THREAD_NAME, selector, new Loop());
    }

    /** Starts an agent with its own thread and liveness off; {@link #close()} stops it. */
    public static HandshakeAgent start(HandshakeSettings settings) throws IOException {
        return start(settings, System::nanoTime, Liveness.start(List.of(), Duration.ZERO));
    }

    /**
     * Starts an agent and the fabric's {@link Liveness} on {@code links} (off when {@code livenessTimeout} is zero),
     * which the agent owns and closes after itself: it tells each peer where this process answers liveness pings. A
     * provider starts one and closes it last.
     */
    public static HandshakeAgent start(HandshakeSettings settings, List<IpPrefix> links, Duration livenessTimeout)
            throws IOException {
        Liveness liveness = Liveness.start(links, livenessTimeout);
        try {
            return start(settings, System::nanoTime, liveness);
        } catch (IOException | RuntimeException e) {
            liveness.close();
            throw e;
        }
    }

    /** Starts an agent whose deadlines follow {@code clock} (nanoseconds): tests use a manual clock. */
    static HandshakeAgent start(HandshakeSettings settings, LongSupplier clock) throws IOException {
        return start(settings, clock, Liveness.start(List.of(), Duration.ZERO));
    }

    private static HandshakeAgent start(HandshakeSettings settings, LongSupplier clock, Liveness liveness)
            throws IOException {
        HandshakeAgent agent = new HandshakeAgent(settings, clock, liveness);
        agent.runner.start();
        return agent;
    }

    /**
     * Waits until the agent thread has begun and finished a whole turn of its loop (commands, then deadlines) after
     * this call, so a test that moved a manual clock knows the agent has seen the new time.
     *
     * @return false if that did not happen within {@code timeoutMillis}
     */
    boolean awaitFullTurn(long timeoutMillis) throws InterruptedException {
        // the turn in progress may have read the clock before the caller moved it; the one after it has not
        long target = turns + 2;
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (turns < target) {
            if (!runner.isRunning() || System.nanoTime() - end > 0) {
                return false;
            }
            selector.wakeup();
            Thread.sleep(1);
        }
        return true;
    }

    public HandshakeSettings settings() {
        return settings;
    }

    /** Connections dropped for misbehaving (bad frames, wrong secret, deadline, over the cap), since start. */
    public long droppedConnections() {
        return dropped.get();
    }

    public boolean isRunning() {
        return runner.isRunning();
    }

    /** Listens on each address (ephemeral ports), with unknown link speeds and no handle flags. */
    public HandshakeListener listen(List<IpPrefix> addresses) throws IOException {
        Objects.requireNonNull(addresses, "addresses");
        return listeners.open(addresses, addresses.stream().map(a -> 0L).toList(), 0);
    }

    /**
     * Listens on each link's address (ephemeral ports); the handle carries the links' speeds and {@code handleFlags}
     * (e.g. {@link ListenHandle#FLAG_TCP_PROVIDER}).
     *
     * @throws IOException              when an address cannot be bound; the message names it and the fix
     * @throws IllegalArgumentException when there are no links or more than fit in a handle
     */
    public HandshakeListener listenOn(List<LocalLink> links, int handleFlags) throws IOException {
        Objects.requireNonNull(links, "links");
        return listeners.open(links.stream().map(LocalLink::prefix).toList(),
                links.stream().map(LocalLink::speedMbps).toList(), handleFlags);
    }

    /**
     * Starts a handshake with {@code peer} over {@code route}: binds to the route's local address (so the TCP
     * connection runs over that link) and connects to the peer's address on it. Returns at once, IN_PROGRESS.
     *
     * @param payload what the acceptor receives (QPN, PSN, GID, MTU ...), at most {@link #MAX_PAYLOAD} bytes
     */
    public OutboundHandshake connect(ListenHandle peer, Route route, byte[] payload) {
        Objects.requireNonNull(peer, "peer");
        Objects.requireNonNull(route, "route");
        Objects.requireNonNull(payload, "payload");
        checkPayload(payload);
        OutboundHandshake handshake = new OutboundHandshake(this, route);
        long deadline = clock.getAsLong() + timeoutNanos;
        byte[] secret = peer.secretBytes();
        byte[] copy = payload.clone();
        byte[] nonce = new byte[Frame.NONCE_LENGTH];
        RANDOM.nextBytes(nonce);
        execute(() -> startConnect(handshake, deadline, secret, nonce, copy), handshake);
        return handshake;
    }

    /**
     * Starts a handshake on behalf of a connector whose HELLO a relay read: the HELLO carries that connector's nonce,
     * and the connector, which knows the secret, answers the listener's challenge. The relay passes the challenge
     * on ({@link OutboundHandshake#challenge()}), the connector's proof back ({@link OutboundHandshake#prove}), and
     * the listener's proof in its own ACCEPT ({@link OutboundHandshake#acceptorProof()}); it never learns the secret.
     *
     * @param connectorNonce the nonce of the connector's HELLO, {@link #NONCE_BYTES} bytes
     */
    public OutboundHandshake connectOnBehalf(Route route, byte[] connectorNonce, byte[] payload) {
        Objects.requireNonNull(route, "route");
        Objects.requireNonNull(payload, "payload");
        if (connectorNonce.length != Frame.NONCE_LENGTH) {
            throw new IllegalArgumentException("a connector nonce has " + Frame.NONCE_LENGTH + " bytes, not "
                    + connectorNonce.length);
        }
        checkPayload(payload);
        OutboundHandshake handshake = new OutboundHandshake(this, route);
        long deadline = clock.getAsLong() + timeoutNanos;
        byte[] nonce = connectorNonce.clone();
        byte[] copy = payload.clone();
        execute(() -> startConnect(handshake, deadline, null, nonce, copy), handshake);
        return handshake;
    }

    static void checkPayload(byte[] payload) {
        if (payload.length > MAX_PAYLOAD) {
            throw new IllegalArgumentException("handshake payload of " + payload.length + " bytes exceeds the limit of "
                    + MAX_PAYLOAD);
        }
    }

    /**
     * Stops the thread, closes every socket and fails every unfinished handshake. Waits up to 5 s for the thread,
     * so call it at shutdown or in tests, not on a path that must not block.
     */
    @Override
    public void close() {
        runner.close();
    }

    // ---- used by the handshake objects and sessions ----------------------------------------------------------

    /**
     * Queues {@code command} for the agent thread. When the agent is closed, fails {@code orFail} (if given) and
     * returns false.
     */
    boolean execute(Runnable command, Handshake orFail) {
        if (!runner.isRunning()) {
            if (orFail != null) {
                orFail.fail(CLOSED);
            }
            return false;
        }
        commands.offer(command);
        selector.wakeup();
        if (terminated) { // the agent stopped after our check; it may have missed the command, so run it here
            runCommands();
        }
        return true;
    }

    /** The liveness port for a local address (0: none, or the address is unknown). */
    public int livenessPort(InetAddress local) {
        return local == null ? 0 : liveness.port(local);
    }

    /** The fabric's liveness thread, where a provider registers each direct connection once it is up. */
    public Liveness liveness() {
        return liveness;
    }

    long timeoutMillis() {
        return settings.timeout().toMillis();
    }

    long newConnectionId() {
        return RANDOM.nextLong();
    }

    void warn(String format, Object a, Object b) {
        warnings.warn(format, a, b);
    }

    void debug(String format, Object a) {
        LOG.debug("jmesh " + format, a);
    }

    /** Counts a dropped connection; {@code reason} is the text of its WARN (kept for {@link #lastDropReason()}). */
    void countDropped(String reason) {
        lastDropReason = reason;
        dropped.incrementAndGet();
    }

    /**
     * Why the latest connection counted by {@link #droppedConnections()} was dropped (the text of its WARN, which is
     * rate-limited and may not have been logged), or null before the first drop. Package-private, for tests: once
     * {@code droppedConnections()} reads n and no later drop happens, this is the reason of drop n.
     */
    String lastDropReason() {
        return lastDropReason;
    }

    void sessionClosed(Session s) {
        if (s instanceof InboundSession in) {
            in.listener().sessions.remove(in);
        }
    }

    void closeListener(HandshakeListener listener) {
        listeners.close(listener);
    }

    /** A handshake's deadline if it starts now. */
    long newDeadline() {
        return clock.getAsLong() + timeoutNanos;
    }

    /** Watches {@code session}'s deadline until it closes (agent thread). */
    void track(Session session) {
        sessions.add(session);
    }

    // ---- the agent thread --------------------------------------------------------------------------------------

    /** The agent's side of its thread's duty cycle (SelectorAgentRunner runs the loop). */
    private final class Loop implements SelectorAgent {
        @Override
        public String roleName() {
            return "jmesh handshake agent";
        }

        @Override
        public long firstWaitMillis() {
            return MAX_IDLE_MILLIS;
        }

        @Override
        public void onSelected(SelectionKey key) {
            HandshakeAgent.this.onSelected(key);
        }

        @Override
        public long doWork() {
            runCommands();
            long wait = expireDeadlines(clock.getAsLong());
            turns++;
            return wait;
        }

        @Override
        public void onClose() {
            shutdown();
        }
    }

    private void runCommands() {
        Runnable c;
        while ((c = commands.poll()) != null) {
            try {
                c.run();
            } catch (RuntimeException e) {
                LOG.error("jmesh handshake agent: a command failed", e);
            }
        }
    }

    private void onSelected(SelectionKey key) {
        Object attachment = key.attachment();
        try {
            if (attachment instanceof Session s) {
                try {
                    s.handle(key);
                } catch (IOException e) {
                    s.onIoError(e);
                } catch (RuntimeException e) {
                    if (e instanceof CancelledKeyException) {
                        throw e;
                    }
                    LOG.error("jmesh handshake agent: error handling {}; closing that socket", s.peer, e);
                    s.onViolation("internal error: " + e);
                }
            } else if (attachment instanceof ListenerSet.Acceptor a) {
                listeners.acceptAll(a);
            }
        } catch (CancelledKeyException ignored) {
            // the socket was closed while its event was pending
        }
    }

    /** {@code secret} null: on behalf of a connector, who answers the challenge through the relay. */
    private void startConnect(OutboundHandshake handshake, long deadline, byte[] secret, byte[] nonce,
                              byte[] payload) {
        if (handshake.poll() == HandshakeStatus.FAILED) {
            return; // closed before it started
        }
        Route route = handshake.route();
        SocketChannel channel = null;
        try {
            channel = SocketChannel.open();
            channel.configureBlocking(false);
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            channel.bind(route.local().bindAddress());
        } catch (IOException | RuntimeException e) {
            closeQuietly(channel);
            handshake.fail("cannot bind the handshake socket to " + route.local() + ": " + e.getMessage()
                    + " (is the address still up? check 'ip addr')");
            return;
        }
        OutboundSession session = new OutboundSession(this, handshake, channel, deadline, secret, nonce, payload);
        handshake.session = session;
        try {
            boolean connected = channel.connect(route.connectAddress());
            session.key = channel.register(selector, SelectionKey.OP_CONNECT, session);
            sessions.add(session);
            if (connected) {
                session.onConnectable();
            }
        } catch (IOException | RuntimeException e) {
            handshake.fail("cannot connect to " + route.connectAddress() + " over " + route.local() + ": "
                    + e.getMessage() + (runner.isRunning() ? "" : " (" + CLOSED + ")"));
            session.close();
        }
    }

    /** Runs expired deadlines, forgets closed sessions; returns how long the next select may wait. */
    private long expireDeadlines(long now) {
        long soonest = TimeUnit.MILLISECONDS.toNanos(MAX_IDLE_MILLIS);
        int i = 0;
        while (i < sessions.size()) {
            Session s = sessions.get(i);
            if (!s.isClosed() && now - s.deadlineNanos >= 0) {
                s.onDeadline();
            }
            if (s.isClosed()) {
                int last = sessions.size() - 1;
                sessions.set(i, sessions.get(last));
                sessions.remove(last);
                continue;
            }
            soonest = Math.min(soonest, s.deadlineNanos - now);
            i++;
        }
        return Math.max(1, TimeUnit.NANOSECONDS.toMillis(soonest) + 1);
    }

    private void shutdown() {
        listeners.closeAll();
        for (Session s : new ArrayList<>(sessions)) {
            Handshake h = s.handshake();
            if (h != null) {
                h.fail(CLOSED);
            }
            s.close();
        }
        sessions.clear();
        closeQuietly(selector);
        liveness.close();
        terminated = true;
        runCommands();
    }

    static void closeQuietly(AutoCloseable c) {
        if (c != null) {
            try {
                c.close();
            } catch (Exception ignored) {
                // nothing more to release
            }
        }
    }
}
