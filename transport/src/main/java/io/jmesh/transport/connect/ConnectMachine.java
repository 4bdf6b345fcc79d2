package io.jmesh.transport.connect;

import io.jmesh.api.Connector;
import io.jmesh.api.ListenHandle;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.handshake.HandshakeAgent;
import io.jmesh.transport.handshake.OutboundHandshake;
import io.jmesh.transport.net.Route;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.io.IOException;

/**
 * One connect, as the non-blocking state machine both providers drive through {@link #poll()}:
 *
 * <pre>
 *   ROUTE ──(a route given, or found by discovery)──▶ HANDSHAKE ──(ACCEPT)──▶ BUILD ──(sender built: READY)──▶ CONFIRMED
 *     │                                                 │                       │                                  │
 *     │ no route within the handshake timeout           │ REJECT, timeout       │ bad answer, I/O error            │ COMPLETE
 *     ▼                                                 ▼                       ▼                                  ▼
 *   FAILED ◀──────────────────────────────────────────────────────────────────────────────────────────────────  CONNECTED
 * </pre>
 *
 * A provider supplies only its wire: the offer its HELLO carries ({@link #offer}), the sender it builds from the
 * listener's answer ({@link #build}, polled until ready: TCP's data sockets connect meanwhile), how the provider takes
 * the sender ({@link #adopt}) and what to free while no sender owns it ({@link #freeUnowned}). The rest is here once:
 * waiting for route discovery, the handshake's states, liveness on the neighbour the route names (never one a frame
 * claims: through a relay that is the first relay, and the peer is named behind it), failures that say which peer and
 * link, and every poll after a failure or close throwing the same reason.
 */
public abstract class ConnectMachine implements Connector {
    /** Where a connect is; {@link #poll()} moves it along the picture above, only forwards. */
    enum Stage {
        /** No route yet: route discovery may still find one, until the handshake timeout. */
        ROUTE,
        /** The handshake is on its way; the listener has not answered yet. */
        HANDSHAKE,
        /** The listener accepted; the sender is being built from its answer (TCP's data sockets connect). */
        BUILD,
        /** The sender is built and READY sent; waiting for the listener's COMPLETE. */
        CONFIRMED,
        /** Done: the provider owns the sender. */
        CONNECTED,
        /** Ended without a sender (failed or closed): every poll throws {@code failure}; nothing is left. */
        FAILED
    }

    /** Under the provider's class name, so a log line says which provider connected. */
    private final Logger log = JmeshLog.logger(getClass());

    protected final ListenHandle peer;
    private final HandshakeAgent agent;
    private final RelayRoutes routes;
    private final long routeDeadlineNanos;
    private Stage stage = Stage.ROUTE;
    private Route route;
    private OutboundHandshake handshake;
    private CoreSender sender;
    /** Why the connect ended without a sender; every later poll throws it. */
    private String failure;

    /**
     * @param agent  the handshake agent; its timeout also bounds the wait for a route
     * @param routes where a relayed route comes from, when none was given
     */
    protected ConnectMachine(HandshakeAgent agent, RelayRoutes routes, ListenHandle peer) {
        this.agent = agent;
        this.routes = routes;
        this.peer = peer;
        this.routeDeadlineNanos = System.nanoTime() + agent.settings().timeout().toNanos();
    }

    /** What this connect offers in its HELLO over {@code r}; creates what the offer describes (queue pairs, ...). */
    protected abstract byte[] offer(Route r);

    /**
     * Builds the sender from the listener's answer; called on every poll until it returns one.
     *
     * @return the sender, which owns everything the connect created from now on; null while not ready
     */
    protected abstract CoreSender build(byte[] answer) throws IOException;

    /** Hands the connected sender to its provider; false when the provider closed meanwhile. */
    protected abstract boolean adopt(CoreSender s);

    /** Frees what the connect created and no sender owns; only while there is no sender, and safe to call twice. */
    protected abstract void freeUnowned();

    /** Called once when the connect ends, connected or not (a provider stops tracking it). */
    protected void ended() {
    }

    /** The failure an I/O error of {@link #build} becomes: what could not be done, and what to check. */
    protected String ioFailure(IOException e) {
        return "connecting to " + route.peer().prefix() + " over " + route.local().prefix() + " failed: "
                + e.getMessage();
    }

