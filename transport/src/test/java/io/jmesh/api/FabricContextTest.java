package io.jmesh.api;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Each fabric owns its settings: two TCP fabrics of one process, opened with different handshake timeouts, connect to
 * a listener that takes the TCP connection but never answers the handshake; the one with 200 ms gives up after its
 * 200 ms while the other is still waiting. The providers are found through the service registration.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FabricContextTest {
    /** A hang guard only: nothing here is expected to take anywhere near this long. */
    private static final long PATIENCE_MS = 30_000;

    @Test
    void twoFabricsInOneProcessKeepTheirOwnHandshakeTimeout() throws Exception {
        Context quick = Context.from(Map.of(), Map.of()).provider("tcp").addresses("127.0.88.2/24")
                .handshakeTimeoutMs(200);
        Context patient;
        // the system property, read when the context is made; the environment of this JVM is not the test's to set
        String before = System.setProperty(Setting.HANDSHAKE_TIMEOUT_MS.property(), "60000");
        try {
            patient = new Context().provider("tcp").addresses("127.0.88.3/24");
        } finally {
            if (before == null) {
                System.clearProperty(Setting.HANDSHAKE_TIMEOUT_MS.property());
            } else {
                System.setProperty(Setting.HANDSHAKE_TIMEOUT_MS.property(), before);
            }
        }
        assertEquals(60_000, patient.handshakeTimeoutMs());
        try (ServerSocketChannel silent = ServerSocketChannel.open();
             Fabric a = Fabric.open(quick);
             Fabric b = Fabric.open(patient)) {
            // the kernel completes the TCP connect from its backlog; nobody ever reads or answers
            silent.bind(new InetSocketAddress("127.0.88.1", 0), 16);
            int port = ((InetSocketAddress) silent.getLocalAddress()).getPort();
            byte[] handle = new ListenHandle(ListenHandle.FLAG_TCP_PROVIDER, 42,
                    List.of(new ListenAddress(IpPrefix.parse("127.0.88.1/24"), port, 0))).encode();
            long start = System.nanoTime();
            Connector fromA = a.connect(handle);
            Connector fromB = b.connect(handle);
            IllegalStateException e = null;
            while (e == null) {
                try {
                    assertNull(fromA.poll(), "a silent listener cannot complete a handshake");
                } catch (IllegalStateException failed) {
                    e = failed;
                }
                assertNull(fromB.poll(), "the patient fabric gave up: its own timeout is 60 s");
                if (elapsedMs(start) > PATIENCE_MS) {
                    fail("the 200 ms handshake timeout did not fire within " + PATIENCE_MS + " ms");
                }
                Thread.sleep(1);
            }
            long gaveUpAfter = elapsedMs(start);
            assertTrue(e.getMessage().contains("timed out after 200 ms"), e.getMessage());
            assertTrue(gaveUpAfter >= 200, "gave up after " + gaveUpAfter + " ms, before its 200 ms");
            // the patient one waits on well past the quick one's deadline
            while (elapsedMs(start) < gaveUpAfter + 1_000) {
                assertNull(fromB.poll(), "the patient fabric gave up early");
                Thread.sleep(10);
            }
            fromB.close();
        }
    }

    @Test
    void providersAreFoundByNameAndAliasThroughTheirServiceRegistration() {
        try (Fabric f = Fabric.open(Context.from(Map.of(), Map.of("JMESH_PROVIDER", "socket",
                "JMESH_ADDRESSES", "127.0.88.4/24")))) {
            assertEquals("tcp", f.provider());
            assertEquals("127.0.88.4/24", f.links().getFirst().prefix().toString());
        }
    }

    @Test
    void openConcludesTheContextFirst() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Fabric.open(Context.from(Map.of(), Map.of()).provider("tcp").tcpSockets(17)));
        assertTrue(e.getMessage().startsWith("Context.tcpSockets(17) is not valid: JMESH_TCP_SOCKETS "
                + "(-Djmesh.tcp.sockets) takes an integer from 1 to 16"), e.getMessage());
    }

    private static long elapsedMs(long start) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }
}
