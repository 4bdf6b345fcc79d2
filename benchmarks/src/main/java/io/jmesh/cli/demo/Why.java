package io.jmesh.cli.demo;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.api.NoRouteException;
import io.jmesh.api.Fabric;
import io.jmesh.api.ListenAddress;

import java.util.List;

/** Explains a route choice in words, from the fabric's own choice of link. */
final class Why {
    private Why() {
    }

    /** The link a connection from {@code fabric} to {@code peer} takes, and the peer's address on that link. */
    record Choice(LocalLink local, ListenAddress peer) {
    }

    /** The link jmesh takes from {@code fabric} to {@code peer}. */
    static Choice route(Fabric fabric, ListenHandle peer) throws NoRouteException {
        List<LocalLink> direct = fabric.directLinks(peer);
        if (direct.isEmpty()) {
            List<IpPrefix> mine = fabric.links().stream().map(LocalLink::prefix).toList();
            throw new NoRouteException("no link of this node " + mine + " shares a subnet with the peer "
                    + peer.prefixes() + ": give each cabled pair addresses in one subnet (JMESH_ADDRESSES)", mine,
                    peer.prefixes());
        }
        LocalLink l = direct.getFirst();
        return new Choice(l, peer.addresses().stream().filter(a -> a.prefix().sharesSubnetWith(l.prefix()))
                .findFirst().orElseThrow());
    }

    /**
     * "A's 127.0.101.1/24 and B's 127.0.101.2/24 are both in 127.0.101.0/24; A's 127.0.100.1/24 shares no subnet
     * with any of B's addresses".
     */
    static String explain(String me, List<LocalLink> links, String peerName, ListenHandle peer, Choice chosen) {
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
