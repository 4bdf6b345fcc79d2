package io.jmesh.transport.handshake;

import static io.jmesh.transport.handshake.TestSupport.LOOPBACK4;
import static io.jmesh.transport.handshake.TestSupport.NO_DEADLINE_MS;
import static io.jmesh.transport.handshake.TestSupport.PATIENCE_MS;
import static io.jmesh.transport.handshake.TestSupport.await;
import static io.jmesh.transport.handshake.TestSupport.awaitTerminalOrAction;
import static io.jmesh.transport.handshake.TestSupport.fullHandshake;
import static io.jmesh.transport.handshake.TestSupport.millisSince;
import static io.jmesh.transport.handshake.TestSupport.route;
import static io.jmesh.transport.handshake.TestSupport.settings;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
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
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Stray and hostile peers, on loopback. No test here asserts how fast anything is; each proves its point by order,
 * cause and counters:
 * <ul>
 *   <li>"cannot block a good handshake": with a deadline no test runs into ({@link TestSupport#NO_DEADLINE_MS}), a
 *       well-behaved handshake on the same listener reaches COMPLETE while the bad socket is still open and nothing
 *       has been dropped yet; closing the listener then closes the bad socket.</li>
 *   <li>"dropped at once, not at the deadline": with that same deadline, the socket is closed by the listener and
 *       the drop is counted with the reason for it (bad magic, huge length ...), not a timeout.</li>
 *   <li>"closed at the deadline": with a short deadline, the socket is closed eventually, counted as a timeout, and
 *       not before the deadline (a lower bound cannot fail on a slow machine); there is no upper bound.</li>
 * </ul>
 */
@Timeout(120) // a last-resort hang guard; every wait inside has its own, shorter bound
class HostileClientTest {
    /** For the tests that wait for the deadline to fire: short, since they wait for it. */
    private static final long SHORT_DEADLINE_MS = 1_500;

    private HandshakeAgent agent;
    private HandshakeListener listener;
    private InetSocketAddress target;

    private void start(long deadlineMs) throws IOException {
        agent = HandshakeAgent.start(settings(deadlineMs, 8));
        listener = agent.listen(List.of(LOOPBACK4));
        target = listener.handle().addresses().get(0).socketAddress();
    }

    @AfterEach
    void stop() {
        if (listener != null) {
            listener.close();
        }
        if (agent != null) {
            agent.close();
        }
    }

    private Socket raw() throws IOException {
        Socket s = new Socket();
        s.connect(target, (int) PATIENCE_MS);
        s.setSoTimeout((int) PATIENCE_MS);
        return s;
    }

    private static byte[] header(int magic, int version, int type, long length) {
        return ByteBuffer.allocate(Frame.HEADER_LENGTH).putInt(magic).putShort((short) version)
                .putShort((short) type).putInt((int) length).array();
    }

    private void goodHandshakeCompletes() {
        fullHandshake(agent, listener, "good".getBytes(), "reply".getBytes());
    }

    /** Reads (draining a REJECT if any) until the listener closes the socket; fails if it stays open too long. */
    private static void awaitClosedByPeer(Socket s) throws IOException {
        s.setSoTimeout((int) PATIENCE_MS);
        InputStream in = s.getInputStream();
        try {
            while (in.read() >= 0) {
                // drain a REJECT if any
            }
        } catch (SocketTimeoutException e) {
            fail("the listener did not close the socket within " + PATIENCE_MS + " ms");
        } catch (SocketException reset) {
            // a reset is a close too
        }
    }

    /**
     * The listener has neither closed this socket nor written to it. A read that times out proves it; a slow machine
     * only makes the read wait longer, so this check cannot fail spuriously.
     */
    private static void assertStillOpen(Socket s) throws IOException {
        s.setSoTimeout(50);
        assertThrows(SocketTimeoutException.class, () -> s.getInputStream().read(),
                "the listener should still be waiting for this client");
        s.setSoTimeout((int) PATIENCE_MS);
    }

    /** Waits until {@code n} drops have been counted, checks no more were, and returns the last one's reason. */
    private String awaitDrops(long n) {
        await(n + " dropped connections", PATIENCE_MS, () -> agent.droppedConnections() >= n);
        assertEquals(n, agent.droppedConnections());
        return agent.lastDropReason();
    }

    /** The handshake deadline closed the socket, not earlier than the deadline after {@code startNanos}. */
    private void assertClosedByTheDeadline(Socket bad, long startNanos) throws IOException {
        awaitClosedByPeer(bad);
        long ms = millisSince(startNanos);
        assertTrue(ms >= SHORT_DEADLINE_MS, "closed after " + ms + " ms, before the " + SHORT_DEADLINE_MS
                + " ms deadline");
        String reason = awaitDrops(1);
        assertTrue(reason.contains("no valid HELLO within " + SHORT_DEADLINE_MS + " ms"), reason);
    }

    /**
     * The hostile socket held on: the good handshake completed first, nothing was dropped yet, and the socket is still
     * open. Then closing the listener closes it, without waiting for its deadline.
     */
    private void goodHandshakeCompletesWhileHeld(Socket bad) throws IOException {
        goodHandshakeCompletes();
        assertEquals(0, agent.droppedConnections(), () -> "dropped before the good handshake completed: "
                + agent.lastDropReason());
        assertStillOpen(bad);
        listener.close();
        awaitClosedByPeer(bad);
        assertEquals(0, agent.droppedConnections(), "closing the listener is not a drop");
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

    /**
     * Dribbles a valid HELLO header announcing a 100-byte body, one byte every 20 ms, and then holds before the last
     * byte forever: the listener can never complete the frame.
     */
    private static Thread slowloris(Socket bad, AtomicInteger sent, AtomicBoolean stop) {
        ByteBuffer hello = ByteBuffer.allocate(Frame.HEADER_LENGTH + 108);
        hello.put(header(Frame.MAGIC, Frame.VERSION, Frame.HELLO, 108));
        byte[] all = hello.array();
        return Thread.ofPlatform().daemon().start(() -> {
            try {
                OutputStream out = bad.getOutputStream();
                for (int i = 0; i < all.length - 1 && !stop.get(); i++) {
                    out.write(all[i]);
                    out.flush();
                    sent.incrementAndGet();
                    Thread.sleep(20);
                }
            } catch (IOException | InterruptedException expected) {
                // the listener closed us
            }
        });
    }

    @Test
    void garbageIsDroppedForWhatItIsNotAtTheDeadline() throws IOException {
        start(NO_DEADLINE_MS);
        try (Socket bad = raw()) {
            bad.getOutputStream().write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            awaitClosedByPeer(bad);
        }
        String reason = awaitDrops(1);
        assertTrue(reason.contains("not a jmesh handshake: wrong magic byte 0"), reason);
        goodHandshakeCompletes();
        assertEquals(1, agent.droppedConnections());
        assertNull(listener.pollInbound());
    }

    @Test
    void byteAtATimeSlowlorisCannotBlockAGoodHandshake() throws Exception {
        start(NO_DEADLINE_MS);
        try (Socket bad = raw()) {
            AtomicInteger sent = new AtomicInteger();
            AtomicBoolean stop = new AtomicBoolean();
            Thread dribbler = slowloris(bad, sent, stop);
            await("the slowloris started", PATIENCE_MS, () -> sent.get() > 0);
            goodHandshakeCompletesWhileHeld(bad);
            stop.set(true);
            dribbler.join(PATIENCE_MS);
            assertFalse(dribbler.isAlive());
        }
    }

    @Test
    void byteAtATimeSlowlorisIsClosedAtTheDeadlineNotBefore() throws Exception {
        start(SHORT_DEADLINE_MS);
        long start = System.nanoTime(); // before the listener accepts the socket and starts its deadline
        try (Socket bad = raw()) {
            AtomicInteger sent = new AtomicInteger();
            AtomicBoolean stop = new AtomicBoolean();
            Thread dribbler = slowloris(bad, sent, stop);
            assertClosedByTheDeadline(bad, start);
            stop.set(true);
            dribbler.join(PATIENCE_MS);
            assertFalse(dribbler.isAlive());
        }
    }

    @Test
    void halfOpenSocketCannotBlockAGoodHandshake() throws IOException {
        start(NO_DEADLINE_MS);
        try (Socket bad = raw()) {
            goodHandshakeCompletesWhileHeld(bad);
        }
    }

    @Test
    void halfOpenSocketThatNeverSendsIsClosedAtTheDeadlineNotBefore() throws IOException {
        start(SHORT_DEADLINE_MS);
        long start = System.nanoTime(); // before the listener accepts the socket and starts its deadline
        try (Socket bad = raw()) {
            assertClosedByTheDeadline(bad, start);
        }
    }

    @Test
    void hugeLengthIsDroppedWithoutWaitingForTheBody() throws IOException {
        start(NO_DEADLINE_MS);
        try (Socket bad = raw()) {
            bad.getOutputStream().write(header(Frame.MAGIC, Frame.VERSION, Frame.HELLO, 0xFFFF_FFF0L));
            awaitClosedByPeer(bad); // never sent a body byte: the header alone got it dropped
        }
        String reason = awaitDrops(1);
        assertTrue(reason.contains("frame length " + 0xFFFF_FFF0L + " exceeds the limit"), reason);
        try (Socket bad = raw()) {
            bad.getOutputStream().write(header(Frame.MAGIC, Frame.VERSION, Frame.HELLO, Frame.MAX_BODY + 1));
            awaitClosedByPeer(bad);
        }
        reason = awaitDrops(2);
        assertTrue(reason.contains("frame length " + (Frame.MAX_BODY + 1) + " exceeds the limit"), reason);
        goodHandshakeCompletes();
        assertEquals(2, agent.droppedConnections());
    }

    @Test
    void wrongSecretGetsARejectAndTheSocketIsClosed() throws IOException {
        start(NO_DEADLINE_MS);
        try (Socket bad = raw()) {
            byte[] secret = listener.handle().secretBytes();
            secret[7] ^= 1;
            RawClient.authenticate(bad, secret, "evil qp".getBytes());
            String reason = readReject(bad);
            assertTrue(reason.contains("wrong proof of the secret"), reason);
            awaitClosedByPeer(bad);
        }
        String reason = awaitDrops(1);
        assertTrue(reason.contains("wrong proof of the secret"), reason);
        goodHandshakeCompletes();
        assertEquals(1, agent.droppedConnections());
        assertNull(listener.pollInbound(), "a wrong secret never reaches the application");
    }

    @Test
    void otherVersionGetsAReadableReject() throws IOException {
        start(NO_DEADLINE_MS);
        try (Socket bad = raw()) {
            // version 1's HELLO: the secret in clear, which this version never reads
            bad.getOutputStream().write(header(Frame.MAGIC, 1, Frame.HELLO, 8));
            bad.getOutputStream().write(new byte[8]);
            String reason = readReject(bad);
            assertTrue(reason.contains("version 1 is not supported; this node speaks version 2"), reason);
            awaitClosedByPeer(bad);
        }
        goodHandshakeCompletes();
        assertEquals(1, agent.droppedConnections());
    }

    @Test
    void shortHelloAndUnexpectedFramesAreRefused() throws IOException {
        start(NO_DEADLINE_MS);
        try (Socket bad = raw()) {
            bad.getOutputStream().write(header(Frame.MAGIC, Frame.VERSION, Frame.HELLO, 3));
            bad.getOutputStream().write(new byte[3]);
            assertTrue(readReject(bad).contains("shorter than its 18 bytes of nonce and liveness port"));
        }
        try (Socket bad = raw()) {
            bad.getOutputStream().write(header(Frame.MAGIC, Frame.VERSION, Frame.READY, 0));
            assertTrue(readReject(bad).contains("expected HELLO, got READY"));
        }
        try (Socket bad = raw()) {
            bad.getOutputStream().write(header(Frame.MAGIC, Frame.VERSION, Frame.ATTACH, 0));
            assertTrue(readReject(bad).contains("ATTACH"));
        }
        goodHandshakeCompletes();
        assertEquals(3, agent.droppedConnections());
    }

    @Test
    void dataAfterAValidHelloDropsOnlyThatConnection() throws IOException {
        start(NO_DEADLINE_MS);
        try (Socket bad = raw()) {
            RawClient.authenticate(bad, listener.handle().secretBytes(), "qp".getBytes());
            InboundHandshake in = TestSupport.awaitNonNull("inbound", PATIENCE_MS, listener::pollInbound);
            bad.getOutputStream().write("junk".getBytes());
            await("dropped", PATIENCE_MS, () -> in.poll() == HandshakeStatus.FAILED);
            assertTrue(in.failure().contains("dropped: not a jmesh handshake"), in.failure());
            assertTrue(!in.accept("late".getBytes()), "accept after failure reports false");
        }
        goodHandshakeCompletes();
        assertEquals(1, agent.droppedConnections());
    }

    @Test
    void aReadyOfAnotherVersionIsNamedAsSuch() throws IOException {
        start(NO_DEADLINE_MS);
        try (Socket bad = raw()) {
            RawClient.authenticate(bad, listener.handle().secretBytes(), "qp".getBytes());
            InboundHandshake in = TestSupport.awaitNonNull("inbound", PATIENCE_MS, listener::pollInbound);
            assertTrue(in.accept("reply".getBytes()));
            // READY before the ACCEPT went out is a different fault: wait for the ACCEPT, as a real connector does
            byte[] head = bad.getInputStream().readNBytes(Frame.HEADER_LENGTH);
            assertEquals(Frame.ACCEPT, ByteBuffer.wrap(head).getShort(6));
            bad.getInputStream().readNBytes(ByteBuffer.wrap(head).getInt(8));
            bad.getOutputStream().write(header(Frame.MAGIC, 3, Frame.READY, 0));
            await("dropped", PATIENCE_MS, () -> in.poll() == HandshakeStatus.FAILED);
            assertTrue(in.failure().contains("expected READY of handshake version 2, got READY of version 3"),
                    in.failure());
        }
        goodHandshakeCompletes();
    }

    @Test
    void aFloodOverThePendingCapCannotStarveAGoodConnector() throws IOException {
        start(NO_DEADLINE_MS);
        List<Socket> flood = new ArrayList<>();
        try {
            for (int i = 0; i < 24; i++) { // cap is 8
                flood.add(raw());
            }
            await("the listener saw the flood", PATIENCE_MS, () -> agent.droppedConnections() >= 16);
            // The listener is at its cap with 8 silent sockets that no deadline will clear during this test; the good
            // connector gets in by evicting the oldest of them, and completes.
            goodHandshakeCompletes();
            assertEquals(17, agent.droppedConnections());
            assertTrue(agent.lastDropReason().contains("evicted"), agent.lastDropReason());
        } finally {
            for (Socket s : flood) {
                s.close();
            }
        }
    }

    @Test
    void hugeReplyFromAHostileListenerFailsTheConnectorAtOnce() throws Exception {
        start(NO_DEADLINE_MS);
        try (ServerSocket fake = new ServerSocket(0, 4, InetAddress.getByName("127.0.0.1"))) {
            fake.setSoTimeout((int) PATIENCE_MS);
            ListenHandle h = new ListenHandle(0, 5, List.of(new ListenAddress(LOOPBACK4, fake.getLocalPort(), 0)));
            OutboundHandshake out = agent.connect(h, route(h), "x".getBytes());
            try (Socket s = fake.accept()) {
                s.getOutputStream().write(header(Frame.MAGIC, Frame.VERSION, Frame.ACCEPT, 1L << 31));
                assertEquals(HandshakeStatus.FAILED, awaitTerminalOrAction(out, PATIENCE_MS));
                // the deadline is far away: the header alone failed it
                assertTrue(out.failure().contains("exceeds the limit"), out.failure());
            }
        }
    }

    @Test
    void silentListenerCannotHangOtherHandshakes() throws Exception {
        start(NO_DEADLINE_MS);
        try (ServerSocket fake = new ServerSocket(0, 4, InetAddress.getByName("127.0.0.1"))) {
            fake.setSoTimeout((int) PATIENCE_MS);
            ListenHandle h = new ListenHandle(0, 5, List.of(new ListenAddress(LOOPBACK4, fake.getLocalPort(), 0)));
            // accepts the TCP connection, takes the HELLO and never answers
            OutboundHandshake silent = agent.connect(h, route(h), "x".getBytes());
            try (Socket s = fake.accept()) {
                s.setSoTimeout((int) PATIENCE_MS);
                byte[] head = s.getInputStream().readNBytes(Frame.HEADER_LENGTH);
                assertEquals(Frame.HELLO, ByteBuffer.wrap(head).getShort(Frame.TYPE_OFFSET));
                goodHandshakeCompletes();
                assertEquals(HandshakeStatus.IN_PROGRESS, silent.poll(), "still waiting for the silent listener");
                silent.close(); // give up now rather than at the deadline; the fake listener sees the socket close
                assertEquals(HandshakeStatus.FAILED, silent.poll());
                assertTrue(silent.failure().contains("aborted by this side"), silent.failure());
                awaitClosedByPeer(s);
            }
        }
    }

    @Test
    void silentListenerTimesOutTheConnectorNotBeforeTheDeadline() throws Exception {
        start(SHORT_DEADLINE_MS);
        try (ServerSocket fake = new ServerSocket(0, 4, InetAddress.getByName("127.0.0.1"))) {
            fake.setSoTimeout((int) PATIENCE_MS);
            ListenHandle h = new ListenHandle(0, 5, List.of(new ListenAddress(LOOPBACK4, fake.getLocalPort(), 0)));
            long start = System.nanoTime(); // before connect() computes the deadline
            OutboundHandshake silent = agent.connect(h, route(h), "x".getBytes());
            try (Socket s = fake.accept()) {
                s.setSoTimeout((int) PATIENCE_MS);
                // Takes the HELLO and never answers. (Fewer bytes only if the connector's deadline passed before it
                // even sent its HELLO, which takes a machine stalled for the whole deadline: then it timed out while
                // connecting, and the checks below hold but for the phase named.)
                boolean helloSent = s.getInputStream().readNBytes(Frame.HEADER_LENGTH).length == Frame.HEADER_LENGTH;
                assertEquals(HandshakeStatus.FAILED, awaitTerminalOrAction(silent, PATIENCE_MS));
                long ms = millisSince(start);
                assertTrue(silent.failure().contains("timed out after " + SHORT_DEADLINE_MS + " ms"),
                        silent.failure());
                if (helloSent) {
                    assertTrue(silent.failure().contains("waiting for the peer's reply"), silent.failure());
                }
                assertTrue(ms >= SHORT_DEADLINE_MS, "gave up after " + ms + " ms, before the " + SHORT_DEADLINE_MS
                        + " ms deadline");
            }
        }
    }
}
