package io.jmesh.transport.control;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.api.NoRouteException;
import io.jmesh.transport.route.RouteService;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What a connect says, on either provider, when no link reaches the peer and no relay can take it: where discovery
 * knows a way whose neighbour offers no relay endpoint (a verbs node started with JMESH_ROUTE_PORT but no relay), that
 * neighbour and what to check; else what this node and its table know. The neighbour here is a bare route service on
 * loopback subnets that advertises no relay. No RDMA device needed.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class NoRouteTest {
    @Test
    void aPeerBehindANeighbourWithoutARelayIsNamedWithWhatToCheck() throws Exception {
        int port = ThreadLocalRandom.current().nextInt(30_000, 40_000);
        LocalLink mine = LocalLink.tcp(IpPrefix.parse("127.74.1.1/24"), 0);
        ListenHandle peer = new ListenHandle(0, 42, List.of(new ListenAddress(IpPrefix.parse("127.74.2.3/24"), 4791,
                0)));
        NoRouteException direct = new NoRouteException("no shared subnet with peer [127.74.2.3/24]", List.of(),
                List.of());
        try (RouteService neighbour = RouteService.start(List.of(LocalLink.tcp(IpPrefix.parse("127.74.1.2/24"), 0),
                LocalLink.tcp(IpPrefix.parse("127.74.2.2/24"), 0)), port, Map.of(), List.of());
             RouteService routes = RouteService.start(List.of(mine), port, Map.of(), List.of())) {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (routes.nextHop(InetAddress.getByName("127.74.2.3")) == null) {
                if (System.nanoTime() - end > 0) {
                    fail("discovery found no way in 30 s: " + routes.describe());
                }
                Thread.sleep(20);
            }
            assertNull(routes.relayedRoute(peer), "a neighbour without a relay endpoint is no relayed route");
            String message = NoRoute.explain(direct, peer, "REASON", routes).getMessage();
            assertTrue(message.startsWith("no shared subnet with peer [127.74.2.3/24]")
                    && message.contains("goes through node 127.74.1.2 (1 relay)")
                    && message.contains("offers no relay endpoint"), message);
            ListenHandle nowhere = new ListenHandle(0, 42, List.of(new ListenAddress(IpPrefix.parse("127.74.9.3/24"),
                    4791, 0)));
            String none = NoRoute.explain(direct, nowhere, "REASON " + routes.describe(), routes).getMessage();
            assertTrue(none.contains("no route through other nodes either") && none.contains("neighbour 127.74.1.2"),
                    none);
        }
        String before = NoRoute.explain(direct, peer, "route discovery has not started", null).getMessage();
        assertTrue(before.equals(direct.getMessage() + "; no route through other nodes either: route discovery has "
                + "not started"), before);
    }
}
