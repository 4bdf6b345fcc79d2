package io.jmesh.transport.control;

import io.jmesh.transport.net.Route;

import java.util.List;

/**
 * How a connect reaches its peer, decided once by {@link ControlPlane#plan}: over this node's own links ({@code
 * direct}, fastest first), through a relay node ({@code relayed}), or neither yet while route discovery may still
 * find a way ({@link #awaitsDiscovery()}: the connect waits for it up to its handshake timeout).
 */
public record RoutePlan(List<Route> direct, Route relayed) {
    static final RoutePlan AWAIT_DISCOVERY = new RoutePlan(List.of(), null);

    public RoutePlan {
        direct = List.copyOf(direct);
    }

    public boolean isDirect() {
        return !direct.isEmpty();
    }

    public boolean awaitsDiscovery() {
        return direct.isEmpty() && relayed == null;
    }

    /** The route the handshake goes over: the fastest direct link's, or the relayed one; null while awaiting. */
    public Route first() {
        return isDirect() ? direct.getFirst() : relayed;
    }
}
