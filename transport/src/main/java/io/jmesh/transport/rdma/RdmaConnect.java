package io.jmesh.transport.rdma;

import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.Fate;
import io.jmesh.transport.core.SendSlot;
import io.jmesh.transport.handshake.HandshakeStatus;
import io.jmesh.transport.handshake.OutboundHandshake;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.NoRouteException;
import io.jmesh.transport.net.Route;
import io.jmesh.transport.net.RouteSelector;
import io.jmesh.verbs.VerbsException;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;

/**
 * A connect in progress, as a non-blocking state machine: {@link #poll()} returns null until the handshake is done,
 * then the sender ({@link RdmaSendWire} under the core's sender). The route is chosen here: the local link that shares a subnet with the peer (the
 * preferred link first when it can reach the peer, then the fastest), plus every other equally fast link to the
 * same peer when multi-link is on (twins), each with the configured number of queue pairs. The queue pairs are
 * created in INIT at once and brought to RTR and RTS when the listener's reply arrives.
 */
public final class RdmaConnect implements io.jmesh.api.Connector {
    private static final Logger LOG = LogManager.getLogger(RdmaConnect.class);

    private final RdmaProvider provider;
    private final ListenHandle peer;
    private List<Route> routes;
    private Endpoint[] rails;
    private OutboundHandshake handshake;
    /** Set while a relayed connect waits for route discovery to find a way to the peer. */
    private long routeDeadline;
    private CoreSender sender;
    private boolean done;
    /** Why the connect ended without a sender; every later poll throws it. */
    private String failure;

    RdmaConnect(RdmaProvider provider, ListenHandle peer, String preferredLink) throws NoRouteException {
        this.provider = provider;
        this.peer = peer;
        List<Route> all = RouteSelector.select(provider.links(), peer, preferredLink);
        Route first = all.getFirst();
        if (preferredLink != null && !RouteSelector.usesLink(first, preferredLink)) {
            LOG.info("{} shares no subnet with {}; connecting over {} instead", preferredLink, peer.prefixes(),
                    first.local());
        }
        List<Route> used = new ArrayList<>();
        used.add(first);
        int qps = provider.qpsPerConnection();
        for (Route r : all.subList(1, all.size())) {
            if (provider.multiLink() && r.speedMbps() == first.speedMbps()
                    && (used.size() + 1) * qps <= Cts.MAX_RAILS) {
                used.add(r);
            }
        }
        this.routes = List.copyOf(used);
        this.rails = new Endpoint[used.size() * qps];
        try {
            List<ConnectInfo.Rail> info = new ArrayList<>();
            for (int i = 0; i < rails.length; i++) {
                Route r = used.get(i / qps);
                rails[i] = provider.endpoint(r.local(), i > 0 ? 4096 : provider.eagerThreshold() > 0
                        ? RdmaSendWire.EAGER_CONTROL_BYTES : RdmaSendWire.CONTROL_BYTES);
                info.add(new ConnectInfo.Rail(rails[i].local(), rails[i].deviceIndex, r.peer().prefix().address()));
            }
            ConnectInfo mine = new ConnectInfo(info, rails[0].control.address(), rails[0].controlMr.rkey());
            byte[] payload = (provider.eagerThreshold() > 0 ? mine.withEager() : mine).encode();
            this.handshake = provider.agent().connect(peer, first, payload);
        } catch (RuntimeException e) {
            closeCreated();
            throw e;
        }
        LOG.info("connecting to {} over {}", peer.prefixes(), route());
    }

    /**
     * A connect through a relay node ({@link RelayedSendWire}): one queue pair, to the relay. With {@code route}
     * null, {@link #poll()} waits for route discovery to find one until {@code routeDeadline} (System.nanoTime()).
     */
    RdmaConnect(RdmaProvider provider, ListenHandle peer, Route route, long routeDeadline) {
        this.provider = provider;
        this.peer = peer;
        this.routeDeadline = routeDeadline;
        this.routes = List.of();
        this.rails = new Endpoint[0];
        if (route != null) {
            startRelayed(route);
        }
    }

    private void startRelayed(Route route) {
        this.routes = List.of(route);
        this.rails = new Endpoint[1];
        try {
            rails[0] = provider.endpoint(route.local(), RelayLayout.SENDER_CONTROL_BYTES);
            ConnectInfo.Rail rail = new ConnectInfo.Rail(rails[0].local(), rails[0].deviceIndex,
                    route.via().endpoint().getAddress());
            byte[] payload = new ConnectInfo(List.of(rail), rails[0].control.address(), rails[0].controlMr.rkey())
                    .encode();
            this.handshake = provider.agent().connect(peer, route, payload);
        } catch (RuntimeException e) {
            closeCreated();
            throw e;
        }
        LOG.info("connecting to {} over {}", peer.prefixes(), route());
    }

