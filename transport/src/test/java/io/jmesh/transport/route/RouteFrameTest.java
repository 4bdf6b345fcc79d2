package io.jmesh.transport.route;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.LocalLink;
import io.jmesh.api.StaticRoute;
import io.jmesh.transport.route.RouteFrame.Decoded;
import io.jmesh.transport.route.RouteFrame.Link;
import io.jmesh.transport.route.RouteFrame.Reach;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The route frames, relay requests, the static map's syntax and the table's choices, without sockets. */
class RouteFrameTest {
    private static IpPrefix p(String s) {
        return IpPrefix.parse(s);
    }

    private static InetAddress a(String s) throws Exception {
        return InetAddress.getByName(s);
    }

    @Test
    void anAdvertRoundTrips() {
        ByteBuffer b = ByteBuffer.allocate(RouteFrame.MAX_BYTES);
        List<Link> links = List.of(new Link(p("10.0.1.2/24"), 40123), new Link(p("fd00::2/64"), 0));
        List<Reach> reach = List.of(new Reach(p("10.0.3.0/24"), 2));
        RouteFrame.advert(b, 77, links, reach);
        Decoded d = RouteFrame.decode(b);
        assertNull(d.problem());
        assertEquals(RouteFrame.ADVERT, d.type());
        assertEquals(77, d.nodeId());
        assertEquals(links, d.links());
        assertEquals(reach, d.reach());
    }

    @Test
    void malformedFramesAreNamedNeverThrown() {
        ByteBuffer b = ByteBuffer.allocate(RouteFrame.MAX_BYTES);
        RouteFrame.advert(b, 1, List.of(new Link(p("10.0.1.2/24"), 1)), List.of(new Reach(p("10.0.3.0/24"), 1)));
        ByteBuffer cut = b.duplicate().limit(b.limit() - 1);
        assertTrue(RouteFrame.decode(cut).problem().contains("bytes for 1 links"), RouteFrame.decode(cut).problem());
        ByteBuffer badHops = ByteBuffer.allocate(b.remaining()).put(b.duplicate()).flip();
        badHops.put(RouteFrame.HEADER_BYTES + RouteFrame.ENTRY_BYTES + 2, (byte) 9);
        assertTrue(RouteFrame.decode(badHops).problem().contains("hop count 9"));
        ByteBuffer badFamily = ByteBuffer.allocate(b.remaining()).put(b.duplicate()).flip();
        badFamily.put(RouteFrame.HEADER_BYTES, (byte) 5);
        assertTrue(RouteFrame.decode(badFamily).problem().contains("address family"));
        SplittableRandom rnd = new SplittableRandom(3);
        for (int i = 0; i < 20_000; i++) {
            byte[] junk = new byte[rnd.nextInt(RouteFrame.MAX_BYTES + 2)];
            rnd.nextBytes(junk);
            if (junk.length >= 6 && rnd.nextBoolean()) {
                ByteBuffer.wrap(junk).putInt(RouteFrame.MAGIC).put((byte) 1).put((byte) (1 + rnd.nextInt(2)));
            }
            assertNotNull(RouteFrame.decode(ByteBuffer.wrap(junk))); // a reason or a frame, never an exception
            assertNotNull(RelayRequest.problem(ByteBuffer.wrap(junk), 0) == null
                    ? RelayRequest.target(ByteBuffer.wrap(junk), 0) : "dropped");
        }
    }

    @Test
    void aRelayRequestRoundTripsAndIsChecked() throws Exception {
        InetSocketAddress t = new InetSocketAddress(a("10.0.3.3"), 40100);
        ByteBuffer r = RelayRequest.of(t, 8);
        assertNull(RelayRequest.problem(r, 0));
        assertEquals(t, RelayRequest.target(r, 0));
        assertEquals(8, RelayRequest.hopsLeft(r, 0));
        ByteBuffer v6 = RelayRequest.of(new InetSocketAddress(a("fd00::3"), 1), 1);
        assertEquals(a("fd00::3"), RelayRequest.target(v6, 0).getAddress());
        r.put(5, (byte) 0);
        assertTrue(RelayRequest.problem(r, 0).contains("hop count 0"));
        r.put(5, (byte) 8).put(12 + 5, (byte) 1);
        assertTrue(RelayRequest.problem(r, 0).contains("trailing bytes"));
    }

