package io.jmesh.transport.connect;

import io.jmesh.api.ListenHandle;
import io.jmesh.transport.net.Route;

/** Where a connect to a peer that no local link reaches learns its way through other nodes: the provider's routing. */
public interface RelayRoutes {
    /** The route to {@code peer} through another node, once route discovery knows one; null while it does not. */
    Route relayedRoute(ListenHandle peer);

    /** Why no route reaches {@code peer}: this node's links and what routing knows, for the error. */
    String noRouteReason(ListenHandle peer);
}
