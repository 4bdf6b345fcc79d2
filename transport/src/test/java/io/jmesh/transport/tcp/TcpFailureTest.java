package io.jmesh.transport.tcp;

import io.jmesh.api.CloseHelper;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.api.Setting;
import io.jmesh.testing.LogCapture;
import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.NoRouteException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.tcp.TcpTestSupport.assertSameBytes;
import static io.jmesh.transport.tcp.TcpTestSupport.await;
import static io.jmesh.transport.tcp.TcpTestSupport.complete;
import static io.jmesh.transport.tcp.TcpTestSupport.connect;
import static io.jmesh.transport.tcp.TcpTestSupport.fill;
import static io.jmesh.transport.tcp.TcpTestSupport.probeFailed;
import static io.jmesh.transport.tcp.TcpTestSupport.send;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TCP provider when things go wrong, over loopback: an end that closes mid-transfer, a provider closed with
 * connections open, hostile clients on the data port, and the errors of a connect that cannot work (each naming the
 * cause and the fix). The data path itself is in {@link TcpProviderTest} and the contract suite
 * ({@code io.jmesh.api.contract}). Nothing here measures speed; every wait is a hang guard.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpFailureTest {
    private static final long MIB = 1 << 20;

    private final List<AutoCloseable> cleanup = new ArrayList<>();
    private Arena arena;

    @BeforeEach
    void setUp() {
        arena = Arena.ofShared();
    }

    @AfterEach
    void tearDown() throws Exception {
        CloseHelper.closeAll(cleanup.reversed());
        arena.close();
    }

    private TcpProvider provider(String addresses, String... extra) {
        TcpProvider p = TcpTestSupport.provider(addresses, extra);
        cleanup.add(p);
        return p;
    }

    @Test
    void senderClosingMidTransferFailsTheReceiverWithAClearError() throws Exception {
        TcpProvider a = provider("127.0.101.2/24");
        TcpProvider b = provider("127.0.101.3/24");
        TcpTestSupport.Pair p = connect(a, b.listen());
        long n = 64 * MIB;
        Registration rs = a.register(arena.allocate(n, 4096));
        Registration rd = b.register(arena.allocate(n, 4096));
        int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {n}, new int[] {1});
        int sr = send(p.sender(), rs, 0, n, 1);
        assertTrue(sr >= 0);
        for (int i = 0; i < 50; i++) {
            assertEquals(0, p.sender().test(sr), "64 MiB cannot all fit in the socket buffers");
        }
        p.sender().close();
        assertEquals(Status.CLOSED, p.sender().test(sr));
        assertEquals(Status.CLOSED, p.sender().isend(rs, 0, 1, 1));
        int[] t = new int[1];
        await("the receiver notices", () -> (t[0] = p.receiver().test(rr)) != 0);
        assertEquals(Status.FAILED, t[0]);
        String error = p.receiver().error();
        assertNotNull(error);
        assertTrue(error.startsWith("connection to 127.0.101.2:") && error.contains(" lost: ")
                && error.endsWith("the peer process died or closed the connection"), error);
        assertEquals(Status.FAILED, p.receiver().irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {1},
                new int[] {2}), "later calls fail too");
        assertEquals(Status.FAILED, p.receiver().test(rr));
    }

    @Test
    void dataSentBeforeTheSenderClosesStillArrives() throws Exception {
        TcpProvider a = provider("127.0.101.2/24");
        TcpProvider b = provider("127.0.101.3/24");
        TcpTestSupport.Pair p = connect(a, b.listen());
        long n = MIB + 3;
        MemorySegment src = arena.allocate(n);
        MemorySegment dst = arena.allocate(n);
        fill(src, 0, n, 8);
        Registration rs = a.register(src);
        Registration rd = b.register(dst);
        int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {n}, new int[] {0});
        int sr = send(p.sender(), rs, 0, n, 0);
        await("the send completes locally", () -> p.sender().test(sr) == 1);
        try (LogCapture log = new LogCapture(DataConnection.class)) {
            p.sender().close();
            int[] t = new int[1];
            await("the receive completes", () -> (t[0] = p.receiver().test(rr)) != 0);
            assertEquals(1, t[0], "a message wholly sent before the close arrives: " + p.receiver().error());
            assertSameBytes(src, 0, dst, 0, n, "message");
            int q = p.receiver().irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {n}, new int[] {1});
            await("the receiver then sees the close", () -> (t[0] = p.receiver().test(q)) != 0);
            assertEquals(Status.CLOSED, t[0], "an orderly close is CLOSED, not FAILED: " + p.receiver().error());
            assertTrue(p.receiver().error().contains("was closed by the peer"), p.receiver().error());
            assertTrue(log.lines().stream().noneMatch(l -> l.startsWith("WARN")), "an orderly close is no WARN: "
                    + log.lines());
            assertTrue(log.lines().stream().anyMatch(l -> l.startsWith("INFO") && l.contains("the peer closed it")),
                    String.valueOf(log.lines()));
        }
    }

    /** Tests the receive posted by a previous probe, if any; true once the connection has failed. */
    @Test
    void receiverClosingMidTransferFailsTheSenderWithAClearError() throws Exception {
        TcpProvider a = provider("127.0.101.2/24");
        TcpProvider b = provider("127.0.101.3/24");
        TcpTestSupport.Pair p = connect(a, b.listen());
        long n = 64 * MIB;
        Registration rs = a.register(arena.allocate(n, 4096));
        Registration rd = b.register(arena.allocate(n, 4096));
        int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {n}, new int[] {1});
        int sr = send(p.sender(), rs, 0, n, 1);
        assertTrue(sr >= 0);
        for (int i = 0; i < 50; i++) {
            assertEquals(0, p.sender().test(sr), "64 MiB cannot all fit in the socket buffers");
        }
        p.receiver().close();
        assertEquals(Status.CLOSED, p.receiver().test(rr));
        int[] t = new int[1];
        await("the sender notices", () -> (t[0] = p.sender().test(sr)) != 0);
        assertEquals(Status.FAILED, t[0]);
        String error = p.sender().error();
        assertTrue(error != null && error.startsWith("connection to 127.0.101.3:") && error.contains(" lost: ")
                && error.endsWith("the peer process died or closed the connection"), String.valueOf(error));
        assertEquals(Status.FAILED, p.sender().isend(rs, 0, 1, 2));
    }

    @Test
    void receiverClosingWhileTheSenderWaitsFailsTheSender() throws Exception {
        // the eager path off: the send must wait for the receive
        TcpProvider a = provider("127.0.101.2/24", Setting.TCP_EAGER_THRESHOLD.property(), "0");
        TcpProvider b = provider("127.0.101.3/24");
        TcpTestSupport.Pair p = connect(a, b.listen());
        Registration rs = a.register(arena.allocate(100));
        assertEquals(Status.NOT_READY, p.sender().isend(rs, 0, 100, 0));
        p.receiver().close();
        int[] t = new int[1];
        await("the sender notices", () -> (t[0] = p.sender().isend(rs, 0, 100, 0)) != Status.NOT_READY);
        assertEquals(Status.FAILED, t[0]);
        assertTrue(p.sender().error().contains("lost: the peer closed the connection"), p.sender().error());
    }

    @Test
    void closingTheProviderClosesItsConnectionsAndListeners() throws Exception {
        TcpProvider a = provider("127.0.101.2/24");
        TcpProvider b = provider("127.0.101.3/24");
        TcpListener l = b.listen();
        TcpTestSupport.Pair p = connect(a, l);
        Registration rd = b.register(arena.allocate(100));
        int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {100}, new int[] {0});
        Registration rs = a.register(arena.allocate(1));
        a.close();
        assertEquals(Status.CLOSED, p.sender().isend(rs, 0, 1, 0));
        String why = assertThrows(IllegalStateException.class, () -> a.register(arena.allocate(1))).getMessage();
        assertTrue(why.contains("closed"), why);
        int[] t = new int[1];
        await("the receiver notices", () -> (t[0] = p.receiver().test(rr)) != 0);
        assertEquals(Status.CLOSED, t[0], "closing the provider closes its senders in order: " + p.receiver().error());
        b.close();
        assertThrows(IllegalStateException.class, l::accept);
        assertThrows(IllegalStateException.class, b::listen);
    }

    /** A poll loop on a closed connector must end: every poll after close throws, saying so. */
    @Test
    void pollAfterCloseOrFailureThrowsEveryTime() throws Exception {
        TcpProvider a = provider("127.0.101.2/24", Setting.HANDSHAKE_TIMEOUT_MS.property(), "2000");
        TcpProvider b = provider("127.0.101.3/24");
        TcpListener l = b.listen();
        TcpConnect c = a.connect(l.listenHandle());
        c.close();
        for (int i = 0; i < 3; i++) {
            String why = assertThrows(IllegalStateException.class, c::poll).getMessage();
            assertTrue(why.contains("closed before it completed"), why);
        }
        b.close();
        TcpConnect failed = a.connect(l.listenHandle());
        String first = assertThrows(IllegalStateException.class, () -> {
            while (failed.poll() == null) {
                Thread.onSpinWait();
            }
        }).getMessage();
        assertEquals(first, assertThrows(IllegalStateException.class, failed::poll).getMessage());
    }

    @Test
    void hostileClientsOnTheDataPortAreDroppedWithoutDisturbingGoodConnections() throws Exception {
        TcpProvider a = provider("127.0.101.2/24");
        TcpProvider b = provider("127.0.101.3/24", Setting.HANDSHAKE_TIMEOUT_MS.property(), "1000");
        TcpListener l = b.listen();
        TcpTestSupport.Pair good = connect(a, l);
        int port = l.dataPort(InetAddress.getByName("127.0.101.3"));
        assertTrue(port > 0);
        InetSocketAddress dataPort = new InetSocketAddress("127.0.101.3", port);
        List<SocketChannel> hostile = new ArrayList<>();
        // garbage
        SocketChannel garbage = SocketChannel.open(dataPort);
        byte[] junk = new byte[64];
        new java.util.Random(1).nextBytes(junk);
        garbage.write(ByteBuffer.wrap(junk));
        hostile.add(garbage);
        // a well-formed header with a wrong token
        SocketChannel wrongToken = SocketChannel.open(dataPort);
        wrongToken.write(new AttachHeader(0, 4, new byte[16]).encode());
        hostile.add(wrongToken);
        // half-open: connects and says nothing, or part of a header
        SocketChannel silent = SocketChannel.open(dataPort);
        hostile.add(silent);
        SocketChannel partial = SocketChannel.open(dataPort);
        partial.write(ByteBuffer.wrap(new byte[] {0x4A, 0x4D, 0x54}));
        hostile.add(partial);
        for (SocketChannel h : hostile) {
            h.configureBlocking(false);
        }
        // a second good connection while they are around
        TcpTestSupport.Pair second = connect(a, l);
        // both good connections carry data
        MemorySegment src = arena.allocate(MIB + 3);
        MemorySegment dst = arena.allocate(2 * (MIB + 3));
        fill(src, 0, MIB + 3, 42);
        Registration rs = a.register(src);
        Registration rd = b.register(dst);
        for (TcpTestSupport.Pair p : List.of(good, second)) {
            long off = p == good ? 0 : MIB + 3;
            int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {off}, new long[] {MIB + 3},
                    new int[] {0});
            int sr = send(p.sender(), rs, 0, MIB + 3, 0);
            complete(p.sender(), sr, p.receiver(), rr);
            assertSameBytes(src, 0, dst, off, MIB + 3, "good connection");
        }
        // every hostile socket is closed by the listener (the silent ones at their deadline)
        ByteBuffer sink = ByteBuffer.allocate(64);
        await("hostile sockets dropped", () -> {
            assertNull(l.accept(), "no connection comes out of hostile sockets");
            for (SocketChannel h : hostile) {
                if (!closedByPeer(h, sink)) {
                    return false;
                }
            }
            return true;
        });
        assertTrue(l.droppedDataSockets() >= 4, "dropped " + l.droppedDataSockets());
        assertNotNull(l.lastDropReason());
        for (SocketChannel h : hostile) {
            h.close();
        }
        assertNull(good.sender().error());
        assertNull(good.receiver().error());
    }

    private static boolean closedByPeer(SocketChannel ch, ByteBuffer sink) {
        try {
            sink.clear();
            return ch.read(sink) < 0;
        } catch (IOException e) {
            return true; // reset
        }
    }

    @Test
    void aHandleFromTheRdmaProviderIsRefusedWithTheFix() {
        TcpProvider a = provider("127.0.101.2/24");
        ListenHandle rdma = new ListenHandle(0, 42, List.of(new ListenAddress(IpPrefix.parse("127.0.101.3/24"),
                4791, 0)));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.connect(rdma));
        assertTrue(e.getMessage().contains("the peer listens with the rdma provider")
                && e.getMessage().contains("set JMESH_PROVIDER the same on both nodes"), e.getMessage());
    }

    @Test
    void noSharedSubnetIsNoRoute() {
        // route discovery off: with it on, a connect made while discovery settles waits for a route (TcpRelayTest)
        TcpProvider a = provider("127.0.101.2/24", io.jmesh.api.Setting.ROUTE_PORT.property(), "0");
        ListenHandle other = new ListenHandle(ListenHandle.FLAG_TCP_PROVIDER, 42,
                List.of(new ListenAddress(IpPrefix.parse("127.0.77.3/24"), 4791, 0)));
        NoRouteException e = assertThrows(NoRouteException.class, () -> a.connect(other));
        assertTrue(e.getMessage().contains("no shared subnet"), e.getMessage());
    }

    @Test
    void aConfiguredAddressThatIsNotOnThisHostIsNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> provider("127.0.101.2/24,203.0.113.77/24"));
        assertTrue(e.getMessage().contains("203.0.113.77/24") && e.getMessage().contains("ip addr"), e.getMessage());
    }

    @Test
    void aFailedConnectNamesTheCause() throws Exception {
        TcpProvider a = provider("127.0.101.2/24");
        TcpProvider b = provider("127.0.101.3/24");
        TcpListener l = b.listen();
        ListenHandle h = l.listenHandle();
        l.close();
        TcpConnect c = a.connect(h);
        IllegalStateException[] e = new IllegalStateException[1];
        await("the connect fails", () -> {
            try {
                return c.poll() != null;
            } catch (IllegalStateException x) {
                e[0] = x;
                return true;
            }
        });
        assertNotNull(e[0], "a connect to a closed listener fails");
        assertTrue(e[0].getMessage().contains("127.0.101.3"), e[0].getMessage());
    }
}
