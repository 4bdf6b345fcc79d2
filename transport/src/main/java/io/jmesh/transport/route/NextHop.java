package io.jmesh.transport.route;

import io.jmesh.api.LocalLink;
import io.jmesh.transport.net.RelayHop;

import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * The neighbour to go through towards an address that no local link reaches, as the {@link RouteTable} knows it.
 *
 * @param local     this node's link shared with the neighbour
 * @param neighbour the neighbour's address on that link
 * @param relayPort the TCP port of the neighbour's relay endpoint there; 0 when it advertised none (a verbs fabric,
 *                  or a static entry whose neighbour has not answered yet)
 * @param relays    relays on the whole path, the neighbour included (1: it is linked to the destination)
 * @param fixed     the way comes from the static map
 */
public record NextHop(LocalLink local, InetAddress neighbour, int relayPort, int relays, boolean fixed) {
    public RelayHop relayHop() {
        return new RelayHop(new InetSocketAddress(neighbour, relayPort), relays);
    }

    /** The hop for a relay that passes a request on, with {@code hopsLeft} in the request it sends. */
    public RelayHop relayHop(int hopsLeft) {
        return new RelayHop(new InetSocketAddress(neighbour, relayPort), relays, hopsLeft);
    }

    @Override
    public String toString() {
        return neighbour.getHostAddress() + " over " + local.prefix() + " (" + relays
                + (relays == 1 ? " relay" : " relays")
                + (relayPort == 0 ? ", no TCP relay endpoint" : ", relay port " + relayPort)
                + (fixed ? ", static" : "") + ")";
    }
}
