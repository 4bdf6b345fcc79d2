package io.jmesh.transport.net;

import java.net.InetSocketAddress;
import java.util.Objects;

/**
 * The first relay of a route that goes through other nodes: the neighbour's relay endpoint on the shared link, and
 * how many relays the whole path has (1: the neighbour is linked to the peer). Part of a {@link Route}.
 *
 * @param endpoint the neighbour's relay endpoint (its address on the shared link, its relay port); port 0 when the
 *                 neighbour runs no relay this provider can use
 * @param relays   the relays on the path, 1 to 8
 */
public record RelayHop(InetSocketAddress endpoint, int relays) {
    public RelayHop {
        Objects.requireNonNull(endpoint, "endpoint");
        if (relays < 1) {
            throw new IllegalArgumentException("a relayed route has at least one relay, not " + relays);
        }
    }

    /** The relay node's address on the shared link, e.g. "192.168.101.3". */
    public String node() {
        return endpoint.getAddress().getHostAddress();
    }

    @Override
    public String toString() {
        return "via " + node() + (relays > 1 ? " (" + relays + " relays)" : "");
    }
}
