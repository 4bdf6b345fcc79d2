package io.jmesh.transport.route;

import io.jmesh.api.IpPrefix;
import io.jmesh.transport.route.RouteFrame.Link;

import java.net.InetAddress;
import java.util.Arrays;
import java.util.List;

/** Adverts put straight into a route table at a chosen time, for tests outside this package (a relay's tests). */
public final class Adverts {
    private Adverts() {
    }

    /** The neighbour {@code from} was heard at {@code when} with {@code links}, each running a relay on {@code port}. */
    public static boolean heard(RouteTable table, InetAddress from, long nodeId, int relayPort, long when,
            IpPrefix... links) {
        return table.heard(from, nodeId, Arrays.stream(links).map(p -> new Link(p, relayPort)).toList(), List.of(),
                when);
    }
}
