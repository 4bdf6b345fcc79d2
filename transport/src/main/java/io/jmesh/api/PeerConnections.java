package io.jmesh.api;


import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * One node's connections with a set of peers, each of which connects to this node too: a connection to every peer's
 * handle, and one accepted from each, as a non-blocking state machine that {@link #poll()} advances. An accepted
 * connection does not tell which peer made it, so each connection's first message carries its sender's listener
 * handle (at most 128 bytes, tag {@link #HELLO_TAG}); the receiver finds that handle among those it was given, and
 * so every receiver is known by its peer. Nothing else is sent: once {@link #poll()} returned true, the data path of
 * every connection is the caller's.
 *
 * <p>{@link Connections#connectAll} waits for one node; several nodes of one process (tests, the local demo) wait
 * together with {@link Connections#awaitAll}, since each one's connects need the others' accepts.
 *
 * <pre>{@code
 * try (Listener listener = fabric.listen()) {
 *     publish(listener.handle());                                   // every node publishes its handle
 *     Map<String, byte[]> peers = ...;                              // and learns the others'
 *     try (PeerConnections<String> mesh = Connections.connectAll(fabric, listener, peers,
 *             Duration.ofSeconds(30), IdleStrategy.controlPlane())) {
 *         Sender toB = mesh.sender("b");
 *         Receiver fromB = mesh.receiver("b");
 *     }                                                             // closes every connection
 * }
 * }</pre>
 *
 * <p>Every peer must be given this node's {@link Listener#handle()} as it is (not a handle restricted to some
 * addresses), and must connect to it. It holds the connections and closes them all with {@link #close()}; the
 * listener and the fabric stay the caller's.
 *
 * @param <K> how the caller names its peers
 */
public final class PeerConnections<K> implements AutoCloseable {
    /** The tag of the one message that names each connection's sender. */
    public static final int HELLO_TAG = 0x4A4D4849;
    private static final int HELLO_BYTES = 128;

    private final Listener listener;
    private final byte[] own;
    private final List<K> peers;
    private final byte[][] handles;
    private final Connector[] connectors;
    private final Sender[] senders;
    private final int[] helloSent;
    private final boolean[] introduced;
    private final Receiver[] accepted;
    private final int[] helloReceived;
    private final Receiver[] receivers;
    private final Arena arena;
    private Registration hello;
    private int acceptedCount;
    private boolean complete;
    private boolean closed;

    private PeerConnections(Listener listener, Map<K, byte[]> peerHandles) {
        this.listener = listener;
        this.own = listener.handle();
        this.peers = List.copyOf(peerHandles.keySet());
        int n = peers.size();
        this.handles = new byte[n][];
        for (int i = 0; i < n; i++) {
            handles[i] = Objects.requireNonNull(peerHandles.get(peers.get(i)), "the handle of " + peers.get(i)).clone();
        }
        this.connectors = new Connector[n];
        this.senders = new Sender[n];
        this.helloSent = new int[n];
        this.introduced = new boolean[n];
        this.accepted = new Receiver[n];
        this.helloReceived = new int[n];
        this.receivers = new Receiver[n];
        Arrays.fill(helloSent, -1);
        Arrays.fill(helloReceived, -1);
        this.arena = Arena.ofShared();
    }

    /**
     * Starts connecting to every peer in {@code peerHandles} (a {@link Listener#handle()} each; their order is the
     * order of {@link #peers()}) and accepting as many connections on {@code listener}. Nothing waits: call {@link
     * #poll()}, or use {@link Connections#connectAll}.
     *
     * @throws NoRouteException when no local link shares a subnet with one of the peers (nothing is left open)
     */
    public static <K> PeerConnections<K> start(Fabric fabric, Listener listener, Map<K, byte[]> peerHandles)
            throws NoRouteException {
        Objects.requireNonNull(fabric, "fabric");
        Objects.requireNonNull(listener, "listener");
        PeerConnections<K> p = new PeerConnections<>(listener, peerHandles);
        try {
            MemorySegment memory = p.arena.allocate((long) HELLO_BYTES * (1 + p.peers.size()), 4096);
            MemorySegment.copy(p.own, 0, memory, JAVA_BYTE, 0, p.own.length);
            p.hello = fabric.register(memory);
            for (int i = 0; i < p.peers.size(); i++) {
                p.connectors[i] = fabric.connect(p.handles[i]);
            }
            return p;
        } catch (NoRouteException | RuntimeException | Error e) {
            p.closeAfter(e);
            throw e;
        }
    }

    /** The peers, in the order they were given. */
    public List<K> peers() {
        return peers;
    }

    /** The link the connection to {@code peer} uses ({@link Connector#route()}), known once the connect started. */
    public String route(K peer) {
        return connectors[index(peer)].route();
    }

    /**
     * Advances every connect, accept and introduction; returns true once every connection is up both ways and every
     * receiver is known by its peer. Never blocks.
     *
     * @throws IllegalStateException naming the cause when a connect fails (the connector's own message), a connection
     *                               fails during the introduction, or a connection arrives from a node that is not
     *                               one of the peers
     */
    public boolean poll() {
        if (complete) {
            return true;
        }
        boolean all = true;
        for (int i = 0; i < senders.length; i++) {
            all &= introduce(i);
        }
        while (acceptedCount < accepted.length) {
            Receiver r = listener.accept();
            if (r == null) {
                break;
            }
            accepted[acceptedCount++] = r;
        }
        for (int j = 0; j < accepted.length; j++) {
            all &= identify(j);
        }
        if (all) {
            complete = true;
            Registration h = hello;
            hello = null;
            CloseHelper.closeAll(h, arena);     // the introductions are over: their memory is no longer needed
        }
        return complete;
    }

    /** Connects to peer {@code i} and sends it this node's handle; true once that message is delivered. */
    private boolean introduce(int i) {
        if (introduced[i]) {
            return true;
        }
        if (senders[i] == null && (senders[i] = connectors[i].poll()) == null) {
            return false;
        }
        Sender s = senders[i];
        if (helloSent[i] < 0) {
            int req = s.isend(hello, 0, own.length, HELLO_TAG);
            if (req == Status.NOT_READY) {
                return false;       // the peer has not accepted, or not posted its receive, yet
            }
            check(req, "introducing this node to " + peers.get(i) + " over " + connectors[i].route(), s.error());
            helloSent[i] = req;
        }
        int t = s.test(helloSent[i]);
        check(t, "introducing this node to " + peers.get(i) + " over " + connectors[i].route(), s.error());
        introduced[i] = t == 1;
        return introduced[i];
    }

    /** Receives the introduction on accepted connection {@code j}; true once its peer is known. */
    private boolean identify(int j) {
        Receiver r = accepted[j];
        if (r == null) {
            return false;
        }
        if (helloReceived[j] == -2) {
            return true;
        }
        long at = (long) HELLO_BYTES * (1 + j);
        if (helloReceived[j] < 0) {
            int req = r.irecv(1, new Registration[] {hello}, new long[] {at}, new long[] {HELLO_BYTES},
                    new int[] {HELLO_TAG});
            if (req == Status.NOT_READY) {
                return false;
            }
            check(req, "receiving a peer's introduction", r.error());
            helloReceived[j] = req;
        }
        int req = helloReceived[j];
        int t = r.test(req);
        check(t, "receiving a peer's introduction", r.error());
        if (t != 1) {
            return false;
        }
        byte[] from = hello.memory().asSlice(at, r.size(req, 0)).toArray(JAVA_BYTE);
        int peer = -1;
        for (int i = 0; i < handles.length && peer < 0; i++) {
            peer = Arrays.equals(handles[i], from) ? i : -1;
        }
        if (peer < 0) {
            throw new IllegalStateException("a connection arrived from a node that is none of the " + peers.size()
                    + " peers " + peers + ": its listener's handle is not among those given here; give every node "
                    + "each peer's Listener.handle() as it is, and only nodes that connect to this one");
        }
        if (receivers[peer] != null) {
            throw new IllegalStateException("two connections arrived from peer " + peers.get(peer) + ": connect to "
                    + "each peer once");
        }
        receivers[peer] = r;
        helloReceived[j] = -2;
        return true;
    }

    private static void check(int status, String what, String error) {
        if (status < 0) {
            throw new IllegalStateException(what + " failed: " + Status.describe(status)
                    + (error == null ? "" : ": " + error));
        }
    }

    /** True once {@link #poll()} returned true. */
    public boolean isComplete() {
        return complete;
    }

    /**
     * The connection from this node to {@code peer}.
     *
     * @throws IllegalStateException before {@link #poll()} returned true
     */
    public Sender sender(K peer) {
        requireComplete();
        return senders[index(peer)];
    }

    /**
     * The connection from {@code peer} to this node.
     *
     * @throws IllegalStateException before {@link #poll()} returned true
     */
    public Receiver receiver(K peer) {
        requireComplete();
        return receivers[index(peer)];
    }

    /** Every sender by peer, in peer order. */
    public Map<K, Sender> senders() {
        requireComplete();
        Map<K, Sender> m = new LinkedHashMap<>();
        for (int i = 0; i < senders.length; i++) {
            m.put(peers.get(i), senders[i]);
        }
        return Collections.unmodifiableMap(m);
    }

    /** Every receiver by peer, in peer order. */
    public Map<K, Receiver> receivers() {
        requireComplete();
        Map<K, Receiver> m = new LinkedHashMap<>();
        for (int i = 0; i < receivers.length; i++) {
            m.put(peers.get(i), receivers[i]);
        }
        return Collections.unmodifiableMap(m);
    }

    private void requireComplete() {
        if (!complete) {
            throw new IllegalStateException("the connections with " + peers + " are not complete yet (" + progress()
                    + "): poll() until it returns true, or use Connections.connectAll");
        }
    }

    private int index(K peer) {
        int i = peers.indexOf(peer);
        if (i < 0) {
            throw new IllegalArgumentException(peer + " is not one of the peers " + peers);
        }
        return i;
    }

    /** Where the connections stand, for a timeout's message: who is connected, accepted and known. */
    String progress() {
        List<String> waiting = new ArrayList<>();
        List<K> connected = new ArrayList<>();
        List<K> known = new ArrayList<>();
        for (int i = 0; i < peers.size(); i++) {
            if (senders[i] != null) {
                connected.add(peers.get(i));
            } else {
                waiting.add(peers.get(i) + " over " + connectors[i].route());
            }
            if (receivers[i] != null) {
                known.add(peers.get(i));
            }
        }
        return "connected to " + connected + (waiting.isEmpty() ? "" : ", still connecting to " + waiting)
                + "; accepted " + acceptedCount + " of " + peers.size() + " connections, from " + known;
    }

    /** Closes every connection made or accepted (not the listener, not the fabric); a second close does nothing. */
    @Override
    public void close() {
        CloseHelper.closeAll(owned());
    }

    private void closeAfter(Throwable failure) {
        Throwable t = CloseHelper.closeAllCatching(owned());
        if (t != null) {
            failure.addSuppressed(t);
        }
    }

    /** What is still open, connections before the memory they used; afterwards nothing is. */
    private List<AutoCloseable> owned() {
        if (closed) {
            return List.of();
        }
        closed = true;
        List<AutoCloseable> all = new ArrayList<>(Arrays.asList(accepted));
        all.addAll(Arrays.asList(senders));
        all.addAll(Arrays.asList(connectors));
        all.add(hello);
        all.add(arena.scope().isAlive() ? arena : null);
        hello = null;
        return all;
    }

    @Override
    public String toString() {
        return "PeerConnections[" + peers + (complete ? ", complete" : ", " + progress()) + "]";
    }
}
