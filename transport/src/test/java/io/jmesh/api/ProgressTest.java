package io.jmesh.api;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The futures agent over the TCP provider on loopback, through the public API only: sends, receives, one-sided
 * writes and reads, flushes; a peer that closes fails the pending futures with its error; closing the agent fails
 * what is still pending. Waits are bounded by {@link #PATIENCE_S} only to turn a hang into a failure.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ProgressTest {
    static final long PATIENCE_S = 30;
    /** A send this large waits for its receive's clear-to-send: it is above the fabrics' TCP eager threshold. */
    static final int WAITING_SEND = 2 * Context.from(Map.of(), Map.of()).tcpEagerThreshold() + 1;

    private final List<AutoCloseable> cleanup = new ArrayList<>();
    private Arena arena;
    private Fabric a;
    private Fabric b;
    private Sender sender;
    private Receiver receiver;

    static Fabric tcp(String addresses) {
        return Fabric.open(Context.from(Map.of(), Map.of()).provider("tcp").addresses(addresses));
    }

    /** Connects a to b through the plain poll API (bounded by PATIENCE_S). */
    static AutoCloseable[] connect(Fabric from, Fabric to, String preferred) throws Exception {
        Listener l = to.listen();
        Connector c = preferred == null ? from.connect(l.handle()) : from.connect(l.handle(), preferred);
        Sender s = null;
        Receiver r = null;
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(PATIENCE_S);
        while (s == null || r == null) {
            if (s == null) {
                s = c.poll();
            }
            if (r == null) {
                r = l.accept();
            }
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("no connection within " + PATIENCE_S + " s");
            }
            Thread.onSpinWait();
        }
        return new AutoCloseable[] {s, r, c, l};
    }

    @BeforeEach
    void setUp() throws Exception {
        arena = Arena.ofShared();
        a = tcp("127.0.101.2/24");
        b = tcp("127.0.101.3/24");
        cleanup.add(a);
        cleanup.add(b);
        AutoCloseable[] conn = connect(a, b, null);
        sender = (Sender) conn[0];
        receiver = (Receiver) conn[1];
        cleanup.add(conn[3]);
        cleanup.add(receiver);
        cleanup.add(sender);
    }

    @AfterEach
    void tearDown() throws Exception {
        CloseHelper.closeAll(cleanup.reversed());
        arena.close();
    }

    private static <T> T get(CompletableFuture<T> f) throws Exception {
        return f.get(PATIENCE_S, TimeUnit.SECONDS);
    }

    private static void fill(MemorySegment m, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i < m.byteSize(); i++) {
            m.set(JAVA_BYTE, i, (byte) r.nextInt());
        }
    }

    @Test
    void sendsReceivesWritesReadsAndFlushesComplete() throws Exception {
        MemorySegment out = arena.allocate(3 << 20, 4096);
        MemorySegment in = arena.allocate(3 << 20, 4096);
        MemorySegment back = arena.allocate(1 << 20, 4096);
        fill(out, 11);
        Registration ro = a.register(out);
        Registration ri = b.register(in);
        Registration rb = a.register(back);
        try (Progress p = Progress.start()) {
            // the receive is posted after the send is handed over: the agent retries NOT_READY
            CompletableFuture<Long> sent = p.send(sender, ro, 0, 1 << 20, 5);
            CompletableFuture<Long> sent2 = p.send(sender, ro, 1 << 20, 1000, 6);
            CompletableFuture<long[]> got = p.recv(receiver, 2, new Registration[] {ri, ri}, new long[] {0, 1 << 20},
                    new long[] {1 << 20, 1 << 20}, new int[] {5, 6});
            assertArrayEquals(new long[] {1 << 20, 1000}, get(got));
            assertEquals(1 << 20, get(sent));
            assertEquals(1000, get(sent2));
            assertEquals(-1, out.asSlice(0, (1 << 20) + 1000).mismatch(in.asSlice(0, (1 << 20) + 1000)));

            // one-sided: the agent also serves the owner's receiver
            CompletableFuture<Void> serving = p.serve(receiver);
            RemoteRegion region = RemoteRegion.decode(ri.remote().encode());
            assertEquals(1 << 20, get(p.write(sender, ro, 2 << 20, 1 << 20, region, 2 << 20)));
            assertEquals(-1, out.asSlice(2 << 20, 1 << 20).mismatch(in.asSlice(2 << 20, 1 << 20)), "written");
            assertEquals(1 << 20, get(p.read(sender, rb, 0, 1 << 20, region, 0)));
            assertEquals(-1, back.mismatch(in.asSlice(0, 1 << 20)), "read back");
            assertFalse(serving.isDone(), "serving goes on while the connection is up");

            get(p.flush(receiver, 1, new Registration[] {ri}, new long[] {0}, new long[] {1 << 20}));

            // a callback may hand the agent more work; it runs on the agent thread (the receive cannot complete
            // before the callback is attached: its message is handed over only after that)
            AtomicReference<String> thread = new AtomicReference<>();
            CompletableFuture<Long> chained = p.recv(receiver, 1, new Registration[] {ri}, new long[] {0},
                    new long[] {64}, new int[] {7}).thenCompose(n -> {
                        thread.set(Thread.currentThread().getName());
                        return p.read(sender, rb, 0, 10, region, 0);
                    });
            p.send(sender, ro, 0, 10, 7);
            assertEquals(10, get(chained));
            assertEquals("jmesh-progress", thread.get());
        }
    }

    @Test
    void failuresCompleteExceptionallyWithTheReason() throws Exception {
        MemorySegment out = arena.allocate(4096);
        Registration ro = a.register(out);
        Registration ri = b.register(arena.allocate(4096));
        try (Progress p = Progress.start()) {
            p.serve(receiver);
            // a refused one-sided write: the connection stays up
            RemoteRegion wrong = new RemoteRegion("tcp", 0, 4096, new int[] {1, 2});
            ExecutionException e = assertThrows(ExecutionException.class, () -> get(p.write(sender, ro, 0, 10,
                    wrong, 0)));
            TransferException t = assertInstanceOf(TransferException.class, e.getCause());
            assertEquals(Status.REFUSED, t.status());
            assertTrue(t.getMessage().contains("no open registration"), t.getMessage());
            // a bad argument
            e = assertThrows(ExecutionException.class, () -> get(p.send(sender, ro, 4000, 100, 1)));
            assertEquals(Status.BAD_ARGUMENT, ((TransferException) e.getCause()).status());
            assertTrue(e.getCause().getMessage().startsWith("send of 100 bytes at offset 4000 with tag 1 failed"),
                    e.getCause().getMessage());
            // still works
            assertEquals(10, get(p.write(sender, ro, 0, 10, ri.remote(), 0)));
        }
    }

    @Test
    void thePeerClosingFailsPendingFuturesWithTheConnectionsError() throws Exception {
        Registration ro = a.register(arena.allocate(WAITING_SEND));
        try (Progress p = Progress.start()) {
            // never posted by the receiver; above the eager threshold, so it cannot complete before the close
            CompletableFuture<Long> waiting = p.send(sender, ro, 0, WAITING_SEND, 3);
            receiver.close();
            ExecutionException e = assertThrows(ExecutionException.class, () -> get(waiting));
            TransferException t = assertInstanceOf(TransferException.class, e.getCause());
            assertEquals(Status.FAILED, t.status());
            assertTrue(t.getMessage().contains("lost: the peer closed the connection"), t.getMessage());
            assertTrue(t.getMessage().contains(sender.error()), t.getMessage());
        }
    }

    @Test
    void closingTheAgentFailsWhatIsPending() throws Exception {
        Registration ri = b.register(arena.allocate(4096));
        Registration ro = a.register(arena.allocate(WAITING_SEND));
        Progress p = Progress.start("test-agent");
        CompletableFuture<long[]> never = p.recv(receiver, 1, new Registration[] {ri}, new long[] {0},
                new long[] {4096}, new int[] {9});
        // no receive with tag 8. Above the eager threshold, so it waits for one: a small send would go eagerly
        // before the receive's clear-to-send arrives and fail the connection at the mismatch, not stay pending
        CompletableFuture<Long> blocked = p.send(sender, ro, 0, WAITING_SEND, 8);
        CountDownLatch callbackRan = new CountDownLatch(1);
        never.whenComplete((v, x) -> callbackRan.countDown());
        assertTrue(p.isRunning());
        p.close();
        assertFalse(p.isRunning());
        for (CompletableFuture<?> f : List.of(never, blocked)) {
            CompletionException e = assertThrows(CompletionException.class, f::join);
            TransferException t = assertInstanceOf(TransferException.class, e.getCause());
            assertEquals(Status.CLOSED, t.status());
            assertTrue(t.getMessage().contains("the progress agent was closed"), t.getMessage());
        }
        assertTrue(callbackRan.await(PATIENCE_S, TimeUnit.SECONDS));
        // after close, new work fails at once
        CompletionException e = assertThrows(CompletionException.class, () -> p.send(sender, ro, 0, 1, 1).join());
        assertEquals(Status.CLOSED, ((TransferException) e.getCause()).status());
        // the connections are still the caller's and usable
        assertEquals(null, sender.error());
        assertThrows(IllegalArgumentException.class, () -> Progress.start().recv(receiver, 0,
                new Registration[0], new long[0], new long[0], new int[0]));
    }
}
