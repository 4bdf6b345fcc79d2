package io.jmesh.transport.route;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.LocalLink;
import io.jmesh.transport.route.RouteFrame.Link;
import io.jmesh.transport.route.RouteFrame.Reach;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The one relay policy, without a socket: a node b on links 10.0.1.0/24 and 10.0.2.0/24, whose neighbour 10.0.2.3
 * reaches 10.0.3.0/24 and runs a relay on port 7000; who may ask b, what for, and where each request goes.
 */
class RelayPolicyTest {
    private static final LocalLink ONE = LocalLink.tcp(IpPrefix.parse("10.0.1.2/24"), 0);
    private static final LocalLink TWO = LocalLink.tcp(IpPrefix.parse("10.0.2.2/24"), 0);

    private static InetAddress ip(String a) {
        try {
            return InetAddress.getByName(a);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static RelayPolicy policy(int relayPort) {
        RouteTable table = new RouteTable(List.of(ONE, TWO), List.of(), 1_000_000_000L);
        table.heard(ip("10.0.2.3"), 9, List.of(new Link(IpPrefix.parse("10.0.2.3/24"), relayPort),
                new Link(IpPrefix.parse("10.0.3.3/24"), relayPort)), List.of(new Reach(IpPrefix.parse("10.0.4.0/24"),
                1)), 0);
        return new RelayPolicy(table);
    }

    @Test
    void onlyANeighbourOnTheLinkItArrivesOnMayAsk() {
        RelayPolicy p = policy(7000);
        assertNull(p.admission(ip("10.0.1.2"), ip("10.0.1.1")));
        assertTrue(p.admission(ip("10.0.1.2"), ip("10.0.2.3")).contains("outside this node's link subnets"),
                "a neighbour of the other link, arriving on this one");
        assertTrue(p.admission(ip("10.0.1.2"), ip("192.168.1.1")).contains("outside"));
        assertTrue(p.admission(ip("10.0.9.9"), ip("10.0.1.1")).contains("outside"), "not an address of this node");
    }

    @Test
    void aTargetOnALinkGoesStraightThere() {
        RelayPolicy.Decision d = policy(7000).decide(new InetSocketAddress(ip("10.0.2.7"), 5000), 8, 0);
        assertNull(d.refusal());
        assertSame(TWO, d.link());
        assertNull(d.hop());
        assertEquals(new InetSocketAddress(ip("10.0.2.7"), 5000), d.next());
    }

    @Test
    void aTargetBeyondGoesToTheNextRelayWithOneHopFewer() {
        RelayPolicy.Decision d = policy(7000).decide(new InetSocketAddress(ip("10.0.4.5"), 5000), 8, 0);
        assertNull(d.refusal(), d.refusal());
        assertSame(TWO, d.link());
        assertEquals(new InetSocketAddress(ip("10.0.2.3"), 7000), d.next());
        assertEquals(7, d.hopsLeft());
    }

    @Test
    void refusalsNameTheirReason() {
        RelayPolicy p = policy(7000);
        assertTrue(p.decide(new InetSocketAddress(ip("10.0.1.2"), 5000), 8, 0).refusal().contains("this relay itself"));
        assertTrue(p.decide(new InetSocketAddress(ip("172.16.0.1"), 5000), 8, 0).refusal().contains("not in the mesh"));
        assertTrue(p.decide(new InetSocketAddress(ip("10.0.4.5"), 5000), 1, 0).refusal().contains("hop limit"));
        assertTrue(policy(0).decide(new InetSocketAddress(ip("10.0.4.5"), 5000), 8, 0).refusal()
                .contains("runs no relay"));
    }

    @Test
    void pendingRequestsEvictTheOldest() {
        PendingRequests<String> pending = new PendingRequests<>(2);
        assertNull(pending.add("a"));
        assertNull(pending.add("b"));
        assertEquals("a", pending.add("c"));
        assertTrue(pending.remove("b"));
        assertEquals("c", pending.oldest());
        assertEquals(1, pending.size());
    }

    @Test
    void aTargetWhoseRouteWasLostMomentsAgoWaitsForItUntilTheDeadline() {
        RouteTable table = table(7000);
        RelayPolicy p = new RelayPolicy(table);
        InetSocketAddress beyond = new InetSocketAddress(ip("10.0.4.5"), 5000);
        long later = 2 * SECOND; // the neighbour, heard at 0, expired at 1 s: b forgot 10.0.4.0/24 for now
        assertNull(table.nextHop(beyond.getAddress(), later));
        assertNull(p.refusal(beyond, later), "a lost target is not refused on arrival");
        assertTrue(p.decide(beyond, 8, later, later + SECOND).waiting(), "within the deadline it waits");
        assertTrue(p.decide(new InetSocketAddress(ip("10.0.3.9"), 5000), 8, later, later + SECOND).waiting(),
                "the lost neighbour's own far link too");

        table.heard(ip("10.0.2.3"), 9, links(7000), reach(), later + SECOND / 2); // the neighbour is heard again
        RelayPolicy.Decision d = p.decide(beyond, 8, later + SECOND / 2, later + SECOND);
        assertNull(d.refusal(), d.refusal());
        assertEquals(new InetSocketAddress(ip("10.0.2.3"), 7000), d.next());
    }

    @Test
    void aLostRouteThatDoesNotComeBackIsRefusedAtTheDeadlineNamingTheNeighbour() {
        RelayPolicy p = new RelayPolicy(table(7000));
        InetSocketAddress beyond = new InetSocketAddress(ip("10.0.4.5"), 5000);
        String why = p.decide(beyond, 8, 3 * SECOND, 3 * SECOND).refusal();
        assertTrue(why.contains("no route to 10.0.4.5:5000 came back within the handshake timeout")
                && why.contains("through 10.0.2.3") && why.contains("10.0.4.0/24"), why);
        assertTrue(p.decide(beyond, 8, 3 * SECOND).refusal().contains("came back"), "no deadline: no wait");
    }

    @Test
    void whatWasNeverInTheMeshOrLostLongAgoIsRefusedAtOnce() {
        RouteTable table = table(7000);
        RelayPolicy p = new RelayPolicy(table);
        long later = 2 * SECOND;
        InetSocketAddress stranger = new InetSocketAddress(ip("172.16.0.1"), 5000);
        assertTrue(p.refusal(stranger, later).contains("not in the mesh"));
        assertTrue(p.decide(stranger, 8, later, later + SECOND).refusal().contains("not in the mesh"));

        long forgotten = (RouteTable.REMEMBER_EXPIRIES + 2) * SECOND; // the memory is ten expiry periods
        InetSocketAddress beyond = new InetSocketAddress(ip("10.0.4.5"), 5000);
        assertTrue(p.decide(beyond, 8, later, later + SECOND).waiting());
        assertTrue(p.decide(beyond, 8, forgotten, forgotten + SECOND).refusal().contains("not in the mesh"));
        assertTrue(p.refusal(beyond, forgotten).contains("not in the mesh"));
    }

    @Test
    void theMemoryOfLostSubnetsIsBounded() {
        RouteTable table = new RouteTable(List.of(ONE, TWO), List.of(), SECOND);
        List<Reach> many = new java.util.ArrayList<>();
        for (int i = 0; i < RouteTable.MAX_LOST + 10; i++) {
            many.add(new Reach(IpPrefix.parse("10." + (100 + i / 250) + "." + (i % 250) + ".0/24"), 1));
        }
        table.heard(ip("10.0.2.3"), 9, links(7000), many, 0); // its two links are lost first, then these in order
        long later = 2 * SECOND;
        int remembered = 0;
        for (Reach r : many) {
            if (table.lost(r.subnet().address(), later) != null) {
                remembered++;
            }
        }
        assertEquals(RouteTable.MAX_LOST, remembered, "the oldest losses made room");
        assertNull(table.lost(many.getFirst().subnet().address(), later), "the first lost is forgotten first");
        assertEquals(ip("10.0.2.3"), table.lost(many.getLast().subnet().address(), later).via());
    }

    private static final long SECOND = 1_000_000_000L;

    private static List<Link> links(int relayPort) {
        return List.of(new Link(IpPrefix.parse("10.0.2.3/24"), relayPort), new Link(IpPrefix.parse("10.0.3.3/24"),
                relayPort));
    }

    private static List<Reach> reach() {
        return List.of(new Reach(IpPrefix.parse("10.0.4.0/24"), 1));
    }

    private static RouteTable table(int relayPort) {
        RouteTable table = new RouteTable(List.of(ONE, TWO), List.of(), SECOND);
        table.heard(ip("10.0.2.3"), 9, links(relayPort), reach(), 0);
        return table;
    }
}
