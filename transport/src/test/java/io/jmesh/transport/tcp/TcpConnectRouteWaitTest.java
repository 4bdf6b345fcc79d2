package io.jmesh.transport.tcp;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.NoRouteException;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.CoreSender;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.tcp.TcpTestSupport.await;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A node whose discovery settled long before its neighbour started (the ranks of one NCCL job start seconds apart,
 * and a JVM under emulation takes tens of seconds): its connect to a peer behind that neighbour waits for the route
 * instead of failing at once, since a link of it has no live neighbour yet. Before, a connect made after the node's
 * first 7 s found the table empty and failed: every rank of the NCCL testbed's ring:4 on 2026-11-28. Once every link's
 * neighbour answers, a peer nobody reaches is refused at once.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class TcpConnectRouteWaitTest {
    @Test
    void aConnectAfterDiscoverySettledWaitsForTheRelayThatStartsLater() throws Exception {
        try (RelayMesh mesh = new RelayMesh("127.79")) {
            TcpProvider a = mesh.node(1, new int[] {1});
            TcpProvider c = mesh.node(3, new int[] {2});
            TcpListener l = mesh.listen(c);
            await("a's discovery settled", () -> !a.routes().settling());
            TcpConnect connect = a.connect(ListenHandle.decode(l.handle())); // no relay yet: it waits, not throws
            mesh.node(2, new int[] {1, 2});                                   // the relay starts
            CoreSender[] s = new CoreSender[1];
            CoreReceiver[] r = new CoreReceiver[1];
            await("the connect through the relay", () -> {
                s[0] = s[0] != null ? s[0] : connect.poll();
                r[0] = r[0] != null ? r[0] : l.accept();
                return s[0] != null && r[0] != null;
            });
            try (CoreSender sender = s[0]; CoreReceiver receiver = r[0]) {
                assertNotNull(sender);
                assertTrue(connect.route().contains("via 127.79.1.2"), connect.route());
            }
            ListenHandle nowhere = new ListenHandle(ListenHandle.FLAG_TCP_PROVIDER, 42,
                    List.of(new ListenAddress(IpPrefix.parse("127.79.9.3/24"), 4791, 0)));
            NoRouteException e = assertThrows(NoRouteException.class, () -> a.connect(nowhere),
                    "with its one link's neighbour answering, a peer nobody reaches is refused at once");
            assertTrue(e.getMessage().contains("no route through other nodes"), e.getMessage());
        }
    }
}
