package io.jmesh.transport.handshake;

import static io.jmesh.transport.handshake.TestSupport.LOOPBACK4;
import static io.jmesh.transport.handshake.TestSupport.await;
import static io.jmesh.transport.handshake.TestSupport.awaitTerminalOrAction;
import static io.jmesh.transport.handshake.TestSupport.fullHandshake;
import static io.jmesh.transport.handshake.TestSupport.route;
import static io.jmesh.transport.handshake.TestSupport.settings;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jmesh.transport.net.ListenAddress;
import io.jmesh.transport.net.ListenHandle;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Stray and hostile peers, on loopback. Each test holds the bad socket open while a well-behaved handshake runs on the
 * same listener, and checks that the good one finishes promptly (well inside the bad socket's deadline), that the bad
 * socket is closed by the listener, and that the drop was counted.
 */
@Timeout(30)
class HostileClientTest {
    private static final long DEADLINE_MS = 1_500;
    /** A good handshake on loopback takes a few ms; this leaves room for a slow CI machine, yet is far below the deadline. */
    private static final long PROMPT_MS = 700;

    private HandshakeAgent agent;
    private HandshakeListener listener;
    private InetSocketAddress target;

    @BeforeEach
    void start() throws IOException {
        agent = HandshakeAgent.start(settings(DEADLINE_MS, 8));
        listener = agent.listen(List.of(LOOPBACK4));
        target = listener.handle().addresses().get(0).socketAddress();
    }

    @AfterEach
    void stop() {
        listener.close();
        agent.close();
    }

    private Socket raw() throws IOException {
        Socket s = new Socket();
        s.connect(target, 1_000);
        s.setSoTimeout(3_000);
        return s;
    }

    private static byte[] header(int magic, int version, int type, long length) {
        return ByteBuffer.allocate(Frame.HEADER_LENGTH).putInt(magic).putShort((short) version)
                .putShort((short) type).putInt((int) length).array();
    }

    private void goodHandshakeIsPrompt() {
        long ms = fullHandshake(agent, listener, "good".getBytes(), "reply".getBytes(), 5_000);
        assertTrue(ms < PROMPT_MS, "a well-behaved handshake took " + ms + " ms next to the hostile client");
    }

    /** Reads until the listener closes the socket; returns what it sent first, in ms since {@code since}. */
    private static long awaitClosedByPeer(Socket s, long since) throws IOException {
        InputStream in = s.getInputStream();
        try {
            while (in.read() >= 0) {
                // drain a REJECT if any
            }
        } catch (SocketException reset) {
            // a reset is a close too
        }
        return (System.nanoTime() - since) / 1_000_000;
    }

    private static void assertStillOpen(Socket s) throws IOException {
        s.setSoTimeout(50);
        assertThrows(SocketTimeoutException.class, () -> s.getInputStream().read(),
                "the listener should still be waiting for this client");
        s.setSoTimeout(3_000);
    }

    /** Reads one frame the listener sent (a REJECT) and returns its body as text. */
    private static String readReject(Socket s) throws IOException {
        byte[] head = s.getInputStream().readNBytes(Frame.HEADER_LENGTH);
        ByteBuffer h = ByteBuffer.wrap(head);
        assertEquals(Frame.MAGIC, h.getInt(0));
        assertEquals(Frame.REJECT, h.getShort(6));
        byte[] body = s.getInputStream().readNBytes(h.getInt(8));
        return new String(body, StandardCharsets.UTF_8);
    }

    @Test
    void garbageIsDroppedAtOnce() throws IOException {
        long start = System.nanoTime();
        try (Socket bad = raw()) {
            bad.getOutputStream().write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            long ms = awaitClosedByPeer(bad, start);
            assertTrue(ms < PROMPT_MS, "garbage was held for " + ms + " ms");
        }
        goodHandshakeIsPrompt();
        assertEquals(1, agent.droppedConnections());
        assertNull(listener.pollInbound());
    }

    @Test
    void byteAtATimeSlowlorisIsBoundedByTheDeadline() throws Exception {
        long start = System.nanoTime();
        try (Socket bad = raw()) {
            // A valid HELLO announcing 8 + 100 bytes, dribbled one byte every 20 ms: it would take > 2 s to finish.
            ByteBuffer hello = ByteBuffer.allocate(Frame.HEADER_LENGTH + 108);
            hello.put(header(Frame.MAGIC, Frame.VERSION, Frame.HELLO, 108));
            byte[] all = hello.array();
            AtomicBoolean stop = new AtomicBoolean();
            Thread dribbler = Thread.ofPlatform().daemon().start(() -> {
                try {
                    OutputStream out = bad.getOutputStream();
                    for (int i = 0; i < all.length && !stop.get(); i++) {
                        out.write(all[i]);
                        out.flush();
                        Thread.sleep(20);
                    }
                } catch (IOException | InterruptedException expected) {
                    // the listener closed us
                }
            });
            Thread.sleep(100);
            goodHandshakeIsPrompt();
            assertStillOpen(bad);
            long ms = awaitClosedByPeer(bad, start);
            stop.set(true);
            dribbler.join(2_000);
            assertTrue(ms >= DEADLINE_MS - 100 && ms < DEADLINE_MS + 1_000, "slowloris closed after " + ms + " ms");
        }
        assertEquals(1, agent.droppedConnections());
    }

    @Test
    void halfOpenSocketThatNeverSendsIsClosedAtTheDeadline() throws IOException {
        long start = System.nanoTime();
        try (Socket bad = raw()) {
            goodHandshakeIsPrompt();
            assertStillOpen(bad);
            long ms = awaitClosedByPeer(bad, start);
            assertTrue(ms >= DEADLINE_MS - 100 && ms < DEADLINE_MS + 1_000, "half-open closed after " + ms + " ms");
        }
        assertEquals(1, agent.droppedConnections());
    }

    @Test
    void hugeLengthIsDroppedWithoutWaitingForTheBody() throws IOException {
        long start = System.nanoTime();
        try (Socket bad = raw()) {
            bad.getOutputStream().write(header(Frame.MAGIC, Frame.VERSION, Frame.HELLO, 0xFFFF_FFF0L));
            long ms = awaitClosedByPeer(bad, start);
            assertTrue(ms < PROMPT_MS, "huge length held for " + ms + " ms");
        }
        try (Socket bad = raw()) {
            bad.getOutputStream().write(header(Frame.MAGIC, Frame.VERSION, Frame.HELLO, Frame.MAX_BODY + 1));
            awaitClosedByPeer(bad, start);
        }
        goodHandshakeIsPrompt();
        assertEquals(2, agent.droppedConnections());
    }

    @Test
    void wrongSecretGetsARejectAndTheSocketIsClosed() throws IOException {
        try (Socket bad = raw()) {
            byte[] secret = listener.handle().secretBytes();
            secret[7] ^= 1;
            ByteBuffer hello = Frame.hello(secret, "evil qp".getBytes());
            bad.getOutputStream().write(hello.array(), 0, hello.limit());
            String reason = readReject(bad);
            assertTrue(reason.contains("wrong secret"), reason);
            awaitClosedByPeer(bad, System.nanoTime());
        }
        goodHandshakeIsPrompt();
        assertEquals(1, agent.droppedConnections());
        assertNull(listener.pollInbound(), "a wrong secret never reaches the application");
    }

    @Test
    void otherVersionGetsAReadableReject() throws IOException {
        try (Socket bad = raw()) {
            bad.getOutputStream().write(header(Frame.MAGIC, 2, Frame.HELLO, 8));
            bad.getOutputStream().write(new byte[8]);
            String reason = readReject(bad);
            assertTrue(reason.contains("version 2 is not supported; this node speaks version 1"), reason);
        }
        goodHandshakeIsPrompt();
    }

    @Test
    void shortHelloAndUnexpectedFramesAreRefused() throws IOException {
        try (Socket bad = raw()) {
            bad.getOutputStream().write(header(Frame.MAGIC, Frame.VERSION, Frame.HELLO, 3));
            bad.getOutputStream().write(new byte[3]);
            assertTrue(readReject(bad).contains("shorter than its 8-byte secret"));
        }
        try (Socket bad = raw()) {
            bad.getOutputStream().write(header(Frame.MAGIC, Frame.VERSION, Frame.READY, 0));
            assertTrue(readReject(bad).contains("expected HELLO, got READY"));
        }
        try (Socket bad = raw()) {
            bad.getOutputStream().write(header(Frame.MAGIC, Frame.VERSION, Frame.ATTACH, 0));
            assertTrue(readReject(bad).contains("ATTACH"));
        }
        goodHandshakeIsPrompt();
        assertEquals(3, agent.droppedConnections());
    }

    @Test
    void dataAfterAValidHelloDropsOnlyThatConnection() throws IOException {
        try (Socket bad = raw()) {
            ByteBuffer hello = Frame.hello(listener.handle().secretBytes(), "qp".getBytes());
            bad.getOutputStream().write(hello.array(), 0, hello.limit());
            InboundHandshake in = TestSupport.awaitNonNull("inbound", 2_000, listener::pollInbound);
            bad.getOutputStream().write("junk".getBytes());
            await("dropped", 2_000, () -> in.poll() == HandshakeStatus.FAILED);
            assertTrue(in.failure().contains("dropped: not a jmesh handshake"), in.failure());
            assertTrue(!in.accept("late".getBytes()), "accept after failure reports false");
        }
        goodHandshakeIsPrompt();
    }

    @Test
    void aFloodOverThePendingCapCannotStarveAGoodConnector() throws IOException {
        List<Socket> flood = new ArrayList<>();
        try {
            for (int i = 0; i < 24; i++) { // cap is 8
                flood.add(raw());
            }
            await("the listener saw the flood", 2_000, () -> agent.droppedConnections() >= 16);
            goodHandshakeIsPrompt();
        } finally {
            for (Socket s : flood) {
                s.close();
            }
        }
    }

    @Test
    void hostileListenerCannotHangTheConnector() throws Exception {
        try (ServerSocket fake = new ServerSocket(0, 4, InetAddress.getByName("127.0.0.1"))) {
            ListenHandle h = new ListenHandle(0, 5, List.of(new ListenAddress(LOOPBACK4, fake.getLocalPort(), 0)));
            // 1: replies with a huge frame length
            OutboundHandshake out = agent.connect(h, route(h), "x".getBytes());
            try (Socket s = fake.accept()) {
                s.getOutputStream().write(header(Frame.MAGIC, Frame.VERSION, Frame.ACCEPT, 1L << 31));
                assertEquals(HandshakeStatus.FAILED, awaitTerminalOrAction(out, 2_000));
                assertTrue(out.failure().contains("exceeds the limit"), out.failure());
            }
            // 2: accepts the TCP connection and never answers
            long start = System.nanoTime();
            OutboundHandshake silent = agent.connect(h, route(h), "x".getBytes());
            try (Socket s = fake.accept()) {
                assertTrue(s.isConnected());
                goodHandshakeIsPrompt();
                assertEquals(HandshakeStatus.FAILED, awaitTerminalOrAction(silent, DEADLINE_MS + 2_000));
                long ms = (System.nanoTime() - start) / 1_000_000;
                assertTrue(ms >= DEADLINE_MS - 100, "gave up after " + ms + " ms");
                assertTrue(silent.failure().contains("waiting for the peer's reply"), silent.failure());
            }
        }
    }
}
