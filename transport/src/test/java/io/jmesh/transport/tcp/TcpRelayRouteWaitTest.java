package io.jmesh.transport.tcp;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.LocalLink;
import io.jmesh.transport.handshake.Frames;
import io.jmesh.transport.liveness.Liveness;
import io.jmesh.transport.security.MeshKey;
import io.jmesh.transport.route.RelayRequest;
import io.jmesh.transport.route.Adverts;
import io.jmesh.transport.route.RelayPolicy;
import io.jmesh.transport.route.RouteTable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.tcp.TcpTestSupport.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A TCP relay b whose route to a far subnet was lost moments ago (its neighbour c, the next relay, missed its
 * probes, as a starved guest does): a request for that subnet is held, not refused, and goes on to c once c is heard
 * again; it is refused, naming c, when c stays silent past the handshake timeout. The next relay is a plain server
 * socket here, so what b sends on is read byte for byte. (Before the hold, b refused such a request at once as "not in
 * the mesh", which failed a connect in testbed ring:8.)
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpRelayRouteWaitTest {
    private static final String NET = "127.71";
    private static final long EXPIRY_NANOS = TimeUnit.MILLISECONDS.toNanos(500); // remembered 5 s: past the timeout
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(3);

    private final LocalLink near = LocalLink.tcp(IpPrefix.parse(NET + ".1.2/24"), 0);
    private final LocalLink far = LocalLink.tcp(IpPrefix.parse(NET + ".2.2/24"), 0);
    private final InetSocketAddress target = new InetSocketAddress(ip(NET + ".3.4"), 5000);
    private ServerSocketChannel nextRelay;
    private RouteTable table;
    private Liveness liveness;
    private TcpRelay relay;
    private SocketChannel asker;

    private static InetAddress ip(String a) {
        try {
            return InetAddress.getByName(a);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @BeforeEach
    void setUp() throws Exception {
        nextRelay = ServerSocketChannel.open().bind(new InetSocketAddress(ip(NET + ".2.3"), 0));
        nextRelay.configureBlocking(false);
        table = new RouteTable(List.of(near, far), List.of(), EXPIRY_NANOS);
        heardC(System.nanoTime() - 2 * EXPIRY_NANOS); // c was heard, then missed its probes: lost for now
        liveness = Liveness.start(List.of(near.prefix(), far.prefix()), Duration.ofSeconds(30));
        relay = TcpRelay.bind(List.of(near, far), TIMEOUT_NANOS, 8, MeshKey.NONE, 1, false);
        relay.start(new RelayPolicy(table), liveness);
        asker = SocketChannel.open();
        asker.bind(new InetSocketAddress(ip(NET + ".1.1"), 0));
        asker.connect(new InetSocketAddress(near.prefix().address(), relay.ports().get(near.prefix().address())));
        asker.write(RelayRequest.of(target, 8));
        asker.write(Frames.hello(new byte[16], 0, new byte[] {1, 2, 3}));
    }

    private void heardC(long when) {
        int port = nextRelay.socket().getLocalPort();
        assertTrue(Adverts.heard(table, ip(NET + ".2.3"), 9, port, when, IpPrefix.parse(NET + ".2.3/24"),
                IpPrefix.parse(NET + ".3.3/24")));
    }

    @AfterEach
    void tearDown() throws Exception {
        if (asker != null) {
            asker.close();
        }
        if (relay != null) {
            relay.close();
        }
        if (liveness != null) {
            liveness.close();
        }
        nextRelay.close();
    }

    @Test
    void aRequestWhoseRouteComesBackGoesOnToTheNextRelay() throws Exception {
        Thread.sleep(500); // held: several of the relay's duty cycles with no route
        assertEquals(0, relay.dropped(), relay.lastDropReason());
        assertNull(nextRelay.accept(), "nothing is dialled while the route is lost");
        heardC(System.nanoTime());
        SocketChannel onward = awaitAccept();
        ByteBuffer preamble = ByteBuffer.allocate(RelayRequest.BYTES);
        onward.configureBlocking(true);
        while (preamble.hasRemaining() && onward.read(preamble) >= 0) {
            // the relay request b sends on comes first
        }
        onward.close();
        preamble.flip();
        assertNull(RelayRequest.problem(preamble, 0));
        assertEquals(target, RelayRequest.target(preamble, 0));
        assertEquals(7, RelayRequest.hopsLeft(preamble, 0), "one hop fewer");
        assertEquals(0, relay.dropped(), relay.lastDropReason());
    }

    @Test
    void aRequestWhoseRouteStaysLostIsRefusedAtTheDeadlineNamingTheNeighbour() throws Exception {
        await("the held request refused", () -> relay.dropped() == 1);
        String why = relay.lastDropReason();
        assertTrue(why.contains("came back within the handshake timeout") && why.contains("through " + NET + ".2.3"),
                why);
        asker.configureBlocking(true);
        assertEquals(-1, asker.read(ByteBuffer.allocate(1)), "b closed the asker's socket");
        assertNull(nextRelay.accept());
    }

    private SocketChannel awaitAccept() throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() - end < 0) {
            SocketChannel ch = nextRelay.accept();
            if (ch != null) {
                return ch;
            }
            Thread.sleep(10);
        }
        throw new AssertionError("b never dialled the next relay after its route came back");
    }
}
