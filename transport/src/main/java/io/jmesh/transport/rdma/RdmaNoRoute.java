package io.jmesh.transport.rdma;

import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.NoRouteException;
import io.jmesh.transport.route.NextHop;
import io.jmesh.transport.route.RouteService;

/**
 * What a verbs connect says when no local link reaches the peer and no relay can take it: where route discovery knows
 * a way whose neighbour offers no relay endpoint, that neighbour and what to check; else what the table knows.
 */
final class RdmaNoRoute {
    private RdmaNoRoute() {
    }

    static NoRouteException explain(NoRouteException direct, ListenHandle peer, RouteService routes) {
        if (routes == null) {
            return direct;
        }
        NextHop best = null;
        for (ListenAddress a : peer.addresses()) {
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
                : "; no route through other nodes either: " + routes.describe();
        return new NoRouteException(direct.getMessage() + more, direct.localAddresses(), direct.peerAddresses());
    }
}
