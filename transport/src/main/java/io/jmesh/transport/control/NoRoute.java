package io.jmesh.transport.control;

import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.NoRouteException;
import io.jmesh.transport.route.NextHop;
import io.jmesh.transport.route.RouteService;

/**
 * The one message of a connect that no link and no relay can carry: what the links say (the direct selection's
 * message), then, where discovery knows a way whose neighbour offers no relay endpoint, that neighbour and what to
 * check there; else what this node and its table know.
 */
final class NoRoute {
    private NoRoute() {
    }

    static NoRouteException explain(NoRouteException direct, ListenHandle peer, String reason, RouteService routes) {
        NextHop best = null;
        for (ListenAddress a : routes == null ? java.util.List.<ListenAddress>of() : peer.addresses()) {
            NextHop h = routes.nextHop(a.prefix().address());
            if (h != null && (best == null || h.relays() < best.relays())) {
                best = h;
            }
        }
        String more = best != null
                ? "; the route to the peer goes through node " + best.neighbour().getHostAddress() + " ("
                + best.relays() + (best.relays() == 1 ? " relay" : " relays") + "), which offers no relay endpoint "
                + "(is jmesh running there, with the same JMESH_ROUTE_PORT? a JMESH_ROUTES entry also needs the "
                + "neighbour to answer route discovery)"
                : "; no route through other nodes either: " + reason;
        return new NoRouteException(direct.getMessage() + more, direct.localAddresses(), direct.peerAddresses());
    }
}
