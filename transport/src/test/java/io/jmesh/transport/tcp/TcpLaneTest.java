package io.jmesh.transport.tcp;

import io.jmesh.api.CloseHelper;
import io.jmesh.api.Registration;
import io.jmesh.api.Setting;
import io.jmesh.api.Status;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.CoreSender;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.jmesh.transport.tcp.TcpTestSupport.assertSameBytes;
import static io.jmesh.transport.tcp.TcpTestSupport.await;
import static io.jmesh.transport.tcp.TcpTestSupport.complete;
import static io.jmesh.transport.tcp.TcpTestSupport.connect;
import static io.jmesh.transport.tcp.TcpTestSupport.fill;
import static io.jmesh.transport.tcp.TcpTestSupport.send;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TCP provider's bulk sockets and their helper threads ({@link TcpPumps}): messages over {@value
 * TcpSendWire#SMALL} bytes are striped over sockets 1 and up, which the helpers move, smaller ones go on socket 0;
 * memory only one thread may touch stays on socket 0; closing stops the helpers before the memory can be freed; a
 * hostile header on a bulk socket fails the connection before a byte of it lands.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpLaneTest {
    private static final long MIB = 1 << 20;
    private final List<AutoCloseable> cleanup = new ArrayList<>();
    private final Arena arena = Arena.ofShared();

    @AfterEach
    void tearDown() throws Exception {
        CloseHelper.closeAll(cleanup.reversed());
        arena.close();
    }

    private TcpProvider provider(String address, int threads) {
        TcpProvider p = TcpTestSupport.provider(address, Setting.TCP_THREADS.property(), Integer.toString(threads),
                Setting.TCP_SOCKETS.property(), "4");
        cleanup.add(p);
        return p;
    }

    private static long bulkChunks(CoreSender s) {
        return ((TcpSendWire) s.wire()).bulkChunks();
    }

    /** 0 helpers: the application's thread moves the bulk sockets; 1 and 3: helpers do. */
    @ParameterizedTest
    @ValueSource(ints = {0, 1, 3})
    void smallMessagesGoOnSocketZeroAndLargeOnesAreStripedIntact(int threads) throws Exception {
        TcpProvider a = provider("127.0.103.2/24", threads);
        TcpProvider b = provider("127.0.103.3/24", threads);
        TcpTestSupport.Pair p = connect(a, b.listen());
        long[] sizes = {0, 100, TcpSendWire.SMALL, 3 * MIB + 17, TcpSendWire.SMALL + 1, 1, 5 * MIB - 3, 4096};
        long region = 6 * MIB;
        MemorySegment src = arena.allocate(region * sizes.length, 4096);
        MemorySegment dst = arena.allocate(region * sizes.length, 4096);
        Registration rs = a.register(src);
        Registration rd = b.register(dst);
        // the small ones first: nothing may go through the bulk sockets
        for (int i = 0; i < 3; i++) {
            fill(src, i * region, sizes[i], 40 + i);
            int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {i * region}, new long[] {region},
                    new int[] {i});
            complete(p.sender(), send(p.sender(), rs, i * region, sizes[i], i), p.receiver(), rr);
            assertEquals(sizes[i], p.receiver().size(rr, 0));
        }
        assertEquals(0, bulkChunks(p.sender()), "messages up to " + TcpSendWire.SMALL + " bytes use socket 0 only");
        // then all of them in flight at once, small ones among large ones, each checked
        int[] recv = new int[sizes.length];
        int[] sent = new int[sizes.length];
        for (int i = 0; i < sizes.length; i++) {
            fill(src, i * region, sizes[i], 50 + i);
            recv[i] = p.receiver().irecv(1, new Registration[] {rd}, new long[] {i * region}, new long[] {region},
                    new int[] {i});
            assertTrue(recv[i] >= 0, Status.describe(recv[i]));
        }
        for (int i = 0; i < sizes.length; i++) {
            sent[i] = send(p.sender(), rs, i * region, sizes[i], i);
        }
        for (int i = 0; i < sizes.length; i++) {
            complete(p.sender(), sent[i], p.receiver(), recv[i]);
            assertEquals(sizes[i], p.receiver().size(recv[i], 0), "size of message " + i);
            assertSameBytes(src, i * region, dst, i * region, sizes[i], "message " + i + " of " + sizes[i] + " B");
        }
        // 3 MiB + 17 over 3 bulk sockets: chunks of at least 1 MiB, so at least 3 chunks, and more for 5 MiB
        assertTrue(bulkChunks(p.sender()) >= 3 + 1 + 3, "chunks on the bulk sockets: " + bulkChunks(p.sender()));
    }

    /**
     * Once isend took a large message, its bytes reach the receiver without another call on the sender, as with
     * NCCL's Socket and IB transports: a program may send many messages and then wait on its receives only (the
     * NCCL driver's drain does). 8 messages of 2 MiB are 32 chunks of 512 KiB over 3 bulk sockets.
     */
    @Test
    void acceptedLargeSendsArriveWhileOnlyTheReceiverIsPolled() throws Exception {
        TcpProvider a = provider("127.0.103.8/24", 3);
        TcpProvider b = provider("127.0.103.9/24", 3);
        TcpTestSupport.Pair p = connect(a, b.listen());
        int n = 8;
        long size = 2 * MIB;
        MemorySegment src = arena.allocate(size * n, 4096);
        MemorySegment dst = arena.allocate(size * n, 4096);
        Registration rs = a.register(src);
        Registration rd = b.register(dst);
        int[] recv = new int[n];
        for (int i = 0; i < n; i++) {
            fill(src, i * size, size, 70 + i);
            recv[i] = p.receiver().irecv(1, new Registration[] {rd}, new long[] {i * size}, new long[] {size},
                    new int[] {i});
            assertTrue(recv[i] >= 0, Status.describe(recv[i]));
        }
        int[] sent = new int[n];
        for (int i = 0; i < n; i++) {
            sent[i] = send(p.sender(), rs, i * size, size, i);
        }
        int[] got = new int[n];
        await("8 receives of 2 MiB with the sender left alone", () -> {
            boolean all = true;
            for (int i = 0; i < n; i++) {
                if (got[i] == 0) {
                    int r = p.receiver().test(recv[i]);
                    assertTrue(r >= 0, () -> Status.describe(r) + ": " + p.receiver().error());
                    got[i] = r;
                }
                all &= got[i] == 1;
            }
            return all;
        });
        for (int i = 0; i < n; i++) {
            assertEquals(1, p.sender().test(sent[i]), "send " + i);
            assertSameBytes(src, i * size, dst, i * size, size, "message " + i);
        }
        assertTrue(bulkChunks(p.sender()) >= 4L * n, "chunks on the bulk sockets: " + bulkChunks(p.sender()));
    }

    @Test
    void memoryOfAConfinedArenaIsSentAndReceivedOnSocketZero() throws Exception {
        TcpProvider a = provider("127.0.103.4/24", 2);
        TcpProvider b = provider("127.0.103.5/24", 2);
        TcpTestSupport.Pair p = connect(a, b.listen());
        long n = 2 * MIB + 5;
        try (Arena mine = Arena.ofConfined()) {
            MemorySegment local = mine.allocate(n);
            MemorySegment shared = arena.allocate(n);
            fill(local, 0, n, 7);
            Registration rs = a.register(local);
            Registration rd = b.register(shared);
            int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {n}, new int[] {0});
            complete(p.sender(), send(p.sender(), rs, 0, n, 0), p.receiver(), rr);
            assertSameBytes(local, 0, shared, 0, n, "from a confined arena");
            // and into one: the receiver's clear-to-send tells the sender to keep off the helpers
            Registration back = b.register(shared);
            MemorySegment into = mine.allocate(n);
            Registration rl = a.register(into);
            TcpTestSupport.Pair q = connect(b, a.listen());
            fill(shared, 0, n, 8);
            rr = q.receiver().irecv(1, new Registration[] {rl}, new long[] {0}, new long[] {n}, new int[] {0});
            complete(q.sender(), send(q.sender(), back, 0, n, 0), q.receiver(), rr);
            assertSameBytes(shared, 0, into, 0, n, "into a confined arena");
            assertEquals(0, bulkChunks(p.sender()) + bulkChunks(q.sender()), "confined memory left to socket 0");
            q.sender().close();
            q.receiver().close();
            p.sender().close();
            p.receiver().close();
        }
    }

    /**
     * A helper inside a socket call holds the memory's arena: closing it then would throw. Closing the connection
     * first must keep every helper off the memory, so the arena closes cleanly however the transfer stood. (Whether a
     * helper is inside a call at the moment of close is up to the scheduler; the test below makes sure of it.)
     */
    @Test
    void closingMidTransferLeavesTheMemoryFreeToRelease() throws Exception {
        TcpProvider a = provider("127.0.103.6/24", 3);
        TcpProvider b = provider("127.0.103.7/24", 3);
        for (int round = 0; round < 5; round++) {
            TcpTestSupport.Pair p = connect(a, b.listen());
            Arena own = Arena.ofShared();
            long n = 48 * MIB;
            MemorySegment src = own.allocate(n);
            MemorySegment dst = own.allocate(n);
            Registration rs = a.register(src);
            Registration rd = b.register(dst);
            int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {n}, new int[] {0});
            int sr = send(p.sender(), rs, 0, n, 0);
            for (int i = 0; i < 200 * (round + 1); i++) {
                p.sender().test(sr);
                p.receiver().test(rr);
            }
            p.sender().close();
            p.receiver().close();
            assertDoesNotThrow(own::close, "freeing the memory after close, round " + round);
        }
    }

    /** What lets the memory go: once retire() returns, the helper is out of the lane and never enters it again. */
    @Test
    void retireWaitsForTheHelperToLeaveTheLane() throws Exception {
        TcpPumps pumps = TcpPumps.start(1, 20, "test");
        cleanup.add(pumps);
        SocketChannel[] pair = TcpTestSupport.socketPair(cleanup);
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger calls = new AtomicInteger();
        Lane lane = lane(pair[0], new DataConnection(new SocketChannel[] {pair[0]}, "test"), () -> {
            calls.incrementAndGet();
            inside.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        pumps.attach(lane);
        assertTrue(inside.await(30, TimeUnit.SECONDS), "the helper took the lane");
        CompletableFuture<Void> retired = CompletableFuture.runAsync(lane::retire);
        Thread.sleep(300);
        assertFalse(retired.isDone(), "retire() returned while the helper was inside pump()");
        release.countDown();
        retired.get(30, TimeUnit.SECONDS);
        int after = calls.get();
        Thread.sleep(100);
        assertEquals(after, calls.get(), "the helper entered a retired lane");
    }

    /**
     * A helper that stops on an unexpected exception (a bug) must not leave its connections hanging: they fail with
     * the reason and the fix, a close does not wait for it, and a lane given to it later fails at once.
     */
    @Test
    void aHelperThatStopsFailsItsConnectionsNamingTheWayOut() throws Exception {
        TcpPumps pumps = TcpPumps.start(1, 20, "test");
        cleanup.add(pumps);
        SocketChannel[] pair = TcpTestSupport.socketPair(cleanup);
        DataConnection conn = new DataConnection(new SocketChannel[] {pair[0]}, "test");
        Lane broken = lane(pair[0], conn, () -> {
            throw new IllegalArgumentException("a bug in a lane");
        });
        pumps.attach(broken);
        await("the connection fails", conn::failed);
        assertTrue(conn.error().contains("helper thread") && conn.error().contains("a bug in a lane")
                && conn.error().contains("JMESH_TCP_THREADS=0"), conn.error());
        CompletableFuture.runAsync(broken::retire).get(30, TimeUnit.SECONDS);  // a hang guard, not a timing
        SocketChannel[] other = TcpTestSupport.socketPair(cleanup);
        DataConnection later = new DataConnection(new SocketChannel[] {other[0]}, "test");
        pumps.attach(lane(other[0], later, () -> { }));
        assertTrue(later.failed(), "a lane given to the stopped helper fails at once");
    }

    /** A lane whose pump() runs {@code body}; always ready, never waits on its socket. */
    private static Lane lane(SocketChannel channel, DataConnection conn, Runnable body) {
        return new Lane(channel, conn) {
            @Override
            boolean pump() {
                body.run();
                return false;
            }

            @Override
            boolean ready() {
                return true;
            }

            @Override
            int interestOps() {
                return 0;
            }
        };
    }

    /** A receiver over two sockets whose bulk socket's far end ({@code bulk}) the test writes by hand. */
    private record Hostile(CoreReceiver receiver, SocketChannel bulk) {
    }

    private Hostile receiverWithABulkSocket(int threads) throws Exception {
        TcpPumps pumps = TcpPumps.start(threads, 20, "test");
        cleanup.add(pumps);
        SocketChannel[] zero = TcpTestSupport.socketPair(cleanup);
        SocketChannel[] one = TcpTestSupport.socketPair(cleanup);
        CoreReceiver r = TcpReceiveWire.receiver(new DataConnection(new SocketChannel[] {zero[0], one[0]},
                "receiver"), null, pumps, null, c -> { });
        cleanup.add(r);
        return new Hostile(r, one[1]);
    }

    @Test
    void aHostileHeaderOnABulkSocketFailsTheConnectionNamingIt() throws Exception {
        Hostile hostile = receiverWithABulkSocket(1);
        CoreReceiver r = hostile.receiver();
        Registration rd = new TcpRegistration(arena.allocate(1024));
        int rr = r.irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {1024}, new int[] {0});
        ByteBuffer h = ByteBuffer.allocateDirect(ChunkHeader.BYTES);
        ChunkHeader.write(h, 0, 1, 4096, 0, 4096);         // more than the posted 1024 bytes
        while (h.hasRemaining()) {
            hostile.bulk().write(h);
        }
        int[] t = new int[1];
        await("the receiver rejects the chunk", () -> (t[0] = r.test(rr)) != 0);
        assertEquals(Status.FAILED, t[0]);
        assertTrue(r.error().contains("protocol violation") && r.error().contains("4096 bytes for a buffer of 1024"),
                r.error());
    }

    @Test
    void aChunkForAReceiveNeverPostedIsRefusedOnABulkSocket() throws Exception {
        Hostile hostile = receiverWithABulkSocket(2);
        CoreReceiver r = hostile.receiver();
        ByteBuffer h = ByteBuffer.allocateDirect(ChunkHeader.BYTES);
        ChunkHeader.write(h, 0, 9, 100, 0, 100);
        while (h.hasRemaining()) {
            hostile.bulk().write(h);
        }
        await("the receiver fails", () -> r.error() != null);
        assertTrue(r.error().contains("data for receive number 9, which is not posted"), r.error());
    }

}
