package io.jmesh.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.jmesh.api.Context;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.testbed.TestbedEnv;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.api.ListenHandle;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The device's asynchronous events (single): a connection from the guest to itself over rxe0, a receive pending and
 * a sender waiting for a clear-to-send; then the network interface under rxe0 is set down. rxe reports a port error,
 * and both ends fail at once naming the port, long before the queue pairs' own retries would (the default QP timeout
 * and 7 retries: ≈ 30 s) and with liveness off. The link comes back up before the test ends.
 */
@Tag("rdma")
class RdmaPortDownTest {
    /** A hang guard only: the error text, not the time, proves the port event failed the connection. */
    private static final long EVENT_BOUND_MS = RdmaTestbedSupport.STEP.toMillis();

    @Test
    void aPortThatGoesDownFailsTheConnectionsOverItAtOnceNamingThePort() throws Exception {
        TestbedEnv.require();
        assumeTrue(TestbedEnv.topology().equals("single"), "runs on the single topology only: it takes the guest's "
                + "only link down");
        String dev = TestbedEnv.devices().getFirst();
        String netdev = TestbedEnv.dev(dev, "NETDEV");
        Map<String, Long> before = RdmaTestbedSupport.rdmaResources();
        List<AutoCloseable> open = new ArrayList<>();
        boolean down = false;
        try (Arena arena = Arena.ofShared()) {
            RdmaProvider provider = RdmaProvider.open(new Context().livenessTimeoutMs(0));
            open.add(provider);
            RdmaListener listener = provider.listen();
            open.add(listener);
            RdmaConnect connect = provider.connect(ListenHandle.decode(listener.handle()));
            open.add(connect);
            CoreSender sender = null;
            CoreReceiver receiver = null;
            long deadline = System.nanoTime() + RdmaTestbedSupport.STEP.toNanos();
            while (sender == null || receiver == null) {
                if (sender == null && (sender = connect.poll()) != null) {
                    open.add(sender);
                }
                if (receiver == null && (receiver = listener.accept()) != null) {
                    open.add(receiver);
                }
                if (System.nanoTime() > deadline) {
                    fail("the loopback connection is not up after " + RdmaTestbedSupport.STEP.toSeconds() + " s");
                }
                Thread.onSpinWait();
            }
            Registration reg = provider.register(arena.allocate(8192, 4096));
            open.add(reg);
            int recv = receiver.irecv(1, new Registration[] {reg}, new long[] {0}, new long[] {4096}, new int[] {1});
            assertTrue(recv >= 0, Status.describe(recv));
            assertEquals(0, receiver.test(recv));

            ip("link", "set", netdev, "down");
            down = true;
            long start = System.nanoTime();
            int recvStatus = 0;
            int sendStatus = Status.NOT_READY;
            while (recvStatus == 0 || sendStatus == Status.NOT_READY || sendStatus >= 0) {
                if (recvStatus == 0) {
                    recvStatus = receiver.test(recv);
                }
                if (sendStatus == Status.NOT_READY) {
                    sendStatus = sender.isend(reg, 4096, 4096, 7); // tag 7 has no receive: it waits
                }
                if (System.nanoTime() - start > TimeUnit.MILLISECONDS.toNanos(EVENT_BOUND_MS)) {
                    fail(netdev + " is down, but after " + EVENT_BOUND_MS + " ms the receiver reports "
                            + Status.describe(recvStatus) + " and the sender " + Status.describe(sendStatus)
                            + ": the port event did not fail them");
                }
                Thread.sleep(1);
            }
            System.out.printf("%s: %s down: receiver and sender failed after %d ms: %s / %s%n", TestbedEnv.name(),
                    netdev, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), receiver.error(),
                    sender.error());
            assertEquals(Status.FAILED, recvStatus, Status.describe(recvStatus));
            assertEquals(Status.FAILED, sendStatus, Status.describe(sendStatus));
            for (String error : new String[] {receiver.error(), sender.error()}) {
                assertTrue(error.startsWith("the port " + dev + ":1 under this connection went down: port error"),
                        error);
            }
        } finally {
            if (down) {
                ip("link", "set", netdev, "up");
                awaitActive(dev);
            }
            Exception e = RdmaTestbedSupport.closeAll(open);
            if (e != null) {
                throw e;
            }
        }
        RdmaTestbedSupport.assertResourcesBackTo(before, "after the port went down and the connections closed");
    }

    private static void ip(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("ip"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).inheritIO().start();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0, String.join(" ", cmd) + " failed");
    }

    /** Waits until the port is ACTIVE again, so that whatever runs next in this guest finds it as it was. */
    private static void awaitActive(String dev) throws Exception {
        Path state = Path.of("/sys/class/infiniband", dev, "ports", "1", "state");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.readString(state).contains("ACTIVE")) {
            if (System.nanoTime() > deadline) {
                fail(dev + " port 1 is not ACTIVE again 30 s after its link came back up: " + Files.readString(state));
            }
            Thread.sleep(100);
        }
    }
}
