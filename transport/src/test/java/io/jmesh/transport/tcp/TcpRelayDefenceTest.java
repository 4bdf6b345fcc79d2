package io.jmesh.transport.tcp;

import io.jmesh.api.Registration;
import io.jmesh.api.Setting;
import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.NoRouteException;
import io.jmesh.transport.route.RelayRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.tcp.TcpTestSupport.assertSameBytes;
import static io.jmesh.transport.tcp.TcpTestSupport.await;
import static io.jmesh.transport.tcp.TcpTestSupport.complete;
import static io.jmesh.transport.tcp.TcpTestSupport.fill;
import static io.jmesh.transport.tcp.TcpTestSupport.send;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a relay refuses and what the route table takes from outside: hostile datagrams and relay requests are dropped
 * while relayed traffic goes on, a relay is not an open proxy, and the static map overrides discovery. Every wait is
 * a hang guard.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpRelayDefenceTest {
    private RelayMesh mesh;
    private final List<AutoCloseable> raw = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (AutoCloseable c : raw) {
            c.close();
        }
        if (mesh != null) {
            mesh.close();
        }
    }

    private static InetSocketAddress endpoint(TcpProvider p, String address) throws Exception {
        InetAddress a = InetAddress.getByName(address);
        return new InetSocketAddress(a, p.relay().ports().get(a));
    }

    /** A raw socket from {@code from} to a relay endpoint that writes {@code bytes}. */
    private SocketChannel rawSocket(String from, InetSocketAddress to, ByteBuffer bytes) throws Exception {
        SocketChannel ch = SocketChannel.open();
        raw.add(ch);
        ch.bind(new InetSocketAddress(from, 0));
        ch.connect(to);
        ch.write(bytes);
        return ch;
    }

    private static void transfer(TcpTestSupport.Pair p, TcpProvider from, TcpProvider to, long size, long seed) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(Math.max(1, size));
            MemorySegment dst = arena.allocate(Math.max(1, size));
            Registration rs = from.register(src);
            Registration rd = to.register(dst);
            fill(src, 0, size, seed);
            int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {size}, new int[] {0});
            complete(p.sender(), send(p.sender(), rs, 0, size, 0), p.receiver(), rr);
            assertSameBytes(src, 0, dst, 0, size, "relayed message");
            rs.close();
            rd.close();
        }
    }

    @Test
    void hostileBytesAreDroppedWhileRelayedTrafficGoesOn() throws Exception {
        mesh = RelayMesh.line("127.66", 3);
        TcpProvider a = mesh.nodes.get(0);
        TcpProvider b = mesh.nodes.get(1);
        TcpProvider c = mesh.nodes.get(2);
        TcpTestSupport.Pair p = mesh.connect(a, mesh.listen(c));
        InetSocketAddress relay = endpoint(b, mesh.address(1, 2));
        long before = b.relay().dropped();
        // garbage instead of a request, a request cut short and left open, a request of a later version
        rawSocket(mesh.address(1, 1), relay, ByteBuffer.wrap("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes()));
        SocketChannel stalled = rawSocket(mesh.address(1, 1), relay, ByteBuffer.wrap(new byte[] {0x4A, 0x4D}));
        ByteBuffer future = RelayRequest.of(new InetSocketAddress(mesh.address(2, 3), 80), 8);
        future.put(4, (byte) 9);
        rawSocket(mesh.address(1, 1), relay, future);
        await("two bad requests dropped", () -> b.relay().dropped() >= before + 2);
        assertTrue(b.relay().lastDropReason() != null, "a reason is kept");
        // hostile datagrams at the route port of b
        long datagramsBefore = b.routes().dropped();
        try (DatagramChannel d = DatagramChannel.open()) {
            d.bind(new InetSocketAddress(mesh.address(1, 1), 0));
            InetSocketAddress port = new InetSocketAddress(mesh.address(1, 2), mesh.routePort);
            d.send(ByteBuffer.wrap(new byte[] {1, 2, 3}), port);
            ByteBuffer huge = ByteBuffer.allocate(3000);
            huge.putInt(0, 0x4A4D5254);
            d.send(huge, port);
            ByteBuffer lying = ByteBuffer.allocate(20);
            lying.putInt(0x4A4D5254).put((byte) 1).put((byte) 2).putShort((short) 0).putLong(7).put((byte) 16);
            d.send(lying.clear(), port);
        }
        await("three bad datagrams dropped", () -> b.routes().dropped() >= datagramsBefore + 3);
        // the relayed connection works on, and a new one is still accepted
        transfer(p, a, c, 1 << 20, 5);
        TcpTestSupport.Pair q = mesh.connect(a, mesh.listen(c));
        transfer(q, a, c, 70_001, 6);
        assertTrue(stalled.isOpen());
    }

    @Test
    void aRelayIsNotAnOpenProxy() throws Exception {
        mesh = RelayMesh.line("127.67", 3);
        TcpProvider b = mesh.nodes.get(1);
        mesh.connect(mesh.nodes.get(0), mesh.listen(mesh.nodes.get(2))); // routes are known
        try (ServerSocket outside = new ServerSocket(0, 5, InetAddress.getByName("127.99.0.1"))) {
            InetSocketAddress relay = endpoint(b, mesh.address(1, 2));
            long before = b.relay().dropped();
            rawSocket(mesh.address(1, 1), relay, RelayRequest.of(new InetSocketAddress("127.99.0.1",
                    outside.getLocalPort()), 8));
            await("a request for an address outside the mesh dropped", () -> b.relay().dropped() > before);
            assertTrue(b.relay().lastDropReason().contains("is not in the mesh"), b.relay().lastDropReason());
            // and a socket from outside the relay's link subnets is refused before it says anything
            long before2 = b.relay().dropped();
            rawSocket("127.99.0.2", relay, RelayRequest.of(new InetSocketAddress(mesh.address(2, 3), 80), 8));
            await("a socket from outside the mesh dropped", () -> b.relay().dropped() > before2);
            assertTrue(b.relay().lastDropReason().contains("outside this node's link subnets"),
                    b.relay().lastDropReason());
        }
    }

    @Test
    void theStaticMapOverridesDiscovery() throws Exception {
        // ring of 4: a reaches c through b (127.68.1.2) or d (127.68.4.4); both are one relay, discovery takes b
        RelayMesh ring = new RelayMesh("127.68");
        mesh = ring;
        TcpProvider a = ring.node(1, new int[] {4, 1}, Setting.ROUTES.property(), "127.68.2.0/24=127.68.4.4,"
                + "127.68.3.0/24=127.68.4.4");
        ring.node(2, new int[] {1, 2});
        TcpProvider c = ring.node(3, new int[] {2, 3});
        ring.node(4, new int[] {3, 4});
        ring.connect(a, ring.listen(c));
        assertTrue(ring.lastRoute.contains("via 127.68.4.4"), ring.lastRoute);
    }

    @Test
    void aStaticNeighbourOffTheLinksIsNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TcpTestSupport.provider(
                "127.69.1.1/24", Setting.ROUTES.property(), "127.69.3.0/24=127.69.9.9"));
        assertTrue(e.getMessage().contains("127.69.3.0/24=127.69.9.9") && e.getMessage().contains("JMESH_ROUTES"),
                e.getMessage());
    }

    @Test
    void noPathAtAllListsWhatTheTableKnows() throws Exception {
        mesh = RelayMesh.line("127.70", 3);
        TcpProvider a = mesh.nodes.get(0);
        mesh.connect(a, mesh.listen(mesh.nodes.get(2))); // discovery has run
        ListenHandle nowhere = new ListenHandle(ListenHandle.FLAG_TCP_PROVIDER, 42,
                List.of(new ListenAddress(IpPrefix.parse("127.70.9.3/24"), 4791, 0)));
        await("discovery settled", () -> !a.routes().settling());
        NoRouteException e = assertThrows(NoRouteException.class, () -> a.connect(nowhere));
        assertTrue(e.getMessage().contains("no route through other nodes")
                && e.getMessage().contains("neighbour 127.70.1.2") && e.getMessage().contains("127.70.2.2/24"),
                e.getMessage());
        assertEquals(1, a.routes().table().neighbourCount(System.nanoTime()));
    }

    @Test
    void withAMeshKeyRelayedConnectionsWorkAndAnUnsignedRequestIsDropped() throws Exception {
        RelayMesh keyed = new RelayMesh("127.78");
        mesh = keyed;
        String k = Setting.MESH_KEY.property();
        TcpProvider a = keyed.node(1, new int[] {1}, k, "the mesh's key");
        TcpProvider b = keyed.node(2, new int[] {1, 2}, k, "the mesh's key");
        TcpProvider c = keyed.node(3, new int[] {2}, k, "the mesh's key");
        TcpListener l = keyed.listen(c);
        TcpTestSupport.Pair p = keyed.connect(a, l);
        assertTrue(keyed.lastRoute.contains("via 127.78.1.2"), keyed.lastRoute);
        transfer(p, a, c, 1 << 20, 9);
        // a neighbour without the key asks b to relay to c's listener: dropped before b dials anything
        InetSocketAddress target = ListenHandle.decode(l.handle()).addresses().getFirst().socketAddress();
        long before = b.relay().dropped();
        ByteBuffer unsigned = ByteBuffer.allocate(RelayRequest.BYTES + 64); // what follows: a HELLO, say
        rawSocket(keyed.address(1, 7), endpoint(b, keyed.address(1, 2)), unsigned.put(RelayRequest.of(target, 8))
                .clear());
        await("the unsigned request dropped", () -> b.relay().dropped() > before);
        assertTrue(b.relay().lastDropReason().contains("not signed with this node's mesh key"),
                b.relay().lastDropReason());
        transfer(p, a, c, 70_001, 10); // the relayed connection goes on
    }
}