    @Test
    void theStaticMapSyntaxIsCheckedWithTheFix() throws Exception {
        assertEquals(List.of(new StaticRoute(p("10.0.3.0/24"), a("10.0.1.2")),
                new StaticRoute(p("fd00:3::/64"), a("fd00:1::2"))),
                StaticRoute.parseList(" 10.0.3.7/24=10.0.1.2 , fd00:3::/64=fd00:1::2,"));
        for (String bad : List.of("10.0.3.0/24", "10.0.3.0=10.0.1.2", "10.0.3.0/24=10.0.1.2/24", "10.0.3.0/24=host",
                "10.0.3.0/24=fd00::2")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> StaticRoute.parseList(bad));
            assertTrue(e.getMessage().contains("SUBNET=NEIGHBOUR") && e.getMessage().contains("e.g."),
                    e.getMessage());
        }
    }

    @Test
    void aBadStaticMapOrRoutePortStopsTheContextNamingTheSetting() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> io.jmesh.api.Context.from(
                java.util.Map.of(), java.util.Map.of("JMESH_ROUTES", "10.0.3.0/24")).conclude());
        assertTrue(e.getMessage().startsWith("JMESH_ROUTES='10.0.3.0/24' is not valid")
                && e.getMessage().contains("SUBNET=NEIGHBOUR"), e.getMessage());
        IllegalArgumentException p = assertThrows(IllegalArgumentException.class, () -> io.jmesh.api.Context.from(
                java.util.Map.of("jmesh.route.port", "70000"), java.util.Map.of()).conclude());
        assertTrue(p.getMessage().contains("JMESH_ROUTE_PORT") && p.getMessage().contains("0 to 65535"),
                p.getMessage());
    }

    @Test
    void theTableTakesFewestRelaysAndKeepsSplitHorizon() throws Exception {
        LocalLink l1 = LocalLink.tcp(p("10.0.1.1/24"), 0);
        LocalLink l4 = LocalLink.tcp(p("10.0.4.1/24"), 0);
        RouteTable t = new RouteTable(List.of(l1, l4), List.of(), 1_000);
        // b on link 1 reaches 10.0.3.0/24 in 2 (through c); d on link 4 is linked to it
        assertTrue(t.heard(a("10.0.1.2"), 2, List.of(new Link(p("10.0.1.2/24"), 500), new Link(p("10.0.2.2/24"),
                501)), List.of(new Reach(p("10.0.3.0/24"), 1)), 0));
        assertTrue(t.heard(a("10.0.4.4"), 4, List.of(new Link(p("10.0.4.4/24"), 400), new Link(p("10.0.3.4/24"),
                401)), List.of(), 0));
        NextHop h = t.nextHop(a("10.0.3.3"), 10);
        assertEquals(a("10.0.4.4"), h.neighbour());
        assertEquals(1, h.relays());
        assertEquals(400, h.relayPort());
        assertEquals(a("10.0.1.2"), t.nextHop(a("10.0.2.3"), 10).neighbour());
        assertNull(t.nextHop(a("10.0.9.9"), 10));
        // to d, this node names what it learned from b but not what it learned from d itself
        List<Reach> toD = t.advertFor(4, 10);
        assertTrue(toD.contains(new Reach(p("10.0.2.0/24"), 1)) && toD.contains(new Reach(p("10.0.3.0/24"), 2)),
                toD.toString());
        assertTrue(t.advertFor(2, 10).contains(new Reach(p("10.0.3.0/24"), 1)));
        assertTrue(t.advertFor(2, 10).stream().noneMatch(r -> r.subnet().equals(p("10.0.2.0/24"))));
        // static entries: a neighbour not heard yet counts 1 relay; one heard without a link to the target or a
        // way to it at least 2, so a peer address it is linked to is preferred (the ring in TcpRelayDefenceTest)
        RouteTable s = new RouteTable(List.of(l4), StaticRoute.parseList("10.0.2.0/24=10.0.4.4,"
                + "10.0.3.0/24=10.0.4.4"), 1_000);
        assertEquals(1, s.nextHop(a("10.0.2.3"), 0).relays());
        assertTrue(s.heard(a("10.0.4.4"), 4, List.of(new Link(p("10.0.4.4/24"), 400), new Link(p("10.0.3.4/24"),
                401)), List.of(), 0));
        assertEquals(1, s.nextHop(a("10.0.3.3"), 10).relays());
        assertEquals(2, s.nextHop(a("10.0.2.3"), 10).relays());
        assertTrue(s.heard(a("10.0.4.4"), 4, List.of(new Link(p("10.0.4.4/24"), 400), new Link(p("10.0.3.4/24"),
                401)), List.of(new Reach(p("10.0.2.0/24"), 1)), 20));
        assertEquals(2, s.nextHop(a("10.0.2.3"), 30).relays());
        // a neighbour off this node's links is not taken; entries expire
        assertTrue(!t.heard(a("10.0.7.7"), 7, List.of(), List.of(), 0));
        assertNull(t.nextHop(a("10.0.3.3"), 2_000));
    }
}
