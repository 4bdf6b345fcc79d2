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
 * @param hopsLeft what the relay request tells the relay: how many relays the path may still go through, it
 *                 included ({@link #MAX_HOPS} from a connector, one fewer from each relay that passes it on)
 */
public record RelayHop(InetSocketAddress endpoint, int relays, int hopsLeft) {
    /** The most relays a path may have. */
    public static final int MAX_HOPS = 8;

    public RelayHop {
        Objects.requireNonNull(endpoint, "endpoint");
        if (relays < 1) {
            throw new IllegalArgumentException("a relayed route has at least one relay, not " + relays);
        }
        if (hopsLeft < 1 || hopsLeft > MAX_HOPS) {
            throw new IllegalArgumentException("hops left " + hopsLeft + " (1 to " + MAX_HOPS + ")");
        }
    }

    /** The first relay of a connector's route. */
    public RelayHop(InetSocketAddress endpoint, int relays) {
        this(endpoint, relays, MAX_HOPS);
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
