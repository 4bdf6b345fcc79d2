package io.jmesh.transport.net;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.ListenAddress;
import io.jmesh.api.LocalLink;
import io.jmesh.api.NoRouteException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RouteSelectorTest {
    private static LocalLink link(String device, String prefix, long mbps) {
        return new LocalLink(device, 1, 3, IpPrefix.parse(prefix), mbps);
    }

    private static ListenHandle handle(String... entries) {
        List<ListenAddress> list = new ArrayList<>();
        int port = 40000;
        for (String e : entries) {
            int hash = e.indexOf('#');
            list.add(new ListenAddress(IpPrefix.parse(hash < 0 ? e : e.substring(0, hash)), port++,
                    hash < 0 ? 0 : Integer.parseInt(e.substring(hash + 1))));
        }
        return new ListenHandle(0, 7, list);
    }

    private static String pair(Route r) {
        return r.local().prefix() + "->" + r.peer().prefix();
    }

    // Triangle: A-B 192.168.101.0/24, A-C 192.168.100.0/24, B-C 192.168.102.0/24
    private static final List<LocalLink> A = List.of(link("mlx5_0", "192.168.101.1/24", 100_000),
            link("mlx5_1", "192.168.100.1/24", 100_000));
    private static final List<LocalLink> B = List.of(link("mlx5_0", "192.168.101.2/24", 100_000),
            link("mlx5_1", "192.168.102.2/24", 100_000));
    private static final List<LocalLink> C = List.of(link("mlx5_0", "192.168.100.3/24", 100_000),
            link("mlx5_1", "192.168.102.3/24", 100_000));

    private static ListenHandle handleOf(List<LocalLink> node) {
        return handle(node.stream().map(l -> l.prefix().toString()).toArray(String[]::new));
    }

    @Test
    void triangleEachPairUsesItsOwnLink() throws NoRouteException {
        assertEquals(List.of("192.168.101.1/24->192.168.101.2/24"),
                RouteSelector.select(A, handleOf(B)).stream().map(RouteSelectorTest::pair).toList());
        assertEquals(List.of("192.168.100.1/24->192.168.100.3/24"),
                RouteSelector.select(A, handleOf(C)).stream().map(RouteSelectorTest::pair).toList());
        assertEquals(List.of("192.168.102.2/24->192.168.102.3/24"),
                RouteSelector.select(B, handleOf(C)).stream().map(RouteSelectorTest::pair).toList());
        assertEquals(List.of("192.168.102.3/24->192.168.102.2/24"),
                RouteSelector.select(C, handleOf(B)).stream().map(RouteSelectorTest::pair).toList());
        Route r = RouteSelector.best(A, handleOf(C));
        assertEquals("mlx5_1", r.local().device());
        assertEquals(40000, r.peerSocketAddress().getPort());
        assertEquals(0, r.peerIndex());
    }

    @Test
    void twinsGetOneRoutePerLinkFastestFirst() throws NoRouteException {
        // DGX Spark twins: two cables between the same two nodes, one subnet each; the second is slower.
        List<LocalLink> local = List.of(link("rocep1s0f1", "10.1.2.1/24", 100_000),
                link("rocep1s0f0", "10.1.1.1/24", 200_000));
        ListenHandle peer = handle("10.1.1.2/24", "10.1.2.2/24");
        List<Route> routes = RouteSelector.select(local, peer);
        assertEquals(List.of("10.1.1.1/24->10.1.1.2/24", "10.1.2.1/24->10.1.2.2/24"),
                routes.stream().map(RouteSelectorTest::pair).toList());
        assertEquals(200_000, routes.get(0).speedMbps());
    }

    @Test
    void aPreferredLinkThatReachesThePeerGoesFirstByDeviceOrAddress() throws NoRouteException {
        List<LocalLink> local = List.of(link("rocep1s0f1", "10.1.2.1/24", 100_000),
                link("rocep1s0f0", "10.1.1.1/24", 200_000));
        ListenHandle peer = handle("10.1.1.2/24", "10.1.2.2/24");
        for (String preferred : List.of("rocep1s0f1", "10.1.2.1", "10.1.2.1/24")) {
            List<Route> routes = RouteSelector.select(local, peer, preferred);
            assertEquals(List.of("10.1.2.1/24->10.1.2.2/24", "10.1.1.1/24->10.1.1.2/24"),
                    routes.stream().map(RouteSelectorTest::pair).toList(), preferred);
            assertTrue(RouteSelector.usesLink(routes.getFirst(), preferred));
        }
    }

    @Test
    void aPreferredLinkThatCannotReachThePeerLeavesTheMeshChoice() throws NoRouteException {
        // triangle: A's link to C cannot reach B; the mesh routing's choice stands
        List<Route> routes = RouteSelector.select(A, handleOf(B), "mlx5_1");
        assertEquals(List.of("192.168.101.1/24->192.168.101.2/24"),
                routes.stream().map(RouteSelectorTest::pair).toList());
        assertTrue(!RouteSelector.usesLink(routes.getFirst(), "mlx5_1"));
        assertEquals(RouteSelector.select(A, handleOf(B)), RouteSelector.select(A, handleOf(B), null));
    }

    @Test
    void equalSpeedTwinsAreOrderedByAddressWhateverTheInputOrder() throws NoRouteException {
        List<LocalLink> local = new ArrayList<>(List.of(link("d0", "10.1.1.1/24", 100_000),
                link("d1", "10.1.2.1/24", 100_000), link("d2", "10.1.3.1/24", 100_000),
                link("d3", "192.168.9.1/24", 100_000)));
        List<String> peers = new ArrayList<>(List.of("10.1.3.2/24", "10.1.1.2/24", "10.1.2.2/24"));
        List<String> expected = List.of("10.1.1.1/24->10.1.1.2/24", "10.1.2.1/24->10.1.2.2/24",
                "10.1.3.1/24->10.1.3.2/24");
        Random random = new Random(1);
        for (int i = 0; i < 20; i++) {
            Collections.shuffle(local, random);
            Collections.shuffle(peers, random);
            assertEquals(expected, RouteSelector.select(local, handle(peers.toArray(String[]::new))).stream()
                    .map(RouteSelectorTest::pair).toList());
        }
    }

    @Test
    void fastestLinkFirstAndPeerSpeedHintCounts() throws NoRouteException {
        // Same peer reachable over a 25G and a 100G link; our 100G side faces a peer that says its end is 10G.
        List<LocalLink> local = List.of(link("slow", "10.0.1.1/24", 25_000), link("fast", "10.0.2.1/24", 100_000));
        List<Route> routes = RouteSelector.select(local, handle("10.0.1.2/24#25", "10.0.2.2/24#10"));
        assertEquals("slow", routes.get(0).local().device());
        assertEquals(10_000, routes.get(1).speedMbps());
        routes = RouteSelector.select(local, handle("10.0.1.2/24", "10.0.2.2/24"));
        assertEquals("fast", routes.get(0).local().device());
    }

    @Test
    void oneLinkPerPeerAddressAndPerLocalLink() throws NoRouteException {
        // Two local devices on one subnet facing one peer address: one route, the faster device.
        List<LocalLink> local = List.of(link("a", "10.0.0.1/24", 50_000), link("b", "10.0.0.5/24", 100_000));
        List<Route> routes = RouteSelector.select(local, handle("10.0.0.2/24"));
        assertEquals(1, routes.size());
        assertEquals("b", routes.get(0).local().device());
    }

    @Test
    void lineOfThreeHasNoRouteBetweenTheEnds() {
        // line:3 A - B - C: A and C share no subnet
        List<LocalLink> a = List.of(link("mlx5_0", "192.168.101.1/24", 100_000));
        ListenHandle c = handle("192.168.102.3/24", "192.168.103.3/24");
        NoRouteException e = assertThrows(NoRouteException.class, () -> RouteSelector.select(a, c));
        assertTrue(e.getMessage().startsWith("no shared subnet with peer [192.168.102.3/24, 192.168.103.3/24];"
                + " local addresses [192.168.101.1/24 (mlx5_0:1)]"), e.getMessage());
        assertTrue(e.getMessage().contains("check 'ip addr' on both nodes"), e.getMessage());
        assertEquals(List.of(IpPrefix.parse("192.168.101.1/24")), e.localAddresses());
        assertEquals(2, e.peerAddresses().size());
    }

    @Test
    void noLocalLinksAtAll() {
        NoRouteException e = assertThrows(NoRouteException.class,
                () -> RouteSelector.select(List.of(), handle("10.0.0.2/24")));
        assertTrue(e.getMessage().contains("no usable mesh address"), e.getMessage());
    }

    @Test
    void slash31PointToPoint() throws NoRouteException {
        List<LocalLink> local = List.of(link("x", "10.0.0.0/31", 0), link("y", "10.0.0.2/31", 0));
        assertEquals("x", RouteSelector.best(local, handle("10.0.0.1/31")).local().device());
        assertEquals("y", RouteSelector.best(local, handle("10.0.0.3/31")).local().device());
        assertThrows(NoRouteException.class, () -> RouteSelector.select(local, handle("10.0.0.4/31")));
    }

    @Test
    void slash30() throws NoRouteException {
        List<LocalLink> local = List.of(link("x", "10.0.0.1/30", 0), link("y", "10.0.0.5/30", 0));
        assertEquals("x", RouteSelector.best(local, handle("10.0.0.2/30")).local().device());
        assertEquals("y", RouteSelector.best(local, handle("10.0.0.6/30")).local().device());
        // .9/30 is the next /30: a /24 matcher would have picked a link
        assertThrows(NoRouteException.class, () -> RouteSelector.select(local, handle("10.0.0.9/30")));
    }

    @Test
    void slash16() throws NoRouteException {
        List<LocalLink> local = List.of(link("x", "172.16.1.1/16", 0), link("y", "172.17.1.1/16", 0));
        assertEquals("y", RouteSelector.best(local, handle("172.17.200.9/16")).local().device());
    }

    @Test
    void ipv6Slash64() throws NoRouteException {
        List<LocalLink> local = List.of(link("x", "fd00:101::1/64", 0), link("y", "fd00:102::1/64", 0));
        Route r = RouteSelector.best(local, handle("fd00:102::2/64"));
        assertEquals("y", r.local().device());
        assertThrows(NoRouteException.class, () -> RouteSelector.select(local, handle("fd00:103::2/64")));
    }

    @Test
    void mixedFamiliesNeverMatchAcross() throws NoRouteException {
        List<LocalLink> v4 = List.of(link("x", "192.168.101.1/24", 0));
        assertThrows(NoRouteException.class, () -> RouteSelector.select(v4, handle("fd00:101::2/64")));
        // A dual-stack link: one route (the link is used once), IPv4 first on a tie.
        List<LocalLink> dual = List.of(link("x", "fd00:101::1/64", 0), link("x", "192.168.101.1/24", 0));
        List<Route> routes = RouteSelector.select(dual, handle("fd00:101::2/64", "192.168.101.2/24"));
        assertEquals("192.168.101.1/24->192.168.101.2/24", pair(routes.get(0)));
    }

    @Test
    void slash24FacingSlash16IsNotOneLink() {
        List<LocalLink> local = List.of(link("x", "192.168.1.1/16", 0));
        NoRouteException e = assertThrows(NoRouteException.class,
                () -> RouteSelector.select(local, handle("192.168.101.3/24")));
        assertTrue(e.getMessage().contains("Netmask mismatch: local 192.168.1.1/16 and peer 192.168.101.3/24"),
                e.getMessage());
    }

    @Test
    void linkLocalAddressesAreIgnored() {
        List<LocalLink> local = List.of(link("x", "fe80::1/64", 0));
        NoRouteException e = assertThrows(NoRouteException.class,
                () -> RouteSelector.select(local, handle("fe80::2/64")));
        assertTrue(e.getMessage().contains("Link-local addresses"), e.getMessage());
    }
}
