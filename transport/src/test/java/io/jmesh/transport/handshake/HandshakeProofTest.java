package io.jmesh.transport.handshake;

import static io.jmesh.transport.handshake.TestSupport.LOOPBACK4;
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
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Handshake version 2's challenge: a captured handshake cannot be replayed, held sockets cannot lock a legit connector
 * out, each side proves the secret to the other, and a relay passes the proofs through without the secret.
 */
@Timeout(120)
class HandshakeProofTest {
    private static final int CAP = 8;
    /** The attackers' source address: not the legit connector's (127.0.0.1), as on a link the attacker has its own. */
    private static final InetAddress ATTACKER = address("127.0.0.2");

    private HandshakeAgent agent;
    private HandshakeListener listener;
    private InetSocketAddress target;
    private final List<Socket> held = new ArrayList<>();

    private static InetAddress address(String a) {
        try {
            return InetAddress.getByName(a);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private void start() throws IOException {
        agent = HandshakeAgent.start(settings(NO_DEADLINE_MS, CAP));
        listener = agent.listen(List.of(LOOPBACK4));
        target = listener.handle().addresses().get(0).socketAddress();
    }

    @AfterEach
    void stop() throws IOException {
        for (Socket s : held) {
            s.close();
        }
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

    /** A legit raw connector that completes, while the test records its HELLO and PROOF as an eavesdropper would. */
    private RawClient.Captured captureOneHandshake() throws IOException {
        try (Socket s = raw()) {
            RawClient.Captured c = RawClient.authenticate(s, listener.handle().secretBytes(), "qp".getBytes());
            InboundHandshake in = awaitNonNull("the legit inbound", PATIENCE_MS, listener::pollInbound);
            assertTrue(in.accept("reply".getBytes()));
            RawClient.In accept = RawClient.read(s);
            assertEquals(Frame.ACCEPT, accept.type());
            RawClient.write(s, RawClient.bytes(Frame.ready()));
            await("the legit inbound completes", PATIENCE_MS, () -> in.poll() == HandshakeStatus.COMPLETE);
            return c;
        }
    }

    @Test
    void aReplayedHandshakeGetsAFreshChallengeAndIsRefused() throws IOException {
        start();
        RawClient.Captured captured = captureOneHandshake();
        byte[] capturedChallenge = null;
        for (int i = 0; i < 50; i++) {
            try (Socket s = raw()) {
                RawClient.write(s, captured.hello());
                byte[] challenge = RawClient.readChallenge(s);
                assertFalse(capturedChallenge != null && Arrays.equals(challenge, capturedChallenge),
                        "a challenge repeated");
                capturedChallenge = challenge;
                RawClient.write(s, captured.proof());
                RawClient.In reply = RawClient.read(s);
                assertEquals(Frame.REJECT, reply.type(), "a replayed PROOF got " + Frame.typeName(reply.type()));
                String why = Frame.reason(ByteBuffer.wrap(reply.body()));
                assertTrue(why.contains("wrong proof of the secret") && why.contains("replayed"), why);
            }
        }
        assertNull(listener.pollInbound(), "no replay reached the application");
        await("50 drops counted", PATIENCE_MS, () -> agent.droppedConnections() == 50);
    }

    /**
     * The attack that locked peers out with version 1: attackers on another address keep opening sockets that replay
     * a captured HELLO and then hold, as fast as four threads can, while a legit peer connects again and again. A
     * held socket never proves the secret, so a newcomer evicts one (of the address that holds the most); every legit
     * connect completes. Each attacker keeps its latest sockets open (the older ones were evicted anyway).
     */
    @Test
    void replayAndHoldCannotLockOutALegitPeer() throws Exception {
        start();
        RawClient.Captured captured = captureOneHandshake();
        long droppedBefore = agent.droppedConnections();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger replays = new AtomicInteger();
        List<Thread> attackers = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            attackers.add(Thread.ofPlatform().daemon().start(() -> {
                ArrayDeque<Socket> mine = new ArrayDeque<>();
                try {
                    while (!stop.get()) {
                        try {
                            Socket s = new Socket();
                            mine.add(s);
                            s.bind(new InetSocketAddress(ATTACKER, 0));
                            s.connect(target, (int) PATIENCE_MS);
                            RawClient.write(s, captured.hello());
                            replays.incrementAndGet();
                        } catch (IOException evictedOrRefused) {
                            // the listener dropped one of ours: go on
                        }
                        while (mine.size() > 2 * CAP) {
                            mine.poll().close();
                        }
                    }
                } catch (IOException ignored) {
                    // closing
                } finally {
                    mine.forEach(HandshakeProofTest::closeQuietly);
                }
            }));
        }
        try {
            await("the attackers fill the listener", PATIENCE_MS, () -> replays.get() >= 4 * CAP);
            for (int i = 0; i < 10; i++) {
                fullHandshake(agent, listener, ("legit " + i).getBytes(), "reply".getBytes());
            }
        } finally {
            stop.set(true);
            for (Thread t : attackers) {
                t.join(PATIENCE_MS);
            }
        }
        assertTrue(replays.get() >= 4 * CAP, replays.get() + " replays");
        assertTrue(agent.droppedConnections() - droppedBefore >= CAP, "the attackers' sockets were evicted");
        assertNull(listener.pollInbound(), "no replay reached the application");
    }

    /**
     * A legit peer is unproven for one round trip, longer on a slow or relayed path. Here it holds between CHALLENGE
     * and PROOF while an attacker replays twice the listener's limit (each replay confirmed by its CHALLENGE): the
     * evictions fall on the attacker's address, which holds the most unproven sockets, and the legit PROOF still
     * gets in.
     */
    @Test
    void aFloodFromOneAddressEvictsItsOwnSocketsNotASlowLegitPeers() throws IOException {
        start();
        RawClient.Captured captured = captureOneHandshake();
        try (Socket legit = raw()) {
            byte[] nonce = RawClient.nonce();
            RawClient.write(legit, RawClient.bytes(Frame.hello(nonce, 0, "slow qp".getBytes())));
            byte[] challenge = RawClient.readChallenge(legit);
            for (int i = 0; i < 2 * CAP; i++) {
                Socket s = new Socket();
                held.add(s);
                s.bind(new InetSocketAddress(ATTACKER, 0));
                s.connect(target, (int) PATIENCE_MS);
                s.setSoTimeout((int) PATIENCE_MS);
                RawClient.write(s, captured.hello());
                RawClient.readChallenge(s);
            }
            RawClient.write(legit, RawClient.bytes(Frame.proof(HandshakeMac.proof(listener.handle().secretBytes(),
                    challenge, nonce))));
            InboundHandshake in = awaitNonNull("the slow legit peer's inbound", PATIENCE_MS, listener::pollInbound);
            assertArrayEquals("slow qp".getBytes(), in.peerPayload());
            assertTrue(agent.lastDropReason().contains("had not proven the secret yet"), agent.lastDropReason());
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // the test is ending
        }
    }

    /**
     * Peers that prove the secret, are accepted, and then never confirm (a buggy or hostile holder of the handle)
     * fill the listener; a newcomer evicts the oldest of them and completes.
     */
    @Test
    void authenticatedButIdleConnectorsAreEvictedForANewcomer() throws IOException {
        start();
        List<InboundHandshake> idle = new ArrayList<>();
        for (int i = 0; i < CAP; i++) {
            Socket s = raw();
            held.add(s);
            RawClient.authenticate(s, listener.handle().secretBytes(), "idle".getBytes());
            InboundHandshake in = awaitNonNull("an idle inbound", PATIENCE_MS, listener::pollInbound);
            assertTrue(in.accept("reply".getBytes()));
            assertEquals(Frame.ACCEPT, RawClient.read(s).type()); // it has our reply and sits on it
            idle.add(in);
        }
        fullHandshake(agent, listener, "legit".getBytes(), "reply".getBytes());
        await("the oldest idle one evicted", PATIENCE_MS, () -> idle.getFirst().poll() == HandshakeStatus.FAILED);
        assertTrue(idle.getFirst().failure().contains("had not confirmed our ACCEPT"), idle.getFirst().failure());
        RawClient.In told = RawClient.read(held.getFirst()); // the evicted connector is told why
        assertEquals(Frame.REJECT, told.type());
        String why = Frame.reason(ByteBuffer.wrap(told.body()));
        assertTrue(why.startsWith("evicted: the listener holds its limit of " + CAP), why);
        for (InboundHandshake in : idle.subList(1, CAP)) {
            assertEquals(HandshakeStatus.IN_PROGRESS, in.poll(), "only the oldest is evicted");
        }
    }

    /**
     * When every slot holds a connector that proved the secret and waits for this process to accept it, a newcomer
     * is refused, and told why.
     */
    @Test
    void aListenerFullOfUnacceptedConnectorsTellsTheNewcomerWhy() throws IOException {
        start();
        for (int i = 0; i < CAP; i++) {
            Socket s = raw();
            held.add(s);
            RawClient.authenticate(s, listener.handle().secretBytes(), "waiting".getBytes());
        }
        await("all " + CAP + " proven", PATIENCE_MS, () -> countInbound() == CAP);
        OutboundHandshake late = agent.connect(listener.handle(), route(listener.handle()), "late".getBytes());
        assertEquals(HandshakeStatus.FAILED, awaitTerminalOrAction(late, PATIENCE_MS));
        assertTrue(late.failure().contains("rejected the handshake: the listener already holds its limit of " + CAP
                + " connectors that proved the secret and wait for this process to accept() them"), late.failure());
    }

    private final List<InboundHandshake> inbound = new ArrayList<>();

    private int countInbound() {
        InboundHandshake h;
        while ((h = listener.pollInbound()) != null) {
            inbound.add(h);
        }
        return inbound.size();
    }

    /** A listener that does not know the secret (a stale handle's address, reused) cannot fake its ACCEPT. */
    @Test
    void anAcceptWithoutTheListenersProofFailsTheConnector() throws Exception {
        start();
        try (ServerSocket fake = new ServerSocket(0, 4, InetAddress.getByName("127.0.0.1"))) {
            fake.setSoTimeout((int) PATIENCE_MS);
            ListenHandle h = new ListenHandle(0, 5, List.of(new ListenAddress(LOOPBACK4, fake.getLocalPort(), 0)));
            OutboundHandshake out = agent.connect(h, route(h), "x".getBytes());
            try (Socket s = fake.accept()) {
                s.setSoTimeout((int) PATIENCE_MS);
                assertEquals(Frame.HELLO, RawClient.read(s).type());
                RawClient.write(s, RawClient.bytes(Frame.challenge(RawClient.nonce())));
                assertEquals(Frame.PROOF, RawClient.read(s).type());
                RawClient.write(s, RawClient.bytes(Frame.accept(7, new byte[Frame.MAC_LENGTH], 0, "qp".getBytes())));
                assertEquals(HandshakeStatus.FAILED, awaitTerminalOrAction(out, PATIENCE_MS));
                assertTrue(out.failure().contains("without proof that it knows the listener's secret"),
                        out.failure());
                RawClient.In told = RawClient.read(s);
                assertEquals(Frame.REJECT, told.type());
            }
        }
    }

    /**
     * What the verbs relay does: it handshakes with the listener on a connector's behalf, passing the challenge to
     * the connector (here the test, which holds the secret), the connector's proof back, and the listener's proof on.
     */
    @Test
    void onBehalfOfAConnectorTheProofsPassThroughAndAreChecked() throws IOException {
        start();
        byte[] secret = listener.handle().secretBytes();
        byte[] nonce = RawClient.nonce();
        OutboundHandshake relayed = agent.connectOnBehalf(route(listener.handle()), nonce, "relay qp".getBytes());
        byte[] challenge = awaitNonNull("the challenge", PATIENCE_MS, relayed::challenge);
        assertEquals(HandshakeStatus.IN_PROGRESS, relayed.poll());
        assertNull(listener.pollInbound(), "nothing reaches the application before the proof");
        assertTrue(relayed.prove(HandshakeMac.proof(secret, challenge, nonce)));
        InboundHandshake in = awaitNonNull("inbound", PATIENCE_MS, listener::pollInbound);
        assertArrayEquals("relay qp".getBytes(), in.peerPayload());
        assertTrue(in.accept("listener qp".getBytes()));
        assertEquals(HandshakeStatus.ACTION_REQUIRED, awaitTerminalOrAction(relayed, PATIENCE_MS));
        assertArrayEquals(HandshakeMac.acceptProof(secret, nonce, challenge), relayed.acceptorProof(),
                "the listener's proof, for the connector to check");
        assertTrue(relayed.confirm());
        await("complete", PATIENCE_MS, () -> in.poll() == HandshakeStatus.COMPLETE);

        OutboundHandshake forged = agent.connectOnBehalf(route(listener.handle()), nonce, "relay qp".getBytes());
        byte[] c2 = awaitNonNull("the second challenge", PATIENCE_MS, forged::challenge);
        assertFalse(Arrays.equals(challenge, c2), "a fresh challenge per socket");
        assertTrue(forged.prove(HandshakeMac.proof(secret, challenge, nonce))); // the first socket's proof
        assertEquals(HandshakeStatus.FAILED, awaitTerminalOrAction(forged, PATIENCE_MS));
        assertTrue(forged.failure().contains("wrong proof of the secret"), forged.failure());
        assertNull(listener.pollInbound());
    }
}
