package io.jmesh.transport.tcp;

import io.jmesh.api.CloseHelper;
import io.jmesh.api.Registration;
import io.jmesh.api.Setting;
import io.jmesh.api.Status;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.tcp.TcpTestSupport.assertSameBytes;
import static io.jmesh.transport.tcp.TcpTestSupport.await;
import static io.jmesh.transport.tcp.TcpTestSupport.complete;
import static io.jmesh.transport.tcp.TcpTestSupport.connect;
import static io.jmesh.transport.tcp.TcpTestSupport.fill;
import static io.jmesh.transport.tcp.TcpTestSupport.send;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TCP provider on an IPv6 link (::1): the data sockets on the link's address, a message striped over them, and
 * the sender's close seen as such, with the peer named in IPv6 form. Every wait is a hang guard.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpIpv6Test {
    private static final long MIB = 1 << 20;

    private final List<AutoCloseable> cleanup = new ArrayList<>();
    private Arena arena;

    @BeforeEach
    void setUp() {
        arena = Arena.ofShared();
    }

    @AfterEach
    void tearDown() throws Exception {
        CloseHelper.closeAll(cleanup.reversed());
        arena.close();
    }

    private TcpProvider provider(String addresses, String... extra) {
        TcpProvider p = TcpTestSupport.provider(addresses, extra);
        cleanup.add(p);
        return p;
    }

    @Test
    void ipv6Loopback() throws Exception {
        TcpProvider a = provider("::1/128", Setting.TCP_SOCKETS.property(), "2");
        TcpProvider b = provider("::1/128");
        TcpTestSupport.Pair p = connect(a, b.listen());
        assertEquals(2, TcpTestSupport.conn(p.sender()).count(), "the listener grants what the connector asked for, at most its own");
        assertEquals(InetAddress.getByName("::1"), TcpTestSupport.conn(p.sender()).localAddress(1).getAddress());
        long n = 3 * MIB + 1;
        MemorySegment src = arena.allocate(n);
        MemorySegment dst = arena.allocate(n);
        fill(src, 0, n, 6);
        Registration rs = a.register(src);
        Registration rd = b.register(dst);
        int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {n}, new int[] {0});
        int sr = send(p.sender(), rs, 0, n, 0);
        complete(p.sender(), sr, p.receiver(), rr);
        assertSameBytes(src, 0, dst, 0, n, "message over ::1");
        p.sender().close();
        int q = p.receiver().irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {1}, new int[] {1});
        int[] t = new int[1];
        await("the receiver sees the close", () -> (t[0] = p.receiver().test(q)) != 0);
        assertEquals(Status.CLOSED, t[0], p.receiver().error());
        assertTrue(p.receiver().error().startsWith("the connection to [::1]:"), p.receiver().error());
    }
}
