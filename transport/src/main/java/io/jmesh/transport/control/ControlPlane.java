package io.jmesh.transport.control;

import io.jmesh.transport.lifecycle.Closer;
import io.jmesh.api.Context;
import io.jmesh.api.JmeshLog;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.api.NoRouteException;
import io.jmesh.transport.connect.RelayRoutes;
import io.jmesh.transport.handshake.HandshakeAgent;
import io.jmesh.transport.handshake.HandshakeSettings;
import io.jmesh.transport.net.Route;
import io.jmesh.transport.net.RouteSelector;
import io.jmesh.transport.security.MeshKey;
import io.jmesh.transport.route.NextHop;
import io.jmesh.transport.route.RelayPolicy;
import io.jmesh.transport.route.RouteService;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.util.List;
import java.util.Map;

/**
 * One fabric's control plane, the same for both providers: the handshake agent (and the liveness it runs), route
 * discovery, the provider's relay started on discovery's table, and the mesh key they share; and the one decision a
 * connect asks of them, {@link #plan}: over a link of this node, through a relay node, or wait for discovery, with
 * one message when there is no way at all. The providers bring only their data movers: the sender and receiver
 * wires, and the relay endpoint ({@link RelayEndpoint}).
 *
 * <p>Started in two steps because a verbs relay needs its provider, which needs the agent: {@link #open} starts the
 * agent, {@link #startRouting} binds the relay (discovery advertises its ports), starts discovery, then the relay.
 * Closed last by its provider, after the connections it routes: discovery, the relay (unless the provider closed it
 * first, {@link #closeRelay}), then the agent, which the listeners and connects closed before hand their sockets back
 * to.
 */
public final class ControlPlane implements RelayRoutes, AutoCloseable {
    private static final Logger LOG = JmeshLog.logger(ControlPlane.class);

    private final List<LocalLink> links;
    private final HandshakeAgent agent;
    private final int routePort;
    private final List<io.jmesh.api.StaticRoute> statics;
    private volatile RouteService routes;
    private volatile RelayEndpoint relay;

    private ControlPlane(List<LocalLink> links, HandshakeAgent agent, Context context) {
        this.links = List.copyOf(links);
        this.agent = agent;
        this.routePort = context.routePort();
        this.statics = context.routes();
    }

    /** Starts the handshake agent (with liveness on {@code links}) for a fabric configured by {@code context}. */
    public static ControlPlane open(Context context, List<LocalLink> links) {
        try {
            HandshakeAgent agent = HandshakeAgent.start(new HandshakeSettings(context.handshakeTimeout(),
                    context.handshakeMaxPending(), MeshKey.of(context.meshKey())),
                    links.stream().map(LocalLink::prefix).toList(), context.livenessTimeout());
            return new ControlPlane(links, agent, context);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the jmesh handshake agent: " + e.getMessage(), e);
        }
    }

    /**
     * Binds the relay ({@code binder} null: this node relays for nobody), starts route discovery advertising its
     * ports, then starts the relay on discovery's table. On failure closes what it started here and throws; the
     * caller closes this plane.
     */
    public void startRouting(RelayEndpoint.Binder binder) {
        RelayEndpoint r = null;
        RouteService s = null;
        try {
            r = binder == null ? null : binder.bind(agent.settings());
            s = RouteService.start(links, routePort, r == null ? Map.of() : r.ports(), statics,
                    agent.settings().meshKey());
            if (r != null) {
                r.start(new RelayPolicy(s.table()), agent.liveness());
            }
        } catch (IOException | RuntimeException e) {
            Closer.closeAll(e::addSuppressed, s, r);
            if (e instanceof RuntimeException re) {
                throw re;
            }
            throw new UncheckedIOException("cannot start the jmesh relay and route discovery: " + e.getMessage(),
                    (IOException) e);
        }
        relay = r;
        routes = s;
    }

    public HandshakeAgent agent() {
        return agent;
    }

    public HandshakeSettings settings() {
        return agent.settings();
    }

    /** Route discovery; null until {@link #startRouting}. */
    public RouteService routes() {
        return routes;
    }

    /**
     * How to reach {@code peer}: this node's links that share a subnet with it (the preferred link first where it is
     * one of them), else the relayed route discovery knows, else wait while discovery may still find one.
     *
     * @throws NoRouteException when no link reaches the peer and discovery knows no way and expects none; the message
     *                          says what each side has and what to check
     */
    public RoutePlan plan(ListenHandle peer, String preferredLink) throws NoRouteException {
        RoutePlan plan;
        try {
            plan = new RoutePlan(RouteSelector.select(links, peer, preferredLink), null);
        } catch (NoRouteException direct) {
            Route relayed = relayedRoute(peer);
            RouteService s = routes;
            if (relayed == null && (s == null || !s.mayFindRoute(peer))) {
                throw NoRoute.explain(direct, peer, noRouteReason(peer), s);
            }
            plan = relayed == null ? RoutePlan.AWAIT_DISCOVERY : new RoutePlan(List.of(), relayed);
        }
        Route first = plan.first();
        if (first != null && preferredLink != null && !RouteSelector.usesLink(first, preferredLink)) {
            LOG.info("{} shares no subnet with {}; connecting over {} instead", preferredLink, peer.prefixes(),
                    first.local());
        }
        return plan;
    }

    /** The route to {@code peer} through other nodes, or null (see {@link RouteService#relayedRoute}). */
    @Override
    public Route relayedRoute(ListenHandle peer) {
        RouteService s = routes;
        return s == null ? null : s.relayedRoute(peer);
    }

    /** Why no route reaches {@code peer}: this node's links and what its routing table knows. */
    @Override
    public String noRouteReason(ListenHandle peer) {
        RouteService s = routes;
        return "this node's links " + links.stream().map(LocalLink::prefix).toList() + ", peer " + peer.prefixes()
                + "; " + (s == null ? "route discovery has not started" : s.describe()) + " (is every node of the "
                + "path running jmesh with the same JMESH_ROUTE_PORT, and UDP allowed on the mesh links?)";
    }

    /** The neighbour to go through towards {@code target}, which no link of this node reaches; or null. */
    public NextHop nextHop(InetAddress target) {
        RouteService s = routes;
        return s == null ? null : s.nextHop(target);
    }

    /** What discovery knows, for error messages. */
    public String describeRoutes() {
        RouteService s = routes;
        return s == null ? "route discovery has not started" : s.describe();
    }

    /**
     * Closes the relay now, ending every connection it carries for other nodes: a verbs provider does so before its
     * own connections and devices, which the relay's queue pairs use.
     */
    public void closeRelay() {
        RelayEndpoint r = relay;
        relay = null;
        if (r != null) {
            r.close();
        }
    }

    /** Closes route discovery, the relay (if still open), then the agent; reports the first failure. */
    @Override
    public void close() {
        RelayEndpoint r = relay;
        relay = null;
        Closer.closeAll(routes, r, agent);
    }
}
