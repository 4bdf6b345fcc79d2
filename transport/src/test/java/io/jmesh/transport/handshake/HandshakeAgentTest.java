package io.jmesh.transport.handshake;

import static io.jmesh.transport.handshake.TestSupport.LOOPBACK4;
import static io.jmesh.transport.handshake.TestSupport.LOOPBACK6;
import static io.jmesh.transport.handshake.TestSupport.NO_DEADLINE_MS;
import static io.jmesh.transport.handshake.TestSupport.PATIENCE_MS;
import static io.jmesh.transport.handshake.TestSupport.await;
import static io.jmesh.transport.handshake.TestSupport.awaitNonNull;
import static io.jmesh.transport.handshake.TestSupport.awaitTerminalOrAction;
import static io.jmesh.transport.handshake.TestSupport.fullHandshake;
import static io.jmesh.transport.handshake.TestSupport.route;
import static io.jmesh.transport.handshake.TestSupport.settings;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.transport.net.Route;
import io.jmesh.transport.net.RouteSelector;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The agent's API on loopback. No test here asserts how fast anything is: waits are bounded only to turn a hang into
 * a failure ({@link TestSupport#PATIENCE_MS}), and the agent's deadline is far beyond them ({@link
 * TestSupport#NO_DEADLINE_MS}) so that a slow machine cannot make a handshake time out, except in the one test about
 * timeouts, which checks the deadline is not enforced early.
 */
@Timeout(120) // a last-resort hang guard; every wait inside has its own, shorter bound
class HandshakeAgentTest {
    /** The deadline of {@link #unansweredHandshakeTimesOutOnBothSides}: the test waits for it, so keep it short. */
    private static final long QUICK_DEADLINE_MS = 2_000;

    private HandshakeAgent agent;

    @BeforeEach
    void start() throws IOException {
        agent = HandshakeAgent.start(settings(NO_DEADLINE_MS, 64));
    }

    @AfterEach
    void stop() {
        agent.close();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void runsOnOneDaemonThreadNamedJmeshHandshake() {
        Thread t = Thread.getAllStackTraces().keySet().stream()
                .filter(x -> x.getName().equals(HandshakeAgent.THREAD_NAME)).findFirst().orElseThrow();
        assertTrue(t.isDaemon());
    }

    @Test
    void listenPublishesBoundPortsAndAFreshSecret() throws IOException {
        try (HandshakeListener one = agent.listen(List.of(LOOPBACK4));
             HandshakeListener two = agent.listen(List.of(LOOPBACK4))) {
            ListenHandle h = one.handle();
            assertEquals(1, h.addresses().size());
            assertEquals(LOOPBACK4, h.addresses().get(0).prefix());
            assertTrue(h.addresses().get(0).port() > 0);
            assertNotEquals(h.secret(), two.handle().secret());
            assertEquals(h, ListenHandle.decode(h.encode()));
            assertNull(one.pollInbound(), "nothing connected yet: accept reports 'in progress'");
        }
    }

    @Test
    void listenOnLinksCarriesSpeedAndFlags() throws IOException {
        try (HandshakeListener l = agent.listenOn(List.of(LocalLink.tcp(LOOPBACK4, 25_000)),
                ListenHandle.FLAG_TCP_PROVIDER)) {
            assertEquals(25, l.handle().addresses().get(0).speedGbps());
            assertTrue(l.handle().isTcpProvider());
        }
    }

    @Test
    void completesAndExchangesPayloadsOverIpv4() throws IOException {
        try (HandshakeListener listener = agent.listen(List.of(LOOPBACK4))) {
            byte[] qpA = bytes("qpn=17 psn=99 gid=::ffff:127.0.0.1 mtu=4096");
            byte[] qpB = bytes("qpn=42 psn=7");
            OutboundHandshake out = agent.connect(listener.handle(), route(listener.handle()), qpA);
            InboundHandshake in = awaitNonNull("inbound", PATIENCE_MS, listener::pollInbound);
            assertArrayEquals(qpA, in.peerPayload());
            assertEquals(InetAddress.getLoopbackAddress(), in.remoteAddress().getAddress());
            assertEquals(listener.handle().addresses().get(0).port(), in.localAddress().getPort());
            assertTrue(in.accept(qpB));
            assertEquals(HandshakeStatus.ACTION_REQUIRED, awaitTerminalOrAction(out, PATIENCE_MS));
            assertArrayEquals(qpB, out.peerPayload());
            assertEquals(HandshakeStatus.IN_PROGRESS, in.poll(), "the acceptor waits for READY");
            assertTrue(out.confirm());
            await("both complete", PATIENCE_MS,
                    () -> out.poll() == HandshakeStatus.COMPLETE && in.poll() == HandshakeStatus.COMPLETE);
            assertEquals(in.connectionId(), out.connectionId());
            assertNull(out.failure());
            assertThrows(IllegalStateException.class, () -> out.confirm());
        }
    }

    @Test
    void completesOverIpv6Loopback() throws IOException {
        HandshakeListener listener;
        try {
            listener = agent.listen(List.of(LOOPBACK6));
        } catch (IOException e) {
            assumeTrue(false, "no IPv6 loopback here: " + e.getMessage());
            return;
        }
        try (listener) {
            Route r = RouteSelector.best(List.of(LocalLink.tcp(LOOPBACK6, 0)), listener.handle());
            OutboundHandshake out = agent.connect(listener.handle(), r, bytes("six"));
            InboundHandshake in = awaitNonNull("inbound", PATIENCE_MS, listener::pollInbound);
            in.accept(bytes("ok"));
            awaitTerminalOrAction(out, PATIENCE_MS);
            out.confirm();
            await("complete", PATIENCE_MS, () -> in.poll() == HandshakeStatus.COMPLETE);
            assertEquals(InetAddress.getByName("::1"), in.remoteAddress().getAddress());
        } catch (io.jmesh.api.NoRouteException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void emptyAndMaximumPayloads() throws IOException {
        try (HandshakeListener listener = agent.listen(List.of(LOOPBACK4))) {
            fullHandshake(agent, listener, new byte[0], new byte[HandshakeAgent.MAX_PAYLOAD]);
            fullHandshake(agent, listener, new byte[HandshakeAgent.MAX_PAYLOAD], new byte[0]);
            assertThrows(IllegalArgumentException.class, () -> agent.connect(listener.handle(),
                    route(listener.handle()), new byte[HandshakeAgent.MAX_PAYLOAD + 1]));
        }
    }

    @Test
    void acceptorRejectsWithAReasonTheConnectorReports() throws IOException {
        try (HandshakeListener listener = agent.listen(List.of(LOOPBACK4))) {
            OutboundHandshake out = agent.connect(listener.handle(), route(listener.handle()), bytes("x"));
            InboundHandshake in = awaitNonNull("inbound", PATIENCE_MS, listener::pollInbound);
            in.reject("MTU 1024 below the minimum 4096; raise the netdev MTU");
            assertEquals(HandshakeStatus.FAILED, in.poll());
            assertEquals(HandshakeStatus.FAILED, awaitTerminalOrAction(out, PATIENCE_MS));
            assertTrue(out.failure().contains("rejected the handshake: MTU 1024 below the minimum"), out.failure());
        }
    }

    @Test
    void connectorAbortTellsTheAcceptor() throws IOException {
        try (HandshakeListener listener = agent.listen(List.of(LOOPBACK4))) {
            OutboundHandshake out = agent.connect(listener.handle(), route(listener.handle()), bytes("x"));
            InboundHandshake in = awaitNonNull("inbound", PATIENCE_MS, listener::pollInbound);
            in.accept(bytes("y"));
            awaitTerminalOrAction(out, PATIENCE_MS);
            out.abort("ibv_modify_qp(RTR) failed: EINVAL");
            assertEquals(HandshakeStatus.FAILED, out.poll());
            await("acceptor sees the abort", PATIENCE_MS, () -> in.poll() == HandshakeStatus.FAILED);
            assertTrue(in.failure().contains("gave up after our reply: ibv_modify_qp(RTR) failed"), in.failure());
        }
    }

    @Test
    void wrongSecretIsRejectedAndNeverReachesTheApplication() throws IOException {
        try (HandshakeListener listener = agent.listen(List.of(LOOPBACK4))) {
            ListenHandle real = listener.handle();
            ListenHandle forged = new ListenHandle(0, real.secret() + 1, real.addresses());
            OutboundHandshake out = agent.connect(forged, route(forged), bytes("x"));
            assertEquals(HandshakeStatus.FAILED, awaitTerminalOrAction(out, PATIENCE_MS));
            assertTrue(out.failure().contains("wrong proof of the secret"), out.failure());
            assertNull(listener.pollInbound());
            assertEquals(1, agent.droppedConnections());
        }
    }

    @Test
    void refusedConnectionFailsWithTheAddress() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            port = s.getLocalPort(); // closed again: nothing listens there now
        }
        ListenHandle nobody = new ListenHandle(0, 1, List.of(new ListenAddress(LOOPBACK4, port, 0)));
        OutboundHandshake out = agent.connect(nobody, route(nobody), bytes("x"));
        assertEquals(HandshakeStatus.FAILED, awaitTerminalOrAction(out, PATIENCE_MS));
        assertTrue(out.failure().contains("cannot connect to 127.0.0.1:" + port), out.failure());
    }

    @Test
    void closedListenerRefusesAndFailsItsPendingHandshakes() throws IOException {
        HandshakeListener listener = agent.listen(List.of(LOOPBACK4));
        OutboundHandshake out = agent.connect(listener.handle(), route(listener.handle()), bytes("x"));
        InboundHandshake in = awaitNonNull("inbound", PATIENCE_MS, listener::pollInbound);
        listener.close();
        await("pending inbound failed", PATIENCE_MS, () -> in.poll() == HandshakeStatus.FAILED);
        assertTrue(in.failure().contains("listener was closed"), in.failure());
        assertEquals(HandshakeStatus.FAILED, awaitTerminalOrAction(out, PATIENCE_MS));
        OutboundHandshake late = agent.connect(listener.handle(), route(listener.handle()), bytes("x"));
        assertEquals(HandshakeStatus.FAILED, awaitTerminalOrAction(late, PATIENCE_MS));
    }

    /**
     * Deadlines follow the agent's clock, here a manual one, so the test decides when time passes: a slow machine
     * cannot expire a handshake early, and the test proves that nothing expires one tick before its deadline.
     */
    @Test
    void unansweredHandshakeTimesOutOnBothSides() throws Exception {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        long deadlineNanos = TimeUnit.MILLISECONDS.toNanos(QUICK_DEADLINE_MS);
        try (HandshakeAgent quick = HandshakeAgent.start(settings(QUICK_DEADLINE_MS, 8), now::get);
             HandshakeListener listener = quick.listen(List.of(LOOPBACK4))) {
            OutboundHandshake out = quick.connect(listener.handle(), route(listener.handle()), bytes("x"));
            InboundHandshake in = awaitNonNull("inbound", PATIENCE_MS, listener::pollInbound);
            // this process never accepts; one nanosecond before the deadline both sides still wait
            now.addAndGet(deadlineNanos - 1);
            assertTrue(quick.awaitFullTurn(PATIENCE_MS), "the agent made no progress");
            assertEquals(HandshakeStatus.IN_PROGRESS, out.poll());
            assertEquals(HandshakeStatus.ACTION_REQUIRED, in.poll()); // waiting for accept() or reject()
            now.incrementAndGet();
            assertEquals(HandshakeStatus.FAILED, awaitTerminalOrAction(out, PATIENCE_MS));
            // both deadlines fall due in the same turn of the agent, and the connector reports its own
            assertTrue(out.failure().contains("timed out after " + QUICK_DEADLINE_MS + " ms waiting for the peer's reply"),
                    out.failure());
            await("inbound failed", PATIENCE_MS, () -> in.poll() == HandshakeStatus.FAILED);
            assertTrue(in.failure().contains("did not accept() it within " + QUICK_DEADLINE_MS + " ms")
                    || in.failure().contains("closed the connection before the handshake completed"), in.failure());
        }
    }

    /**
     * connect() and poll() never wait for the network. The peer here is a bare server socket that completes the TCP
     * connection (the kernel does) and then never says a word; its handshakes can only be IN_PROGRESS until their
     * deadline, which is far beyond this test. A connect() or poll() that waited for the peer's reply would hang or
     * come back FAILED at that deadline; these come back IN_PROGRESS, with the peer provably silent: we read each
     * connector's HELLO off the wire (so each connector is waiting for the reply) and poll again.
     */
    @Test
    void connectAndPollReturnWhileThePeerIsSilent() throws IOException {
        try (ServerSocket silent = new ServerSocket(0, 64, InetAddress.getByName("127.0.0.1"))) {
            silent.setSoTimeout((int) PATIENCE_MS);
            ListenHandle h = new ListenHandle(0, 9, List.of(new ListenAddress(LOOPBACK4, silent.getLocalPort(), 0)));
            List<OutboundHandshake> outs = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                OutboundHandshake out = agent.connect(h, route(h), bytes("x"));
                assertEquals(HandshakeStatus.IN_PROGRESS, out.poll(), out::failure);
                outs.add(out);
            }
            List<Socket> accepted = new ArrayList<>();
            try {
                for (int i = 0; i < outs.size(); i++) {
                    Socket s = silent.accept();
                    accepted.add(s);
                    s.setSoTimeout((int) PATIENCE_MS);
                    byte[] head = s.getInputStream().readNBytes(Frame.HEADER_LENGTH);
                    assertEquals(Frame.HELLO, ByteBuffer.wrap(head).getShort(Frame.TYPE_OFFSET), "a HELLO");
                }
                // every connector has sent its HELLO and waits for a reply that is not coming: poll() still returns
                for (OutboundHandshake out : outs) {
                    assertEquals(HandshakeStatus.IN_PROGRESS, out.poll(), out::failure);
                }
                outs.forEach(OutboundHandshake::close); // close() does not wait for the peer either
                for (OutboundHandshake out : outs) {
                    assertEquals(HandshakeStatus.FAILED, out.poll());
                    assertTrue(out.failure().contains("aborted by this side"), out.failure());
                }
            } finally {
                for (Socket s : accepted) {
                    s.close();
                }
            }
        }
    }

    /**
     * pollInbound() never waits for a connector: with connectors that connected and say nothing (or only part of a
     * header), it returns null while they are silent, yet hands out a real connector as soon as its HELLO is in.
     */
    @Test
    void pollInboundReturnsWhileConnectorsAreSilent() throws IOException {
        try (HandshakeListener listener = agent.listen(List.of(LOOPBACK4))) {
            assertNull(listener.pollInbound(), "nobody connected");
            InetSocketAddress target = listener.handle().addresses().get(0).socketAddress();
            List<Socket> silent = new ArrayList<>();
            try {
                for (int i = 0; i < 20; i++) {
                    Socket s = new Socket();
                    silent.add(s);
                    s.connect(target, (int) PATIENCE_MS);
                    if (i % 2 == 1) { // half of them start a HELLO header and stop before its end
                        s.getOutputStream().write(ByteBuffer.allocate(4).putInt(Frame.MAGIC).array());
                    }
                    assertNull(listener.pollInbound(), "no connector has sent a HELLO");
                }
                OutboundHandshake real = agent.connect(listener.handle(), route(listener.handle()), bytes("real"));
                InboundHandshake in = awaitNonNull("the real connector", PATIENCE_MS, listener::pollInbound);
                assertArrayEquals(bytes("real"), in.peerPayload());
                assertNull(listener.pollInbound(), "the silent ones are still silent");
                assertEquals(HandshakeStatus.IN_PROGRESS, real.poll());
                assertEquals(0, agent.droppedConnections(), "the silent ones are held, not dropped");
                in.reject("test over");
            } finally {
                for (Socket s : silent) {
                    s.close();
                }
            }
        }
    }

    @Test
    void manyConcurrentConnectsAllComplete() throws Exception {
        int n = 48;
        try (HandshakeListener listener = agent.listen(List.of(LOOPBACK4));
             ExecutorService pool = Executors.newFixedThreadPool(8)) {
            List<Future<OutboundHandshake>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                byte[] payload = bytes("connector " + i);
                futures.add(pool.submit(() -> agent.connect(listener.handle(), route(listener.handle()), payload)));
            }
            // The acceptor echoes each payload back, so every connector can check it got its own reply.
            int accepted = 0;
            long end = System.nanoTime() + PATIENCE_MS * 1_000_000; // a hang guard only
            while (accepted < n && System.nanoTime() < end) {
                InboundHandshake in = listener.pollInbound();
                if (in == null) {
                    Thread.sleep(1);
                    continue;
                }
                in.accept(in.peerPayload());
                accepted++;
            }
            assertEquals(n, accepted);
            for (int i = 0; i < n; i++) {
                OutboundHandshake out = futures.get(i).get();
                assertEquals(HandshakeStatus.ACTION_REQUIRED, awaitTerminalOrAction(out, PATIENCE_MS), out::failure);
                assertArrayEquals(bytes("connector " + i), out.peerPayload());
                out.confirm();
            }
            for (Future<OutboundHandshake> f : futures) {
                await("complete", PATIENCE_MS, () -> f.resultNow().poll() == HandshakeStatus.COMPLETE);
            }
            assertEquals(0, agent.droppedConnections());
        }
    }

    @Test
    void listenerOnTwoAddressesHasTwoRoutesAndBothWork() throws Exception {
        HandshakeListener listener;
        try {
            listener = agent.listen(List.of(LOOPBACK4, LOOPBACK6));
        } catch (IOException e) {
            assumeTrue(false, "no IPv6 loopback here: " + e.getMessage());
            return;
        }
        try (listener) {
            List<LocalLink> links = List.of(LocalLink.tcp(LOOPBACK4, 0), LocalLink.tcp(LOOPBACK6, 0));
            List<Route> routes = RouteSelector.select(links, listener.handle());
            assertEquals(2, routes.size());
            for (Route r : routes) {
                OutboundHandshake out = agent.connect(listener.handle(), r, bytes("x"));
                InboundHandshake in = awaitNonNull("inbound", PATIENCE_MS, listener::pollInbound);
                assertEquals(r.peer().port(), in.localAddress().getPort());
                assertEquals(r.local().prefix().address(), in.remoteAddress().getAddress());
                in.accept(bytes("y"));
                awaitTerminalOrAction(out, PATIENCE_MS);
                out.confirm();
                await("complete", PATIENCE_MS, () -> in.poll() == HandshakeStatus.COMPLETE);
            }
        }
    }

    @Test
    void closingTheAgentFailsWhatIsPendingAndLaterCalls() throws IOException {
        HandshakeListener listener = agent.listen(List.of(LOOPBACK4));
        OutboundHandshake out = agent.connect(listener.handle(), route(listener.handle()), bytes("x"));
        InboundHandshake in = awaitNonNull("inbound", PATIENCE_MS, listener::pollInbound);
        agent.close();
        assertEquals(HandshakeStatus.FAILED, in.poll());
        assertEquals(HandshakeStatus.FAILED, out.poll());
        OutboundHandshake late = agent.connect(listener.handle(), route(listener.handle()), bytes("x"));
        assertEquals(HandshakeStatus.FAILED, late.poll());
        assertTrue(late.failure().contains("agent is closed"), late.failure());
        assertThrows(IOException.class, () -> agent.listen(List.of(LOOPBACK4)));
    }
}
