package io.jmesh.api;

import io.jmesh.transport.core.CoreSender;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * {@link Fabric#connect(byte[], String)} over the TCP provider on loopback addresses in three subnets (all of 127/8 is
 * on lo): A has 127.0.111.2/24, 127.0.112.2/24 and 127.0.113.2/24, B has 127.0.111.3/24 and 127.0.112.3/24. The mesh
 * routing alone takes 127.0.111; a preferred link that reaches B is taken instead, by address or prefix; one that
 * does not reach B (127.0.113, or a name that is no link) leaves the mesh choice.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PreferredLinkTest {
    @Test
    void thePreferredLinkIsTakenWhenItReachesThePeer() throws Exception {
        try (Fabric a = ProgressTest.tcp("127.0.111.2/24,127.0.112.2/24,127.0.113.2/24");
             Fabric b = ProgressTest.tcp("127.0.111.3/24,127.0.112.3/24")) {
            assertEquals("tcp 127.0.111.2/24 -> 127.0.111.3/24", route(a, b, null), "the mesh choice");
            assertEquals("tcp 127.0.112.2/24 -> 127.0.112.3/24", route(a, b, "127.0.112.2"), "by address");
            assertEquals("tcp 127.0.112.2/24 -> 127.0.112.3/24", route(a, b, "127.0.112.2/24"), "by prefix");
            assertEquals("tcp 127.0.111.2/24 -> 127.0.111.3/24", route(a, b, "127.0.113.2"),
                    "a link in a subnet B is not on");
            assertEquals("tcp 127.0.111.2/24 -> 127.0.111.3/24", route(a, b, "eth9"), "no such link");
        }
    }

    @Test
    void directLinksListTheLinksThatReachThePeerInTheOrderAConnectTakesThem() throws Exception {
        try (Fabric a = ProgressTest.tcp("127.0.111.2/24,127.0.112.2/24,127.0.113.2/24");
             Fabric b = ProgressTest.tcp("127.0.111.3/24,127.0.112.3/24");
             Fabric c = ProgressTest.tcp("127.0.114.4/24");
             Listener lb = b.listen();
             Listener lc = c.listen()) {
            assertEquals(List.of("127.0.111.2/24", "127.0.112.2/24"),
                    a.directLinks(lb.handle()).stream().map(l -> l.prefix().toString()).toList(),
                    "the two shared subnets, the mesh choice first; 127.0.113 reaches no address of B");
            assertEquals(List.of(), a.directLinks(lc.handle()), "no shared subnet: only a relay could reach C");
            assertEquals(a.directLinks(lb.handle()), a.directLinks(ListenHandle.decode(lb.handle())));
        }
    }

    /** Connects, checks data sockets leave from the route's address, sends one message, and gives the route. */
    private static String route(Fabric a, Fabric b, String preferred) throws Exception {
        AutoCloseable[] c = ProgressTest.connect(a, b, preferred);
        Sender s = (Sender) c[0];
        Receiver r = (Receiver) c[1];
        Connector connector = (Connector) c[2];
        try {
            String route = connector.route();
            String local = route.substring(4, route.indexOf('/'));
            assertEquals(local, io.jmesh.transport.tcp.TcpSockets.localAddress(s, 0).getAddress().getHostAddress(),
                    "the data sockets are bound to the route's local address");
            try (var arena = java.lang.foreign.Arena.ofConfined()) {
                Registration reg = a.register(arena.allocate(64));
                Registration in = b.register(arena.allocate(64));
                int rr = r.irecv(1, new Registration[] {in}, new long[] {0}, new long[] {64}, new int[] {0});
                int sr;
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(ProgressTest.PATIENCE_S);
                while ((sr = s.isend(reg, 0, 64, 0)) == Status.NOT_READY) {
                    assertEquals(true, System.nanoTime() - end < 0, "isend hangs");
                }
                int st = 0;
                int rt = 0;
                while (st == 0 || rt == 0) {
                    st = st == 0 ? s.test(sr) : st;
                    rt = rt == 0 ? r.test(rr) : rt;
                    assertEquals(true, System.nanoTime() - end < 0, "transfer hangs");
                }
                assertEquals(1, st);
                assertEquals(1, rt);
                assertNull(s.error());
            }
            return route;
        } finally {
            s.close();
            r.close();
            ((Listener) c[3]).close();
        }
    }
}
