package io.jmesh.transport.rdma;

import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.testbed.TestbedEnv;
import io.jmesh.api.ListenHandle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
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
import static io.jmesh.transport.rdma.RdmaTestbedSupport.failureBound;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.fill;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.seed;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Closing one end of a verbs connection while transfers are in flight (pair; both guests play both roles at once,
 * each towards the other): the closed end answers {@link Status#CLOSED} at once, the other end sees
 * {@link Status#FAILED} with an error naming the cause within a deadline derived from the QP timeout and retry count
 * instead of hanging, and the provider afterwards still makes working connections and closes without EBUSY.
 */
@Tag("rdma")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RdmaCloseInFlightTest {
    private static final long BIG = 16L << 20;
    private static final long SMALL = 256 * 1024;

    private static String me;
    private static String peer;
    private static Map<String, Long> before;
    private static RdmaProvider provider;
    private static RdmaListener listener;
    private static ListenHandle peerHandle;
    private static Arena arena;
    private static Registration sendReg;
    private static Registration recvReg;
    private static MemorySegment sendBuf;
    private static MemorySegment recvBuf;
    private static final List<AutoCloseable> connections = new ArrayList<>();

    @BeforeAll
    static void open() throws Exception {
        TestbedEnv.require();
        assumeTrue(TestbedEnv.topology().equals("pair"), "runs on the pair topology only (two guests, one link)");
        me = TestbedEnv.name();
        peer = TestbedEnv.peers().getFirst();
        before = RdmaTestbedSupport.rdmaResources();
        provider = RdmaProvider.open(RdmaTestbedSupport.failureContext());
        listener = provider.listen();
        RdmaTestbedSupport.publishHandle("close-handle-" + me, listener.handle());
        arena = Arena.ofShared();
        sendBuf = arena.allocate(2 * BIG, 4096);
        recvBuf = arena.allocate(8 * BIG, 4096);
        sendReg = provider.register(sendBuf);
        recvReg = provider.register(recvBuf);
        peerHandle = RdmaTestbedSupport.awaitListenHandle("close-handle-" + peer);
    }

    @AfterAll
    static void closeWhatIsLeft() {
        closeAll(connections);
        List<AutoCloseable> rest = new ArrayList<>();
        for (AutoCloseable c : new AutoCloseable[] {arena, provider, listener, recvReg, sendReg}) {
            if (c != null) {
                rest.add(c);
            }
        }
        closeAll(rest);
    }

    /** {@code n} connections to the peer and {@code n} from it, set up together; the receivers in arrival order. */
    private static void connect(int n, List<CoreSender> senders, List<CoreReceiver> receivers) throws Exception {
        List<RdmaConnect> connects = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            RdmaConnect c = provider.connect(peerHandle);
            connections.add(c);
            connects.add(c);
            senders.add(null);
        }
        long deadline = System.nanoTime() + STEP.toNanos();
        int done = 0;
        while (done < n || receivers.size() < n) {
            for (int i = 0; i < n; i++) {
                if (senders.get(i) == null) {
                    CoreSender s = connects.get(i).poll();
                    if (s != null) {
                        connections.add(s);
                        senders.set(i, s);
                        done++;
                    }
                }
            }
            CoreReceiver r = listener.accept();
            if (r != null) {
                connections.add(r);
                receivers.add(r);
            }
            if (System.nanoTime() > deadline) {
                fail("connections not up after " + STEP.toSeconds() + " s: " + done + " connects, "
                        + receivers.size() + " accepts of " + n);
            }
            Thread.onSpinWait();
        }
    }

    /** Tests the requests round-robin until one fails; returns that status, or fails the test after the bound. */
    private static int awaitFailure(CoreReceiver r, int[] requests, String what) {
        Duration bound = failureBound();
        long start = System.nanoTime();
        boolean[] completed = new boolean[requests.length];
        while (true) {
            for (int i = 0; i < requests.length; i++) {
                if (completed[i]) {
                    continue;
                }
                int t = r.test(requests[i]);
                if (t == 1) {
                    completed[i] = true;
                } else if (t < 0) {
                    System.out.printf("%s: %s: %s after %d ms (receive %d): %s%n", me, what, Status.describe(t),
                            (System.nanoTime() - start) / 1_000_000, i, r.error());
                    return t;
                }
            }
            if (System.nanoTime() - start > bound.toNanos()) {
                fail(what + ": no failure reported within " + bound.toSeconds() + " s (QP timeout "
                        + RdmaTestbedSupport.IB_TIMEOUT + ", retry count " + RdmaTestbedSupport.IB_RETRY
                        + "): the receiver hangs");
            }
            Thread.onSpinWait();
        }
    }

    private static void assertNamesCause(String error, String what) {
        assertNotNull(error, what + ": FAILED without an error()");
        assertTrue(error.contains("failed") && error.contains("peer") && error.contains("rxe"),
                what + ": the error must say what failed, on which device, and why: " + error);
    }

    /**
     * Each guest sends two 16 MiB messages and closes its sender while both are in flight; the receiver in the other
     * guest, with eight receives posted, must report the connection failed rather than wait forever.
     */
    @Test
    @Order(1)
    void senderClosedWithRequestsInFlightAnswersClosedAndThePeersReceiverFails() throws Exception {
        List<CoreSender> senders = new ArrayList<>();
        List<CoreReceiver> receivers = new ArrayList<>();
        connect(1, senders, receivers);
        CoreSender s = senders.getFirst();
        CoreReceiver r = receivers.getFirst();
        int[] recvs = new int[8];
        for (int k = 0; k < recvs.length; k++) {
            recvs[k] = r.irecv(1, new Registration[] {recvReg}, new long[] {k * BIG}, new long[] {BIG},
                    new int[] {k});
            assertTrue(recvs[k] >= 0, Status.describe(recvs[k]));
        }
        int[] sends = new int[2];
        for (int k = 0; k < sends.length; k++) {
            long off = k * BIG;
            int tag = k;
            sends[k] = awaitRequest(() -> s.isend(sendReg, off, BIG, tag), s, "isend " + k);
        }
        // 16 MiB takes about a second on the testbed's emulated link: both are certainly still in flight here
        assertEquals(0, s.test(sends[1]), "the second 16 MiB message must still be in flight");
        s.close();
        for (int req : sends) {
            assertEquals(Status.CLOSED, s.test(req), "test() of a request of a closed sender");
        }
        assertEquals(Status.CLOSED, s.isend(sendReg, 0, 1, 9), "isend() on a closed sender");

        int failed = awaitFailure(r, recvs, "receiver whose peer closed its sender mid-transfer");
        assertEquals(Status.FAILED, failed, "a receive whose sender went away");
        assertNamesCause(r.error(), "receiver whose sender closed");
        assertEquals(Status.FAILED, r.irecv(1, new Registration[] {recvReg}, new long[] {0}, new long[] {1},
                new int[] {0}), "irecv() after the connection failed");
        r.close();
        assertEquals(Status.CLOSED, r.test(recvs[7]), "test() after close");
        barrier("close-sender-done");
    }

    /**
     * Each guest closes a receiver with receives posted (their clear-to-sends already at the sender). In the other
     * guest, one sender writes into such a buffer, another waits for a clear-to-send that will never come: both must
     * fail with an error naming the cause.
     */
    @Test
    @Order(2)
    void receiverClosedWithReceivesPostedMakesThePeersSendersFail() throws Exception {
        List<CoreSender> senders = new ArrayList<>();
        List<CoreReceiver> receivers = new ArrayList<>();
        connect(2, senders, receivers);
        fill(sendBuf, SMALL, seed(me, 0, 0));
        // both receivers: four receives; the first is used at once, so its clear-to-send (and the next ones, sent
        // before it) have reached the sender
        List<int[]> recvs = new ArrayList<>();
        for (CoreReceiver r : receivers) {
            int[] q = new int[4];
            for (int k = 0; k < q.length; k++) {
                q[k] = r.irecv(1, new Registration[] {recvReg}, new long[] {k * SMALL}, new long[] {SMALL},
                        new int[] {k});
                assertTrue(q[k] >= 0, Status.describe(q[k]));
            }
            recvs.add(q);
        }
        for (CoreSender s : senders) {
            int req = awaitRequest(() -> s.isend(sendReg, 0, SMALL, 0), s, "first message");
            awaitDone(() -> s.test(req), s, "first message");
        }
        for (int i = 0; i < receivers.size(); i++) {
            CoreReceiver r = receivers.get(i);
            int req = recvs.get(i)[0];
            awaitDone(() -> r.test(req), r, "first message");
        }
        barrier("close-receiver-posted");
        for (int i = 0; i < receivers.size(); i++) {
            CoreReceiver r = receivers.get(i);
            r.close();
            assertEquals(Status.CLOSED, r.test(recvs.get(i)[1]), "test() of a posted receive of a closed receiver");
            assertEquals(Status.CLOSED, r.irecv(1, new Registration[] {recvReg}, new long[] {0}, new long[] {1},
                    new int[] {0}), "irecv() on a closed receiver");
        }
        barrier("close-receiver-closed");

        // sender 0 writes into a buffer the closed receiver had posted (tag 1); sender 1 waits for tag 9, never posted
        Duration bound = failureBound();
        long start = System.nanoTime();
        CoreSender writing = senders.get(0);
        CoreSender waiting = senders.get(1);
        int writeReq = Status.NOT_READY;
        int writeStatus = 0;
        int waitStatus = 0;
        while (writeStatus == 0 || waitStatus == 0) {
            if (writeStatus == 0) {
                if (writeReq == Status.NOT_READY) {
                    writeReq = writing.isend(sendReg, 0, SMALL, 1);
                    if (writeReq < 0 && writeReq != Status.NOT_READY) {
                        writeStatus = writeReq;
                    }
                } else {
                    int t = writing.test(writeReq);
                    assertTrue(t != 1, "a message into a closed receiver's buffer completed");
                    writeStatus = t;
                }
                if (writeStatus != 0) {
                    System.out.printf("%s: sender writing to a closed receiver: %s after %d ms: %s%n", me,
                            Status.describe(writeStatus), (System.nanoTime() - start) / 1_000_000, writing.error());
                }
            }
            if (waitStatus == 0) {
                int q = waiting.isend(sendReg, 0, SMALL, 9);
                assertTrue(q < 0, "isend matched a clear-to-send that was never sent");
                if (q != Status.NOT_READY) {
                    waitStatus = q;
                    System.out.printf("%s: sender waiting for a closed receiver: %s after %d ms: %s%n", me,
                            Status.describe(q), (System.nanoTime() - start) / 1_000_000, waiting.error());
                }
            }
            if (System.nanoTime() - start > bound.toNanos()) {
                fail("the peer's receivers closed, but after " + bound.toSeconds() + " s the sender writing to one "
                        + "reports " + (writeStatus == 0 ? "nothing" : Status.describe(writeStatus))
                        + " and the sender waiting for one " + (waitStatus == 0 ? "nothing" : Status.describe(waitStatus))
                        + " (QP timeout " + RdmaTestbedSupport.IB_TIMEOUT + ", retry count "
                        + RdmaTestbedSupport.IB_RETRY + "): a sender hangs");
            }
            Thread.onSpinWait();
        }
        assertEquals(Status.FAILED, writeStatus, "the sender writing into a closed receiver's buffer");
        assertNamesCause(writing.error(), "sender writing into a closed receiver's buffer");
        assertEquals(Status.FAILED, waitStatus, "the sender waiting for a closed receiver");
        assertNamesCause(waiting.error(), "sender waiting for a closed receiver");
        assertEquals(Status.FAILED, writing.isend(sendReg, 0, 1, 2), "isend() after the connection failed");
        writing.close();
        waiting.close();
        barrier("close-receiver-done");
    }

    /** After all that, the same provider makes working connections, and closes without EBUSY, leaving nothing. */
    @Test
    @Order(3)
    void afterwardsNewConnectionsWorkAndEverythingClosesCleanly() throws Exception {
        closeAll(connections);
        List<CoreSender> senders = new ArrayList<>();
        List<CoreReceiver> receivers = new ArrayList<>();
        connect(1, senders, receivers);
        CoreSender s = senders.getFirst();
        CoreReceiver r = receivers.getFirst();
        long len = (1 << 20) + 3;
        fill(sendBuf, len, seed(me, 3, 3));
        int rreq = r.irecv(1, new Registration[] {recvReg}, new long[] {0}, new long[] {BIG}, new int[] {5});
        assertTrue(rreq >= 0, Status.describe(rreq));
        int sreq = awaitRequest(() -> s.isend(sendReg, 0, len, 5), s, "message on a new connection");
        awaitDone(() -> s.test(sreq), s, "message on a new connection");
        awaitDone(() -> r.test(rreq), r, "message on a new connection");
        assertEquals(len, r.size(rreq, 0));
        assertEquals(expectedCrc(arena.allocate(len, 8), len, seed(peer, 3, 3)), crc(recvBuf, len),
                "bytes on a new connection after the failures");
        barrier("close-new-done");
        assertEquals(null, closeAll(connections), "closing the connections");
        assertDoesNotThrow(listener::close, "closing the listener");
        assertDoesNotThrow(sendReg::close);
        assertDoesNotThrow(recvReg::close);
        assertDoesNotThrow(provider::close, "closing the provider after failed and closed connections");
        arena.close();
        arena = null;
        assertResourcesBackTo(before, "after failed, closed and new connections and the provider's close");
        barrier("close-all-done");
    }
}
