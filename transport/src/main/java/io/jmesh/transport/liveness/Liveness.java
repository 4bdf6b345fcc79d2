package io.jmesh.transport.liveness;

import io.jmesh.transport.core.Fate;
import io.jmesh.transport.log.WarnLimiter;
import io.jmesh.api.IpPrefix;
import io.jmesh.transport.agent.SelectorAgent;
import io.jmesh.transport.agent.SelectorAgentRunner;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import static io.jmesh.transport.liveness.LivenessDatagram.CLOSED;
import static io.jmesh.transport.liveness.LivenessDatagram.FLAGS_OFFSET;
import static io.jmesh.transport.liveness.LivenessDatagram.ID_OFFSET;
import static io.jmesh.transport.liveness.LivenessDatagram.KNOWN;
import static io.jmesh.transport.liveness.LivenessDatagram.LENGTH;
import static io.jmesh.transport.liveness.LivenessDatagram.LOST;
import static io.jmesh.transport.liveness.LivenessDatagram.PING;
import static io.jmesh.transport.liveness.LivenessDatagram.PONG;
import static io.jmesh.transport.liveness.LivenessDatagram.RELAY;
import static io.jmesh.transport.liveness.LivenessDatagram.ROLE_ACCEPTOR;
import static io.jmesh.transport.liveness.LivenessDatagram.ROLE_CONNECTOR;
import static io.jmesh.transport.liveness.LivenessDatagram.ROLE_OFFSET;
import static io.jmesh.transport.liveness.LivenessDatagram.SEQUENCE_OFFSET;
import static io.jmesh.transport.liveness.LivenessDatagram.SILENT;
import static io.jmesh.transport.liveness.LivenessDatagram.TYPE_OFFSET;

/**
 * Notices a process that stopped (SIGSTOP, a hang, a dead machine) on every provider. A NIC acknowledges RDMA writes
 * and a kernel acknowledges TCP segments for a process that no longer runs, so neither tells a frozen peer from a slow
 * one; this thread, {@value #THREAD_NAME}, one per fabric, is what answers for the process instead. Every process
 * watches only its neighbours, over UDP on the link they share: the end of a direct connection its peer, the end of
 * a relayed connection the relay it is connected to (the first relay, or for the accepting end the last one), and a
 * relay both neighbours of each connection it carries (its <em>legs</em>). A process answers every neighbour's pings
 * whether or not the application polls, and fails a connection whose neighbour sent no sign of life for the timeout.
 * A relay that loses one leg (silent, or its neighbour no longer knows the connection) tells the other with LOST,
 * which the next relay passes on; so an end learns of a stopped process anywhere on the path within about one
 * timeout, and the watches stay between neighbours, where datagrams can go (docs/architecture.md).
 *
 * <p>The datagrams: {@link LivenessDatagram}. Datagrams are taken only from addresses of the link
 * they arrive on. A connection is watched under its id and the watcher's role (connector or acceptor: both ends of a
 * connection to the same fabric live here), and only datagrams from the neighbour's own address and port count.
 */
public final class Liveness implements AutoCloseable {
    public static final String THREAD_NAME = "jmesh-liveness";
    /** Pings per timeout: a few may be lost on a busy link without failing anything. */
    static final int PINGS_PER_TIMEOUT = 6;
    /** Relay legs at most (two per relayed connection): bounded, though only a completed handshake adds any. */
    static final int MAX_LEGS = 16_384;


    private static final Logger LOG = JmeshLog.logger(Liveness.class);

    private final long timeoutNanos;
    private final long intervalNanos;
    private final Map<InetAddress, DatagramChannel> sockets;
    private final Map<DatagramChannel, IpPrefix> links;
    private final Selector selector;
    /** Null when liveness is off (no sockets, no thread). */
    private final SelectorAgentRunner runner;
    private final Queue<Watch> added = new ConcurrentLinkedQueue<>();
    private final WarnLimiter warnings = new WarnLimiter(LOG, "jmesh ", 10, TimeUnit.SECONDS.toNanos(1));
    // the thread only
    private final Map<Key, Watch> watches = new HashMap<>();
    private final ByteBuffer rx = ByteBuffer.allocate(64);
    private final ByteBuffer tx = ByteBuffer.allocate(LENGTH);
    private int legs;
    private volatile long dropped;

