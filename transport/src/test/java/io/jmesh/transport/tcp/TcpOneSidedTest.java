package io.jmesh.transport.tcp;

import io.jmesh.api.CloseHelper;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.OpWindow;
import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
import io.jmesh.api.Status;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.tcp.TcpTestSupport.assertSameBytes;
import static io.jmesh.transport.tcp.TcpTestSupport.await;
import static io.jmesh.transport.tcp.TcpTestSupport.connect;
import static io.jmesh.transport.tcp.TcpTestSupport.fill;
import static io.jmesh.transport.tcp.TcpTestSupport.send;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One-sided write and read over the TCP provider on loopback: sizes from 0 B to 8 MiB and across a registration's
 * 1 GiB window boundary, checked byte by byte; ordering against sends; bad regions refused with the connection
 * kept; iflush. The rest of what every provider must do (reads against writes, the owner's part, 32 operations at
 * once) is in the contract suite ({@code io.jmesh.api.contract}). Every wait is a hang guard.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpOneSidedTest {
    private static final long MIB = 1 << 20;

    private final List<AutoCloseable> cleanup = new ArrayList<>();
    private Arena arena;
    private TcpProvider a;
    private TcpProvider b;
    private TcpTestSupport.Pair p;

    @BeforeEach
    void setUp() throws Exception {
        arena = Arena.ofShared();
        a = TcpTestSupport.provider("127.0.101.2/24");
        cleanup.add(a);
        b = TcpTestSupport.provider("127.0.101.3/24");
        cleanup.add(b);
        p = connect(a, b.listen());
    }

    @AfterEach
    void tearDown() throws Exception {
        CloseHelper.closeAll(cleanup.reversed());
        arena.close();
    }

    /** Tests request {@code req} until it is no longer in flight, polling the owner (receiver) meanwhile. */
    private int finish(int req) {
        int[] t = new int[1];
        await("one-sided request " + req, () -> {
            p.receiver().poll();
            return (t[0] = p.sender().test(req)) != 0;
        });
        return t[0];
    }

    private void complete(int req, String what) {
        assertTrue(req >= 0, what + ": " + Status.describe(req) + " " + p.sender().error());
        int t = finish(req);
        assertEquals(1, t, what + ": " + Status.describe(t) + " " + p.sender().failure(req));
    }

    @Test
    void writeAndReadEverySize() {
        long cap = 16 * MIB;
        MemorySegment local = arena.allocate(cap, 4096);
        MemorySegment back = arena.allocate(cap, 4096);
        MemorySegment remoteMem = arena.allocate(cap, 4096);
        Registration lr = a.register(local);
        Registration br = a.register(back);
        Registration rr = b.register(remoteMem);
        RemoteRegion region = RemoteRegion.decode(rr.remote().encode());
        assertEquals("tcp", region.provider());
        assertEquals(cap, region.length());
        assertEquals(remoteMem.address(), region.address());
        long[] sizes = {0, 1, 7, 4095, 4096, 65537, MIB, MIB + 3, 8 * MIB + 1};
        for (int i = 0; i < sizes.length; i++) {
            long n = sizes[i];
            long lo = i % 2 == 0 ? 0 : 5;
            long ro = i % 3 == 0 ? 0 : 4099;
            fill(local, lo, n, 300 + i);
            remoteMem.fill((byte) 0x5A);
            int w = p.sender().write(lr, lo, n, region, ro);
            complete(w, "write of " + n);
            assertEquals(n, p.sender().size(w));
            assertSameBytes(local, lo, remoteMem, ro, n, "written " + n + " bytes");
            if (ro > 0) {
                assertEquals((byte) 0x5A, remoteMem.get(JAVA_BYTE, ro - 1), "nothing written before the range");
            }
            assertEquals((byte) 0x5A, remoteMem.get(JAVA_BYTE, ro + n), "nothing written past the range");
            back.fill((byte) 0x33);
            int rd = p.sender().read(br, 3, n, region, ro);
            complete(rd, "read of " + n);
            assertEquals(n, p.sender().size(rd));
            assertSameBytes(remoteMem, ro, back, 3, n, "read " + n + " bytes");
            assertEquals((byte) 0x33, back.get(JAVA_BYTE, 3 + n), "nothing read past the range");
            assertEquals((byte) 0x33, back.get(JAVA_BYTE, 2), "nothing read before the range");
        }
        assertNull(p.sender().error());
        assertNull(p.receiver().error());
    }

    @Test
    void acrossTheOneGiBWindowBoundary() {
        long size = (1L << 30) + 8 * MIB;
        MemorySegment big = arena.allocate(size, 4096);
        Registration rr = b.register(big);
        MemorySegment local = arena.allocate(6 * MIB, 4096);
        MemorySegment back = arena.allocate(6 * MIB, 4096);
        Registration lr = a.register(local);
        Registration br = a.register(back);
        long at = (1L << 30) - 3 * MIB / 2 - 11; // 1.5 MiB + 11 bytes before the boundary, 6 MiB long
        long n = 6 * MIB;
        fill(local, 0, n, 99);
        complete(p.sender().write(lr, 0, n, rr.remote(), at), "write across 1 GiB");
        assertSameBytes(local, 0, big, at, n, "written across 1 GiB");
        complete(p.sender().read(br, 0, n, rr.remote(), at), "read across 1 GiB");
        assertSameBytes(big, at, back, 0, n, "read across 1 GiB");
        // the very end of the registration
        complete(p.sender().write(lr, 0, MIB, rr.remote(), size - MIB), "write at the end");
        assertSameBytes(local, 0, big, size - MIB, MIB, "written at the end");
    }

    @Test
    void badRegionsAreRefusedWithClearErrorsAndTheConnectionSurvives() {
        MemorySegment local = arena.allocate(4096);
        MemorySegment remoteMem = arena.allocate(4096);
        Registration lr = a.register(local);
        Registration rr = b.register(remoteMem);
        RemoteRegion good = rr.remote();
        CoreSender s = p.sender();
        // checked here, before anything is sent
        assertEquals(Status.BAD_ARGUMENT, s.write(lr, 0, 10, new RemoteRegion("rdma", good.address(), 4096,
                new int[] {1}), 0), "a region of the rdma provider");
        assertEquals(Status.BAD_ARGUMENT, s.write(lr, 0, 10, good, 4090), "past the region's end");
        assertEquals(Status.BAD_ARGUMENT, s.read(lr, 0, 10, good, -1), "negative offset");
        assertEquals(Status.BAD_ARGUMENT, s.write(lr, 4090, 10, good, 0), "past the local registration's end");
        assertEquals(Status.BAD_ARGUMENT, s.write(lr, 0, 10, null, 0));
        assertEquals(Status.BAD_ARGUMENT, s.write(null, 0, 10, good, 0));
        assertEquals(Status.BAD_ARGUMENT, s.write(lr, 0, 10, new RemoteRegion("tcp", good.address(), 4096,
                new int[] {1, 2, 3}), 0), "a TCP region has two keys");
        assertEquals(Status.BAD_ARGUMENT, s.test(CoreSender.OP_BASE), "no such operation");

        // checked by the owner: a corrupted id, a region longer than the registration, a closed registration
        RemoteRegion corrupt = new RemoteRegion("tcp", good.address(), good.length(),
                new int[] {good.key(0) ^ 0x10, good.key(1)});
        fill(local, 0, 4096, 1);
        int w = s.write(lr, 0, 100, corrupt, 0);
        assertEquals(Status.REFUSED, finish(w));
        assertTrue(s.failure(w).contains("refused the one-sided write of 100 bytes at offset 0")
                && s.failure(w).contains("no open registration"), s.failure(w));
        assertEquals(-1, remoteMem.mismatch(MemorySegment.ofArray(new byte[4096])), "nothing written");
        assertEquals(Status.BAD_ARGUMENT, s.test(w), "reported once");

        RemoteRegion longer = new RemoteRegion("tcp", good.address(), 16 * MIB, good.keys());
        int r = s.read(lr, 0, 4096, longer, 8192);
        assertEquals(Status.REFUSED, finish(r));
        assertTrue(s.failure(r).contains("outside its registration of 4096 bytes"), s.failure(r));
        int w2 = s.write(lr, 0, 2 * 4096, longer, 0); // a refused write's payload is read and dropped
        assertEquals(Status.BAD_ARGUMENT, w2, "the local registration is only 4096 bytes");
        MemorySegment bigLocal = arena.allocate(3 * MIB);
        Registration blr = a.register(bigLocal);
        int w3 = s.write(blr, 0, 3 * MIB, longer, 0);
        assertEquals(Status.REFUSED, finish(w3), "3 MiB into a 4 KiB registration");

        Registration other = b.register(arena.allocate(64));
        RemoteRegion closed = other.remote();
        other.close();
        assertThrows(IllegalStateException.class, other::remote);
        int w4 = s.write(lr, 0, 10, closed, 0);
        assertEquals(Status.REFUSED, finish(w4));
        assertTrue(s.failure(w4).contains("registration was closed"), s.failure(w4));

        // the connection still works both ways
        assertNull(s.error());
        assertNull(p.receiver().error());
        complete(s.write(lr, 0, 4096, good, 0), "a good write after refusals");
        assertSameBytes(local, 0, remoteMem, 0, 4096, "good write");
        int rcv = p.receiver().irecv(1, new Registration[] {rr}, new long[] {0}, new long[] {4096}, new int[] {1});
        int snd = send(s, lr, 0, 77, 1);
        TcpTestSupport.complete(s, snd, p.receiver(), rcv);
        assertEquals(77, p.receiver().size(rcv, 0));
    }

    @Test
    void aWriteIsInPlaceWhenTheSendIssuedAfterItIsReceived() {
        long n = 4 * MIB;
        MemorySegment local = arena.allocate(n + 64, 4096);
        MemorySegment remoteMem = arena.allocate(n, 4096);
        MemorySegment inbox = arena.allocate(64);
        Registration lr = a.register(local);
        Registration rr = b.register(remoteMem);
        Registration ir = b.register(inbox);
        for (int round = 0; round < 20; round++) {
            fill(local, 0, n + 64, 700 + round);
            int rcv = p.receiver().irecv(1, new Registration[] {ir}, new long[] {0}, new long[] {64},
                    new int[] {round});
            assertTrue(rcv >= 0);
            int w = p.sender().write(lr, 0, n, rr.remote(), 0);
            assertTrue(w >= 0, Status.describe(w));
            int snd = send(p.sender(), lr, n, 64, round); // a small message after the large write
            assertTrue(snd >= 0, Status.describe(snd));
            int[] t = new int[2];
            int r = round;
            await("the send and the receive", () -> {
                if (t[0] == 0 && (t[0] = p.sender().test(snd)) == 1) {
                    // at the sender, the send completes only after the write issued before it
                    assertEquals(1, p.sender().test(w), "the write issued before a completed send has completed");
                }
                if (t[1] == 0 && (t[1] = p.receiver().test(rcv)) == 1) {
                    // the receive completed: the write issued before its message must be in place
                    assertSameBytes(local, 0, remoteMem, 0, n, "round " + r + ": the write before the message");
                }
                assertTrue(t[0] >= 0 && t[1] >= 0, p.sender().error() + " / " + p.receiver().error());
                return t[0] == 1 && t[1] == 1;
            });
        }
    }

    @Test
    void iflushCompletesAtOnceAndIsReportedOnce() {
        CoreReceiver r = p.receiver();
        MemorySegment mem = arena.allocate(4096);
        Registration reg = b.register(mem);
        Registration[] regs = {reg, reg};
        assertEquals(Status.BAD_ARGUMENT, r.iflush(0, regs, new long[2], new long[2]));
        assertEquals(Status.BAD_ARGUMENT, r.iflush(9, new Registration[9], new long[9], new long[9]));
        assertEquals(Status.BAD_ARGUMENT, r.iflush(2, new Registration[] {reg}, new long[2], new long[2]));
        assertEquals(Status.BAD_ARGUMENT, r.iflush(1, regs, new long[] {4000}, new long[] {97}), "past the end");
        assertEquals(Status.BAD_ARGUMENT, r.iflush(1, regs, new long[] {-1}, new long[] {1}));
        assertEquals(Status.BAD_ARGUMENT, r.iflush(1, null, new long[1], new long[1]));
        assertEquals(Status.BAD_ARGUMENT, r.iflush(1, new Registration[] {null}, new long[1], new long[1]));

        // after a real receive
        Registration lr = a.register(arena.allocate(4096));
        int rcv = r.irecv(1, new Registration[] {reg}, new long[] {0}, new long[] {4096}, new int[] {0});
        int snd = send(p.sender(), lr, 0, 4096, 0);
        TcpTestSupport.complete(p.sender(), snd, r, rcv);
        int f = r.iflush(2, regs, new long[] {0, 2048}, new long[] {2048, 2048});
        assertTrue(f >= 0, Status.describe(f));
        assertEquals(1, r.test(f));
        assertEquals(Status.BAD_ARGUMENT, r.test(f), "a reported flush is gone");

        int[] ids = new int[OpWindow.SIZE];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = r.iflush(1, regs, new long[] {0}, new long[] {4096});
            assertTrue(ids[i] >= 0);
        }
        assertEquals(ids.length, java.util.Arrays.stream(ids).distinct().count(), "distinct ids");
        assertEquals(Status.NOT_READY, r.iflush(1, regs, new long[] {0}, new long[] {1}), "all flush ids in use");
        for (int id : ids) {
            assertEquals(1, r.test(id));
        }
        reg.close();
        assertEquals(Status.BAD_ARGUMENT, r.iflush(1, regs, new long[] {0}, new long[] {1}), "closed registration");
        r.close();
        Registration again = b.register(mem);
        assertEquals(Status.CLOSED, r.iflush(1, new Registration[] {again}, new long[] {0}, new long[] {1}));
    }

    @Test
    void theOwnerClosingFailsOperationsInFlight() {
        MemorySegment local = arena.allocate(64 * MIB, 4096);
        Registration lr = a.register(local);
        RemoteRegion region = b.register(arena.allocate(64 * MIB, 4096)).remote();
        int w = p.sender().write(lr, 0, 64 * MIB, region, 0);
        assertTrue(w >= 0);
        p.receiver().close();
        int[] t = new int[1];
        await("the initiator notices", () -> (t[0] = p.sender().test(w)) != 0);
        assertEquals(Status.FAILED, t[0]);
        assertTrue(p.sender().error().contains("lost"), p.sender().error());
        assertEquals(Status.FAILED, p.sender().read(lr, 0, 1, region, 0));
    }
}
