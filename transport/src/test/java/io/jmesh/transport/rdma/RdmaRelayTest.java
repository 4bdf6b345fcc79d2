package io.jmesh.transport.rdma;

import io.jmesh.api.Connections;
import io.jmesh.api.Connector;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.IdleStrategy;
import io.jmesh.api.Listener;
import io.jmesh.api.PeerConnections;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;
import io.jmesh.testbed.TestbedEnv;
import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.NoRouteException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.rdma.RdmaTestbedSupport.STEP;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.assertResourcesBackTo;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.awaitDone;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.awaitRequest;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.barrier;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.closeAll;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.crc;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.expectedCrc;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.fill;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.seed;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Every node reaches every other in a mesh that is not full (line:3, a - b - c; ring:4 and longer lines too), through
 * the public API: all guests connect to all others both ways at once; pairs without a shared subnet go through a relay
 * node (RDMA READ from the sender, RDMA WRITE to the receiver, from chunks on the relay), or through two on line:4
 * (records pushed from the first relay to the second). Each ordered pair sends
 * checksummed messages of 0 B to 16 MiB, odd sizes among them, into receives larger than the message (the real size
 * must come back), and a grouped receive of three buffers; a peer no node can reach gets a clear error that says
 * what this node knows. Afterwards every verbs resource is back to where it was.
 */
@Tag("rdma")
class RdmaRelayTest {
    private static final long[] SIZES = {0, 1, 4097, (256 << 10) + 5, (4 << 20) + 1, 16 << 20};
    private static final long[] GROUP = {7, (1 << 20) + 9, 0};
    private static final int[] GROUP_TAGS = {100, 101, 102};
    private static final long SLACK = 64;
    private static final long HANDSHAKE_MS = 30_000;
    private static final long LIVENESS_MS = 10_000;