    /**
     * Starts the handshake over {@code r}: from the subclass's constructor when the route is known, else from
     * {@link #poll()} once discovery finds one. Frees what the offer created when the start fails.
     */
    protected final void start(Route r) {
        route = r;
        try {
            handshake = agent.connect(peer, r, offer(r));
        } catch (RuntimeException e) {
            freeUnowned();
            throw e;
        }
        stage = Stage.HANDSHAKE;
        log.info("connecting to {} over {}", peer.prefixes(), route());
    }

    /** The route the handshake went over (the first link's), or null while waiting for discovery. */
    protected final Route firstRoute() {
        return route;
    }

    /**
     * Advances the connect.
     *
     * @return the sender once connected, null while in progress
     * @throws IllegalStateException naming the cause when the connect failed or was closed (everything it created is
     *                               freed), on this and every later call
     */
    @Override
    public final CoreSender poll() {
        try {
            return switch (stage) {
                case CONNECTED -> sender;
                case FAILED -> throw new IllegalStateException(failure);
                case ROUTE -> {
                    awaitRoute();
                    yield null;
                }
                case HANDSHAKE, BUILD, CONFIRMED -> shake();
            };
        } catch (IOException | RuntimeException e) {
            if (stage == Stage.FAILED && e instanceof IllegalStateException ise) {
                throw ise; // already failed: the same reason again
            }
            throw fail(e);
        }
    }

    /** One step of the handshake: the listener's answer builds the sender, its COMPLETE connects. */
    private CoreSender shake() throws IOException {
        switch (handshake.poll()) {
            case IN_PROGRESS -> {
                return null;
            }
            case ACTION_REQUIRED -> {
                if (stage != Stage.CONFIRMED) {
                    stage = Stage.BUILD;
                    sender = build(handshake.peerPayload());
                    if (sender != null) {
                        stage = Stage.CONFIRMED;
                        handshake.confirm();
                    }
                }
                return null;
            }
            case COMPLETE -> {
                return connected();
            }
            default -> throw new IllegalStateException("connecting to " + route.peer().prefix() + " over "
                    + route.local().prefix() + " failed: " + handshake.failure());
        }
    }

    private CoreSender connected() {
        stage = Stage.CONNECTED;
        ended();
        if (!adopt(sender)) {
            throw new IllegalStateException("connecting to " + route.peer().prefix() + " failed: the provider was "
                    + "closed meanwhile (Fabric.close())");
        }
        agent.liveness().watch(handshake.connectionId(), true, route.neighbour(), handshake.peerLivenessPort(),
                route.local().prefix().address(), sender.fate(),
                route.isRelayed() ? route.peer().prefix().address().getHostAddress() : null);
        log.info("connected to {} over {}", peer.prefixes(), route());
        return sender;
    }

    /** Starts the handshake once discovery knows a route; throws when none came within the timeout. */
    private void awaitRoute() {
        Route r = routes.relayedRoute(peer);
        if (r != null) {
            start(r);
        } else if (System.nanoTime() - routeDeadlineNanos >= 0) {
            throw new IllegalStateException("connecting to " + peer.prefixes() + " failed: no route within the "
                    + "handshake timeout; " + routes.noRouteReason(peer));
        }
    }

    private IllegalStateException fail(Exception e) {
        String why = e instanceof IOException io ? ioFailure(io) : String.valueOf(e.getMessage());
        failure = e instanceof IllegalStateException || e instanceof IOException || route == null ? why
                : "connecting to " + route.peer().prefix() + " failed: " + why;
        if (handshake != null) {
            handshake.abort(failure);
        }
        discard();
        return e instanceof IllegalStateException ise ? ise : new IllegalStateException(failure, e);
    }

    /** Abandons a connect that has not completed; a completed one is owned by its sender. */
    @Override
    public final void close() {
        if (stage != Stage.CONNECTED && stage != Stage.FAILED) {
            failure = "the connect to " + peer.prefixes() + " was closed before it completed (Connector.close())";
            if (handshake != null) {
                handshake.close();
            }
            discard();
        }
    }

    private void discard() {
        boolean ended = stage == Stage.CONNECTED; // connected() told the provider already
        stage = Stage.FAILED;
        if (sender != null) {
            CoreSender s = sender;
            sender = null;
            s.close();
        } else {
            freeUnowned();
        }
        if (!ended) {
            ended();
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + route() + "]";
    }
}
