package io.jmesh.transport.tcp;

import io.jmesh.api.Registration;
import io.jmesh.api.Setting;
import io.jmesh.api.Status;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.tcp.TcpTestSupport.assertSameBytes;
import static io.jmesh.transport.tcp.TcpTestSupport.await;
import static io.jmesh.transport.tcp.TcpTestSupport.fill;
import static io.jmesh.transport.tcp.TcpTestSupport.send;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A graceful close through a relay, with the receiver's application slow to poll: its liveness thread learns from
 * the relay that the sender's end is gone (the relay's leg to the sender no longer has the connection) long before
 * the application reads the goodbye waiting in its sockets. That report must not fail the connection: the message
 * the sender completed before its close is delivered, and the receiver then ends CLOSED. (The chaos soak found it:
 * a relayed receiver ended FAILED at the soak's graceful close on a loaded machine.)
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpRelayedCloseLivenessTest {
    private static final long LIVENESS_MS = 600;

    @Test
    void theRelaysReportOfAClosedSenderLeavesTheGoodbyeToTheDataPath() throws Exception {
        try (RelayMesh mesh = RelayMesh.line("127.87", 3, Setting.LIVENESS_TIMEOUT_MS.property(),
                Long.toString(LIVENESS_MS)); Arena arena = Arena.ofShared()) {
            TcpProvider a = mesh.nodes.get(0);
            TcpProvider c = mesh.nodes.get(2);
            TcpTestSupport.Pair p = mesh.connect(a, mesh.listen(c));
            assertTrue(mesh.lastRoute.contains("via 127.87.1.2"), "through the relay: " + mesh.lastRoute);
            MemorySegment src = arena.allocate(8192, 4096);
            MemorySegment dst = arena.allocate(8192, 4096);
            Registration rs = a.register(src);
            Registration rd = c.register(dst);
            fill(src, 0, 4096, 77);
            int req = send(p.sender(), rs, 0, 4096, 0);
            int[] t = new int[1];
            await("the send completes", () -> (t[0] = p.sender().test(req)) != 0);
            assertEquals(1, t[0], p.sender().error());
            p.sender().close();
            // the receiver's application does not poll for five liveness timeouts: the relay's LOST (the sender's
            // end closed) reaches this node's liveness thread meanwhile, pings going every sixth of a timeout
            Thread.sleep(5 * LIVENESS_MS);
            int r = p.receiver().irecv(rd, 0, 4096, 0);
            assertTrue(r >= 0, Status.describe(r) + ": " + p.receiver().error());
            await("the receive leaves flight", () -> (t[0] = p.receiver().test(r)) != 0);
            assertEquals(1, t[0], "the message sent before the close: " + Status.describe(t[0]) + ": "
                    + p.receiver().error());
            assertSameBytes(src, 0, dst, 0, 4096, "the message");
            int q = p.receiver().irecv(rd, 4096, 4096, 0);
            int end = q;
            if (q >= 0) {
                await("the next receive leaves flight", () -> (t[0] = p.receiver().test(q)) != 0);
                end = t[0];
            }
            assertEquals(Status.CLOSED, end, Status.describe(end) + ": " + p.receiver().error());
        }
    }
}
