package io.jmesh.transport.route;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.LocalLink;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * How often route discovery probes a link: the whole subnet while a fabric starts, then only the neighbours it knows
 * (a host that never answers stops being probed), and a neighbour that starts later is probed back when its own
 * probe arrives, so it is known long before the next sweep. Loopback subnets, no RDMA device needed.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RouteServiceTest {
    private static int port() {
        return ThreadLocalRandom.current().nextInt(40_000, 50_000);
    }

    /** A socket on the route port of an address nobody runs jmesh on: it counts the probes that reach it. */
    private static DatagramChannel sniffer(String address, int port) throws Exception {
        DatagramChannel ch = DatagramChannel.open(java.net.StandardProtocolFamily.INET);
        ch.bind(new InetSocketAddress(InetAddress.getByName(address), port));
        ch.configureBlocking(false);
        return ch;
    }

    private static int drain(DatagramChannel ch) throws Exception {
        ByteBuffer in = ByteBuffer.allocate(RouteFrame.MAX_BYTES + 1);
        int n = 0;
        while (true) {
            in.clear();
            if (ch.receive(in) == null) {
                return n;
            }
            in.flip();
            RouteFrame.Decoded d = RouteFrame.decode(in);
            assertEquals(RouteFrame.PROBE, d.type(), "only probes reach the route port of a silent host");
            n++;
        }
    }

    @Test
    void theSubnetIsSweptWhileStartingThenOnlyKnownNeighboursAreProbed() throws Exception {
        int port = port();
        try (DatagramChannel silent = sniffer("127.75.1.9", port);
             RouteService a = RouteService.start(List.of(LocalLink.tcp(IpPrefix.parse("127.75.1.1/24"), 0)), port,
                     Map.of(), List.of());
             RouteService b = RouteService.start(List.of(LocalLink.tcp(IpPrefix.parse("127.75.1.2/24"), 0)), port,
                     Map.of(), List.of())) {
            Thread.sleep(RouteService.FAST_PHASE_MS + 2 * RouteService.FAST_ROUND_MS);
            int starting = drain(silent);
            assertTrue(starting >= 2, "both sweep the subnet while they start, each round: " + starting + " probes");
            long now = System.nanoTime();
            assertTrue(a.table().knows(InetAddress.getByName("127.75.1.2"), now), a.describe());
            assertTrue(b.table().knows(InetAddress.getByName("127.75.1.1"), now), b.describe());

            Thread.sleep(3 * RouteService.SLOW_ROUND_MS);
            assertEquals(0, drain(silent), "after the first " + RouteService.FAST_PHASE_MS + " ms a host that never "
                    + "answered is left alone until the next sweep");
            now = System.nanoTime();
            assertTrue(a.table().knows(InetAddress.getByName("127.75.1.2"), now),
                    "known neighbours are still probed, so they do not expire: " + a.describe());
            assertTrue(b.table().knows(InetAddress.getByName("127.75.1.1"), now), b.describe());
        }
    }

    @Test
    void aNeighbourThatStartsLaterIsProbedBackAtOnce() throws Exception {
        int port = port();
        try (RouteService early = RouteService.start(List.of(LocalLink.tcp(IpPrefix.parse("127.76.1.1/24"), 0)),
                port, Map.of(), List.of())) {
            Thread.sleep(RouteService.FAST_PHASE_MS + RouteService.SLOW_ROUND_MS);
            InetAddress late = InetAddress.getByName("127.76.1.2");
            assertFalse(early.table().knows(late, System.nanoTime()));
            try (RouteService b = RouteService.start(List.of(LocalLink.tcp(IpPrefix.parse("127.76.1.2/24"), 0)),
                    port, Map.of(), List.of())) {
                // well before the early one's next sweep (SWEEP_EVERY_MS after its fast phase)
                long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RouteService.SWEEP_EVERY_MS / 3);
                while (!early.table().knows(late, System.nanoTime())) {
                    if (System.nanoTime() - end > 0) {
                        fail("the early node did not learn the late one from its probe: " + early.describe());
                    }
                    Thread.sleep(20);
                }
                assertTrue(b.table().knows(InetAddress.getByName("127.76.1.1"), System.nanoTime()), b.describe());
            }
        }
    }
}
