package io.jmesh.transport.rdma;

import io.jmesh.api.Connections;
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
import io.jmesh.transport.net.IpPrefix;
import io.jmesh.transport.net.ListenHandle;
import io.jmesh.transport.net.NoRouteException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static io.jmesh.transport.rdma.RdmaTestbedSupport.STEP;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.assertResourcesBackTo;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.awaitDone;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.awaitRequest;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.barrier;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.closeAll;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.crc;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.fill;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.seed;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Nodes in a line, a - b - c (line:3: a and c share no subnet), through the public API: every guest publishes its
 * listener's handle; a connect to a node that shares no subnet fails at once (in {@link Fabric#connect(byte[])},
 * before anything goes on the wire) with a {@link NoRouteException} whose message lists both sides' addresses, while
 * the neighbours connect both ways and exchange checksummed messages.
 */
@Tag("rdma")
class RdmaLineTest {
    private static final long SIZE = (1 << 20) + 3;

    @Test
    void nodesWithoutASharedSubnetFailAtOnceWithNoRouteWhileNeighboursConnect() throws Exception {
        TestbedEnv.require();
        assumeTrue(TestbedEnv.topology().equals("line:3"), "runs on the line:3 topology only (a - b - c)");
        String me = TestbedEnv.name();
        List<String> guests = Arrays.asList(TestbedEnv.get("TESTBED_GUESTS").split("\\s+"));
        List<String> neighbours = TestbedEnv.peers();
        List<String> myIps = TestbedEnv.devices().stream().map(d -> TestbedEnv.dev(d, "IP")).toList();
        Map<String, Long> before = RdmaTestbedSupport.rdmaResources();

        Fabric fabric = Fabric.open(new Context().provider("rdma"));
        assertEquals("rdma", fabric.provider());
        List<AutoCloseable> open = new ArrayList<>();
        Arena arena = Arena.ofShared();
        boolean passed = false;
        try {
            Listener listener = fabric.listen();
            open.add(listener);
            RdmaTestbedSupport.publishHandle("line-handle-" + me, listener.handle());
            MemorySegment sendBuf = arena.allocate(SIZE, 4096);
            MemorySegment recvBuf = arena.allocate(SIZE * neighbours.size(), 4096);
            Registration sendReg = fabric.register(sendBuf);
            open.add(sendReg);
            Registration recvReg = fabric.register(recvBuf);
            open.add(recvReg);

            // 1. every non-neighbour: refused at once, naming both sides' addresses
            Map<String, byte[]> handles = new HashMap<>();
            for (String g : guests) {
                if (!g.equals(me)) {
                    handles.put(g, RdmaTestbedSupport.awaitHandle("line-handle-" + g));
                }
            }
            int refused = 0;
            for (String g : guests) {
                if (g.equals(me) || neighbours.contains(g)) {
                    continue;
                }
                byte[] handle = handles.get(g);
                List<IpPrefix> theirs = ListenHandle.decode(handle).prefixes();
                NoRouteException e = assertThrows(NoRouteException.class, () -> fabric.connect(handle),
                        me + " -> " + g + ": no shared subnet, so connect must refuse at once");
                String msg = e.getMessage();
                System.out.println(me + " -> " + g + ": " + msg);
                for (String ip : myIps) {
                    assertTrue(msg.contains(ip), "the message must list this node's address " + ip + ": " + msg);
                }
                for (IpPrefix p : theirs) {
                    assertTrue(msg.contains(p.toString()), "the message must list the peer's " + p + ": " + msg);
                }
                assertEquals(theirs, e.peerAddresses());
                assertEquals(myIps.stream().sorted().toList(),
                        e.localAddresses().stream().map(p -> p.address().getHostAddress()).sorted().toList());
                refused++;
            }
            assertEquals(guests.size() - 1 - neighbours.size(), refused);

            // 2. every neighbour: connect both ways at once, then a checksummed message each way
            Map<String, byte[]> neighbourHandles = new HashMap<>();
            for (String n : neighbours) {
                neighbourHandles.put(n, handles.get(n));
            }
            PeerConnections<String> mesh = Connections.connectAll(fabric, listener, neighbourHandles, STEP,
                    IdleStrategy.controlPlane());
            open.add(mesh);
            Map<String, Sender> senders = mesh.senders();
            List<Receiver> receivers = new ArrayList<>(mesh.receivers().values());
            for (String n : mesh.peers()) {
                System.out.println(me + " -> " + n + " over " + mesh.route(n));
            }
            int[] reqs = new int[receivers.size()];
            for (int i = 0; i < receivers.size(); i++) {
                reqs[i] = receivers.get(i).irecv(1, new Registration[] {recvReg}, new long[] {SIZE * i},
                        new long[] {SIZE}, new int[] {1});
                assertTrue(reqs[i] >= 0, Status.describe(reqs[i]));
            }
            byte[] name = me.getBytes();
            fill(sendBuf, SIZE, seed(me, 0, 0));
            MemorySegment.copy(name, 0, sendBuf, JAVA_BYTE, 0, name.length);  // first bytes: the sender's name
            for (var e : senders.entrySet()) {
                Sender s = e.getValue();
                int req = awaitRequest(() -> s.isend(sendReg, 0, SIZE, 1), s, "message to " + e.getKey());
                awaitDone(() -> s.test(req), s, "message to " + e.getKey());
            }
            MemorySegment scratch = arena.allocate(SIZE, 8);
            List<String> from = new ArrayList<>();
            for (int i = 0; i < receivers.size(); i++) {
                Receiver r = receivers.get(i);
                int req = reqs[i];
                awaitDone(() -> r.test(req), r, "message from a neighbour");
                assertEquals(SIZE, r.size(req, 0));
                MemorySegment got = recvBuf.asSlice(SIZE * i, SIZE);
                String sender = new String(got.asSlice(0, 1).toArray(JAVA_BYTE));
                assertTrue(neighbours.contains(sender), "a message from " + sender + ", not a neighbour");
                fill(scratch, SIZE, seed(sender, 0, 0));
                MemorySegment.copy(sender.getBytes(), 0, scratch, JAVA_BYTE, 0, sender.length());
                assertEquals(crc(scratch, SIZE), crc(got, SIZE), "bytes of the message from " + sender);
                from.add(sender);
            }
            assertEquals(neighbours.stream().sorted().toList(), from.stream().sorted().toList());
            System.out.println(me + ": exchanged " + SIZE + "-byte messages with " + from + "; refused " + refused);
            barrier("line-done");
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
        assertResourcesBackTo(before, "after the line's connections and the fabric were closed");
        barrier("line-closed");
    }
}
