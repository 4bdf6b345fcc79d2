package io.jmesh.transport.tcp;

import io.jmesh.api.CloseHelper;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.Eager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.tcp.TcpTestSupport.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TCP eager path's frames against a real receiver and sender, a fake peer writing by hand on a loopback socket:
 * a well-formed record lands in the receive posted after it, with its size; records out of order, larger than agreed,
 * beyond the credits handed back or for a buffer no receive has, and credits for records never sent, each fail the
 * connection with "protocol violation" and nothing lands.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpEagerWireTest {
    private static final Eager RING = Eager.of(4, 64);
    private final List<AutoCloseable> cleanup = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        CloseHelper.closeAll(cleanup.reversed());
    }

    private record Fake(CoreReceiver receiver, CoreSender sender, SocketChannel peer) {
    }

    private Fake receiver() throws Exception {
        SocketChannel[] pair = TcpTestSupport.socketPair(cleanup);
        CoreReceiver r = TcpReceiveWire.receiver(new DataConnection(new SocketChannel[] {pair[0]}, "receiver"),
                null, null, RING, c -> { });
        cleanup.add(r);
        return new Fake(r, null, pair[1]);
    }

    /** A record of {@code length} bytes of value {@code fill}. */
    private static ByteBuffer record(long seq, long position, int tag, int length, int buffer, int fill) {
        ByteBuffer b = ByteBuffer.allocateDirect(EagerFrame.BYTES + Math.max(0, length));
        EagerFrame.record(b, 0, seq, position, tag, length, buffer);
        for (int i = 0; i < length; i++) {
            b.put(EagerFrame.BYTES + i, (byte) fill);
        }
        return b;
    }

    private static void write(SocketChannel ch, ByteBuffer b) throws Exception {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    private int post(CoreReceiver r, MemorySegment m) {
        return r.irecv(1, new Registration[] {new TcpRegistration(m)}, new long[] {0}, new long[] {m.byteSize()},
                new int[] {5});
    }

    private static int outcome(CoreReceiver r, int req) {
        int[] t = new int[1];
        await("the receive ends", () -> (t[0] = r.test(req)) != 0);
        return t[0];
    }

    @Test
    void aRecordThatCameBeforeItsReceiveLandsThereWithItsSize() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            Fake f = receiver();
            write(f.peer, record(1, 0, 5, 40, -1, 0x5a));
            f.receiver.poll();                     // read into the ring before any receive is posted
            MemorySegment m = arena.allocate(64);
            int req = post(f.receiver, m);
            assertEquals(1, outcome(f.receiver, req));
            assertEquals(40, f.receiver.size(req, 0));
            assertEquals((byte) 0x5a, m.get(ValueLayout.JAVA_BYTE, 39));
            assertEquals(0, m.get(ValueLayout.JAVA_BYTE, 40), "nothing past the message");
        }
    }

    @Test
    void recordsThatBreakTheProtocolFailTheConnection() throws Exception {
        assertViolation("out of order", record(2, 0, 5, 8, -1, 1));
        assertViolation("stream position -1", record(1, -1, 5, 8, -1, 1));
        assertViolation("bytes (at most 64", record(1, 0, 5, 65, -1, 1));
        assertViolation("for buffer 9", record(1, 0, 5, 8, 9, 1));
        ByteBuffer reserved = record(1, 0, 5, 8, -1, 1);
        reserved.put(2, (byte) 1);
        assertViolation("reserved", reserved);
        // five records into a ring of four with no credit handed back (for later receives: they wait in the ring)
        ByteBuffer five = ByteBuffer.allocateDirect(5 * (EagerFrame.BYTES + 8));
        for (int s = 1; s <= 5; s++) {
            five.put(record(s, s, 5, 8, -1, s));
        }
        assertViolation("allowed by the credits", five.flip());
    }

    @Test
    void fetchFramesThatBreakTheProtocolFailTheConnection() throws Exception {
        ByteBuffer negative = ByteBuffer.allocateDirect(EagerFrame.BYTES);
        EagerFrame.fetch(negative, 0, -1);
        assertViolation("fetch from entry -1", negative);
        ByteBuffer reserved = ByteBuffer.allocateDirect(EagerFrame.BYTES);
        EagerFrame.fetch(reserved, 0, 0);
        reserved.put(20, (byte) 1);
        assertViolation("fetch with non-zero reserved", reserved);
    }

    /**
     * A goodbye from the network is checked like any frame: one that claims records that never came, or has reserved
     * bytes set, fails the connection; a good one after the records that came ends it (CLOSED, once the stream ends).
     */
    @Test
    void goodbyeFramesAreCheckedAndAGoodOneEndsTheConnection() throws Exception {
        ByteBuffer early = ByteBuffer.allocateDirect(ByeFrame.BYTES);
        ByeFrame.write(early, 0, 3);
        assertViolation("goodbye after 3 eager records, of which 0 arrived", early);
        ByteBuffer reserved = ByteBuffer.allocateDirect(ByeFrame.BYTES);
        ByeFrame.write(reserved, 0, 0);
        reserved.put(20, (byte) 1);
        assertViolation("goodbye frame with non-zero reserved", reserved);
        try (Arena arena = Arena.ofConfined()) {
            Fake f = receiver();
            ByteBuffer good = ByteBuffer.allocateDirect(EagerFrame.BYTES + 8 + ByeFrame.BYTES);
            good.put(record(1, 0, 5, 8, -1, 7));
            ByeFrame.write(good, EagerFrame.BYTES + 8, 1);
            write(f.peer, good.clear());
            f.peer.shutdownOutput();
            MemorySegment m = arena.allocate(64);
            int first = post(f.receiver, m);
            assertEquals(1, outcome(f.receiver, first), "the record before the goodbye: " + f.receiver.error());
            assertEquals(Status.CLOSED, outcome(f.receiver, post(f.receiver, m)), f.receiver.error());
        }
    }

    /** A small receive's clear-to-send waits (the sender can fill it eagerly); the sender's fetch brings it out. */
    @Test
    void aFetchBringsOutTheClearToSendOfASmallReceive() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            Fake f = receiver();
            f.peer.configureBlocking(false);
            int req = post(f.receiver, arena.allocate(64));
            ByteBuffer back = ByteBuffer.allocateDirect(4096);
            f.receiver.poll();
            assertEquals(0, f.peer.read(back), "a small receive's clear-to-send waits");
            ByteBuffer fetch = ByteBuffer.allocateDirect(EagerFrame.BYTES);
            EagerFrame.fetch(fetch, 0, 0);
            write(f.peer, fetch);
            await("the clear-to-send after the fetch", () -> {
                f.receiver.poll();
                try {
                    f.peer.read(back);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
                return back.position() >= CtsFrame.BYTES;
            });
            assertEquals(1, CtsFrame.seq(back, 0), "the clear-to-send of receive 1");
            assertEquals(0, f.receiver.test(req), "the receive still waits for its message");
        }
    }

    private void assertViolation(String what, ByteBuffer frames) throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            Fake f = receiver();
            MemorySegment m = arena.allocate(64);
            int req = post(f.receiver, m);
            write(f.peer, frames);
            assertEquals(Status.FAILED, outcome(f.receiver, req), what);
            assertTrue(f.receiver.error().contains("protocol violation") && f.receiver.error().contains(what),
                    f.receiver.error());
        }
    }

    @Test
    void aCreditForRecordsNeverSentFailsTheSender() throws Exception {
        SocketChannel[] pair = TcpTestSupport.socketPair(cleanup);
        CoreSender s = TcpSendWire.sender(new DataConnection(new SocketChannel[] {pair[0]}, "sender"), null, null,
                RING, c -> { });
        cleanup.add(s);
        ByteBuffer credit = ByteBuffer.allocateDirect(EagerFrame.BYTES);
        EagerFrame.credit(credit, 0, 3);
        write(pair[1], credit);
        try (Arena arena = Arena.ofConfined()) {
            Registration reg = new TcpRegistration(arena.allocate(8));
            await("the sender reads the credit", () -> s.isend(reg, 0, 8, 5) == Status.FAILED);
            assertTrue(s.error().contains("eager credit for 3 records"), s.error());
        }
    }
}
