package io.jmesh.api;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.jmesh.api.ProgressTest.tcp;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The control-plane waits over the TCP provider on loopback: deadlines that pass, a failed connect that surfaces its
 * cause, and connect-all across three nodes of one process whose receivers are known by their peers (checked by
 * sending over every connection).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ConnectionsTest {
    private static final Duration PATIENCE = Duration.ofSeconds(30);

    private final List<AutoCloseable> cleanup = new ArrayList<>();
    private final Arena arena = Arena.ofShared();

    @AfterEach
    void tearDown() {
        CloseHelper.closeAll(cleanup.reversed());
        arena.close();
    }

    private Fabric open(String addresses) {
        Fabric f = tcp(addresses);
        cleanup.add(f);
        return f;
    }

    private Listener listen(Fabric f) throws Exception {
        Listener l = f.listen();
        cleanup.add(l);
        return l;
    }

    @Test
    void connectAndAcceptReturnTheConnectionInOneProcess() throws Exception {
        Fabric a = open("127.0.111.1/24");
        Fabric b = open("127.0.111.2/24");
        Listener l = listen(b);
        Connector c = a.connect(l.handle());
        cleanup.add(c);
        // the two ends of a TCP connect each need the other polled: the accept waits on a thread of its own
        Receiver[] r = new Receiver[1];
        Thread acceptor = Thread.ofPlatform().start(() -> r[0] = Connections.accept(l, PATIENCE,
                IdleStrategy.controlPlane()));
        Sender s = Connections.await(c, PATIENCE, IdleStrategy.controlPlane());
        cleanup.add(s);
        acceptor.join();
        assertNotNull(r[0], "accepted");
        cleanup.add(r[0]);
        assertNotNull(s);
        assertTrue(c.route().contains("127.0.111.1"), c.route());
    }

    @Test
    void anAcceptWithNobodyConnectingTimesOutNamingTheListener() throws Exception {
        Listener l = listen(open("127.0.111.3/24"));
        ConnectTimeoutException e = assertThrows(ConnectTimeoutException.class,
                () -> Connections.accept(l, Duration.ofMillis(200), IdleStrategy.controlPlane()));
        assertTrue(e.getMessage().startsWith("no connection arrived within 200 ms"), e.getMessage());
        assertTrue(e.getMessage().contains(l.handleText()), e.getMessage());
        assertTrue(e.getMessage().contains("check that it is running"), e.getMessage());
        assertEquals(Duration.ofMillis(200), e.timeout());
    }

    @Test
    void aConnectThatNobodyAcceptsTimesOutNamingTheRouteAndIsAbandoned() throws Exception {
        Fabric a = open("127.0.111.4/24");
        Listener l = listen(open("127.0.111.5/24"));       // never accept()ed
        Connector c = a.connect(l.handle());
        ConnectTimeoutException e = assertThrows(ConnectTimeoutException.class,
                () -> Connections.await(c, Duration.ofMillis(300), IdleStrategy.yielding()));
        assertTrue(e.getMessage().startsWith("connect over " + c.route() + " did not complete within 300 ms"),
                e.getMessage());
        assertTrue(e.getMessage().contains("jmesh doctor"), e.getMessage());
        IllegalStateException closed = assertThrows(IllegalStateException.class, c::poll,
                "the connect was abandoned: a poll loop on it ends");
        assertTrue(closed.getMessage().contains("closed before it completed"), closed.getMessage());
    }

    @Test
    void aFailedConnectSurfacesItsCauseNotATimeout() throws Exception {
        Fabric a = open("127.0.111.6/24");
        Fabric b = open("127.0.111.7/24");
        Listener l = b.listen();
        byte[] handle = l.handle();
        l.close();                                           // nobody listens there any more: the connect fails
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> Connections.connect(a, handle, PATIENCE, IdleStrategy.controlPlane()));
        assertFalse(ConnectTimeoutException.class.isInstance(e), "a refused connect is no timeout");
        assertTrue(e.getMessage().contains("127.0.111.7"), e.getMessage());
    }

    @Test
    void connectAllConnectsThreeNodesBothWaysAndKnowsEachReceiverByItsPeer() throws Exception {
        String[] names = {"A", "B", "C"};
        Fabric[] f = {open("127.0.112.1/24,127.0.113.1/24"), open("127.0.112.2/24,127.0.114.2/24"),
                open("127.0.113.3/24,127.0.114.3/24")};
        Listener[] l = {listen(f[0]), listen(f[1]), listen(f[2])};
        List<PeerConnections<String>> nodes = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Map<String, byte[]> peers = new LinkedHashMap<>();
            for (int j = 0; j < 3; j++) {
                if (j != i) {
                    peers.put(names[j], l[j].handle());
                }
            }
            PeerConnections<String> p = PeerConnections.start(f[i], l[i], peers);
            cleanup.add(p);
            nodes.add(p);
        }
        assertThrows(IllegalStateException.class, () -> nodes.getFirst().sender("B"), "not connected yet");
        Connections.awaitAll(PATIENCE, IdleStrategy.controlPlane(), nodes);

        // every ordered pair: X sends its name to Y, and Y's receiver for X gets it
        Registration[] regs = new Registration[3];
        for (int i = 0; i < 3; i++) {
            regs[i] = f[i].register(arena.allocate(4096, 4096));
            cleanup.add(regs[i]);
            regs[i].memory().set(JAVA_BYTE, 0, (byte) names[i].charAt(0));
        }
        for (int x = 0; x < 3; x++) {
            for (int y = 0; y < 3; y++) {
                if (x != y) {
                    assertEquals(names[x], exchange(nodes.get(x).sender(names[y]), regs[x],
                            nodes.get(y).receiver(names[x]), regs[y]));
                }
            }
        }
        assertEquals(List.of("B", "C"), nodes.getFirst().peers());
        assertTrue(nodes.getFirst().route("B").contains("127.0.112.1"), nodes.getFirst().route("B"));
        assertTrue(nodes.getFirst().route("C").contains("127.0.113.1"), nodes.getFirst().route("C"));

        Sender ab = nodes.getFirst().sender("B");
        nodes.getFirst().close();
        assertEquals(Status.CLOSED, ab.isend(regs[0], 0, 1, 0), "close() closed the node's connections");
    }

    /** One message over s into r; returns the first byte received, as a name. */
    private static String exchange(Sender s, Registration from, Receiver r, Registration into) {
        into.memory().set(JAVA_BYTE, 100, (byte) 0);
        int rq = r.irecv(1, new Registration[] {into}, new long[] {100}, new long[] {16}, new int[] {9});
        assertTrue(rq >= 0, Status.describe(rq));
        long end = System.nanoTime() + PATIENCE.toNanos();
        int sq;
        while ((sq = s.isend(from, 0, 1, 9)) == Status.NOT_READY) {
            r.test(rq);
            assertTrue(System.nanoTime() < end, "the receive was never announced");
        }
        assertTrue(sq >= 0, Status.describe(sq));
        int st = 0;
        int rt = 0;
        while (st == 0 || rt == 0) {
            st = st != 0 ? st : s.test(sq);
            rt = rt != 0 ? rt : r.test(rq);
            assertTrue(System.nanoTime() < end, "the message did not complete");
        }
        assertEquals(1, st);
        assertEquals(1, rt);
        assertEquals(1, r.size(rq, 0));
        return String.valueOf((char) into.memory().get(JAVA_BYTE, 100));
    }

    @Test
    void connectAllTimesOutSayingWhichConnectionsAreMissing() throws Exception {
        Fabric a = open("127.0.115.1/24");
        Fabric b = open("127.0.115.2/24");
        Listener la = listen(a);
        Listener lb = listen(b);               // b accepts a's connection (below) but never connects back
        Thread acceptor = Thread.ofPlatform().daemon().start(() -> {
            try {
                cleanup.add(Connections.accept(lb, PATIENCE, IdleStrategy.controlPlane()));
            } catch (RuntimeException ignored) {
                // the test's assertions below tell what happened
            }
        });
        ConnectTimeoutException e = assertThrows(ConnectTimeoutException.class, () -> Connections.connectAll(a, la,
                Map.of("b", lb.handle()), Duration.ofMillis(1500), IdleStrategy.controlPlane()));
        acceptor.join();
        assertTrue(e.getMessage().startsWith("the connections with the peers did not complete within 1.5 s"),
                e.getMessage());
        assertTrue(e.getMessage().contains("accepted 0 of 1 connections"), e.getMessage());
        assertTrue(e.getMessage().contains("connects to it"), e.getMessage());
    }

    @Test
    void aConnectionFromANodeThatIsNotAPeerIsRefusedNamingThePeers() throws Exception {
        Fabric a = open("127.0.116.1/24");
        Fabric c = open("127.0.116.3/24");
        Listener la = listen(a);
        Listener lb = listen(open("127.0.116.2/24"));
        Listener lc = listen(c);
        PeerConnections<String> nodeA = PeerConnections.start(a, la, Map.of("B", lb.handle()));
        PeerConnections<String> nodeC = PeerConnections.start(c, lc, Map.of("A", la.handle()));
        cleanup.add(nodeA);
        cleanup.add(nodeC);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> Connections.awaitAll(PATIENCE, IdleStrategy.controlPlane(), List.of(nodeA, nodeC)));
        assertTrue(e.getMessage().contains("none of the 1 peers [B]"), e.getMessage());
    }
}
