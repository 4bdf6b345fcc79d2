package io.jmesh.transport.rdma;

import static io.jmesh.transport.rdma.RdmaTestbedSupport.STEP;
import static io.jmesh.transport.rdma.RdmaTestbedSupport.barrier;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.testbed.TestbedEnv;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.CoreSender;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A peer process stopped with SIGSTOP (pair): the second guest runs {@link FrozenPeerChild}, connected to the first
 * guest both ways. While the child runs but never polls, for three liveness timeouts, nothing fails; then its guest
 * stops it, and the first guest's receiver (a receive pending) and sender (waiting for a clear-to-send) fail with
 * "the peer stopped answering: no sign of life". The stopped child's kernel still acknowledges RDMA, so the verbs
 * probe alone would wait forever.
 */
@Tag("rdma")
class RdmaFrozenPeerTest {
    private static final String SURVIVOR_HANDLE = "frozen-survivor-handle";
    private static final String CHILD_HANDLE = "frozen-child-handle";
    private static final String STOP_NOW = "frozen-stop-now";
    private static final String STOPPED = "frozen-stopped";
    private static final long LIVENESS_MS = 3_000;

    @Test
    void aStoppedPeerJvmFailsTheSurvivorsSenderAndReceiverThroughLiveness() throws Exception {
        TestbedEnv.require();
        assumeTrue(TestbedEnv.topology().equals("pair"), "runs on the pair topology only (two guests, one link)");
        List<String> guests = Arrays.asList(TestbedEnv.get("TESTBED_GUESTS").split("\\s+"));
        if (TestbedEnv.name().equals(guests.getFirst())) {
            survive();
        } else {
            runChildAndStopIt();
        }
        barrier("frozen-end");
    }

    private static void runChildAndStopIt() throws Exception {
        List<String> cmd = List.of(RdmaTestbedSupport.javaCommand(), "--enable-native-access=ALL-UNNAMED",
                "-XX:TieredStopAtLevel=1", "-Xmx128m", "-cp", RdmaTestbedSupport.childClassPath(),
                FrozenPeerChild.class.getName(), SURVIVOR_HANDLE, CHILD_HANDLE);
        Process child = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(),
                    StandardCharsets.UTF_8));
            assertEquals("connected", out.readLine(), "the child's first line");
            TestbedEnv.await(STOP_NOW, STEP);
            signal("STOP", child);
            TestbedEnv.publish(STOPPED, Long.toString(child.pid()));
            barrier("frozen-survivor-done");
        } finally {
            signal("CONT", child);
            child.getOutputStream().close();
            if (!child.waitFor(60, TimeUnit.SECONDS)) {
                child.destroyForcibly();
            }
        }
    }

    private static void survive() throws Exception {
        List<AutoCloseable> open = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            RdmaProvider provider = RdmaProvider.open(RdmaTestbedSupport.failureContext().livenessTimeoutMs(
                    LIVENESS_MS));
            open.add(provider);
            RdmaListener listener = provider.listen();
            RdmaTestbedSupport.publishHandle(SURVIVOR_HANDLE, listener.handle());
            RdmaConnect connect = provider.connect(RdmaTestbedSupport.awaitListenHandle(CHILD_HANDLE));
            CoreSender sender = null;
            CoreReceiver receiver = null;
            long deadline = System.nanoTime() + STEP.toNanos();
            open.add(listener);
            open.add(connect);
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
            Registration reg = provider.register(arena.allocate(8192, 4096));
            open.add(reg);
            int recv = receiver.irecv(1, new Registration[] {reg}, new long[] {0}, new long[] {4096}, new int[] {1});
            assertTrue(recv >= 0, Status.describe(recv));
            long idleUntil = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3 * LIVENESS_MS);
            while (System.nanoTime() - idleUntil < 0) {
                assertEquals(0, receiver.test(recv), receiver.error());
                assertEquals(Status.NOT_READY, sender.isend(reg, 4096, 4096, 1), sender.error());
                Thread.sleep(10);
            }
            TestbedEnv.publish(STOP_NOW, "1");
            TestbedEnv.await(STOPPED, STEP);
            long stopped = System.nanoTime();
            int recvStatus = 0;
            int sendStatus = Status.NOT_READY;
            deadline = stopped + STEP.toNanos();
            while (recvStatus == 0 || sendStatus == Status.NOT_READY || sendStatus >= 0) {
                if (recvStatus == 0) {
                    recvStatus = receiver.test(recv);
                }
                if (sendStatus == Status.NOT_READY) {
                    sendStatus = sender.isend(reg, 4096, 4096, 1);
                }
                if (System.nanoTime() > deadline) {
                    fail("the peer is stopped, but after " + STEP.toSeconds() + " s the receiver reports "
                            + Status.describe(recvStatus) + " and the sender " + Status.describe(sendStatus));
                }
                Thread.sleep(1);
            }
            System.out.printf("%s: the stopped peer failed the receiver and the sender %d ms after SIGSTOP "
                    + "(liveness timeout %d ms): %s / %s%n", TestbedEnv.name(),
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stopped), LIVENESS_MS, receiver.error(),
                    sender.error());
            assertEquals(Status.FAILED, recvStatus, Status.describe(recvStatus));
            assertEquals(Status.FAILED, sendStatus, Status.describe(sendStatus));
            for (String error : new String[] {receiver.error(), sender.error()}) {
                assertTrue(error.startsWith("the peer stopped answering: no sign of life from the process at "),
                        error);
            }
        } finally {
            barrier("frozen-survivor-done");
            Exception e = RdmaTestbedSupport.closeAll(open);
            if (e != null) {
                throw e;
            }
        }
    }

    private static void signal(String name, Process p) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(p.pid())).inheritIO().start();
        assertTrue(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0, "kill -" + name + " failed");
    }
}
