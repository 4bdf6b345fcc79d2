package io.jmesh.transport.rdma;

import io.jmesh.api.BackoffIdleStrategy;
import io.jmesh.transport.control.RelayEndpoint;
import io.jmesh.transport.lifecycle.Closer;
import io.jmesh.transport.liveness.Liveness;
import io.jmesh.transport.log.WarnLimiter;
import io.jmesh.api.LocalLink;
import io.jmesh.transport.route.PendingRequests;
import io.jmesh.transport.route.RelayPolicy;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The verbs relay of one fabric: a relay endpoint (TCP, for the handshake only) on each link address, a virtual thread
 * per relay handshake ({@link RelaySession}, at most the handshake cap at once), and one platform thread, {@value
 * #THREAD_NAME}, that drives every relayed connection's {@link RelayPipe}. The data never touches a socket or the
 * CPU: it moves by RDMA READ from the sender and RDMA WRITE to the receiver, through chunks registered on both devices.
 *
 * <p>Who may ask, what for, where it goes and how many may wait are the {@link RelayPolicy} every relay shares; the
 * listener at the far end checks the connector's secret itself. Closing the relay closes every relayed connection:
 * both of their ends fail.
 */
final class VerbsRelay implements RelayEndpoint {
    static final String THREAD_NAME = "jmesh-verbs-relay";
    static final Logger LOG = JmeshLog.logger(VerbsRelay.class);

    private final RdmaProvider provider;
    private final long timeoutNanos;
    private final long chunkBytes;
    private final int chunks;
    private final PendingRequests<Socket> handshakes;
    private volatile RelayPolicy policy;
    private final Map<InetAddress, ServerSocket> servers = new HashMap<>();
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    /** How long the forwarder sleeps at most while it relays nothing (a new pipe wakes it at once). */
    private static final long IDLE_PARK_NANOS = 100_000_000L;
    private final ConcurrentLinkedQueue<RelayPipe> incoming = new ConcurrentLinkedQueue<>();
    private final List<RelayPipe> pipes = new ArrayList<>();
    private final List<Thread> acceptors = new ArrayList<>();
    private final Set<Thread> sessions = ConcurrentHashMap.newKeySet();
    final WarnLimiter warnings = new WarnLimiter(LOG, "jmesh verbs relay: ", 20, TimeUnit.SECONDS.toNanos(1));
    private final Thread forwarder;
    private volatile boolean running = true;
    private volatile int active;

    private VerbsRelay(RdmaProvider provider, long timeoutNanos, int maxPending, long chunkBytes, int chunks) {
        this.provider = provider;
        this.timeoutNanos = timeoutNanos;
        this.handshakes = new PendingRequests<>(maxPending);
        this.chunkBytes = chunkBytes;
        this.chunks = chunks;
        this.forwarder = Thread.ofPlatform().daemon().name(THREAD_NAME).unstarted(this::forward);
    }

    /**
     * Binds an endpoint on each link address (an ephemeral port) and starts its threads; requests wait for {@link
     * #start}'s policy.
     */
    static VerbsRelay bind(RdmaProvider provider, List<LocalLink> links, long timeoutNanos, int maxPending,
                            long chunkBytes, int chunks) throws IOException {
        VerbsRelay relay = new VerbsRelay(provider, timeoutNanos, maxPending, chunkBytes, chunks);
        try {
            for (LocalLink l : links) {
                InetAddress a = l.prefix().address();
                if (!relay.servers.containsKey(a)) {
                    ServerSocket s = new ServerSocket();
                    relay.servers.put(a, s);
                    s.bind(new InetSocketAddress(a, 0), 64);
                }
            }
        } catch (IOException | RuntimeException e) {
            relay.close();
            throw e;
        }
        for (ServerSocket s : relay.servers.values()) {
            relay.acceptors.add(Thread.ofVirtual().name("jmesh-verbs-relay-accept").start(() -> relay.accept(s)));
        }
        relay.forwarder.start();
        return relay;
    }

    /** This node's relay endpoint port on each link address, for route discovery to advertise. */
    @Override
    public Map<InetAddress, Integer> ports() {
        Map<InetAddress, Integer> ports = new HashMap<>();
        servers.forEach((a, s) -> ports.put(a, s.getLocalPort()));
        return ports;
    }

    /** Relayed connections running now. */
    int active() {
        return active;
    }

    RdmaProvider provider() {
        return provider;
    }

    /**
     * Admits requests by {@code p}, over route discovery's table, set once discovery runs (it needs this relay's
     * ports). {@code liveness} is the provider agent's, which the relay sessions reach through their provider.
     */
    @Override
    public void start(RelayPolicy p, Liveness liveness) {
        policy = p;
    }

    RelayPolicy policy() {
        RelayPolicy p = policy;
        if (p == null) {
            throw new IllegalStateException("the relay is still starting (route discovery is not up yet)");
        }
        return p;
    }

    long chunkBytes() {
        return chunkBytes;
    }

    int chunks() {
        return chunks;
    }

    long timeoutNanos() {
        return timeoutNanos;
    }

    private void accept(ServerSocket server) {
        while (running) {
            Socket s;
            try {
                s = server.accept();
            } catch (IOException e) {
                if (running) {
                    warnings.warn("accepting on {} failed: {}", server.getLocalSocketAddress(), e.toString());
                }
                continue;
            }
            Socket evicted = handshakes.add(s);
            if (evicted != null) {  // its session fails on the closed socket and frees what it made
                warnings.warn("evicted the relay handshake from {}: {} were in progress (JMESH_HANDSHAKE_MAX_PENDING)",
                        evicted.getRemoteSocketAddress(), handshakes.max());
                Closer.closeAll(e -> { }, evicted);
            }
            open.add(s);
            Thread t = Thread.ofVirtual().name("jmesh-verbs-relay-handshake").unstarted(() -> {
                try {
                    RelayPipe pipe = new RelaySession(this, s).run();
                    if (pipe != null) {
                        incoming.add(pipe);
                        LockSupport.unpark(forwarder); // it sleeps while it has nothing to relay
                        if (!running) {                // closed meanwhile: close() may have passed already
                            Closer.closeAll(e -> { }, incoming);
                        }
                    }
                } finally {
                    open.remove(s);
                    handshakes.remove(s);
                    Closer.closeAll(e -> { }, s);
                    sessions.remove(Thread.currentThread());
                }
            });
            sessions.add(t);
            t.start();
        }
    }

    boolean running() {
        return running;
    }

    private void forward() {
        BackoffIdleStrategy idle = new BackoffIdleStrategy(64, 4, 10_000, 200_000);
        while (running) {
            RelayPipe p;
            while ((p = incoming.poll()) != null) {
                pipes.add(p);
            }
            int work = 0;
            for (int i = pipes.size() - 1; i >= 0; i--) {  // indexed: no iterator per pass
                RelayPipe pipe = pipes.get(i);
                int w;
                try {
                    w = pipe.poll();
                } catch (RuntimeException e) {
                    LOG.warn("jmesh relay: {} failed unexpectedly: {}", pipe, e.toString());
                    pipe.close();
                    w = -1;
                }
                if (w < 0) {
                    pipes.remove(i);
                    LOG.info("jmesh relay: {} closed{}", pipe, pipe.failure() == null ? "" : ": " + pipe.failure());
                } else {
                    work += w;
                }
            }
            active = pipes.size();
            if (work > 0) {
                idle.reset();
            } else if (pipes.isEmpty()) {
                // Nothing to relay: sleep until a pipe arrives (unparked) rather than wake thousands of times a second,
                // which on a node with one CPU takes that CPU from the node's own connections.
                LockSupport.parkNanos(this, IDLE_PARK_NANOS);
                idle.reset();
            } else {
                idle.idle();
            }
        }
    }

    /**
     * Stops accepting and forwarding, waits for the handshakes in progress to free what they made, then closes every
     * relayed connection (both ends fail) on this thread. Never throws (failures are logged); call it before the
     * provider closes its devices, without holding the provider's lock (the handshakes take it).
     */
    @Override
    public void close() {
        running = false;
        LockSupport.unpark(forwarder);
        Closer.closeAll(e -> { }, servers.values());
        Closer.closeAll(e -> { }, open);
        for (Thread t : List.copyOf(sessions)) {
            try {
                t.join(5_000);              // each frees what it made while the devices are still open
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (forwarder.isAlive()) {
            try {
                forwarder.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        Closer.closeAll(e -> LOG.warn("{}", e.toString()), pipes);
        Closer.closeAll(e -> LOG.warn("{}", e.toString()), incoming);
        pipes.clear();
    }
}
