package io.jmesh.transport.rdma;

import io.jmesh.api.Connector;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.Listener;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;
import io.jmesh.testbed.TestbedEnv;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

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
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A verbs sender behind relays closes gracefully (docs/api.md, "When the sender closes"), as a direct one does: the
 * first node of a line sends messages to the last through the relay node(s) (line:3: one relay, pulled by RDMA READ;
 * line:4: two, the first pushing records to the second), waits until each is reported done, and closes at once,
 * while the relays are still writing the large ones on. Every message arrives whole, and the receiver then sees the
 * connection CLOSED, never FAILED: the goodbye travelled behind the last message. The relays end the relayed
 * connection without a failure, and every verbs resource is back afterwards.
 */
@Tag("rdma")
class RdmaRelayedCloseTest {
    /** Small ones inline, one pulled in several chunks, and a large last one the relays are still moving at close. */
    private static final long[] SIZES = {1000, 4096, (256 << 10) + 3, (4 << 20) + 1};

    @Test
    void aRelayedSendersCloseDeliversEverySendReportedDoneThenEndsClosed() throws Exception {
        TestbedEnv.require();
        String topology = TestbedEnv.topology();
        assumeTrue(topology.startsWith("line:"), "runs on line:N, whose ends reach each other only through relays "
                + "(this is " + topology + ")");
        String me = TestbedEnv.name();
        List<String> guests = Arrays.asList(TestbedEnv.get("TESTBED_GUESTS").split("\\s+"));
        String first = guests.getFirst();
        String last = guests.getLast();
        Map<String, Long> before = RdmaTestbedSupport.rdmaResources();
        long scale = RdmaTestbedSupport.crowding();
        // the first connect of cold JVMs through two relays on TCG guests: 30 s was not enough on a loaded host
        Fabric fabric = Fabric.open(new Context().provider("rdma").handshakeTimeoutMs(90_000 * scale));
        Arena arena = Arena.ofShared();
        List<AutoCloseable> open = new ArrayList<>();
        long total = Arrays.stream(SIZES).sum();
        try {
            Listener listener = fabric.listen();
            open.add(listener);
            RdmaTestbedSupport.publishHandle("close-handle-" + me, listener.handle());
            MemorySegment mem = arena.allocate(total, 4096);
            Registration reg = fabric.register(mem);
            open.add(reg);
            barrier("close-handles");
            if (me.equals(first)) {
                Sender s = connect(fabric, RdmaTestbedSupport.awaitHandle("close-handle-" + last));
                open.add(s);
                barrier("close-receives-posted");
                long at = 0;
                for (int k = 0; k < SIZES.length; k++) {
                    fill(mem.asSlice(at), SIZES[k], seed(me, 0, k));
                    long off = at;
                    long size = SIZES[k];
                    int tag = k;
                    int req = awaitRequest(() -> s.isend(reg, off, size, tag), s, me + " -> " + last + " #" + k);
                    awaitDone(() -> s.test(req), s, me + " -> " + last + " #" + k);
                    at += SIZES[k];
                }
                s.close();                                 // at once: the relays still move the last message
                System.out.println(me + ": " + SIZES.length + " sends reported done, sender closed");
            } else if (me.equals(last)) {
                Receiver r = accept(listener);
                open.add(r);
                int[] reqs = new int[SIZES.length];
                long at = 0;
                for (int k = 0; k < SIZES.length; k++) {
                    reqs[k] = r.irecv(reg, at, SIZES[k], k);
                    assertTrue(reqs[k] >= 0, Status.describe(reqs[k]) + ": " + r.error());
                    at += SIZES[k];
                }
                barrier("close-receives-posted");
                MemorySegment scratch = arena.allocate(SIZES[SIZES.length - 1], 8);
                at = 0;
                for (int k = 0; k < SIZES.length; k++) {
                    int req = reqs[k];
                    awaitDone(() -> r.test(req), r, first + " -> " + me + " #" + k);
                    assertEquals(SIZES[k], r.size(req, 0), "size of #" + k);
                    assertEquals(expectedCrc(scratch, SIZES[k], seed(first, 0, k)), crc(mem.asSlice(at), SIZES[k]),
                            "bytes of #" + k);
                    at += SIZES[k];
                }
                int after = r.irecv(reg, 0, 4096, 99);
                int t = after;
                long end = System.nanoTime() + STEP.toNanos();
                while (after >= 0 && (t = r.test(after)) == 0 && System.nanoTime() - end < 0) {
                    Thread.sleep(1);
                }
                assertEquals(Status.CLOSED, t, "a receive after the relayed sender closed and everything it sent "
                        + "arrived: " + Status.describe(t) + ": " + r.error());
                System.out.println(me + ": " + SIZES.length + " messages whole through relays, then CLOSED: "
                        + r.error());
            } else {
                barrier("close-receives-posted");          // a relay: its fabric carries the connection meanwhile
            }
            barrier("close-done");
        } finally {
            Exception failure = closeAll(open);
            closeAll(new ArrayList<>(List.of(fabric, arena)));
            if (failure != null) {
                throw failure;
            }
        }
        assertResourcesBackTo(before, "after the relayed connection ended and the fabric closed");
        barrier("close-closed");
    }

    private static Sender connect(Fabric fabric, byte[] handle) throws Exception {
        Connector c = fabric.connect(handle);
        long end = System.nanoTime() + STEP.toNanos();
        Sender s;
        while ((s = c.poll()) == null) {
            assertTrue(System.nanoTime() - end < 0, "no connection through the relays within " + STEP);
            Thread.sleep(1);
        }
        return s;
    }

    private static Receiver accept(Listener listener) throws Exception {
        long end = System.nanoTime() + STEP.toNanos();
        Receiver r;
        while ((r = listener.accept()) == null) {
            assertTrue(System.nanoTime() - end < 0, "no connection from the first node within " + STEP);
            Thread.sleep(1);
        }
        return r;
    }
}