    /**
     * The links this connection uses, e.g. "rxe0 192.168.101.2/24 -> 192.168.101.3/24"; with several links or
     * queue pairs, each link once and the queue pairs per link.
     */
    @Override
    public String route() {
        if (routes.isEmpty()) {
            return "no route to " + peer.prefixes() + " yet (route discovery is still looking)";
        }
        StringJoiner j = new StringJoiner(", ");
        for (Route r : routes) {
            j.add(r.local().device() + " " + r.local().prefix() + " -> " + r.peer().prefix()
                    + (r.isRelayed() ? " via " + r.via().endpoint().getAddress().getHostAddress() : ""));
        }
        int qps = rails.length / routes.size();
        return j + (qps > 1 ? " (" + qps + " QPs per link)" : "");
    }

    /**
     * Advances the connect.
     *
     * @return the sender once connected, null while in progress
     * @throws VerbsException or IllegalStateException naming the cause when the connect failed (everything it
     *                        created is freed)
     */
    @Override
    public CoreSender poll() {
        if (done) {
            if (sender == null) {
                throw new IllegalStateException(failure);  // every poll after a failure or close says why
            }
            return sender;
        }
        if (handshake == null && !awaitRoute()) {
            return null;
        }
        HandshakeStatus s = handshake.poll();
        try {
            switch (s) {
                case IN_PROGRESS -> {
                    return null;
                }
                case ACTION_REQUIRED -> {
                    if (sender == null) {
                        ConnectInfo peer = ConnectInfo.decode(handshake.peerPayload());
                        if (peer.relay()) {
                            throw new IllegalArgumentException("the peer answered with a relay's record ring (a "
                                    + "jmesh of another version there? run the same jmesh on every node)");
                        }
                        if (peer.rails().size() != rails.length) {
                            throw new IllegalArgumentException("the listener answered with " + peer.rails().size()
                                    + " queue pairs for this connection's " + rails.length);
                        }
                        for (int i = 0; i < rails.length; i++) {
                            rails[i].connect(peer.rails().get(i).qp());
                        }
                        Fate fate = new Fate();
                        SendSlot[] ring = CoreSender.ring();
                        Route first = routes.getFirst();
                        if (first.isRelayed()) {
                            RelayedSendWire relayed = new RelayedSendWire(fate, ring, rails[0],
                                    first.via().endpoint().getAddress().getHostAddress(), peer.controlAddress(),
                                    peer.controlRkey());
                            sender = new CoreSender(fate, relayed.fifo(), ring, relayed, provider::forget);
                            provider.watchEvents(rails, fate); // once the sender exists: its close ends the watch
                            provider.agent().liveness().watch(handshake.connectionId(), true, first.neighbour(),
                                    handshake.peerLivenessPort(), first.local().prefix().address(), fate,
                                    first.peer().prefix().address().getHostAddress());
                            handshake.confirm();
                            return null;
                        }
                        RdmaSendWire wire = new RdmaSendWire(fate, ring, rails, peer.controlAddress(),
                                peer.controlRkey(), peer.rails().getFirst().deviceIndex(),
                                peer.eager() && provider.eagerThreshold() > 0 ? provider.eagerThreshold() : 0);
                        sender = new CoreSender(fate, wire.fifo(), ring, wire, provider::forget);
                        provider.watchEvents(rails, fate);
                        provider.agent().liveness().watch(handshake.connectionId(), true,
                                first.peer().prefix().address(), handshake.peerLivenessPort(),
                                first.local().prefix().address(), fate);
                        handshake.confirm();
                    }
                    return null;
                }
                case COMPLETE -> {
                    done = true;
                    provider.track(sender);
                    return sender;
                }
                default -> throw new IllegalStateException("connecting to " + routes.getFirst().peer().prefix()
                        + " over " + routes.getFirst().local().device() + " failed: " + handshake.failure());
            }
        } catch (RuntimeException e) {
            handshake.abort(e.getMessage());
            failure = e.getMessage();
            close();
            throw e;
        }
    }

    private void closeCreated() {
        for (Endpoint e : rails) {
            if (e != null) {
                try {
                    e.close();
                } catch (RuntimeException ex) {
                    LOG.warn("{}", ex.getMessage());
                }
            }
        }
    }

    /** True once a route is known and the handshake started; throws when none came within the timeout. */
    private boolean awaitRoute() {
        Route r = provider.relayedRoute(peer);
        if (r == null) {
            if (System.nanoTime() - routeDeadline < 0) {
                return false;
            }
            done = true;
            failure = "connecting to " + peer.prefixes() + " failed: no route within the handshake timeout; "
                    + provider.noRouteReason(peer);
            throw new IllegalStateException(failure);
        }
        startRelayed(r);
        return true;
    }

    /** Abandons a connect that has not completed; a completed one is owned by its sender. */
    @Override
    public void close() {
        if (!done) {
            done = true;
            if (failure == null) {
                failure = "the connect to " + peer.prefixes() + " was closed before it completed (Connector.close())";
            }
            if (handshake != null) {
                handshake.close();
            }
            closeCreated();
            sender = null;
        }
    }
}
