package io.jmesh.transport.rdma;

import io.jmesh.api.Connections;
import io.jmesh.api.Connector;
import io.jmesh.api.Fabric;
import io.jmesh.api.IdleStrategy;
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
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A relay node killed mid-transfer (line:3, a - b - c; line:4, a - b - c - d): the middle nodes run only a relay,
 * each in a child JVM ({@link RelayChild}); the first node streams 1 MiB messages to the last through them; once data
 * flows, the relay next to the receiver kills its child (SIGKILL: nothing closes). On line:4 that is c, behind b: b
 * must pass the failure back to a. The sender and the receiver must both answer {@link Status#FAILED} within the
 * bound the QP timeout and retries give ({@link RdmaTestbedSupport#failureBound()}), the sender's error naming its
 * relay node, never hang; then both close cleanly and leave no verbs objects behind.
 */
@Tag("rdma")
class RdmaKilledRelayTest {
    private static final long MESSAGE = 1 << 20;
    private static final int DEPTH = 4;
    private static final String C_HANDLE = "killed-relay-c-handle";
    private static final String FLOWING = "killed-relay-flowing";
    private static final String KILLED = "killed-relay-killed";
    private static final String DONE = "killed-relay-done-";
    private static final long LOOK_EVERY_NANOS = 50_000_000L;
    private static long lastLook;

    @Test
    void aRelayKilledMidTransferFailsBothEndsNamingItWithinTheRetryBound() throws Exception {
        TestbedEnv.require();
        String topology = TestbedEnv.topology();
        assumeTrue(topology.equals("line:3") || topology.equals("line:4"),
                "runs on line:3 and line:4 only (the middle nodes relay; this is " + topology + ")");
        List<String> guests = Arrays.asList(TestbedEnv.get("TESTBED_GUESTS").split("\\s+"));
        String me = TestbedEnv.name();
        int i = guests.indexOf(me);
        if (i == 0 || i == guests.size() - 1) {
            end(i == 0, guests.subList(1, guests.size() - 1));
        } else {
            relay(i == guests.size() - 2);
        }
        barrier("killed-relay-end");
    }

    /** A middle node: the relay child; the one next to the receiver kills it once the sender says data flows. */
    private static void relay(boolean dies) throws Exception {
        List<String> cmd = List.of(RdmaTestbedSupport.javaCommand(), "--enable-native-access=ALL-UNNAMED",
                "-XX:TieredStopAtLevel=1", "-Xmx128m", "-cp", RdmaTestbedSupport.childClassPath(),
                RelayChild.class.getName(), RelayChild.UP + "-" + TestbedEnv.name());
        Process child = new ProcessBuilder(cmd).inheritIO().start();
        try {
            TestbedEnv.await(FLOWING, STEP.multipliedBy(2));
            assertTrue(child.isAlive(), "the relay child must still be running when data flows");
            if (dies) {
                child.destroyForcibly();
                assertTrue(child.waitFor(30, TimeUnit.SECONDS), "the relay child did not die");
                TestbedEnv.publish(KILLED, Long.toString(System.currentTimeMillis()));
            } else {
                TestbedEnv.await(DONE + "sender", STEP.multipliedBy(3));     // relays on until both ends failed
                TestbedEnv.await(DONE + "receiver", STEP.multipliedBy(3));
            }
        } finally {
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /** The sender or the receiver: streams until the relay dies, then checks how its end failed. */
    private static void end(boolean sending, List<String> relays) throws Exception {
        for (String r : relays) {
            TestbedEnv.await(RelayChild.UP + "-" + r, STEP);
        }
        Map<String, Long> before = RdmaTestbedSupport.rdmaResources();
        Fabric fabric = Fabric.open(RdmaTestbedSupport.failureContext().provider("rdma"));
        List<AutoCloseable> open = new ArrayList<>();
        Arena arena = Arena.ofShared();
        boolean passed = false;
        try {
            MemorySegment mem = arena.allocate(MESSAGE * DEPTH, 4096);
            Registration reg = fabric.register(mem);
            open.add(reg);
            String error;
            long failedAfterMillis;
            if (sending) {
                Connector connector = fabric.connect(RdmaTestbedSupport.awaitHandle(C_HANDLE));
                open.add(connector);
                Sender s = Connections.await(connector, STEP, IdleStrategy.controlPlane());
                open.add(s);
                System.out.println("sender -> receiver over " + connector.route());
                assertTrue(connector.route().contains(" via "), connector.route());
                int[] reqs = new int[DEPTH];
                Arrays.fill(reqs, -1);
                long sent = 0;
                long killedAt = 0;
                int status = 0;
                long deadline = System.nanoTime() + STEP.toNanos();
                while (status == 0) {
                    int slot = (int) (sent % DEPTH);
                    if (reqs[slot] >= 0) {
                        int t = s.test(reqs[slot]);
                        if (t < 0) {
                            status = t;
                            break;
                        }
                        if (t == 0) {
                            killedAt = checkDeadline(killedAt, deadline, "the sender");
                            continue;
                        }
                        reqs[slot] = -1;
                        if (sent == 2 * DEPTH) {
                            TestbedEnv.publish(FLOWING, "yes");
                        }
                    }
                    int q = s.isend(reg, slot * MESSAGE, MESSAGE, (int) (sent & 0xffff));
                    if (q >= 0) {
                        reqs[slot] = q;
                        sent++;
                    } else if (q != Status.NOT_READY) {
                        status = q;
                    } else {
                        killedAt = checkDeadline(killedAt, deadline, "the sender");
                    }
                }
                error = s.error();
                failedAfterMillis = sinceKill(killedAt);
                System.out.println("sender: " + sent + " messages sent; failed " + failedAfterMillis + " ms after the kill: "
                        + error);
                assertEquals(Status.FAILED, status, Status.describe(status) + ": " + error);
                assertTrue(error != null && error.contains("relay node 192.168.100.2"), String.valueOf(error));
            } else {
                Listener listener = fabric.listen();
                open.add(listener);
                RdmaTestbedSupport.publishHandle(C_HANDLE, listener.handle());
                Receiver r = Connections.accept(listener, STEP, IdleStrategy.controlPlane());
                open.add(r);
                int[] reqs = new int[DEPTH];
                long posted = 0;
                for (; posted < DEPTH; posted++) {
                    reqs[(int) posted] = r.irecv(1, new Registration[] {reg}, new long[] {posted * MESSAGE},
                            new long[] {MESSAGE}, new int[] {(int) (posted & 0xffff)});
                }
                long received = 0;
                long killedAt = 0;
                int status = 0;
                long deadline = System.nanoTime() + STEP.toNanos();
                while (status == 0) {
                    int slot = (int) (received % DEPTH);
                    int t = r.test(reqs[slot]);
                    if (t < 0) {
                        status = t;
                    } else if (t == 0) {
                        killedAt = checkDeadline(killedAt, deadline, "the receiver");
                    } else {
                        assertEquals(MESSAGE, r.size(reqs[slot], 0));
                        received++;
                        reqs[slot] = r.irecv(1, new Registration[] {reg}, new long[] {slot * MESSAGE},
                                new long[] {MESSAGE}, new int[] {(int) (posted & 0xffff)});
                        posted++;
                        if (reqs[slot] < 0) {
                            status = reqs[slot];
                        }
                    }
                }
                error = r.error();
                failedAfterMillis = sinceKill(killedAt);
                System.out.println("receiver: " + received + " messages received; failed " + failedAfterMillis
                        + " ms after the kill: " + error);
                assertEquals(Status.FAILED, status, Status.describe(status) + ": " + error);
                assertTrue(error != null && !error.isBlank(), "the receiver's error must say why");
                // a's sends complete once the relay has read them, so c may be a few messages behind a
                assertTrue(received >= 1, "data flowed before the kill: " + received);
            }
            passed = true;
        } finally {
            TestbedEnv.publish(DONE + (sending ? "sender" : "receiver"), passed ? "passed" : "failed");
            Exception closeFailure = closeAll(open);
            if (!passed) {
                closeAll(new ArrayList<>(List.of(arena, fabric)));
            } else if (closeFailure != null) {
                throw closeFailure;
            }
        }
        fabric.close();
        arena.close();
        assertResourcesBackTo(before, "after both ends of the relayed connection were closed");
    }

    /**
     * Fails when the end has not failed within the bound after the kill (or, before it, within the step); returns
     * when the kill was seen, or 0.
     */
    private static long checkDeadline(long killedAt, long deadline, String what) throws Exception {
        long now = System.nanoTime();
        if (killedAt == 0 && now - lastLook > LOOK_EVERY_NANOS) {
            lastLook = now;                        // the shared folder is slow: look now and then, not every spin
            if (RdmaTestbedSupport.exists(KILLED)) {
                killedAt = now;
            }
        }
        if (killedAt != 0 && now - killedAt > failureBound().toNanos()) {
            fail(what + " did not fail within " + failureBound().toSeconds() + " s of the relay's death");
        }
        if (killedAt == 0 && now - deadline > 0) {
            fail(what + ": the relay was not killed within " + STEP.toSeconds() + " s");
        }
        Thread.onSpinWait();
        return killedAt;
    }

    private static long sinceKill(long killedAt) {
        return killedAt == 0 ? 0 : Duration.ofNanos(System.nanoTime() - killedAt).toMillis();
    }
}
