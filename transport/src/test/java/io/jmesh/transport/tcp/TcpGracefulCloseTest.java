package io.jmesh.transport.tcp;

import io.jmesh.api.Registration;
import io.jmesh.api.Setting;
import io.jmesh.api.Status;
import io.jmesh.transport.core.CoreReceiver;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
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
 * A sender's close as a user met it: two nodes with the defaults (the eager path on up to 64 KiB), sends of 4, 8
 * and 16 KiB each reported done, then close; the receiver, posting one receive at a time afterwards, gets all three
 * and then CLOSED. The same through a relay (spliced and copied), with messages above the eager threshold and
 * striped over the bulk sockets; and a peer whose sockets vanish without a goodbye still fails at once.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpGracefulCloseTest {
    private static final long[] SMALL = {4096, 8192, 16384};
    private static final long[] LARGE = {65_537, 1 << 20};

    private Arena arena;
    private RelayMesh mesh;

    @BeforeEach
    void setUp() {
        arena = Arena.ofShared();
    }

    @AfterEach
    void tearDown() {
        if (mesh != null) {
            mesh.close();
        }
        arena.close();
    }

    @Test
    void directSmallSendsDoneBeforeCloseArriveAtReceivesPostedLater() throws Exception {
        mesh = RelayMesh.line("127.81", 2);
        smallThenClose(mesh.nodes.get(0), mesh.nodes.get(1));
    }

    @Test
    void relayedSmallSendsDoneBeforeCloseArriveAtReceivesPostedLater() throws Exception {
        mesh = RelayMesh.line("127.82", 3);
        smallThenClose(mesh.nodes.get(0), mesh.nodes.get(2));
        assertTrue(mesh.lastRoute.contains("via 127.82.1.2"),
                "the connection went through the relay: " + mesh.lastRoute);
    }

    @Test
    void directLargeSendsDoneBeforeCloseArrive() throws Exception {
        mesh = RelayMesh.line("127.83", 2);
        largeThenClose(mesh.nodes.get(0), mesh.nodes.get(1));
    }

    @Test
    void relayedLargeSendsDoneBeforeCloseArriveSplicedAndCopied() throws Exception {
        mesh = RelayMesh.line("127.84", 3);
        largeThenClose(mesh.nodes.get(0), mesh.nodes.get(2));
        mesh.close();
        mesh = RelayMesh.line("127.85", 3, Setting.TCP_RELAY_SPLICE.property(), "0");
        largeThenClose(mesh.nodes.get(0), mesh.nodes.get(2));
    }

    /** A peer whose sockets end with no goodbye (a process that died) is a failure, reported at once. */
    @Test
    void aPeerThatVanishesWithoutAGoodbyeStillFails() throws Exception {
        mesh = RelayMesh.line("127.86", 2);
        TcpTestSupport.Pair p = mesh.connect(mesh.nodes.get(0), mesh.listen(mesh.nodes.get(1)));
        Registration rd = mesh.nodes.get(1).register(arena.allocate(4096));
        int r = p.receiver().irecv(rd, 0, 4096, 1);
        TcpTestSupport.conn(p.sender()).close();           // the kernel's close of a dead process: FIN, no goodbye
        int[] t = new int[1];
        await("the receive leaves flight", () -> (t[0] = p.receiver().test(r)) != 0);
        assertEquals(Status.FAILED, t[0], "a peer gone without a goodbye: " + p.receiver().error());
    }

    /** The user's program: 4, 8 and 16 KiB, each reported done, close; then one receive at a time. */
    private void smallThenClose(TcpProvider a, TcpProvider b) throws Exception {
        TcpTestSupport.Pair p = mesh.connect(a, mesh.listen(b));
        MemorySegment src = arena.allocate(64 << 10, 4096);
        MemorySegment dst = arena.allocate(64 << 10, 4096);
        Registration rs = a.register(src);
        Registration rd = b.register(dst);
        long off = 0;
        for (int i = 0; i < SMALL.length; i++) {
            fill(src, off, SMALL[i], 300 + i);
            int req = send(p.sender(), rs, off, SMALL[i], 0);
            assertTrue(req >= 0, "isend " + Status.describe(req));
            int[] t = new int[1];
            await("send " + i + " done", () -> (t[0] = p.sender().test(req)) != 0);
            assertEquals(1, t[0], "send " + i + ": " + p.sender().error());
            off += SMALL[i];
        }
        p.sender().close();
        off = 0;
        for (int i = 0; i < SMALL.length; i++) {
            int r = p.receiver().irecv(rd, off, SMALL[i], 0);
            assertEquals(1, settle(p.receiver(), r), "receive " + i + " after the close: " + p.receiver().error());
            assertEquals(SMALL[i], p.receiver().size(r, 0));
            assertSameBytes(src, off, dst, off, SMALL[i], "message " + i);
            off += SMALL[i];
        }
        assertClosed(p.receiver(), rd);
        assertLingerEnds(a, p.receiver());
    }

    /** Receives posted first, sends above the eager threshold (one striped) reported done, close, then test. */
    private void largeThenClose(TcpProvider a, TcpProvider b) throws Exception {
        TcpTestSupport.Pair p = mesh.connect(a, mesh.listen(b));
        MemorySegment src = arena.allocate(2 << 20, 4096);
        MemorySegment dst = arena.allocate(2 << 20, 4096);
        Registration rs = a.register(src);
        Registration rd = b.register(dst);
        int[] recvs = new int[LARGE.length];
        long off = 0;
        for (int i = 0; i < LARGE.length; i++) {
            fill(src, off, LARGE[i], 400 + i);
            recvs[i] = p.receiver().irecv(rd, off, LARGE[i], 0);
            off += LARGE[i];
        }
        off = 0;
        for (int i = 0; i < LARGE.length; i++) {
            int req = send(p.sender(), rs, off, LARGE[i], 0);
            int[] t = new int[1];
            // the receiver polls (its socket 0 must be read for a 1 MiB message to leave) but is never tested
            await("send " + i + " done", () -> {
                p.receiver().poll();
                return (t[0] = p.sender().test(req)) != 0;
            });
            assertEquals(1, t[0], "send " + i + ": " + p.sender().error());
            off += LARGE[i];
        }
        p.sender().close();
        off = 0;
        for (int i = 0; i < LARGE.length; i++) {
            assertEquals(1, settle(p.receiver(), recvs[i]), "receive " + i + ": " + p.receiver().error());
            assertSameBytes(src, off, dst, off, LARGE[i], "message " + i);
            off += LARGE[i];
        }
        assertClosed(p.receiver(), rd);
        assertLingerEnds(a, p.receiver());
    }

    private static int settle(CoreReceiver r, int request) {
        int[] t = new int[1];
        await("receive " + request + " leaves flight", () -> (t[0] = r.test(request)) != 0);
        return t[0];
    }

    private static void assertClosed(CoreReceiver r, Registration rd) {
        int q = r.irecv(rd, 0, 4096, 0);
        int t = q >= 0 ? settle(r, q) : q;
        assertEquals(Status.CLOSED, t, "a receive after everything arrived: " + Status.describe(t) + ": " + r.error());
        assertTrue(r.error().contains("closed by the peer"), r.error());
    }

    /**
     * Once the receiver has seen the close it ends its side of every socket (it writes nothing more), so the sender's
     * lingering sockets go while the receiver's application still holds it open, not at its close.
     */
    private static void assertLingerEnds(TcpProvider a, CoreReceiver r) {
        for (java.nio.channels.SocketChannel ch : TcpTestSupport.conn(r).sockets) {
            assertTrue(ch.socket().isOutputShutdown(), "the receiver ended its side of " + ch);
        }
        await("the closed sender's sockets finish while the receiver is open", () -> a.linger().lingering() == 0);
        r.close();
    }
}
