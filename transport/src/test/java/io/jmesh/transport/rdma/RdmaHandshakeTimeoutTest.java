package io.jmesh.transport.rdma;

import io.jmesh.api.Connector;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.Setting;
import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import io.jmesh.testbed.TestbedEnv;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.rdma.RdmaTestbedSupport.STEP;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@code JMESH_HANDSHAKE_TIMEOUT_MS} takes effect on verbs, per fabric: two verbs fabrics of one process connect to
 * a listener on this guest's own RDMA address that takes the TCP connection but never answers the handshake. The one
 * whose timeout is 200 ms (set through the system property {@code -Djmesh.handshake.timeout.ms}) gives up with "timed
 * out after 200 ms" while the other, 15 s through {@link Context#handshakeTimeoutMs}, is still waiting; later that
 * one gives up after its own 15 s. Each guest runs it alone, against itself.
 */
@Tag("rdma")
class RdmaHandshakeTimeoutTest {
    private static final long PATIENT_MS = 15_000;

    @Test
    void eachVerbsFabricKeepsTheHandshakeTimeoutOfItsContext() throws Exception {
        TestbedEnv.require();
        assumeTrue(TestbedEnv.topology().equals("pair"), "runs on the pair topology only (each guest by itself)");
        String dev = TestbedEnv.devices().getFirst();
        IpPrefix mine = IpPrefix.parse(TestbedEnv.dev(dev, "IP") + "/" + TestbedEnv.dev(dev, "PREFIX"));

        Context quick;
        String before = System.setProperty(Setting.HANDSHAKE_TIMEOUT_MS.property(), "200");
        try {
            quick = new Context().provider("rdma");
        } finally {
            if (before == null) {
                System.clearProperty(Setting.HANDSHAKE_TIMEOUT_MS.property());
            } else {
                System.setProperty(Setting.HANDSHAKE_TIMEOUT_MS.property(), before);
            }
        }
        assertEquals(200, quick.handshakeTimeoutMs());
        Context patient = new Context().provider("rdma").handshakeTimeoutMs(PATIENT_MS);

        try (ServerSocketChannel silent = ServerSocketChannel.open();
             Fabric a = Fabric.open(quick);
             Fabric b = Fabric.open(patient)) {
            assertEquals("rdma", a.provider());
            // the kernel completes the TCP connect from its backlog; nobody ever reads or answers
            silent.bind(new InetSocketAddress(mine.address(), 0), 16);
            int port = ((InetSocketAddress) silent.getLocalAddress()).getPort();
            byte[] handle = new ListenHandle(0, 42, List.of(new ListenAddress(mine, port, 0))).encode();

            long start = System.nanoTime();
            Connector fromA = a.connect(handle);
            Connector fromB = b.connect(handle);
            String quickFailure = awaitFailure(fromA, fromB, start);
            long quickAfter = elapsedMs(start);
            assertTrue(quickFailure.contains("timed out after 200 ms"), quickFailure);
            assertTrue(quickAfter >= 200, "gave up after " + quickAfter + " ms, before its 200 ms");
            System.out.println(TestbedEnv.name() + ": the 200 ms fabric gave up after " + quickAfter + " ms: "
                    + quickFailure);

            String patientFailure = awaitFailure(fromB, null, start);
            long patientAfter = elapsedMs(start);
            assertTrue(patientFailure.contains("timed out after " + PATIENT_MS + " ms"), patientFailure);
            assertTrue(patientAfter >= PATIENT_MS, "gave up after " + patientAfter + " ms, before its " + PATIENT_MS
                    + " ms");
        }
    }

    /**
     * Polls {@code failing} until it throws and returns the message; meanwhile {@code waiting} (if given) must stay
     * in progress. Fails after {@link RdmaTestbedSupport#STEP}, a hang guard.
     */
    private static String awaitFailure(Connector failing, Connector waiting, long start) throws InterruptedException {
        while (true) {
            try {
                assertNull(failing.poll(), "a silent listener cannot complete a handshake");
            } catch (IllegalStateException e) {
                return e.getMessage();
            }
            if (waiting != null) {
                assertNull(waiting.poll(), "the " + PATIENT_MS + " ms fabric gave up with the other one");
            }
            if (elapsedMs(start) > STEP.toMillis()) {
                fail("no handshake timeout within " + STEP.toSeconds() + " s");
            }
            Thread.sleep(5);
        }
    }

    private static long elapsedMs(long start) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }
}