    private record Key(long connectionId, int role) {
        Key opposite() {
            return new Key(connectionId, role == ROLE_CONNECTOR ? ROLE_ACCEPTOR : ROLE_CONNECTOR);
        }
    }

    /**
     * One watched neighbour: an end's ({@code fate} set) or a relay's leg ({@code partner} set: the other neighbour
     * of the same relayed connection). Written by the thread only, after it was queued.
     */
    private static final class Watch {
        final Key key;
        final InetSocketAddress peer;
        final DatagramChannel socket;
        final Fate fate;
        /** An end's: the peer behind the relay it watches (connector), null when not known or direct. */
        final String behind;
        Watch partner;
        String name;
        long lastHeard;
        long nextPing;
        long sequence;
        /** The neighbour said it relays this connection (an accepting end learns it from the PONG). */
        boolean relayed;
        /** A leg whose neighbour showed that it has the connection (it pinged, or answered KNOWN). */
        boolean armed;
        /** A leg that lost its connection: it answers LOST until its neighbour falls silent. */
        int lostWhy;

        Watch(Key key, InetSocketAddress peer, DatagramChannel socket, Fate fate, String behind) {
            this.key = key;
            this.peer = peer;
            this.socket = socket;
            this.fate = fate;
            this.behind = behind;
        }

        boolean leg() {
            return fate == null;
        }

        String host() {
            return peer.getAddress().getHostAddress();
        }
    }

    private Liveness(Duration timeout, Map<InetAddress, DatagramChannel> sockets, Map<DatagramChannel, IpPrefix> links,
                     Selector selector) {
        this.timeoutNanos = timeout.toNanos();
        this.intervalNanos = Math.max(TimeUnit.MILLISECONDS.toNanos(10), timeoutNanos / PINGS_PER_TIMEOUT);
        this.sockets = Map.copyOf(sockets);
        this.links = Map.copyOf(links);
        this.selector = selector;
        this.runner = selector == null ? null : new SelectorAgentRunner(THREAD_NAME, selector, new Loop());
    }