    @Test
    void everyNodeReachesEveryOtherThroughRelaysWithCheckedData() throws Exception {
        TestbedEnv.require();
        String topology = TestbedEnv.topology();
        assumeTrue(topology.startsWith("line:") || topology.startsWith("ring:"),
                "runs on line:N and ring:N, where some nodes share no link (this is " + topology + ")");
        String me = TestbedEnv.name();
        List<String> guests = Arrays.asList(TestbedEnv.get("TESTBED_GUESTS").split("\\s+"));
        List<String> neighbours = TestbedEnv.peers();
        int mine = guests.indexOf(me);
        Map<String, Long> before = RdmaTestbedSupport.rdmaResources();

        // a relayed handshake waits for the far listener's accept too: 30 s for four TCG guests on a small host.
        // Liveness well below the traffic's length: relayed connections must outlive it (they used to be pinged
        // end to end on TCP, and fail after one timeout); 10 s, since four TCG guests on a small host may stall.
        // Both grow with the guests (RdmaTestbedSupport.crowding)
        long scale = RdmaTestbedSupport.crowding();
        long livenessMs = LIVENESS_MS * scale;
        Fabric fabric = Fabric.open(new Context().provider("rdma").handshakeTimeoutMs(HANDSHAKE_MS * scale)
                .livenessTimeoutMs(livenessMs));
        List<AutoCloseable> open = new ArrayList<>();
        Arena arena = Arena.ofShared();
        boolean passed = false;
        try {
            Listener listener = fabric.listen();
            open.add(listener);
            RdmaTestbedSupport.publishHandle("relay-handle-" + me, listener.handle());
            Map<String, byte[]> handles = new HashMap<>();
            for (String g : guests) {
                if (!g.equals(me)) {
                    handles.put(g, RdmaTestbedSupport.awaitHandle("relay-handle-" + g));
                }
            }

            // 1. every other node, both ways at once (all start together: a listener answers only while its node
            //    polls accept); the non-neighbours through a relay
            barrier("relay-handles");
            PeerConnections<String> mesh = Connections.connectAll(fabric, listener, handles, STEP.multipliedBy(scale),
                    IdleStrategy.controlPlane());
            open.add(mesh);
            long connected = System.nanoTime();
            for (String p : mesh.peers()) {
                String route = mesh.route(p);
                System.out.println(me + " -> " + p + " over " + route);
                assertEquals(!neighbours.contains(p), route.contains(" via "), me + " -> " + p + ": " + route);
            }

            // 2. every receive posted first, one region per peer, each buffer larger than its message
            long per = 0;
            for (long s : SIZES) {
                per += s + SLACK;
            }
            for (long s : GROUP) {
                per += s + SLACK;
            }
            List<String> peers = new ArrayList<>(mesh.peers());
            MemorySegment recvMem = arena.allocate(per * peers.size(), 4096);
            Registration recvReg = fabric.register(recvMem);
            open.add(recvReg);
            int[][] reqs = new int[peers.size()][SIZES.length + 1];
            for (int p = 0; p < peers.size(); p++) {
                Receiver r = mesh.receiver(peers.get(p));
                long at = per * p;
                for (int k = 0; k < SIZES.length; k++) {
                    reqs[p][k] = r.irecv(1, new Registration[] {recvReg}, new long[] {at},
                            new long[] {SIZES[k] + SLACK}, new int[] {k});
                    assertTrue(reqs[p][k] >= 0, Status.describe(reqs[p][k]) + ": " + r.error());
                    at += SIZES[k] + SLACK;
                }
                long[] offsets = new long[GROUP.length];
                long[] sizes = new long[GROUP.length];
                for (int i = 0; i < GROUP.length; i++) {
                    offsets[i] = at;
                    sizes[i] = GROUP[i] + SLACK;
                    at += sizes[i];
                }
                reqs[p][SIZES.length] = r.irecv(GROUP.length, new Registration[] {recvReg, recvReg, recvReg},
                        offsets, sizes, GROUP_TAGS);
                assertTrue(reqs[p][SIZES.length] >= 0, Status.describe(reqs[p][SIZES.length]) + ": " + r.error());
            }

            // 3. send to every peer: single messages one after the other, then the group's three at once
            MemorySegment sendMem = arena.allocate(SIZES[SIZES.length - 1] + Arrays.stream(GROUP).sum(), 4096);
            Registration sendReg = fabric.register(sendMem);
            open.add(sendReg);
            for (String dest : peers) {
                Sender s = mesh.sender(dest);
                int d = guests.indexOf(dest);
                for (int k = 0; k < SIZES.length; k++) {
                    fill(sendMem, SIZES[k], seed(me, d, k));
                    long size = SIZES[k];
                    int tag = k;
                    int req = awaitRequest(() -> s.isend(sendReg, 0, size, tag), s, me + " -> " + dest + " #" + k);
                    awaitDone(() -> s.test(req), s, me + " -> " + dest + " #" + k);
                    assertEquals(size, s.size(req));
                }
                int[] group = new int[GROUP.length];
                long at = 0;
                for (int i = 0; i < GROUP.length; i++) {
                    fill(sendMem.asSlice(at), GROUP[i], seed(me, d, GROUP_TAGS[i]));
                    long off = at;
                    int g = i;
                    group[i] = awaitRequest(() -> s.isend(sendReg, off, GROUP[g], GROUP_TAGS[g]), s,
                            me + " -> " + dest + " group " + i);
                    at += GROUP[i];
                }
                for (int i = 0; i < GROUP.length; i++) {
                    int req = group[i];
                    awaitDone(() -> s.test(req), s, me + " -> " + dest + " group " + i);
                }
            }

            // 4. check what arrived from every peer: real sizes, every byte
            MemorySegment scratch = arena.allocate(SIZES[SIZES.length - 1], 8);
            for (int p = 0; p < peers.size(); p++) {
                String from = peers.get(p);
                Receiver r = mesh.receiver(from);
                long at = per * p;
                for (int k = 0; k < SIZES.length; k++) {
                    int req = reqs[p][k];
                    awaitDone(() -> r.test(req), r, from + " -> " + me + " #" + k);
                    assertEquals(SIZES[k], r.size(req, 0), from + " -> " + me + " #" + k);
                    assertEquals(expectedCrc(scratch, SIZES[k], seed(from, mine, k)),
                            crc(recvMem.asSlice(at), SIZES[k]), "bytes of " + from + " -> " + me + " #" + k);
                    at += SIZES[k] + SLACK;
                }
                int req = reqs[p][SIZES.length];
                awaitDone(() -> r.test(req), r, from + " -> " + me + " group");
                for (int i = 0; i < GROUP.length; i++) {
                    assertEquals(GROUP[i], r.size(req, i), from + " -> " + me + " group buffer " + i);
                    assertEquals(expectedCrc(scratch, GROUP[i], seed(from, mine, GROUP_TAGS[i])),
                            crc(recvMem.asSlice(at), GROUP[i]), "bytes of " + from + " -> " + me + " group " + i);
                    at += GROUP[i] + SLACK;
                }
            }
            System.out.println(me + ": checked " + (SIZES.length + GROUP.length) + " messages from each of " + peers
                    + " (" + peers.stream().filter(p -> !neighbours.contains(p)).toList() + " relayed)");
            long ran = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - connected);
            if (ran < 2 * livenessMs) {
                Thread.sleep(2 * livenessMs - ran); // the rest idle: past two timeouts in all
            }
            for (String p : peers) {
                assertEquals(null, mesh.sender(p).error(), me + " -> " + p + " after " + ran + " ms of traffic");
                assertEquals(null, mesh.receiver(p).error(), p + " -> " + me + " after " + ran + " ms of traffic");
            }
            System.out.println(me + ": traffic ran " + ran + " ms, liveness " + livenessMs + " ms; every connection "
                    + "up");
            // 5. a peer nobody reaches (asked last: while a connect waits for a route, this node accepts nothing)
            ListenHandle nowhere = new ListenHandle(0, 7, List.of(new ListenAddress(
                    IpPrefix.parse("192.168.250.9/24"), 4791, 0)));
            String why = noRoute(fabric, nowhere.encode());
            System.out.println(me + " -> nowhere: " + why);
            assertTrue(why.contains("192.168.250.9/24") && why.contains("route"), why);
            barrier("relay-done");
            passed = true;
        } finally {
            Exception closeFailure = closeAll(open);
            if (!passed) {
                closeAll(new ArrayList<>(List.of(arena, fabric)));
            } else if (closeFailure != null) {
                throw closeFailure;
            }
        }
        assertDoesNotThrow(fabric::close);
        arena.close();
        assertResourcesBackTo(before, "after the relayed and direct connections and the fabric were closed");
        barrier("relay-closed");
    }

    /** The error of a connect to {@code handle}: at once (NoRouteException) or, while routes settle, from poll. */
    private static String noRoute(Fabric fabric, byte[] handle) throws Exception {
        Connector c;
        try {
            c = fabric.connect(handle);
        } catch (NoRouteException e) {
            return e.getMessage();
        }
        try (c) {
            long end = System.nanoTime() + STEP.toNanos();
            while (System.nanoTime() - end < 0) {
                if (c.poll() != null) {
                    throw new AssertionError("a connect to an address nobody has succeeded: " + c.route());
                }
                Thread.sleep(20);
            }
        } catch (IllegalStateException e) {
            return e.getMessage();
        }
        throw new AssertionError("a connect to an address nobody has neither failed nor succeeded");
    }
}
