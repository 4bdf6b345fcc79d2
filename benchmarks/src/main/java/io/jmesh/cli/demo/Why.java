package io.jmesh.cli.demo;

import io.jmesh.transport.net.IpPrefix;
import io.jmesh.transport.net.ListenHandle;
import io.jmesh.transport.net.LocalLink;
import io.jmesh.transport.net.NoRouteException;
import io.jmesh.transport.net.Route;
import io.jmesh.transport.net.RouteSelector;

import java.util.List;

/** Explains a route choice in words, from the same inputs the transport's {@link RouteSelector} uses. */
final class Why {
    private Why() {
    }

    /** The route jmesh takes from {@code links} to {@code peer}, as RouteSelector picks it. */
    static Route route(List<LocalLink> links, ListenHandle peer) throws NoRouteException {
        return RouteSelector.best(links, peer);
    }

    /**
     * "A's 127.0.101.1/24 and B's 127.0.101.2/24 are both in 127.0.101.0/24; A's 127.0.100.1/24 shares no subnet
     * with any of B's addresses".
     */
    static String explain(String me, List<LocalLink> links, String peerName, ListenHandle peer, Route chosen) {
        StringBuilder sb = new StringBuilder();
        IpPrefix local = chosen.local().prefix();
        IpPrefix remote = chosen.peer().prefix();
        sb.append(me).append("'s ").append(local).append(" and ").append(peerName).append("'s ").append(remote)
                .append(" are both in ").append(local.network());
        for (LocalLink l : links) {
            if (l.prefix().equals(local)) {
                continue;
            }
            boolean any = peer.addresses().stream().anyMatch(a -> a.prefix().sharesSubnetWith(l.prefix()));
            sb.append("; ").append(me).append("'s ").append(l.prefix())
                    .append(any ? " also reaches " + peerName + " (a parallel link, slower or later in order)"
                            : " shares no subnet with " + peerName);
        }
        return sb.toString();
    }
}
