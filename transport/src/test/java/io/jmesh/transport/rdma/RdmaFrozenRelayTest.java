package io.jmesh.transport.rdma;

import io.jmesh.api.Connections;
import io.jmesh.api.Connector;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.IdleStrategy;
import io.jmesh.api.Listener;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Setting;
import io.jmesh.api.Status;
import io.jmesh.testbed.TestbedEnv;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.rdma.RdmaTestbedSupport.STEP;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.barrier;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.closeAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A relayed verbs connection and liveness at {@value #LIVENESS_MS} ms on line:3 (a - b - c), b's relay in a child JVM
 * ({@link RelayChild}, as 'jmesh relay'): idle for five timeouts, then streaming for five more, nothing fails (the
 * ends watch b, which answers for itself); then b freezes its relay (SIGSTOP: rxe in b's kernel still acknowledges
 * every RDMA packet, so only liveness can tell) and both ends must fail within two timeouts and a grace for TCG,
 * each naming the relay. Before the ends watched their relay, both waited forever.
 */
@Tag("rdma")
class RdmaFrozenRelayTest {
    static final long LIVENESS_MS = 3_000;
    /** Two timeouts, the promise, and 20 s for a TCG host whose guests may stall a few seconds. */
    private static final long BOUND_MS = 2 * LIVENESS_MS + 20_000;
    private static final long MESSAGE = 1 << 20;
    private static final int DEPTH = 4;
    private static final String UP = "frozen-relay-up";
    private static final String C_HANDLE = "frozen-relay-c-handle";
    private static final String STREAMED = "frozen-relay-streamed";
    private static final String FLOWING = "frozen-relay-flowing";
    private static final String FROZEN = "frozen-relay-frozen";
    private static final String DONE = "frozen-relay-done-";

    static Context context() {
        return RdmaTestbedSupport.failureContext().livenessTimeoutMs(LIVENESS_MS).provider("rdma");
    }

    @Test
    void aRelayedConnectionOutlivesItsTimeoutAndAFrozenRelayFailsBothEndsNamingIt() throws Exception {
        TestbedEnv.require();
        assumeTrue(TestbedEnv.topology().equals("line:3"), "runs on line:3 only (this is " + TestbedEnv.topology()
                + ")");
        String me = TestbedEnv.name();
        List<String> guests = List.of(TestbedEnv.get("TESTBED_GUESTS").split("\\s+"));
        int i = guests.indexOf(me);
        if (i == 1) {
            relay();
        } else {
            end(i == 0);
        }
        barrier("frozen-relay-end");
    }

    /** b: the relay child; frozen once a says data flows, thawed and killed once both ends are done. */
    private static void relay() throws Exception {
        Process child = new ProcessBuilder(RdmaTestbedSupport.javaCommand(), "--enable-native-access=ALL-UNNAMED",
                "-XX:TieredStopAtLevel=1", "-Xmx128m", "-D" + Setting.LIVENESS_TIMEOUT_MS.property() + "="
                + LIVENESS_MS, "-cp", RdmaTestbedSupport.childClassPath(), RelayChild.class.getName(), UP)
                .inheritIO().start();
        try {
            TestbedEnv.await(FLOWING, STEP.multipliedBy(2));
            assertTrue(child.isAlive(), "the relay child must still run when data flows");
            signal(child, "STOP");
            TestbedEnv.publish(FROZEN, "yes");
            TestbedEnv.await(DONE + "sender", STEP.multipliedBy(2));
            TestbedEnv.await(DONE + "receiver", STEP.multipliedBy(2));
        } finally {
            signal(child, "CONT");
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
        }
    }

    private static void signal(Process p, String name) throws Exception {
        new ProcessBuilder("kill", "-" + name, Long.toString(p.pid())).inheritIO().start().waitFor();
    }

    /** a or c: idle, stream, then stream until the frozen relay fails the connection. */
    private static void end(boolean sending) throws Exception {
        TestbedEnv.await(UP, STEP);
        Fabric fabric = Fabric.open(context());
        List<AutoCloseable> open = new ArrayList<>();
        Arena arena = Arena.ofShared();
        boolean passed = false;
        try {
            MemorySegment mem = arena.allocate(MESSAGE * DEPTH, 4096);
            Registration reg = fabric.register(mem);
            open.add(reg);
            Stream stream;
            if (sending) {
                Connector connector = fabric.connect(RdmaTestbedSupport.awaitHandle(C_HANDLE));
                open.add(connector);
                Sender s = Connections.await(connector, STEP, IdleStrategy.controlPlane());
                open.add(s);
                System.out.println("sender -> receiver over " + connector.route());
                assertTrue(connector.route().contains(" via "), connector.route());
                stream = new Stream(s, null, reg);
            } else {
                Listener listener = fabric.listen();
                open.add(listener);
                RdmaTestbedSupport.publishHandle(C_HANDLE, listener.handle());
                Receiver r = Connections.accept(listener, STEP, IdleStrategy.controlPlane());
                open.add(r);
                stream = new Stream(null, r, reg);
            }
            Thread.sleep(5 * LIVENESS_MS); // idle: only liveness runs
            assertNull(stream.error(), "after five idle timeouts");
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(5 * LIVENESS_MS);
            if (sending) {
                while (System.nanoTime() - end < 0) {
                    assertEquals(0, stream.step(), stream.error());
                }
                stream.drain();
                assertTrue(stream.count > 0, "no message went through the relay in five timeouts");
                TestbedEnv.publish(STREAMED, Long.toString(stream.count));
            } else {
                // receives while the sender streams, until it has all that the sender says it sent
                long expected = Long.MAX_VALUE;
                long look = 0;
                long giveUp = System.nanoTime() + STEP.multipliedBy(2).toNanos();
                while (stream.count < expected) {
                    assertEquals(0, stream.step(), stream.error());
                    long now = System.nanoTime();
                    if (expected == Long.MAX_VALUE && now - look > 50_000_000L) {
                        look = now;                  // the shared folder is slow: look now and then
                        if (RdmaTestbedSupport.exists(STREAMED)) {
                            expected = Long.parseLong(TestbedEnv.await(STREAMED, STEP).trim());
                        }
                    }
                    if (now - giveUp > 0) {
                        fail("the stream did not end within " + STEP.multipliedBy(2).toSeconds() + " s");
                    }
                }
            }
            System.out.println((sending ? "sender" : "receiver") + ": " + stream.count + " messages over five "
                    + "timeouts, no failure");
            assertNull(stream.error(), "after streaming for five timeouts");
            if (sending) {
                TestbedEnv.publish(FLOWING, "yes");
            }
            long frozenAt = 0;
            int status = 0;
            long deadline = System.nanoTime() + STEP.toNanos();
            while (status == 0) {
                status = stream.step();
                long now = System.nanoTime();
                if (frozenAt == 0 && RdmaTestbedSupport.exists(FROZEN)) {
                    frozenAt = now;
                }
                if (frozenAt != 0 && now - frozenAt > TimeUnit.MILLISECONDS.toNanos(BOUND_MS)) {
                    fail("not failed " + BOUND_MS + " ms after the relay froze");
                }
                if (frozenAt == 0 && now - deadline > 0) {
                    fail("the relay was not frozen within " + STEP.toSeconds() + " s");
                }
            }
            String error = stream.error();
            System.out.println((sending ? "sender" : "receiver") + ": failed about "
                    + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - frozenAt) + " ms after the relay froze: "
                    + error);
            assertEquals(Status.FAILED, status, Status.describe(status) + ": " + error);
            assertTrue(error != null && error.contains("the relay 192.168.") && error.contains("stopped answering"),
                    String.valueOf(error));
            passed = true;
        } finally {
            TestbedEnv.publish(DONE + (sending ? "sender" : "receiver"), passed ? "passed" : "failed");
            Exception closeFailure = closeAll(open);
            closeAll(new ArrayList<>(List.of(arena, fabric)));
            if (passed && closeFailure != null) {
                throw closeFailure;
            }
        }
    }

    /** One end's side of a stream of MESSAGE-sized messages, DEPTH in flight, tags in order. */
    private static final class Stream {
        final Sender s;
        final Receiver r;
        final Registration reg;
        final int[] reqs = new int[DEPTH];
        long count;
        long posted;

        Stream(Sender s, Receiver r, Registration reg) {
            this.s = s;
            this.r = r;
            this.reg = reg;
            java.util.Arrays.fill(reqs, -1);
        }

        String error() {
            return s != null ? s.error() : r.error();
        }

        /** Advances by at most one message; 0 while all is well, else the failing status. */
        int step() {
            int slot = (int) (count % DEPTH);
            if (r != null) {
                while (posted < count + DEPTH) {
                    int q = r.irecv(1, new Registration[] {reg}, new long[] {(posted % DEPTH) * MESSAGE},
                            new long[] {MESSAGE}, new int[] {(int) (posted & 0xffff)});
                    if (q < 0) {
                        return q;
                    }
                    reqs[(int) (posted++ % DEPTH)] = q;
                }
                int t = r.test(reqs[slot]);
                if (t == 1) {
                    count++;
                }
                return Math.min(t, 0);
            }
            if (reqs[slot] >= 0) {
                int t = s.test(reqs[slot]);
                if (t <= 0) {
                    return Math.min(t, 0);
                }
                reqs[slot] = -1;
            }
            int q = s.isend(reg, slot * MESSAGE, MESSAGE, (int) (count & 0xffff));
            if (q >= 0) {
                reqs[slot] = q;
                count++;
            }
            return q >= 0 || q == Status.NOT_READY ? 0 : q;
        }

        /** The sender waits for its last messages before it says how many it sent. */
        void drain() {
            for (int k = 0; k < DEPTH; k++) {
                int q = reqs[k];
                if (q >= 0) {
                    RdmaTestbedSupport.awaitDone(() -> s.test(q), s, "the stream's last messages");
                    reqs[k] = -1;
                }
            }
        }
    }
}
