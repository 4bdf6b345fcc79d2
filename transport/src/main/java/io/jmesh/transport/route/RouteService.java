package io.jmesh.transport.route;

import io.jmesh.transport.log.WarnLimiter;
import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.transport.net.Route;
import io.jmesh.transport.security.MeshKey;
import io.jmesh.api.StaticRoute;
import io.jmesh.transport.route.RouteFrame.Decoded;
import io.jmesh.transport.route.RouteFrame.Link;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import io.jmesh.transport.agent.SelectorAgent;
import io.jmesh.transport.agent.SelectorAgentRunner;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Route discovery for one fabric: a distance-vector protocol over UDP on the mesh links themselves, on one daemon
 * thread, {@value #THREAD_NAME}. On each link address it binds the well-known route port with SO_REUSEADDR and
 * SO_REUSEPORT (every jmesh process of a node shares it; whichever gets a PROBE answers it) and an ephemeral port,
 * from which it probes every host address of the link's subnet (a sweep) and the static map's neighbours, so that
 * the answers come back to this process. The answers fill the {@link RouteTable}.
 *
 * <p>Timing: a round every {@value #FAST_ROUND_MS} ms for the first {@value #FAST_PHASE_MS} ms, each a sweep; then a
 * round every {@value #SLOW_ROUND_MS} ms that probes only the neighbours the table knows and the static map's, with a
 * sweep every {@value #SWEEP_EVERY_MS} ms. Sweeping a /24 every round costs every link about 130 packets a second
 * each way (probes, and ARP requests for the absent hosts) for the life of the process: on the testbed as many as
 * rxe itself sent from a receiving guest (docs/benchmarks-plugin.md). A PROBE from an address the table does not know
 * is probed back at once, so a neighbour that starts later is known one round after it starts, as before. A
 * neighbour not heard for {@value #EXPIRY_MS} ms is forgotten; a subnet n relays away is known one round per relay
 * later.
 *
 * <p>Defences: datagrams are decoded in place ({@link RouteFrame}) and anything malformed, from off the mesh links
 * or from this node itself is dropped, with a rate-limited WARN; the thread never blocks on a socket and survives
 * anything a handler throws. The provider that starts it owns it and closes it (sockets, then the thread).
 */
public final class RouteService implements AutoCloseable {
    public static final String THREAD_NAME = "jmesh-route";
    static final long FAST_ROUND_MS = 300;
    static final long FAST_PHASE_MS = 3_000;
    static final long SLOW_ROUND_MS = 2_000;
    static final long EXPIRY_MS = 7_000;
    static final long SWEEP_EVERY_MS = 30_000;
    /** A sweep probes at most this many hosts of a link: a /22. Larger links rely on the static map. */
    static final int MAX_SWEEP_HOSTS = 1022;
    private static final int DATAGRAMS_PER_WAKE = 64;
    private static final Logger LOG = JmeshLog.logger(RouteService.class);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final List<LocalLink> links;
    private final int routePort;
    private final Map<InetAddress, Integer> relayPorts;
    private final RouteTable table;
    private final long nodeId = RANDOM.nextLong();
    private final MeshKey key;
    /** With a key: this round's probe nonce and the last round's (answers may arrive a round late). */
    private byte[] nonce = new byte[MeshKey.NONCE_BYTES];
    private byte[] lastNonce = new byte[MeshKey.NONCE_BYTES];
    private final long startNanos = System.nanoTime();
    private final WarnLimiter warnings = new WarnLimiter(LOG, "jmesh route: ", 10, TimeUnit.SECONDS.toNanos(10));
    private final ByteBuffer in = ByteBuffer.allocateDirect(RouteFrame.MAX_BYTES + 1);
    private final ByteBuffer out = ByteBuffer.allocateDirect(RouteFrame.MAX_BYTES);
    private final List<DatagramChannel> channels = new ArrayList<>();
    private final List<DatagramChannel> askers = new ArrayList<>();
    private final Selector selector;
    private final SelectorAgentRunner runner;
    private volatile long dropped;

    private RouteService(List<LocalLink> links, int routePort, Map<InetAddress, Integer> relayPorts,
                         List<StaticRoute> statics, MeshKey key) throws IOException {
        this.key = key;
        RANDOM.nextBytes(nonce);
        RANDOM.nextBytes(lastNonce);
        this.links = List.copyOf(links);
        this.routePort = routePort;
        this.relayPorts = Map.copyOf(relayPorts);
        this.table = new RouteTable(links, statics, TimeUnit.MILLISECONDS.toNanos(EXPIRY_MS));
        this.selector = Selector.open();
        this.runner = new SelectorAgentRunner(THREAD_NAME, selector, new Loop());
    }

    /**
     * Binds the sockets and starts the thread; with {@code routePort} 0 discovery is off and the table stays empty.
     *
     * @param relayPorts this node's relay endpoint port on each link address (absent or 0: no TCP relay there)
     * @throws IllegalArgumentException when a static entry names a neighbour that no local link reaches
     */
    public static RouteService start(List<LocalLink> links, int routePort, Map<InetAddress, Integer> relayPorts,
                                     List<StaticRoute> statics) throws IOException {
        return start(links, routePort, relayPorts, statics, MeshKey.NONE);
    }

    /** As above; with {@code key} set, adverts are signed and only signed answers to this node's probes count. */
    public static RouteService start(List<LocalLink> links, int routePort, Map<InetAddress, Integer> relayPorts,
                                     List<StaticRoute> statics, MeshKey key) throws IOException {
        for (StaticRoute s : statics) {
            if (links.stream().noneMatch(l -> l.prefix().contains(s.neighbour()))) {
                throw new IllegalArgumentException("the static route " + s + " names a neighbour on none of this "
                        + "node's links " + links.stream().map(LocalLink::prefix).toList() + "; name the "
                        + "neighbour's address on a link this node shares with it (JMESH_ROUTES)");
            }
        }
        RouteService service = new RouteService(links, routePort, relayPorts, statics, key);
        try {
            if (routePort != 0) {
                service.bind();
                service.runner.start();
            }
        } catch (IOException | RuntimeException e) {
            service.closeSockets();
            throw e;
        }
        return service;
    }

    private void bind() throws IOException {
        for (LocalLink l : links) {
            InetAddress a = l.prefix().address();
            if (a.isLinkLocalAddress()) {
                continue;
            }
            DatagramChannel known = DatagramChannel.open(l.prefix().isIpv4()
                    ? java.net.StandardProtocolFamily.INET : java.net.StandardProtocolFamily.INET6);
            try {
                known.setOption(StandardSocketOptions.SO_REUSEADDR, true);
                known.setOption(StandardSocketOptions.SO_REUSEPORT, true);
                known.bind(new InetSocketAddress(a, routePort));
                known.configureBlocking(false);
                known.register(selector, SelectionKey.OP_READ, l);
                channels.add(known);
            } catch (IOException e) {
                known.close();
                LOG.warn("jmesh route: cannot bind the route port {} on {}: {}; this process still finds its "
                        + "neighbours but cannot answer theirs there (another program holds the port without "
                        + "SO_REUSEPORT? choose another JMESH_ROUTE_PORT on every node)", routePort, a, e.getMessage());
            }
            DatagramChannel asker = DatagramChannel.open(l.prefix().isIpv4()
                    ? java.net.StandardProtocolFamily.INET : java.net.StandardProtocolFamily.INET6);
            channels.add(asker);
            asker.bind(new InetSocketAddress(a, 0));
            asker.configureBlocking(false);
            asker.register(selector, SelectionKey.OP_READ, l);
            askers.add(asker);
            if (hosts(l) > MAX_SWEEP_HOSTS) {
                LOG.info("jmesh route: link {} has more than {} host addresses: no sweep there, only the static map's "
                        + "neighbours are probed (JMESH_ROUTES)", l.prefix(), MAX_SWEEP_HOSTS);
            }
        }
    }

    public RouteTable table() {
        return table;
    }

    /** This fabric's id in route frames. */
    public long nodeId() {
        return nodeId;
    }

    /** The way to {@code target} through other nodes, or null; see {@link RouteTable#nextHop}. */
    public NextHop nextHop(InetAddress target) {
        return table.nextHop(target, System.nanoTime());
    }

    /**
     * The route to {@code peer} through other nodes: for each of its addresses the neighbour with a relay endpoint
     * that reaches it in the fewest relays, then over the fastest link; null when the table knows none.
     */
    public Route relayedRoute(ListenHandle peer) {
        Route best = null;
        int bestRelays = Integer.MAX_VALUE;
        for (int i = 0; i < peer.addresses().size(); i++) {
            ListenAddress address = peer.addresses().get(i);
            if (address.prefix().address().isLinkLocalAddress()) {
                continue;
            }
            NextHop hop = nextHop(address.prefix().address());
            if (hop != null && hop.relayPort() != 0 && (hop.relays() < bestRelays || hop.relays() == bestRelays
                    && hop.local().speedMbps() > best.local().speedMbps())) {
                best = new Route(hop.local(), address, i, hop.relayHop());
                bestRelays = hop.relays();
            }
        }
        return best;
    }

    /** What the table knows, for error messages. */
    public String describe() {
        return routePort == 0 ? "route discovery is off (JMESH_ROUTE_PORT=0)" : table.describe(System.nanoTime());
    }

    /**
     * True while discovery may still be filling the table (the fast phase plus two slow rounds).
     */
    public boolean settling() {
        return routePort != 0 && System.nanoTime() - startNanos
                < TimeUnit.MILLISECONDS.toNanos(FAST_PHASE_MS + 2 * SLOW_ROUND_MS);
    }

    /**
     * True while a route to {@code peer} may still come, so that a connector that finds none waits for one within its
     * handshake timeout rather than failing at once: while discovery settles; while a link of this node has no live
     * neighbour (this node's start is no measure of its neighbours': a rank that started ten seconds before the
     * others, as NCCL's ranks may, would otherwise refuse a relayed peer before its relay has answered once); and for
     * an address an expired neighbour reached moments ago, as a relay holds such a request. Else false: with every
     * link's neighbour answering, a peer the table does not reach is refused at once.
     */
    public boolean mayFindRoute(ListenHandle peer) {
        if (routePort == 0) {
            return false;
        }
        long now = System.nanoTime();
        if (settling() || table.unheardLink(now) != null) {
            return true;
        }
        for (ListenAddress a : peer.addresses()) {
            if (table.lost(a.prefix().address(), now) != null) {
                return true;
            }
        }
        return false;
    }

    /** Datagrams dropped as malformed or foreign, for tests. */
    public long dropped() {
        return dropped;
    }

    // ---- the route thread ------------------------------------------------------------------------------------

    /** The route thread's duty cycle: a probe round when one is due, datagrams as they come. */
    private final class Loop implements SelectorAgent {
        private long nextRound = System.nanoTime();
        private long nextSweep = startNanos + TimeUnit.MILLISECONDS.toNanos(FAST_PHASE_MS + SWEEP_EVERY_MS);

        @Override
        public String roleName() {
            return "jmesh route";
        }

        @Override
        public long firstWaitMillis() {
            return 1; // the first round goes at once
        }

        @Override
        public void onSelected(SelectionKey key) {
            onReadable(key);
        }

        @Override
        public long doWork() {
            long now = System.nanoTime();
            if (now - nextRound >= 0) {
                boolean fast = now - startNanos < TimeUnit.MILLISECONDS.toNanos(FAST_PHASE_MS);
                boolean sweep = fast || now - nextSweep >= 0;
                if (sweep && !fast) {
                    nextSweep = now + TimeUnit.MILLISECONDS.toNanos(SWEEP_EVERY_MS);
                }
                probeRound(sweep, now);
                nextRound = now + TimeUnit.MILLISECONDS.toNanos(fast ? FAST_ROUND_MS : SLOW_ROUND_MS);
            }
            return Math.max(1, TimeUnit.NANOSECONDS.toMillis(nextRound - System.nanoTime()));
        }

        @Override
        public void onClose() {
            closeSockets();
        }
    }

    /** Probes every host of each link's subnet ({@code sweep}) or only the neighbours known there. */
    private void probeRound(boolean sweep, long now) {
        if (key.isSet()) {
            byte[] used = lastNonce;
            lastNonce = nonce;
            nonce = used;
            RANDOM.nextBytes(nonce);
        }
        for (int i = 0; i < askers.size(); i++) {
            DatagramChannel asker = askers.get(i);
            LocalLink l = (LocalLink) asker.keyFor(selector).attachment();
            if (sweep && hosts(l) <= MAX_SWEEP_HOSTS) {
                byte[] a = l.prefix().network().address().getAddress();
                long first = firstHost(l);
                long last = first + hosts(l) - 1;
                for (long h = first; h <= last; h++) {
                    probe(asker, addressPlus(a, h));
                }
            } else {
                for (InetAddress n : table.neighboursOn(l, now)) {
                    probe(asker, n);
                }
            }
            for (InetAddress n : table.staticNeighbours()) {
                if (l.prefix().contains(n)) {
                    probe(asker, n);
                }
            }
        }
    }

    private void probe(DatagramChannel asker, InetAddress target) {
        if (target == null || table.isOwnAddress(target)) {
            return;
        }
        RouteFrame.probe(out, nodeId, key, nonce);
        try {
            asker.send(out, new InetSocketAddress(target, routePort));
        } catch (IOException | RuntimeException e) {
            LOG.trace("jmesh route: probe to {} failed: {}", target, e.getMessage());
        }
    }

    private void onReadable(SelectionKey key) {
        DatagramChannel ch = (DatagramChannel) key.channel();
        boolean isAsker = askers.contains(ch);
        for (int i = 0; i < DATAGRAMS_PER_WAKE; i++) {
            in.clear();
            SocketAddress from;
            try {
                from = ch.receive(in);
            } catch (IOException e) {
                return; // an ICMP error from a probe to an address nobody answers on: nothing to do
            }
            if (from == null) {
                return;
            }
            in.flip();
            handle(ch, isAsker, (InetSocketAddress) from);
        }
    }

    private void handle(DatagramChannel ch, boolean isAsker, InetSocketAddress from) {
        Decoded d = in.remaining() > RouteFrame.MAX_BYTES ? Decoded.bad("longer than " + RouteFrame.MAX_BYTES
                + " bytes") : RouteFrame.decode(in, key);
        if (d.problem() != null) {
            drop(from, d.problem());
            return;
        }
        if (d.nodeId() == nodeId) {
            return; // our own probe, answered by ourselves
        }
        if (table.linkTo(from.getAddress()) == null) {
            drop(from, "it comes from outside this node's link subnets");
            return;
        }
        if (!isAsker && d.type() == RouteFrame.PROBE) {
            answer(ch, from, d.nodeId(), d.nonce());
            if (!table.knows(from.getAddress(), System.nanoTime())) {
                probeBack((LocalLink) ch.keyFor(selector).attachment(), from.getAddress());
            }
        } else if (isAsker && d.type() == RouteFrame.ADVERT) {
            if (table.isOwnAddress(from.getAddress())) {
                return; // another process of this node: same links, nothing to learn
            }
            if (d.nonce() != null && !MeshKey.matches(d.nonce(), nonce) && !MeshKey.matches(d.nonce(), lastNonce)) {
                drop(from, "a signed advert that answers none of this node's last probes (replayed?)");
                return;
            }
            table.heard(from.getAddress(), d.nodeId(), d.links(), d.reach(), System.nanoTime());
        } else {
            drop(from, RouteFrame.PROBE == d.type() ? "a PROBE on the answer socket" : "an ADVERT on the route port");
        }
    }

    /**
     * A neighbour the table does not know probed this node: it has just started (or this process missed it), so
     * it is asked at once from the link's asker instead of at the next sweep. One probe per probe received, never
     * more, so a flood of forged probes is answered in kind and no larger.
     */
    private void probeBack(LocalLink link, InetAddress neighbour) {
        for (int i = 0; i < askers.size(); i++) {
            DatagramChannel asker = askers.get(i);
            if (asker.keyFor(selector).attachment() == link) {
                probe(asker, neighbour);
                return;
            }
        }
    }

    private void answer(DatagramChannel ch, InetSocketAddress to, long askerId, byte[] probeNonce) {
        List<Link> mine = new ArrayList<>(links.size());
        for (LocalLink l : links) {
            mine.add(new Link(l.prefix(), relayPorts.getOrDefault(l.prefix().address(), 0)));
        }
        RouteFrame.advert(out, nodeId, mine, table.advertFor(askerId, System.nanoTime()), key, probeNonce);
        try {
            ch.send(out, to);
        } catch (IOException | RuntimeException e) {
            LOG.trace("jmesh route: answer to {} failed: {}", to, e.getMessage());
        }
    }

    private void drop(InetSocketAddress from, String why) {
        dropped++;
        warnings.warn("dropped a datagram from {}: {}", from, why);
    }

    /** Host addresses of the link's subnet (network and broadcast excluded), capped above the sweep limit. */
    static long hosts(LocalLink l) {
        int bits = (l.prefix().isIpv4() ? 32 : 128) - l.prefix().prefixLength();
        return bits >= 20 ? Long.MAX_VALUE : bits <= 1 ? 1L << bits : (1L << bits) - 2;
    }

    /** The offset of the first host address: 1, or 0 on a /31 or /32 (RFC 3021 point-to-point links). */
    private static long firstHost(LocalLink l) {
        return (l.prefix().isIpv4() ? 32 : 128) - l.prefix().prefixLength() <= 1 ? 0 : 1;
    }

    private static InetAddress addressPlus(byte[] network, long offset) {
        byte[] a = network.clone();
        long carry = offset;
        for (int i = a.length - 1; i >= 0 && carry != 0; i--) {
            long v = (a[i] & 0xff) + carry;
            a[i] = (byte) v;
            carry = v >>> 8;
        }
        try {
            return InetAddress.getByAddress(a);
        } catch (IOException e) {
            return null;
        }
    }

    /** Stops the thread, then closes the sockets. */
    @Override
    public void close() {
        runner.close();
        closeSockets(); // again: harmless, and certain even when the thread did not stop within the wait
    }

    private void closeSockets() {
        for (DatagramChannel ch : channels) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // nothing more to release
            }
        }
        try {
            selector.close();
        } catch (IOException ignored) {
            // nothing more to release
        }
    }
}
