package io.jmesh.api;


import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Waits on the control path with a deadline: a connect until its sender, an accept until its receiver, a node's
 * connections with all its peers ({@link PeerConnections}). Each wait polls, idles with the given {@link
 * IdleStrategy} ({@link IdleStrategy#controlPlane()} suits most), and throws a {@link ConnectTimeoutException} that
 * names what it waited for, how long, and what to check, when the deadline passes. A connect that fails throws the
 * connector's own exception, which names the cause.
 *
 * <pre>{@code
 * Sender s = Connections.connect(fabric, handleFromPeer, Duration.ofSeconds(30), IdleStrategy.controlPlane());
 * Receiver r = Connections.accept(listener, Duration.ofSeconds(30), IdleStrategy.controlPlane());
 * }</pre>
 */
public final class Connections {
    private Connections() {
    }

    /**
     * Connects to a listener ({@link Listener#handle()}) and waits for the connection.
     *
     * @throws NoRouteException         when no local link shares a subnet with the listener
     * @throws ConnectTimeoutException  when the connect did not complete within {@code timeout} (it is abandoned)
     * @throws IllegalStateException    naming the cause when the connect failed (as {@link Connector#poll()})
     */
    public static Sender connect(Fabric fabric, byte[] handle, Duration timeout, IdleStrategy idle)
            throws NoRouteException {
        return await(fabric.connect(handle), timeout, idle);
    }

    /** {@link #connect(Fabric, byte[], Duration, IdleStrategy)} with a printable handle ({@link Listener#handleText()}). */
    public static Sender connect(Fabric fabric, String handle, Duration timeout, IdleStrategy idle)
            throws NoRouteException {
        return await(fabric.connect(handle), timeout, idle);
    }

    /**
     * Polls a connect until it yields its sender, at most {@code timeout}; on a timeout or a failure the connector is
     * closed (the connect abandoned), so the caller need not.
     *
     * @throws ConnectTimeoutException naming the route when the connect did not complete in time
     */
    public static Sender await(Connector connector, Duration timeout, IdleStrategy idle) {
        long deadline = deadline(timeout);
        boolean ok = false;
        try {
            idle.reset();
            Sender s;
            while ((s = connector.poll()) == null) {
                if (System.nanoTime() - deadline > 0) {
                    throw new ConnectTimeoutException("connect over " + connector.route() + " did not complete within "
                            + ConnectTimeoutException.describe(timeout) + ": the peer does not answer on that subnet; "
                            + "check that it is running and accepting on the handle it gave, and that this link "
                            + "reaches it ('jmesh doctor' on both nodes)", timeout);
                }
                idle.idle();
            }
            ok = true;
            return s;
        } finally {
            if (!ok) {
                connector.close();
            }
        }
    }

    /**
     * Polls a listener until a connection arrives, at most {@code timeout}.
     *
     * @throws ConnectTimeoutException naming the listener when none arrived in time
     */
    public static Receiver accept(Listener listener, Duration timeout, IdleStrategy idle) {
        String before = listener.lastFailure();
        long deadline = deadline(timeout);
        idle.reset();
        Receiver r;
        while ((r = listener.accept()) == null) {
            if (System.nanoTime() - deadline > 0) {
                String arrived = listener.lastFailure();
                if (arrived != null && !arrived.equals(before)) { // each names its connection's address and port
                    throw new ConnectTimeoutException("no connection completed within "
                            + ConnectTimeoutException.describe(timeout) + ": " + arrived, timeout);
                }
                throw new ConnectTimeoutException("no connection arrived within " + ConnectTimeoutException.describe(
                        timeout) + ": the peer could not reach any address of " + listener.handleText() + "; check "
                        + "that it is running, was given this handle, and shares a subnet with one of these "
                        + "addresses ('jmesh doctor' on both nodes)", timeout);
            }
            idle.idle();
        }
        return r;
    }

    /**
     * Connects this node with every peer both ways and waits, at most {@code timeout}, until every connection is up
     * and every receiver is known by its peer (see {@link PeerConnections}). On any failure everything it opened is
     * closed.
     *
     * @param peerHandles every peer's {@link Listener#handle()}, by the caller's name for the peer; each of them must
     *                    connect to this node's {@code listener} too
     * @throws NoRouteException        when no local link shares a subnet with one of the peers
     * @throws ConnectTimeoutException saying which connections are up and which are not
     */
    public static <K> PeerConnections<K> connectAll(Fabric fabric, Listener listener, Map<K, byte[]> peerHandles,
                                                    Duration timeout, IdleStrategy idle) throws NoRouteException {
        long deadline = deadline(timeout);
        PeerConnections<K> p = PeerConnections.start(fabric, listener, peerHandles);
        awaitAll(deadline, timeout, idle, List.of(p));
        return p;
    }

    /**
     * Waits, at most {@code timeout}, for several nodes of this process ({@link PeerConnections#start}) together:
     * each one's connects need the others' accepts, so they are polled in turn. On any failure all of them are
     * closed.
     *
     * @throws ConnectTimeoutException saying, node by node, which connections are up and which are not
     */
    public static void awaitAll(Duration timeout, IdleStrategy idle, List<? extends PeerConnections<?>> nodes) {
        awaitAll(deadline(timeout), timeout, idle, nodes);
    }

    private static void awaitAll(long deadline, Duration timeout, IdleStrategy idle,
                                 List<? extends PeerConnections<?>> nodes) {
        try {
            idle.reset();
            while (true) {
                boolean all = true;
                for (PeerConnections<?> p : nodes) {
                    all &= p.poll();
                }
                if (all) {
                    return;
                }
                if (System.nanoTime() - deadline > 0) {
                    List<String> where = new ArrayList<>();
                    for (PeerConnections<?> p : nodes) {
                        where.add(p.isComplete() ? "complete" : p.progress());
                    }
                    throw new ConnectTimeoutException("the connections with the peers did not complete within "
                            + ConnectTimeoutException.describe(timeout) + " (" + String.join("; and ", where) + "): "
                            + "check that every peer is running, was given this node's handle, and connects to it, "
                            + "and that each link reaches its peer ('jmesh doctor' on both nodes)", timeout);
                }
                idle.idle();
            }
        } catch (RuntimeException | Error e) {
            Throwable t = CloseHelper.closeAllCatching(nodes);     // the failure in flight is the one to report
            if (t != null) {
                e.addSuppressed(t);
            }
            throw e;
        }
    }

    private static long deadline(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must not be negative; got " + timeout);
        }
        return System.nanoTime() + timeout.toNanos();
    }
}
