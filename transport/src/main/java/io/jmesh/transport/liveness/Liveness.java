package io.jmesh.transport.liveness;

import io.jmesh.transport.core.Fate;
import io.jmesh.transport.log.WarnLimiter;
import io.jmesh.transport.net.IpPrefix;
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
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Notices a peer process that stopped (SIGSTOP, a hang, a dead machine) on every provider. A NIC acknowledges RDMA
 * writes and a kernel acknowledges TCP segments for a process that no longer runs, so neither tells a frozen peer from
 * a slow one; this thread, {@value #THREAD_NAME}, one per fabric, is what answers for the process instead. It pings the
 * peer of every direct connection over UDP on the connection's link, answers every peer's pings whether or not the
 * application polls, and fails a connection whose peer sent no sign of life for the timeout. A process that merely
 * does not poll (busy elsewhere) keeps answering; one that is stopped does not.
 *
 * <p>One datagram layout, 24 bytes, big-endian:
 * <pre>
 *  0 u32 magic 0x4A4D4C56 "JMLV"   4 u8 version 1   5 u8 type (PING 1, PONG 2)   6 u8 role of the pinger
 *  8 u64 connection id (the handshake's)           16 u64 sequence (echoed)
 * </pre>
 * A PONG echoes its PING with the type changed, so it is never larger than what asked for it; pings are answered only
 * from addresses of the link they arrive on. A connection is watched under its id and the watcher's role (connector or
 * acceptor: both ends of a connection to the same fabric live here), and only a PONG from the peer's own address and
 * port counts. Relayed connections are not watched: their peer is no neighbour, and the relay's failure reaches them.
 */
public final class Liveness implements AutoCloseable {
    public static final String THREAD_NAME = "jmesh-liveness";
    /** Pings per timeout: a few may be lost on a busy link without failing anything. */
    static final int PINGS_PER_TIMEOUT = 6;

    static final int MAGIC = 0x4A4D4C56;
    static final int VERSION = 1;
    static final int PING = 1;
    static final int PONG = 2;
    static final int ROLE_CONNECTOR = 1;
    static final int ROLE_ACCEPTOR = 2;
    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 4;
    static final int TYPE_OFFSET = 5;
    static final int ROLE_OFFSET = 6;
    static final int ID_OFFSET = 8;
    static final int SEQUENCE_OFFSET = 16;
    static final int LENGTH = 24;

    private static final Logger LOG = LogManager.getLogger(Liveness.class);

    private final long timeoutNanos;
    private final long intervalNanos;
    private final Map<InetAddress, DatagramChannel> sockets;
    private final Map<DatagramChannel, IpPrefix> links;
    private final Selector selector;
    private final Thread thread;
    private final Queue<Watch> added = new ConcurrentLinkedQueue<>();
    private final WarnLimiter warnings = new WarnLimiter(LOG, "jmesh ", 10, TimeUnit.SECONDS.toNanos(1));
    // the thread only
    private final Map<Key, Watch> watches = new HashMap<>();
    private final ByteBuffer rx = ByteBuffer.allocate(64);
    private final ByteBuffer tx = ByteBuffer.allocate(LENGTH);
    private volatile boolean running = true;
    private volatile long dropped;

    private record Key(long connectionId, int role) {
    }

    /** One watched connection end; written by the thread only, after it was queued. */
    private static final class Watch {
        final Key key;
        final InetSocketAddress peer;
        final DatagramChannel socket;
        final Fate fate;
        final String peerName;
        long lastHeard;
        long nextPing;
        long sequence;

        Watch(Key key, InetSocketAddress peer, DatagramChannel socket, Fate fate, String peerName) {
            this.key = key;
            this.peer = peer;
            this.socket = socket;
            this.fate = fate;
            this.peerName = peerName;
        }
    }

    private Liveness(Duration timeout, Map<InetAddress, DatagramChannel> sockets, Map<DatagramChannel, IpPrefix> links,
                     Selector selector) {
        this.timeoutNanos = timeout.toNanos();
        this.intervalNanos = Math.max(TimeUnit.MILLISECONDS.toNanos(10), timeoutNanos / PINGS_PER_TIMEOUT);
        this.sockets = Map.copyOf(sockets);
        this.links = Map.copyOf(links);
        this.selector = selector;
        this.thread = selector == null ? null : Thread.ofPlatform().daemon().name(THREAD_NAME).unstarted(this::run);
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
        l.thread.start();
        return l;
    }

    /** The UDP port that answers for {@code local}, to tell the peer in the handshake; 0 when there is none. */
    public int port(InetAddress local) {
        DatagramChannel ch = local == null ? null : sockets.get(local);
        if (ch == null || !running) {
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
     * the timeout. Does nothing when liveness is off, the peer has no liveness port (0: a relayed connection), or
     * {@code local} is no link of this fabric.
     *
     * @param connector true on the connecting end, false on the accepting end
     */
    public void watch(long connectionId, boolean connector, InetAddress peer, int peerPort, InetAddress local,
                      Fate fate) {
        DatagramChannel ch = local == null ? null : sockets.get(local);
        if (ch == null || peer == null || peerPort == 0 || !running) {
            return;
        }
        added.add(new Watch(new Key(connectionId, connector ? ROLE_CONNECTOR : ROLE_ACCEPTOR),
                new InetSocketAddress(peer, peerPort), ch, fate, peer.getHostAddress()));
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
        if (thread == null || !running) {
            return;
        }
        running = false;
        selector.wakeup();
        if (Thread.currentThread() != thread) {
            try {
                thread.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void run() {
        try {
            long wait = TimeUnit.NANOSECONDS.toMillis(intervalNanos);
            while (running) {
                try {
                    selector.select(k -> receiveAll((DatagramChannel) k.attachment()), Math.max(1, wait));
                    Watch w;
                    while ((w = added.poll()) != null) {
                        long now = System.nanoTime();
                        w.lastHeard = now;
                        w.nextPing = now;
                        watches.put(w.key, w);
                    }
                    wait = tick(System.nanoTime());
                } catch (IOException | RuntimeException e) {
                    LOG.error("jmesh liveness: unexpected error; the thread keeps running", e);
                }
            }
        } finally {
            closeSockets();
        }
    }

    /** Fails the silent, forgets the closed, pings the due; returns how long the next select may wait (ms). */
    private long tick(long now) {
        long soonest = intervalNanos;
        for (Iterator<Watch> it = watches.values().iterator(); it.hasNext(); ) {
            Watch w = it.next();
            if (w.fate.state() != 0) {
                it.remove();
            } else if (now - w.lastHeard > timeoutNanos) {
                it.remove();
                w.fate.fail("the peer stopped answering: no sign of life from the process at " + w.peerName
                        + " for " + TimeUnit.NANOSECONDS.toMillis(now - w.lastHeard) + " ms (it is stopped or hung, "
                        + "its machine is down, or the link is; JMESH_LIVENESS_TIMEOUT_MS, now "
                        + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + ", sets how long to wait)");
            } else {
                if (now - w.nextPing >= 0) {
                    send(w.socket, PING, w.key.role(), w.key.connectionId(), ++w.sequence, w.peer);
                    w.nextPing = now + intervalNanos;
                }
                soonest = Math.min(soonest, Math.min(w.nextPing - now, w.lastHeard + timeoutNanos - now + 1));
            }
        }
        return Math.max(1, TimeUnit.NANOSECONDS.toMillis(soonest));
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
        String problem = problem(rx);
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
        long id = rx.getLong(ID_OFFSET);
        if (type == PING) {
            send(ch, PONG, role, id, rx.getLong(SEQUENCE_OFFSET), from);
            // the peer pinging is a sign of life too, for our end of the same connection
            heard(new Key(id, role == ROLE_CONNECTOR ? ROLE_ACCEPTOR : ROLE_CONNECTOR), from);
        } else {
            heard(new Key(id, role), from);
        }
    }

    private void heard(Key key, InetSocketAddress from) {
        Watch w = watches.get(key);
        if (w != null && w.peer.equals(from)) {
            w.lastHeard = System.nanoTime();
        }
    }

    /** Why a datagram is not one of ours, or null. */
    static String problem(ByteBuffer d) {
        if (d.remaining() != LENGTH) {
            return "a datagram of " + d.remaining() + " bytes (a liveness datagram has " + LENGTH + ")";
        }
        if (d.getInt(MAGIC_OFFSET) != MAGIC) {
            return "bad magic 0x" + Integer.toHexString(d.getInt(MAGIC_OFFSET)) + " (not jmesh liveness)";
        }
        if (d.get(VERSION_OFFSET) != VERSION) {
            return "liveness version " + d.get(VERSION_OFFSET) + ", this node speaks " + VERSION
                    + " (run the same jmesh version on every node)";
        }
        int type = d.get(TYPE_OFFSET);
        int role = d.get(ROLE_OFFSET);
        if ((type != PING && type != PONG) || (role != ROLE_CONNECTOR && role != ROLE_ACCEPTOR)) {
            return "type " + type + ", role " + role;
        }
        return null;
    }

    private void send(DatagramChannel ch, int type, int role, long id, long sequence, InetSocketAddress to) {
        tx.clear();
        tx.putInt(MAGIC_OFFSET, MAGIC).put(VERSION_OFFSET, (byte) VERSION).put(TYPE_OFFSET, (byte) type)
                .put(ROLE_OFFSET, (byte) role).put(ROLE_OFFSET + 1, (byte) 0).putLong(ID_OFFSET, id)
                .putLong(SEQUENCE_OFFSET, sequence);
        tx.limit(LENGTH);
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
