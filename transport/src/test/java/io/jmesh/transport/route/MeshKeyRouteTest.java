package io.jmesh.transport.route;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.LocalLink;
import io.jmesh.transport.security.MeshKey;
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
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A host on a link subnet that is no mesh node answers probes with forged adverts ("I have a link on 127.77.9.0/24").
 * Without a mesh key it is believed (what docs/architecture.md says a neighbour can do); with one, it is dropped and
 * counted whatever it signs with, while the real neighbours, which share the key, are learned. Loopback only.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MeshKeyRouteTest {
    private static final InetAddress CLAIMED = address("127.77.9.3");

    private static InetAddress address(String a) {
        try {
            return InetAddress.getByName(a);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /** Answers every probe on 127.77.1.9's route port with an advert claiming 127.77.9.0/24, signed by {@code key}. */
    private static Thread forger(DatagramChannel ch, MeshKey key) {
        return Thread.ofPlatform().daemon().start(() -> {
            ByteBuffer in = ByteBuffer.allocate(RouteFrame.MAX_BYTES + 1);
            ByteBuffer out = ByteBuffer.allocate(RouteFrame.MAX_BYTES);
            List<RouteFrame.Link> claim = List.of(new RouteFrame.Link(IpPrefix.parse("127.77.1.9/24"), 4000),
                    new RouteFrame.Link(IpPrefix.parse("127.77.9.9/24"), 4000));
            try {
                while (ch.isOpen()) {
                    in.clear();
                    InetSocketAddress from = (InetSocketAddress) ch.receive(in);
                    in.flip();
                    byte[] nonce = new byte[MeshKey.NONCE_BYTES];
                    if (in.remaining() == RouteFrame.HEADER_BYTES + MeshKey.NONCE_BYTES) {
                        in.get(RouteFrame.HEADER_BYTES, nonce); // it echoes the nonce as a real node would
                    }
                    RouteFrame.advert(out, 42, claim, List.of(), key, nonce);
                    ch.send(out, from);
                }
            } catch (Exception closed) {
                // the test is over
            }
        });
    }

    private static RouteService node(String address, int port, MeshKey key) throws Exception {
        return RouteService.start(List.of(LocalLink.tcp(IpPrefix.parse(address), 0)), port, Map.of(), List.of(), key);
    }

    private static void runs(MeshKey nodes, MeshKey forger, boolean believed) throws Exception {
        int port = ThreadLocalRandom.current().nextInt(40_000, 50_000);
        try (DatagramChannel rogue = DatagramChannel.open(java.net.StandardProtocolFamily.INET)
                .bind(new InetSocketAddress(address("127.77.1.9"), port));
             RouteService a = node("127.77.1.1/24", port, nodes);
             RouteService b = node("127.77.1.2/24", port, nodes)) {
            forger(rogue, forger);
            Thread.sleep(RouteService.FAST_PHASE_MS);
            long now = System.nanoTime();
            assertTrue(a.table().knows(address("127.77.1.2"), now), "the real neighbour: " + a.describe());
            NextHop hop = a.table().nextHop(CLAIMED, now);
            if (believed) {
                assertNotNull(hop, "without a key the claim is taken: " + a.describe());
                assertEquals(address("127.77.1.9"), hop.neighbour());
            } else {
                assertNull(hop, "a forged advert was believed: " + a.describe());
                assertFalse(a.table().knows(address("127.77.1.9"), now), a.describe());
                assertTrue(a.dropped() > 0, "the forged adverts are counted as dropped");
            }
        }
    }

    @Test
    void withoutAKeyANeighbourThatClaimsASubnetIsBelieved() throws Exception {
        runs(MeshKey.NONE, MeshKey.NONE, true);
    }

    @Test
    void withAKeyAnUnsignedClaimIsDropped() throws Exception {
        runs(MeshKey.of("the mesh's key"), MeshKey.NONE, false);
    }

    @Test
    void withAKeyAClaimSignedWithAnotherKeyIsDropped() throws Exception {
        runs(MeshKey.of("the mesh's key"), MeshKey.of("a guess"), false);
    }

    @Test
    void aSignedAdvertDecodesAndATamperedOneDoesNot() {
        MeshKey key = MeshKey.of("k");
        byte[] nonce = new byte[MeshKey.NONCE_BYTES];
        nonce[3] = 7;
        ByteBuffer out = ByteBuffer.allocate(RouteFrame.MAX_BYTES);
        RouteFrame.advert(out, 5, List.of(new RouteFrame.Link(IpPrefix.parse("10.0.1.2/24"), 99)),
                List.of(new RouteFrame.Reach(IpPrefix.parse("10.0.2.0/24"), 1)), key, nonce);
        RouteFrame.Decoded d = RouteFrame.decode(out.duplicate(), key);
        assertNull(d.problem(), d.problem());
        assertEquals(7, d.nonce()[3]);
        assertEquals(1, d.reach().size());
        out.put(RouteFrame.HEADER_BYTES + RouteFrame.ENTRY_BYTES + 2, (byte) 3); // 10.0.2.0/24 reached in 3
        String problem = RouteFrame.decode(out.duplicate(), key).problem();
        assertTrue(problem != null && problem.contains("MAC"), String.valueOf(problem));
        assertTrue(RouteFrame.decode(out.duplicate(), MeshKey.NONE).problem().contains("JMESH_MESH_KEY"));
    }
}
