package io.jmesh.transport.control;

import io.jmesh.api.Context;
import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.api.NoRouteException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The decision both providers take from the control plane: a peer on a subnet of this node's goes direct (the
 * preferred link first, else the fastest), one that no link reaches is refused at once when discovery is off, with
 * one message naming both sides and the cause. Loopback subnets, no relay, no RDMA device.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ControlPlaneTest {
    private static final LocalLink SLOW = LocalLink.tcp(IpPrefix.parse("127.75.1.1/24"), 10_000);
    private static final LocalLink FAST = LocalLink.tcp(IpPrefix.parse("127.75.2.1/24"), 100_000);

    private static ListenHandle peerOn(String... prefixes) {
        return new ListenHandle(0, 7, java.util.Arrays.stream(prefixes)
                .map(p -> new ListenAddress(IpPrefix.parse(p), 4791, 0)).toList());
    }

    private static ControlPlane plane() {
        ControlPlane plane = ControlPlane.open(new Context().routePort(0), List.of(SLOW, FAST));
        plane.startRouting(null);
        return plane;
    }

    @Test
    void aPeerOnTwoOfThisNodesSubnetsGoesDirectFastestFirstUnlessALinkIsPreferred() throws Exception {
        try (ControlPlane plane = plane()) {
            ListenHandle peer = peerOn("127.75.1.2/24", "127.75.2.2/24");
            RoutePlan plan = plane.plan(peer, null);
            assertTrue(plan.isDirect() && !plan.awaitsDiscovery(), String.valueOf(plan));
            assertEquals(List.of(FAST, SLOW), plan.direct().stream().map(r -> r.local()).toList());
            assertNull(plan.relayed());
            RoutePlan preferred = plane.plan(peer, "127.75.1.1");
            assertEquals(SLOW, preferred.first().local(), String.valueOf(preferred));
        }
    }

    @Test
    void aPeerNoLinkReachesIsRefusedAtOnceWithDiscoveryOffNamingBothSides() {
        try (ControlPlane plane = plane()) {
            NoRouteException e = assertThrows(NoRouteException.class,
                    () -> plane.plan(peerOn("127.75.9.3/24"), null));
            String m = e.getMessage();
            assertTrue(m.contains("127.75.9.3/24") && m.contains("127.75.1.1/24") && m.contains("127.75.2.1/24")
                    && m.contains("no route through other nodes either")
                    && m.contains("route discovery is off (JMESH_ROUTE_PORT=0)"), m);
            assertNull(plane.relayedRoute(peerOn("127.75.9.3/24")));
        }
    }
}
