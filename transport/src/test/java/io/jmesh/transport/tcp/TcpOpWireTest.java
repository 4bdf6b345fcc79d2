package io.jmesh.transport.tcp;

import io.jmesh.api.CloseHelper;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.OpWindow;
import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
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
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The one-sided frames on the wire, against a hand-written peer: the owner applies and answers well-formed requests,
 * refuses unknown registrations and ranges outside them (dropping the payload and keeping the connection), and fails
 * the connection on malformed or out-of-order frames; the initiator rejects replies it did not ask for.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpOpWireTest {
    private final List<AutoCloseable> cleanup = new ArrayList<>();
    private final Arena arena = Arena.ofShared();

    @AfterEach
    void tearDown() throws Exception {
        CloseHelper.closeAll(cleanup.reversed());
        arena.close();
    }

    @Test
    void frameChecks() {
        ByteBuffer h = ByteBuffer.allocateDirect(OpFrame.BYTES);
        OpFrame.request(h, OpFrame.WRITE, true, 1, 42, 0, 100);
        assertNull(OpFrame.checkRequest(h, 0));
        assertTrue(OpFrame.last(h, 0));
        OpFrame.request(h, OpFrame.WRITE, false, 1, 42, 0, ChunkHeader.MAX_CHUNK + 1);
        assertTrue(OpFrame.checkRequest(h, 0).contains("at most"));
        OpFrame.request(h, OpFrame.WRITE, false, 1, 42, 0, -1);
        assertTrue(OpFrame.checkRequest(h, 0) != null, "a piece of 2^32 - 1 bytes");
        OpFrame.request(h, OpFrame.READ, true, 1, 42, 0, Long.MAX_VALUE);
        assertNull(OpFrame.checkRequest(h, 0), "a read of 2^63 - 1 bytes is well formed (the owner checks range)");
        OpFrame.request(h, OpFrame.READ, true, 1, 42, 0, -5);
        assertTrue(OpFrame.checkRequest(h, 0).contains("18446744073709551611 bytes"), "u64 fields print unsigned");
        OpFrame.request(h, OpFrame.READ, false, 1, 42, 0, 5);
        assertTrue(OpFrame.checkRequest(h, 0).contains("flags"));
        OpFrame.request(h, OpFrame.WRITE, true, 1, 42, 0, 5);
        h.putShort(OpFrame.RESERVED_OFFSET, (short) 1);
        assertTrue(OpFrame.checkRequest(h, 0).contains("reserved"));
        h.putShort(OpFrame.RESERVED_OFFSET, (short) 0);
        h.put(0, (byte) 0x44);
        assertTrue(OpFrame.checkRequest(h, 0).contains("type"));

        OpFrame.answer(h, 0, 3, 0, 10);
        assertNull(OpFrame.checkReply(h, 0));
        OpFrame.answer(h, 0, 3, 0, 0);
        assertTrue(OpFrame.checkReply(h, 0) != null, "an empty answer piece");
        OpFrame.done(h, 0, 3, OpFrame.OUT_OF_RANGE, 4096);
        assertNull(OpFrame.checkReply(h, 0));
        assertEquals(4096, OpFrame.detail(h, 0));
        OpFrame.done(h, 0, 3, 9, 0);
        assertTrue(OpFrame.checkReply(h, 0).contains("status 9"));
        OpFrame.done(h, 0, 3, 0, 0);
        h.putLong(24, 1);
        assertTrue(OpFrame.checkReply(h, 0).contains("reserved"));
    }


    private record Owner(CoreReceiver receiver, SocketChannel peer, TcpRegistry registry) {
    }

    private Owner owner() throws Exception {
        SocketChannel[] pair = TcpTestSupport.socketPair(cleanup);
        TcpRegistry registry = new TcpRegistry();
        CoreReceiver r = TcpReceiveWire.receiver(new DataConnection(new SocketChannel[] {pair[0]}, "receiver"),
                registry, null, null, c -> { });
        cleanup.add(r);
        return new Owner(r, pair[1], registry);
    }

    private static void write(SocketChannel ch, ByteBuffer b) throws Exception {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    private static ByteBuffer request(byte type, boolean last, int op, long key, long offset, long length) {
        ByteBuffer h = ByteBuffer.allocateDirect(OpFrame.BYTES);
        OpFrame.request(h, type, last, op, key, offset, length);
        return h;
    }

    /** Reads {@code n} bytes the owner sent back, polling it meanwhile. */
    private static ByteBuffer readBack(Owner o, int n) {
        ByteBuffer b = ByteBuffer.allocateDirect(n);
        await(n + " bytes back from the owner", () -> {
            o.receiver.poll();
            try {
                o.peer.configureBlocking(false);
                return o.peer.read(b) < 0 || !b.hasRemaining();
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
        assertTrue(!b.hasRemaining(), "the owner closed the connection: " + o.receiver.error());
        return b;
    }

    @Test
    void theOwnerAppliesAWriteAnswersAReadAndRefusesTheRest() throws Exception {
        Owner o = owner();
        MemorySegment mem = arena.allocate(100);
        TcpRegistration reg = new TcpRegistration(mem, o.registry);
        long key = TcpRegistration.idOf(reg.remote());
        assertEquals(reg.id, key);
        byte[] data = new byte[30];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i + 1);
        }
        // op 1: a write of 30 bytes at 10, in two pieces
        write(o.peer, request(OpFrame.WRITE, false, 1, key, 10, 20));
        write(o.peer, ByteBuffer.wrap(data, 0, 20));
        write(o.peer, request(OpFrame.WRITE, true, 1, key, 30, 10));
        write(o.peer, ByteBuffer.wrap(data, 20, 10));
        // op 2: an unknown key, with payload that must be dropped; op 3: out of range; op 4: a read of the write
        write(o.peer, request(OpFrame.WRITE, true, 2, key + 1, 0, 5000));
        write(o.peer, ByteBuffer.allocate(5000));
        write(o.peer, request(OpFrame.READ, true, 3, key, 90, 11));
        write(o.peer, request(OpFrame.READ, true, 4, key, 10, 30));
        ByteBuffer back = readBack(o, 4 * OpFrame.BYTES + OpFrame.BYTES + 30);
        int at = 0;
        assertEquals(OpFrame.DONE, OpFrame.type(back, at));
        assertEquals(1, OpFrame.op(back, at));
        assertEquals(OpFrame.OK, OpFrame.status(back, at));
        at += OpFrame.BYTES;
        assertEquals(2, OpFrame.op(back, at));
        assertEquals(OpFrame.NO_REGISTRATION, OpFrame.status(back, at));
        at += OpFrame.BYTES;
        assertEquals(3, OpFrame.op(back, at));
        assertEquals(OpFrame.OUT_OF_RANGE, OpFrame.status(back, at));
        assertEquals(100, OpFrame.detail(back, at), "the registration's length, for the initiator's error");
        at += OpFrame.BYTES;
        assertEquals(OpFrame.ANSWER, OpFrame.type(back, at));
        assertNull(OpFrame.checkReply(back, at));
        assertEquals(4, OpFrame.op(back, at));
        assertEquals(0, OpFrame.offset(back, at));
        assertEquals(30, OpFrame.pieceLength(back, at));
        at += OpFrame.BYTES;
        byte[] answer = new byte[30];
        back.get(at, answer);
        assertArrayEquals(data, answer, "the read returns the write");
        at += 30;
        assertEquals(OpFrame.DONE, OpFrame.type(back, at));
        assertEquals(4, OpFrame.op(back, at));
        assertEquals(OpFrame.OK, OpFrame.status(back, at));
        assertArrayEquals(data, mem.asSlice(10, 30).toArray(JAVA_BYTE));
        assertEquals(0, mem.get(JAVA_BYTE, 9));
        assertEquals(0, mem.get(JAVA_BYTE, 40));
        assertNull(o.receiver.error(), "refusals keep the connection");

        // a closed registration is gone from the registry: op 5 is refused
        reg.close();
        write(o.peer, request(OpFrame.READ, true, 5, key, 0, 1));
        ByteBuffer k = readBack(o, OpFrame.BYTES);
        assertEquals(OpFrame.NO_REGISTRATION, OpFrame.status(k, 0));
        assertEquals(0, o.registry.size());
    }

    private String violation(ByteBuffer... frames) throws Exception {
        Owner o = owner();
        TcpRegistration reg = new TcpRegistration(arena.allocate(100), o.registry);
        Registration[] regs = {reg};
        int req = o.receiver.irecv(1, regs, new long[] {0}, new long[] {100}, new int[] {0});
        for (ByteBuffer f : frames) {
            write(o.peer, f);
        }
        int[] t = new int[1];
        await("the owner rejects the frames", () -> (t[0] = o.receiver.test(req)) != 0);
        assertEquals(Status.FAILED, t[0]);
        String error = o.receiver.error();
        assertTrue(error.startsWith("protocol violation by 127.0.0.1:"), error);
        return error;
    }

    @Test
    void theOwnerFailsTheConnectionOnMalformedRequests() throws Exception {
        assertTrue(violation(request(OpFrame.WRITE, true, 2, 1, 0, 0)).contains("out of order (expected 1)"));
        assertTrue(violation(request(OpFrame.READ, true, 1, 1, 0, 0), request(OpFrame.READ, true, 1, 1, 0, 0))
                .contains("one-sided operation 1 out of order (expected 2)"));
        ByteBuffer big = request(OpFrame.WRITE, true, 1, 1, 0, 0);
        big.putInt(OpFrame.LENGTH_OFFSET, ChunkHeader.MAX_CHUNK + 1);
        assertTrue(violation(big).contains("write piece of"));
        ByteBuffer reserved = request(OpFrame.READ, true, 1, 1, 0, 0);
        reserved.putShort(OpFrame.RESERVED_OFFSET, (short) 7);
        assertTrue(violation(reserved).contains("reserved"));
        assertTrue(violation(request(OpFrame.WRITE, false, 1, 1, 0, 0), request(OpFrame.READ, true, 1, 1, 0, 0))
                .contains("a read request inside write 1"));
        // a data chunk claiming more one-sided operations before it than can be in flight
        ByteBuffer chunk = ByteBuffer.allocateDirect(ChunkHeader.BYTES);
        ChunkHeader.write(chunk, 0, 1, 10, 0, 10, OpWindow.SIZE + 1);
        assertTrue(violation(chunk).contains("one-sided operations"));
    }

    @Test
    void anInitiatorRejectsRepliesItDidNotAskFor() throws Exception {
        Registration local = new TcpRegistration(arena.allocate(100));
        RemoteRegion remote = new RemoteRegion("tcp", 0, 100, new int[] {0, 7});

        // a completion while nothing was sent
        assertTrue(initiatorViolation(local, remote, Issue.NOTHING, done(1, OpFrame.OK)).contains("operation 1"));
        // an answer for a write
        assertTrue(initiatorViolation(local, remote, Issue.WRITE, answer(1, 0, 10)).contains("for a write"));
        // more answer bytes than the read asked for
        assertTrue(initiatorViolation(local, remote, Issue.READ, answer(1, 0, 11)).contains("a read of 10 bytes"));
        // a read completed without its data
        assertTrue(initiatorViolation(local, remote, Issue.READ, done(1, OpFrame.OK)).contains("with 0 of 10 bytes"));
        // an unknown status
        ByteBuffer bad = done(1, OpFrame.OK);
        bad.put(OpFrame.FLAGS_OFFSET, (byte) 77);
        assertTrue(initiatorViolation(local, remote, Issue.READ, bad).contains("status 77"));
        // an unknown frame type
        ByteBuffer junk = ByteBuffer.allocateDirect(OpFrame.BYTES);
        junk.put(0, (byte) 0x7f);
        assertTrue(initiatorViolation(local, remote, Issue.READ, junk).contains("type 0x7f"));
    }

    private static ByteBuffer done(int op, int status) {
        ByteBuffer b = ByteBuffer.allocateDirect(OpFrame.BYTES);
        OpFrame.done(b, 0, op, status, 0);
        return b;
    }

    private static ByteBuffer answer(int op, long offset, int length) {
        ByteBuffer b = ByteBuffer.allocateDirect(OpFrame.BYTES + length);
        OpFrame.answer(b, 0, op, offset, length);
        return b;
    }

    private enum Issue { NOTHING, READ, WRITE }

    /** A sender over one socket: issues a read or write of 10 bytes (or nothing), then gets {@code frame}. */
    private String initiatorViolation(Registration local, RemoteRegion remote, Issue issue, ByteBuffer frame)
            throws Exception {
        SocketChannel[] pair = TcpTestSupport.socketPair(cleanup);
        CoreSender s = TcpSendWire.sender(new DataConnection(new SocketChannel[] {pair[0]}, "sender"),
                null, null, null, c -> { });
        cleanup.add(s);
        int req = switch (issue) {
            case NOTHING -> -1;
            case READ -> s.read(local, 0, 10, remote, 0);
            case WRITE -> s.write(local, 0, 10, remote, 0);
        };
        assertTrue(issue == Issue.NOTHING || req >= 0, Status.describe(req));
        write(pair[1], frame);
        int[] t = new int[1];
        await("the initiator rejects the frame", () -> {
            t[0] = req >= 0 ? s.test(req) : s.isend(local, 0, 1, 0);
            return t[0] != 0 && t[0] != Status.NOT_READY;
        });
        assertEquals(Status.FAILED, t[0]);
        assertTrue(s.error().startsWith("protocol violation by 127.0.0.1:"), s.error());
        return s.error();
    }
}
