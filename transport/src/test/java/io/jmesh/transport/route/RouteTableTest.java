package io.jmesh.transport.route;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.LocalLink;
import io.jmesh.transport.route.RouteFrame.Link;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which of a node's links has no live neighbour: what a connector that finds no route yet may still wait for. */
class RouteTableTest {
    private static final LocalLink ONE = LocalLink.tcp(IpPrefix.parse("10.0.1.2/24"), 0);
    private static final LocalLink TWO = LocalLink.tcp(IpPrefix.parse("10.0.2.2/24"), 0);
    private static final long EXPIRY = 1_000_000_000L;

    private static InetAddress ip(String a) {
        try {
            return InetAddress.getByName(a);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static void hear(RouteTable t, String from, long when) {
        t.heard(ip(from), from.hashCode(), List.of(new Link(IpPrefix.parse(from + "/24"), 7000)), List.of(), when);
    }

    @Test
    void aLinkIsUnheardUntilANeighbourAnswersOnItAndAgainOnceThatNeighbourExpires() {
        RouteTable t = new RouteTable(List.of(ONE, TWO), List.of(), EXPIRY);
        assertSame(ONE, t.unheardLink(0), "nothing heard yet");
        hear(t, "10.0.1.1", 0);
        assertSame(TWO, t.unheardLink(0), "the first link has its neighbour, the second none");
        String told = t.describe(0);
        assertTrue(told.contains("no neighbour answers on link 10.0.2.2/24")
                && !told.contains("no neighbour answers on link 10.0.1.2/24"), told);
        hear(t, "10.0.2.3", 0);
        assertNull(t.unheardLink(0), "a neighbour on every link");
        hear(t, "10.0.1.1", EXPIRY);
        assertSame(TWO, t.unheardLink(EXPIRY + EXPIRY / 2), "the second link's neighbour went unheard past the expiry");
    }
}
