package io.jmesh.transport.tcp;

import io.jmesh.api.CloseHelper;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.tcp.TcpTestSupport.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TCP provider's wire formats: handshake payloads, data socket headers, clear-to-send frames and chunk headers
 * round-trip, and malformed ones are rejected with the reason. A fake peer on a loopback socket sends malformed data
 * frames to a real sender and receiver: each fails its connection cleanly with "protocol violation".
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpWireTest {
    private final List<AutoCloseable> cleanup = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        CloseHelper.closeAll(cleanup.reversed());
    }

    @Test
    void connectRequestRoundTripsAndRejectsBadInput() {
        assertEquals(new ConnectRequest(4, 0), ConnectRequest.decode(new ConnectRequest(4, 0).encode()));
        byte[] ok = new ConnectRequest(16, 65536).encode();
        assertEquals(16, ConnectRequest.decode(ok).sockets());
        assertEquals(65536, ConnectRequest.decode(ok).eager());
        byte[] eager = ok.clone();
        eager[9] = 0x20;                           // 2 MiB + 64 KiB: more than any ring takes
        assertTrue(message(() -> ConnectRequest.decode(eager)).contains("eagerly"));
        assertThrows(IllegalArgumentException.class, () -> ConnectRequest.decode(new byte[15]));
        assertThrows(IllegalArgumentException.class, () -> ConnectRequest.decode(new byte[17]));
        byte[] magic = ok.clone();
        magic[0] ^= 1;
        assertTrue(message(() -> ConnectRequest.decode(magic)).contains("JMESH_PROVIDER"));
        byte[] version = ok.clone();
        version[5] = 1;                            // the protocol before the eager path
        assertTrue(message(() -> ConnectRequest.decode(version)).contains("same jmesh version"));
        byte[] sockets = ok.clone();
        sockets[7] = 17;
        assertThrows(IllegalArgumentException.class, () -> ConnectRequest.decode(sockets));
        sockets[7] = 0;
        assertThrows(IllegalArgumentException.class, () -> ConnectRequest.decode(sockets));
        byte[] reserved = ok.clone();
        reserved[15] = 1;
        assertThrows(IllegalArgumentException.class, () -> ConnectRequest.decode(reserved));
    }

    @Test
    void acceptReplyRoundTripsAndRejectsBadInput() {
        byte[] token = new byte[16];
        token[3] = 9;
        AcceptReply r = AcceptReply.decode(new AcceptReply(3, 40123, 16, 4096, token).encode(), 4, 65536);
        assertEquals(3, r.sockets());
        assertEquals(40123, r.port());
        assertEquals(16, r.slots());
        assertEquals(4096, r.eager());
        assertArrayEquals(token, r.token());
        assertEquals(0, AcceptReply.decode(new AcceptReply(3, 40123, 0, 0, token).encode(), 4, 65536).slots());
        byte[] ok = new AcceptReply(4, 40123, 16, 65536, token).encode();
        assertThrows(IllegalArgumentException.class, () -> AcceptReply.decode(ok, 3, 65536), "more sockets than asked");
        assertTrue(message(() -> AcceptReply.decode(ok, 4, 4096)).contains("eager ring"), "a larger ring than offered");
        assertThrows(IllegalArgumentException.class, () -> AcceptReply.decode(new byte[31], 4, 65536));
        byte[] port = ok.clone();
        port[8] = 0;
        port[9] = 0;
        assertThrows(IllegalArgumentException.class, () -> AcceptReply.decode(port, 4, 65536));
        byte[] slots = ok.clone();
        slots[11] = 3;                             // not a power of two
        assertThrows(IllegalArgumentException.class, () -> AcceptReply.decode(slots, 4, 65536));
        slots[11] = 0;                             // no ring, but a size
        assertThrows(IllegalArgumentException.class, () -> AcceptReply.decode(slots, 4, 65536));
        byte[] magic = ok.clone();
        magic[1] = 0;
        assertThrows(IllegalArgumentException.class, () -> AcceptReply.decode(magic, 4, 65536));
    }

    @Test
    void attachHeaderRoundTripsAndRejectsBadInput() {
        byte[] token = new byte[16];
        token[15] = 1;
        AttachHeader h = new AttachHeader(2, 4, token);
        assertEquals(h, AttachHeader.decode(h.encode()));
        ByteBuffer bad = h.encode();
        bad.putShort(AttachHeader.INDEX_OFFSET, (short) 4);
        assertThrows(IllegalArgumentException.class, () -> AttachHeader.decode(bad));
        ByteBuffer version = h.encode();
        version.putShort(AttachHeader.VERSION_OFFSET, (short) 7);
        assertThrows(IllegalArgumentException.class, () -> AttachHeader.decode(version));
        ByteBuffer garbage = ByteBuffer.allocate(AttachHeader.LENGTH);
        assertThrows(IllegalArgumentException.class, () -> AttachHeader.decode(garbage));
    }

    @Test
    void ctsFrameChecks() {
        ByteBuffer b = ByteBuffer.allocateDirect(2 * CtsFrame.BYTES);
        CtsFrame.write(b, CtsFrame.BYTES, 7, 2, new long[] {100, 0}, new int[] {3, 4}, (short) 0);
        assertNull(CtsFrame.check(b, CtsFrame.BYTES));
        assertEquals(7, CtsFrame.seq(b, CtsFrame.BYTES));
        assertEquals(2, CtsFrame.count(b, CtsFrame.BYTES));
        assertEquals(100, CtsFrame.size(b, CtsFrame.BYTES, 0));
        assertEquals(4, CtsFrame.tag(b, CtsFrame.BYTES, 1));
        b.put(CtsFrame.BYTES + CtsFrame.COUNT_OFFSET, (byte) 9);
        assertTrue(CtsFrame.check(b, CtsFrame.BYTES).contains("9 buffers"));
        b.put(CtsFrame.BYTES + CtsFrame.COUNT_OFFSET, (byte) 0);
        assertTrue(CtsFrame.check(b, CtsFrame.BYTES) != null);
        CtsFrame.write(b, 0, 1, 1, new long[] {-5}, new int[] {0}, (short) 0);
        assertTrue(CtsFrame.check(b, 0).contains("18446744073709551611 bytes"), "u64 fields print unsigned");
        CtsFrame.write(b, 0, 1, 1, new long[] {5}, new int[] {0}, (short) 0);
        b.putLong(CtsFrame.ENTRIES_OFFSET + CtsFrame.ENTRY_BYTES, 99);
        assertTrue(CtsFrame.check(b, 0).contains("unused entry"));
        b.put(0, (byte) 0x44);
        assertTrue(CtsFrame.check(b, 0).contains("type"));
    }

    @Test
    void chunkHeaderChecks() {
        ByteBuffer h = ByteBuffer.allocateDirect(ChunkHeader.BYTES);
        ChunkHeader.write(h, 1, 5, 1000, 200, 800);
        assertNull(ChunkHeader.check(h));
        assertEquals(1, ChunkHeader.index(h));
        assertEquals(5, ChunkHeader.seq(h));
        ChunkHeader.write(h, 0, 1, 0, 0, 0);
        assertNull(ChunkHeader.check(h), "a zero-length message");
        ChunkHeader.write(h, 0, 1, 1000, 201, 800);
        assertTrue(ChunkHeader.check(h) != null, "past the end of the message");
        ChunkHeader.write(h, 0, 1, Long.MAX_VALUE, Long.MAX_VALUE - 10, 800);
        assertTrue(ChunkHeader.check(h) != null, "offset + length overflows");
        ChunkHeader.write(h, 0, 1, 10, -1, 1);
        assertTrue(ChunkHeader.check(h) != null);
        ChunkHeader.write(h, 0, 1, 1 << 22, 0, (1 << 20) + 1);
        assertTrue(ChunkHeader.check(h) != null, "chunk over the limit");
        ChunkHeader.write(h, 0, 1, 1000, 0, -1);
        assertTrue(ChunkHeader.check(h) != null, "a length of 2^32 - 1");
        ChunkHeader.write(h, 0, 1, 1000, 0, 0);
        assertTrue(ChunkHeader.check(h) != null, "an empty chunk of a non-empty message");
        ChunkHeader.write(h, 0, 1, 1000, 0, 10);
        h.putShort(ChunkHeader.RESERVED_OFFSET, (short) 1);
        assertTrue(ChunkHeader.check(h) != null);
    }

    /** A real receiver over one loopback socket whose other end the test writes by hand. */
    private record Fake(CoreReceiver receiver, CoreSender sender, SocketChannel peer) {
    }

    private Fake fakeReceiver() throws Exception {
        SocketChannel[] pair = TcpTestSupport.socketPair(cleanup);
        CoreReceiver r = TcpReceiveWire.receiver(new DataConnection(new SocketChannel[] {pair[0]}, "receiver"),
                null, null, null, c -> { });
        cleanup.add(r);
        return new Fake(r, null, pair[1]);
    }

    private Fake fakeSender() throws Exception {
        SocketChannel[] pair = TcpTestSupport.socketPair(cleanup);
        CoreSender s = TcpSendWire.sender(new DataConnection(new SocketChannel[] {pair[0]}, "sender"),
                null, null, null, c -> { });
        cleanup.add(s);
        return new Fake(null, s, pair[1]);
    }


    private static void write(SocketChannel ch, ByteBuffer b) throws Exception {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    private static ByteBuffer chunk(int index, int seq, long total, long offset, int length) {
        ByteBuffer h = ByteBuffer.allocateDirect(ChunkHeader.BYTES);
        ChunkHeader.write(h, index, seq, total, offset, length);
        return h;
    }

    private static int failOf(CoreReceiver r, int req) {
        int[] t = new int[1];
        await("the receiver rejects the frame", () -> (t[0] = r.test(req)) != 0);
        return t[0];
    }

    @Test
    void aReceiverRejectsDataForAReceiveThatIsNotPosted() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            Fake f = fakeReceiver();
            Registration reg = new TcpRegistration(arena.allocate(100));
            int req = f.receiver.irecv(1, new Registration[] {reg}, new long[] {0}, new long[] {100}, new int[] {0});
            write(f.peer, chunk(0, 2, 10, 0, 10)); // receive number 2 was never posted
            assertEquals(Status.FAILED, failOf(f.receiver, req));
            assertTrue(f.receiver.error().startsWith("protocol violation by 127.0.0.1:"), f.receiver.error());
            assertTrue(f.receiver.error().contains("not posted"), f.receiver.error());
        }
    }

    @Test
    void aReceiverRejectsAMessageLargerThanItsBuffer() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            Fake f = fakeReceiver();
            MemorySegment m = arena.allocate(200);
            Registration reg = new TcpRegistration(m);
            int req = f.receiver.irecv(1, new Registration[] {reg}, new long[] {0}, new long[] {100}, new int[] {0});
            write(f.peer, chunk(0, 1, 150, 0, 150));
            write(f.peer, ByteBuffer.allocate(150));
            assertEquals(Status.FAILED, failOf(f.receiver, req));
            assertTrue(f.receiver.error().contains("TRUNCATED"), f.receiver.error());
            assertEquals(-1, m.asSlice(100, 100).mismatch(MemorySegment.ofArray(new byte[100])),
                    "nothing written past the posted buffer");
        }
    }

    @Test
    void aReceiverRejectsGarbageAndABufferIndexOutOfRange() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            Registration reg = new TcpRegistration(arena.allocate(100));
            Fake f = fakeReceiver();
            int req = f.receiver.irecv(2, new Registration[] {reg, reg}, new long[] {0, 50}, new long[] {50, 50},
                    new int[] {0, 1});
            write(f.peer, chunk(2, 1, 10, 0, 10));
            assertEquals(Status.FAILED, failOf(f.receiver, req));
            assertTrue(f.receiver.error().contains("buffer 2 of a receive of 2"), f.receiver.error());

            Fake g = fakeReceiver();
            int req2 = g.receiver.irecv(1, new Registration[] {reg}, new long[] {0}, new long[] {100}, new int[] {0});
            byte[] junk = new byte[ChunkHeader.BYTES];
            new java.util.Random(3).nextBytes(junk);
            junk[0] = 0x13;
            write(g.peer, ByteBuffer.wrap(junk));
            assertEquals(Status.FAILED, failOf(g.receiver, req2));
            assertTrue(g.receiver.error().contains("protocol violation"), g.receiver.error());
        }
    }

    @Test
    void aReceiverTakesAMessageFromAHandWrittenPeerInAnyChunkOrder() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            Fake f = fakeReceiver();
            MemorySegment m = arena.allocate(100);
            Registration reg = new TcpRegistration(m);
            int req = f.receiver.irecv(1, new Registration[] {reg}, new long[] {0}, new long[] {100}, new int[] {0});
            byte[] data = new byte[30];
            for (int i = 0; i < 30; i++) {
                data[i] = (byte) (i + 1);
            }
            write(f.peer, chunk(0, 1, 30, 20, 10));
            write(f.peer, ByteBuffer.wrap(data, 20, 10));
            write(f.peer, chunk(0, 1, 30, 0, 20));
            write(f.peer, ByteBuffer.wrap(data, 0, 20));
            int[] t = new int[1];
            await("the message", () -> (t[0] = f.receiver.test(req)) != 0);
            assertEquals(1, t[0], String.valueOf(f.receiver.error()));
            assertEquals(30, f.receiver.size(req, 0));
            assertArrayEquals(data, m.asSlice(0, 30).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
            // the clear-to-send the receiver sent is well formed
            ByteBuffer cts = ByteBuffer.allocateDirect(CtsFrame.BYTES);
            while (cts.hasRemaining()) {
                f.peer.read(cts);
            }
            assertNull(CtsFrame.check(cts, 0));
            assertEquals(1, CtsFrame.seq(cts, 0));
            assertEquals(100, CtsFrame.size(cts, 0, 0));
        }
    }

    @Test
    void aSenderRejectsMalformedAndOutOfOrderClearToSends() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            Registration reg = new TcpRegistration(arena.allocate(100));

            Fake f = fakeSender();
            ByteBuffer b = ByteBuffer.allocateDirect(CtsFrame.BYTES);
            CtsFrame.write(b, 0, 2, 1, new long[] {100}, new int[] {0}, (short) 0); // number 2 before number 1
            write(f.peer, b);
            int[] t = new int[1];
            await("the sender rejects it", () -> (t[0] = f.sender.isend(reg, 0, 10, 0)) != Status.NOT_READY);
            assertEquals(Status.FAILED, t[0]);
            assertTrue(f.sender.error().contains("out of order"), f.sender.error());

            Fake g = fakeSender();
            ByteBuffer c = ByteBuffer.allocateDirect(CtsFrame.BYTES);
            CtsFrame.write(c, 0, 1, 1, new long[] {100}, new int[] {0}, (short) 0);
            c.put(CtsFrame.COUNT_OFFSET, (byte) 200);
            write(g.peer, c);
            await("the sender rejects it", () -> (t[0] = g.sender.isend(reg, 0, 10, 0)) != Status.NOT_READY);
            assertEquals(Status.FAILED, t[0]);
            assertTrue(g.sender.error().contains("200 buffers"), g.sender.error());

            // clear-to-sends for receives no send reaches (tag 7, the sends have tag 0): a receiver may run ahead of
            // the sender's core (eager sends complete receives there), but not past the FIFO and what may wait
            Fake h = fakeSender();
            int frames = Cts.ENTRIES + CtsIntake.HELD_FRAMES + 1;
            ByteBuffer many = ByteBuffer.allocateDirect(frames * CtsFrame.BYTES);
            for (int i = 0; i < frames; i++) {
                CtsFrame.write(many, i * CtsFrame.BYTES, i + 1, 1, new long[] {100}, new int[] {7}, (short) 0);
            }
            write(h.peer, many);
            await("the sender rejects it", () -> (t[0] = h.sender.isend(reg, 0, 10, 0)) != Status.NOT_READY);
            assertEquals(Status.FAILED, t[0]);
            assertTrue(h.sender.error().contains("clear-to-send number " + frames + " while"), h.sender.error());
        }
    }

    private static String message(Runnable r) {
        return assertThrows(IllegalArgumentException.class, r::run).getMessage();
    }
}