    /**
     * Binds one UDP socket on each link address (ephemeral ports) and starts the thread; a zero timeout turns
     * liveness off (no thread, no sockets, {@link #port} 0).
     *
     * @throws IOException naming the address and the fix when one cannot be bound
     */
    public static Liveness start(List<IpPrefix> links, Duration timeout) throws IOException {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isZero()) {
            return new Liveness(timeout, Map.of(), Map.of(), null);
        }
        Map<InetAddress, DatagramChannel> sockets = new HashMap<>();
        Map<DatagramChannel, IpPrefix> prefixes = new HashMap<>();
        Selector selector = Selector.open();
        try {
            for (IpPrefix p : links) {
                if (sockets.containsKey(p.address())) {
                    continue;
                }
                DatagramChannel ch = DatagramChannel.open();
                sockets.put(p.address(), ch);
                try {
                    ch.bind(new InetSocketAddress(p.address(), 0));
                } catch (IOException e) {
                    throw new IOException("cannot open the liveness socket on " + p + ": " + e.getMessage()
                            + "; the address must be up on this host (check 'ip addr')", e);
                }
                ch.configureBlocking(false);
                ch.register(selector, SelectionKey.OP_READ, ch);
                prefixes.put(ch, p);
            }
        } catch (IOException | RuntimeException e) {
            closeAll(sockets.values(), selector);
            throw e;
        }
        Liveness l = new Liveness(timeout, sockets, prefixes, selector);
        l.runner.start();
        return l;
    }

    /** The UDP port that answers for {@code local}, to tell the peer in the handshake; 0 when there is none. */
    public int port(InetAddress local) {
        DatagramChannel ch = local == null ? null : sockets.get(local);
        if (ch == null || !running()) {
            return 0;
        }
        try {
            return ((InetSocketAddress) ch.getLocalAddress()).getPort();
        } catch (IOException e) {
            return 0;
        }
    }

    /**
     * Watches one end of a direct connection until its {@code fate} is closed or failed: fails it when the peer's
     * process at {@code peer} (on {@code peerPort}, its liveness port from the handshake) sends no sign of life for
     * the timeout. Does nothing when liveness is off, the peer has no liveness port (0), or {@code local} is no link
     * of this fabric.
     *
     * @param connector true on the connecting end, false on the accepting end
     */
    public void watch(long connectionId, boolean connector, InetAddress peer, int peerPort, InetAddress local,
                      Fate fate) {
        watch(connectionId, connector, peer, peerPort, local, fate, null);
    }

    /**
     * Watches one end of a connection through the neighbour it is connected to: the peer itself, or for a relayed
     * connection the relay ({@code neighbour}, with the liveness port the relay put in the handshake) and, named in
     * the failure, {@code behind}, the peer beyond it.
     */
    public void watch(long connectionId, boolean connector, InetAddress neighbour, int port, InetAddress local,
                      Fate fate, String behind) {
        DatagramChannel ch = local == null ? null : sockets.get(local);
        if (ch == null || neighbour == null || port == 0 || !running()) {
            return;
        }
        Watch w = new Watch(new Key(connectionId, connector ? ROLE_CONNECTOR : ROLE_ACCEPTOR),
                new InetSocketAddress(neighbour, port), ch, Objects.requireNonNull(fate, "fate"), behind);
        w.relayed = behind != null;
        added.add(w);
        selector.wakeup();
    }

    /**
     * Watches both neighbours of a connection this node relays, from the moment its handshake passed: {@code up}
     * (towards the connector; this node is the acceptor there) under {@code upId}, {@code down} (towards the
     * listener; this node is the connector there) under {@code downId}. When one falls silent for the timeout, or
     * no longer has the connection, the other is told (LOST), and both are forgotten once quiet. Does nothing when
     * liveness is off, either port is 0 or either local address is no link of this fabric.
     *
     * @param name the relayed connection, for the log ("127.0.111.1 -> 127.0.112.3")
     */
    public void relay(long upId, InetSocketAddress up, InetAddress upLocal, long downId, InetSocketAddress down,
                      InetAddress downLocal, String name) {
        DatagramChannel upCh = upLocal == null ? null : sockets.get(upLocal);
        DatagramChannel downCh = downLocal == null ? null : sockets.get(downLocal);
        if (upCh == null || downCh == null || up == null || down == null || up.getPort() == 0
                || down.getPort() == 0 || !running()) {
            return;
        }
        Watch u = new Watch(new Key(upId, ROLE_ACCEPTOR), up, upCh, null, null);
        Watch d = new Watch(new Key(downId, ROLE_CONNECTOR), down, downCh, null, null);
        u.partner = d;
        d.partner = u;
        u.name = name;
        d.name = name;
        added.add(u);
        added.add(d);
        selector.wakeup();
    }

    /** The address of a socket address, or null for none (a socket that failed before it was asked). */
    public static InetAddress host(InetSocketAddress a) {
        return a == null ? null : a.getAddress();
    }

    /** Datagrams dropped as malformed or from outside their link, since start (for tests). */
    long dropped() {
        return dropped;
    }

    public Duration timeout() {
        return Duration.ofNanos(timeoutNanos);
    }

    /** Stops the thread and closes the sockets; connections stay as they are. Waits up to 5 s for the thread. */
    @Override
    public void close() {
        if (runner != null) {
            runner.close();
        }
    }

    private boolean running() {
        return runner != null && runner.isRunning();
    }

    /** The thread's duty cycle: datagrams as they come, then new watches and the pings and timeouts that are due. */
    private final class Loop implements SelectorAgent {
        @Override
        public String roleName() {
            return "jmesh liveness";
        }

        @Override
        public long firstWaitMillis() {
            return TimeUnit.NANOSECONDS.toMillis(intervalNanos);
        }

        @Override
        public void onSelected(SelectionKey key) {
            receiveAll((DatagramChannel) key.attachment());
        }

        @Override
        public long doWork() {
            Watch w;
            while ((w = added.poll()) != null) {
                adopt(w, System.nanoTime());
            }
            return tick(System.nanoTime());
        }

        @Override
        public void onClose() {
            closeSockets();
        }
    }

    private void adopt(Watch w, long now) {
        if (w.leg() && legs >= MAX_LEGS) {
            warnings.warn("liveness: not watching the relayed connection {}: {} relay legs are watched already",
                    w.name, MAX_LEGS);
            return;
        }
        w.lastHeard = now;
        w.nextPing = now;
        Watch old = watches.put(w.key, w);
        legs += (w.leg() ? 1 : 0) - (old != null && old.leg() ? 1 : 0);
    }

    private void forget(Iterator<Watch> it, Watch w) {
        it.remove();
        legs -= w.leg() ? 1 : 0;
    }

    /** Fails the silent, forgets the closed, pings the due; returns how long the next select may wait (ms). */
    private long tick(long now) {
        long soonest = intervalNanos;
        for (Iterator<Watch> it = watches.values().iterator(); it.hasNext(); ) {
            Watch w = it.next();
            boolean silent = now - w.lastHeard > timeoutNanos;
            if (w.fate != null && w.fate.state() != 0) {
                forget(it, w);
            } else if (w.lostWhy != 0) {
                if (silent) {
                    forget(it, w); // a lost leg answers LOST until its neighbour stops asking
                }
            } else if (silent) {
                if (w.leg()) {
                    lose(w, SILENT, now);
                } else {
                    forget(it, w);
                    w.fate.fail(silence(w, now));
                }
            } else {
                if (now - w.nextPing >= 0) {
                    send(w.socket, PING, w.key.role(), w.leg() ? RELAY : 0, w.key.connectionId(), ++w.sequence,
                            w.peer);
                    w.nextPing = now + intervalNanos;
                }
                soonest = Math.min(soonest, Math.min(w.nextPing - now, w.lastHeard + timeoutNanos - now + 1));
            }
        }
        return Math.max(1, TimeUnit.NANOSECONDS.toMillis(soonest));
    }

    private String silence(Watch w, long now) {
        String waited = "for " + TimeUnit.NANOSECONDS.toMillis(now - w.lastHeard) + " ms (";
        String tail = "; JMESH_LIVENESS_TIMEOUT_MS, now " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos)
                + ", sets how long to wait)";
        if (!w.relayed) {
            // an accepting end learns that its neighbour relays from the neighbour's datagrams: a relay that stops
            // before the first of them reached it is named by its address alone
            return "the peer stopped answering: no sign of life from the process at " + w.host() + " " + waited
                    + "it is stopped or hung, its machine is down, or the link is" + tail;
        }
        return "the relay " + w.host() + " stopped answering; the connection " + (w.behind != null ? "to "
                + w.behind + " through it" : "from the peer behind it") + " is lost: no sign of life from the "
                + "relay's process " + waited + "it is stopped or hung, its machine is down, or the link to it is"
                + tail;
    }

    /** A leg lost its neighbour: it and its partner answer LOST from now on, and the partner's neighbour is told. */
    private void lose(Watch w, int why, long now) {
        w.lostWhy = why;
        w.lastHeard = now;
        Watch p = w.partner;
        if (p.lostWhy == 0) {
            p.lostWhy = why;
            p.lastHeard = now;
            send(p.socket, LOST, p.key.role(), why, p.key.connectionId(), 0, p.peer);
        }
        if (why == CLOSED) { // an end closed it: what every relayed connection does at the end of a job
            LOG.debug("jmesh relay: the relayed connection {} ended: {} closed it", w.name, w.host());
        } else {
            LOG.info("jmesh relay: the relayed connection {} is lost: {} {}", w.name, w.host(),
                    why == SILENT ? "stopped answering" : "reports it lost beyond itself");
        }
    }

    private void receiveAll(DatagramChannel ch) {
        while (true) {
            rx.clear();
            SocketAddress from;
            try {
                from = ch.receive(rx);
            } catch (IOException e) {
                return; // an ICMP error for an earlier ping (the peer's port is closed): its silence tells the rest
            }
            if (from == null) {
                return;
            }
            rx.flip();
            onDatagram(ch, (InetSocketAddress) from);
        }
    }

    private void onDatagram(DatagramChannel ch, InetSocketAddress from) {
        String problem = LivenessDatagram.problem(rx);
        if (problem == null && !links.get(ch).contains(from.getAddress())) {
            problem = "from outside the link " + links.get(ch);
        }
        if (problem != null) {
            dropped++;
            warnings.warn("liveness: dropped a datagram from {}: {}", from, problem);
            return;
        }
        int type = rx.get(TYPE_OFFSET);
        int role = rx.get(ROLE_OFFSET);
        int flags = rx.get(FLAGS_OFFSET);
        long id = rx.getLong(ID_OFFSET);
        long now = System.nanoTime();
        if (type == PONG) {
            Watch w = mine(new Key(id, role), from);
            if (w != null && w.lostWhy == 0) {
                w.lastHeard = now;
                w.relayed |= !w.leg() && (flags & RELAY) != 0;
                if (w.leg() && (flags & KNOWN) != 0) {
                    w.armed = true;
                } else if (w.leg() && w.armed) {
                    lose(w, CLOSED, now);
                }
            }
            return;
        }
        Watch w = mine(new Key(id, role).opposite(), from);
        if (type == PING) {
            // the neighbour pinging is a sign of life too, and shows that it has the connection
            if (w != null) {
                w.lastHeard = now;
                w.armed = true;
                w.relayed |= !w.leg() && (flags & RELAY) != 0;
            }
            int answer = w == null ? 0 : w.leg() ? KNOWN | RELAY : KNOWN;
            boolean lost = w != null && w.lostWhy != 0;
            send(ch, lost ? LOST : PONG, lost ? w.key.role() : role, lost ? w.lostWhy : answer, id,
                    rx.getLong(SEQUENCE_OFFSET), from);
        } else if (w != null && w.lostWhy == 0) {
            onLost(w, flags, now);
        }
    }

    /** A LOST from the neighbour {@code w} watches: a relay lost the connection beyond itself. */
    private void onLost(Watch w, int why, long now) {
        if (w.leg()) {
            lose(w, why, now);
            return;
        }
        if (why == CLOSED && (w.fate.closeArrivesInBand() || w.key.role() == ROLE_ACCEPTOR)) {
            // the far end closed: its goodbye (or the end of its streams) follows in the data path, behind what it
            // sent before; failing now would drop what the application has not read yet. A receiving end (the
            // acceptor) gets its sender's goodbye through the relays on both providers; a verbs sender learns its
            // receiver's close only from this report. The relay answering is a sign of life meanwhile, and its
            // silence still fails the connection
            w.lastHeard = now;
            return;
        }
        watches.remove(w.key);
        w.fate.fail("the connection " + (w.behind != null ? "to " + w.behind + " " : "") + "through the relay "
                + w.host() + " is lost: the relay reports that " + (why == CLOSED
                ? "the other side no longer has it (closed by its peer)"
                : "a process beyond it stopped answering (the peer or a further relay is stopped or hung, or its "
                + "machine or link is down)"));
    }

    /** The watch under {@code key}, if {@code from} is the neighbour it watches; else null. */
    private Watch mine(Key key, InetSocketAddress from) {
        Watch w = watches.get(key);
        return w != null && w.peer.equals(from) ? w : null;
    }

    private void send(DatagramChannel ch, int type, int role, int flags, long id, long sequence,
                      InetSocketAddress to) {
        LivenessDatagram.write(tx, type, role, flags, id, sequence);
        try {
            ch.send(tx, to);
        } catch (IOException e) {
            // unreachable for now (a link going down): the peer's silence fails the connection at the timeout
            LOG.debug("jmesh liveness: sending to {} failed: {}", to, e.getMessage());
        }
    }

    private void closeSockets() {
        closeAll(sockets.values(), selector);
    }

    private static void closeAll(Iterable<DatagramChannel> channels, Selector selector) {
        List<AutoCloseable> all = new ArrayList<>();
        channels.forEach(all::add);
        if (selector != null) {
            all.add(selector);
        }
        for (AutoCloseable c : all) {
            try {
                c.close();
            } catch (Exception ignored) {
                // nothing more to release
            }
        }
    }
}
