package io.jmesh.transport.rdma;

import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.testbed.TestbedEnv;
import io.jmesh.api.ListenHandle;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.rdma.RdmaTestbedSupport.STEP;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.assertResourcesBackTo;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.barrier;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.closeAll;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.failureBound;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A peer that dies without closing anything (pair): the second guest starts a child JVM ({@link KilledPeerChild})
 * that connects to the first guest both ways, streams in both directions, and stops dead with
 * {@code Runtime.halt} while messages are in flight. The first guest's sender and receiver must both report
 * {@link Status#FAILED} with an error naming the cause, within a deadline derived from the configured QP timeout and
 * retry count ({@link RdmaTestbedSupport#failureBound()}), never hang; then everything closes without EBUSY and
 * without leaving verbs objects behind. The child, not the test JVM, dies, so both guests still report their results.
 */
@Tag("rdma")
class RdmaKilledPeerTest {
    private static final String SURVIVOR_HANDLE = "killed-survivor-handle";
    private static final String CHILD_HANDLE = "killed-child-handle";
    private static final String CHILD_EXITED = "killed-child-exited";

    @Test
    void aPeerJvmHaltedMidTransferFailsTheSurvivorsSenderAndReceiverWithinTheRetryBound() throws Exception {
        TestbedEnv.require();
        assumeTrue(TestbedEnv.topology().equals("pair"), "runs on the pair topology only (two guests, one link)");
        List<String> guests = Arrays.asList(TestbedEnv.get("TESTBED_GUESTS").split("\\s+"));
        if (TestbedEnv.name().equals(guests.getFirst())) {
            survive();
        } else {
            runChildThatHalts();
        }
        barrier("killed-end");
    }

    /** Starts the child JVM on this guest and checks that it halted where it should (exit code 77). */
    private static void runChildThatHalts() throws Exception {
        List<String> cmd = List.of(RdmaTestbedSupport.javaCommand(), "--enable-native-access=ALL-UNNAMED",
                "-XX:TieredStopAtLevel=1", "-Xmx128m",
                "-XX:ErrorFile=" + TestbedEnv.get("TESTBED_RUN") + "/hs_err_child_" + TestbedEnv.name() + "_%p.log",
                "-cp", RdmaTestbedSupport.childClassPath(), KilledPeerChild.class.getName(),
                SURVIVOR_HANDLE, CHILD_HANDLE);
        Process child = new ProcessBuilder(cmd).inheritIO().start();
        try {
            long limit = STEP.toSeconds() * 2;
            if (!child.waitFor(limit, TimeUnit.SECONDS)) {
                fail("the child JVM did not halt within " + limit + " s");
            }
            assertEquals(KilledPeerChild.HALTED, child.exitValue(),
                    "the child must halt mid-transfer (77); other codes are its own failures (see its output)");
        } finally {
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
            TestbedEnv.publish(CHILD_EXITED, Long.toString(child.pid()));
        }
    }

    /** Streams both ways with the child until both directions fail. */
    private static void survive() throws Exception {
        String me = TestbedEnv.name();
        Map<String, Long> before = RdmaTestbedSupport.rdmaResources();
        RdmaProvider provider = RdmaProvider.open(RdmaTestbedSupport.failureContext());
        List<AutoCloseable> open = new ArrayList<>();
        Arena arena = Arena.ofShared();
        boolean passed = false;
        try {
            RdmaListener listener = provider.listen();
            open.add(listener);
            RdmaTestbedSupport.publishHandle(SURVIVOR_HANDLE, listener.handle());
            int depth = KilledPeerChild.DEPTH;
            long msg = KilledPeerChild.MESSAGE;
            MemorySegment buf = arena.allocate(2 * depth * msg, 4096);
            Registration reg = provider.register(buf);
            open.add(reg);
            ListenHandle child = RdmaTestbedSupport.awaitListenHandle(CHILD_HANDLE);
            RdmaConnect connect = provider.connect(child);
            open.add(connect);
            CoreSender sender = null;
            CoreReceiver receiver = null;
            long deadline = System.nanoTime() + STEP.toNanos();
            while (sender == null || receiver == null) {
                if (sender == null && (sender = connect.poll()) != null) {
                    open.add(sender);
                }
                if (receiver == null && (receiver = listener.accept()) != null) {
                    open.add(receiver);
                }
                if (System.nanoTime() > deadline) {
                    fail("connections with the child not up after " + STEP.toSeconds() + " s");
                }
                Thread.onSpinWait();
            }

            // stream both ways (rings of `depth` requests, tags counting up) until both directions have failed
            Duration bound = failureBound();
            int[] recvReq = new int[depth];
            int[] sendReq = new int[depth];
            Arrays.fill(sendReq, -1);
            int nextRecv = 0;
            int nextSend = 0;
            int received = 0;
            int sent = 0;
            int recvStatus = 0;
            int sendStatus = 0;
            for (; nextRecv < depth; nextRecv++) {
                recvReq[nextRecv] = receiver.irecv(1, new Registration[] {reg}, new long[] {nextRecv * msg},
                        new long[] {msg}, new int[] {nextRecv});
                assertTrue(recvReq[nextRecv] >= 0, Status.describe(recvReq[nextRecv]));
            }
            long start = System.nanoTime();
            long dead = 0;            // when the child was seen to be gone
            long nextLook = start;
            long recvFailedAt = 0;
            long sendFailedAt = 0;
            while (recvStatus == 0 || sendStatus == 0) {
                long now = System.nanoTime();
                if (recvStatus == 0) {
                    int r = receiver.test(recvReq[received % depth]);
                    if (r == 1) {
                        received++;
                        int slot = nextRecv % depth;
                        recvReq[slot] = receiver.irecv(1, new Registration[] {reg}, new long[] {slot * msg},
                                new long[] {msg}, new int[] {nextRecv});
                        nextRecv++;
                        if (recvReq[slot] < 0) {
                            recvStatus = recvReq[slot];
                            recvFailedAt = now;
                        }
                    } else if (r < 0) {
                        recvStatus = r;
                        recvFailedAt = now;
                    }
                }
                if (sendStatus == 0) {
                    int slot = nextSend % depth;
                    if (sendReq[slot] >= 0) {
                        int t = sender.test(sendReq[slot]);
                        if (t == 1) {
                            sendReq[slot] = -1;
                            sent++;
                        } else if (t < 0) {
                            sendStatus = t;
                            sendFailedAt = now;
                        }
                    }
                    if (sendStatus == 0 && sendReq[slot] < 0) {
                        int q = sender.isend(reg, (depth + slot) * msg, msg, nextSend);
                        if (q >= 0) {
                            sendReq[slot] = q;
                            nextSend++;
                        } else if (q != Status.NOT_READY) {
                            sendStatus = q;
                            sendFailedAt = now;
                        }
                    }
                }
                if (now >= nextLook) {
                    nextLook = now + 100_000_000L;
                    if (dead == 0 && RdmaTestbedSupport.exists(CHILD_EXITED)) {
                        dead = now;
                        System.out.printf("%s: child gone after %d ms of streaming: %d received, %d sent%n", me,
                                (now - start) / 1_000_000, received, sent);
                    }
                }
                long limit = dead != 0 ? dead + bound.toNanos() : start + 2 * STEP.toNanos() + bound.toNanos();
                if (now > limit) {
                    fail("the peer JVM " + (dead != 0 ? "died " + bound.toSeconds() + " s ago" : "is not known dead")
                            + ", but the receiver reports " + (recvStatus == 0 ? "nothing" : Status.describe(recvStatus))
                            + " and the sender " + (sendStatus == 0 ? "nothing" : Status.describe(sendStatus))
                            + " (QP timeout " + RdmaTestbedSupport.IB_TIMEOUT + ", retry count "
                            + RdmaTestbedSupport.IB_RETRY + "): the survivor hangs");
                }
            }
            System.out.printf("%s: after %d received and %d sent: receiver %s after %d ms (%s), sender %s after %d ms"
                            + " (%s), counted from the start of streaming; child seen gone at %d ms%n", me, received,
                    sent, Status.describe(recvStatus), (recvFailedAt - start) / 1_000_000, receiver.error(),
                    Status.describe(sendStatus), (sendFailedAt - start) / 1_000_000, sender.error(),
                    dead == 0 ? -1 : (dead - start) / 1_000_000);
            assertTrue(received >= 1 && sent >= 1, "traffic flowed both ways before the peer died: " + received
                    + " received, " + sent + " sent");
            assertEquals(Status.FAILED, recvStatus, "the survivor's receiver");
            assertEquals(Status.FAILED, sendStatus, "the survivor's sender");
            for (String error : new String[] {receiver.error(), sender.error()}) {
                assertNotNull(error, "FAILED without an error()");
                assertTrue(error.contains("failed") && error.contains("peer") && error.contains("rxe"),
                        "the error must say what failed, on which device, and why: " + error);
            }
            passed = true;
        } finally {
            Exception closeFailure = closeAll(open);
            if (!passed) {
                closeAll(new ArrayList<>(List.of(arena, provider)));
            } else if (closeFailure != null) {
                throw closeFailure;
            }
        }
        assertDoesNotThrow(provider::close, "closing the provider after the peer died");
        arena.close();
        assertResourcesBackTo(before, "after the peer died and everything was closed");
    }
}
