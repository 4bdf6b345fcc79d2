package io.jmesh.transport.rdma;

import io.jmesh.transport.net.ListenAddress;
import io.jmesh.transport.net.ListenHandle;
import io.jmesh.transport.net.NoRouteException;
import io.jmesh.transport.route.NextHop;
import io.jmesh.transport.route.RouteService;

/**
 * What a verbs connect says when no local link reaches the peer. Where route discovery knows a way through other
 * nodes, the verbs relay (forwarding by RDMA from registered memory on the intermediate node) would carry it, and it
 * is not there yet: the message names the node the route goes through and the ways around it, at once, not after a
 * timeout.
 */
final class RelayPending {
    private RelayPending() {
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
                + best.relays() + (best.relays() == 1 ? " relay" : " relays") + "), but the verbs relay is not there "
                + "yet: run these nodes with JMESH_PROVIDER=tcp (which relays), or cable a direct link"
                : "; no route through other nodes either: " + routes.describe()
                + (routes.settling() ? " (route discovery is still starting: retry in a few seconds)" : "");
        return new NoRouteException(direct.getMessage() + more, direct.localAddresses(), direct.peerAddresses());
    }
}
