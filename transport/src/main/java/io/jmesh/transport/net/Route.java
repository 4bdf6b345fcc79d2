package io.jmesh.transport.net;

import io.jmesh.api.ListenAddress;
import io.jmesh.api.LocalLink;

import java.net.InetSocketAddress;
import java.util.Objects;

/**
 * One way to reach a peer: a local link and the peer's address on the same subnet. Built by {@link RouteSelector}.
 *
 * <pre>{@code
 * Route r = RouteSelector.select(localLinks, peerHandle).getFirst();
 * socket.bind(r.local().bindAddress());
 * socket.connect(r.peerSocketAddress());
 * }</pre>
 *
 * @param local     the local link the traffic leaves on
 * @param peer      the peer's address on that link
 * @param peerIndex the position of {@code peer} in the peer's handle
 * @param via       null for a direct link; else the first relay, whose endpoint the sockets connect to (each one
 *                  opened with a relay request naming {@code peer}), {@code local} being the link shared with it
 */
public record Route(LocalLink local, ListenAddress peer, int peerIndex, RelayHop via) {
    public Route {
        Objects.requireNonNull(local, "local");
        Objects.requireNonNull(peer, "peer");
    }

    /** A direct route: {@code local} shares a subnet with {@code peer}. */
    public Route(LocalLink local, ListenAddress peer, int peerIndex) {
        this(local, peer, peerIndex, null);
    }

    public boolean isRelayed() {
        return via != null;
    }

    /** Where this side's sockets connect: the peer's handshake endpoint, or the first relay's endpoint. */
    public InetSocketAddress connectAddress() {
        return via == null ? peer.socketAddress() : via.endpoint();
    }

    /** The process this side's sockets reach first, on the shared link: the peer, or the first relay. */
    public java.net.InetAddress neighbour() {
        return via == null ? peer.prefix().address() : via.endpoint().getAddress();
    }

    /** The link's usable speed in Mb/s: the slower of both ends where both are known, 0 when neither is. */
    public long speedMbps() {
        long mine = local.speedMbps();
        long theirs = peer.speedGbps() * 1000L;
        if (mine == 0) {
            return theirs;
        }
        return theirs == 0 ? mine : Math.min(mine, theirs);
    }

    /** The peer's handshake endpoint on this link. */
    public InetSocketAddress peerSocketAddress() {
        return peer.socketAddress();
    }

    @Override
    public String toString() {
        return local + " -> " + peer + (via == null ? "" : " " + via);
    }
}
