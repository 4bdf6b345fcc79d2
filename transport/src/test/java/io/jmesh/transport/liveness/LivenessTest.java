package io.jmesh.transport.liveness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.jmesh.transport.core.Fate;
import io.jmesh.api.IpPrefix;
import java.io.IOException;
import java.net.DatagramPacket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The liveness thread on loopback: a peer that answers keeps its connection however long nobody polls, a silent or
 * closed one fails it (never before the timeout), and nothing a stranger sends keeps a silent peer alive or disturbs
 * the thread. No test asserts how fast anything is; the bounds below are hang guards and lower bounds.
 */
@Timeout(60)
class LivenessTest {
    private static final InetAddress LO = address("127.0.0.1");
    private static final List<IpPrefix> LINK = List.of(IpPrefix.parse("127.0.0.1/8"));
    private static final Duration TIMEOUT = Duration.ofMillis(1_500);
    private static final long PATIENCE_MS = 20_000;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
    }

    private static InetAddress address(String a) {
        try {
            return InetAddress.getByName(a);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private Liveness start(List<IpPrefix> links) throws IOException {
        Liveness l = Liveness.start(links, TIMEOUT);
        open.add(l);
        return l;
    }

    private DatagramChannel raw() throws IOException {
        DatagramChannel ch = DatagramChannel.open().bind(new InetSocketAddress(LO, 0));
        open.add(ch);
        return ch;
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(PATIENCE_MS);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                fail("not within " + PATIENCE_MS + " ms: " + what);
            }
            Thread.sleep(5);
        }
    }

    /** The next datagram within {@code ms}, or null. */
    private static ByteBuffer receive(DatagramChannel ch, int ms) throws IOException {
        DatagramPacket p = new DatagramPacket(new byte[64], 64);
        ch.socket().setSoTimeout(ms);
        try {
            ch.socket().receive(p);
        } catch (SocketTimeoutException e) {
            return null;
        }
        return ByteBuffer.wrap(p.getData(), 0, p.getLength()).slice();
    }

    private static ByteBuffer datagram(int type, int role, long id, long seq) {
        ByteBuffer b = ByteBuffer.allocate(LivenessDatagram.LENGTH);
        b.putInt(LivenessDatagram.MAGIC).put((byte) LivenessDatagram.VERSION).put((byte) type).put((byte) role).put((byte) 0)
                .putLong(id).putLong(seq);
        return b.flip();
    }

    @Test
    void aPeerThatAnswersKeepsTheConnectionAlthoughNobodyPolls() throws Exception {
        Liveness a = start(LINK);
        Liveness b = start(LINK);
        Fate fate = new Fate();
        a.watch(1, true, LO, b.port(LO), LO, fate);
        Thread.sleep(3 * TIMEOUT.toMillis()); // b's thread answers for a process that does nothing else
        assertFalse(fate.failed(), fate.error());
    }

    @Test
    void aPeerThatStopsAnsweringFailsTheConnectionNotBeforeTheTimeout() throws Exception {
        Liveness a = start(LINK);
        DatagramChannel frozen = raw(); // a peer whose process no longer runs: its socket is there, nobody reads
        Fate fate = new Fate();
        long start = System.nanoTime();
        a.watch(7, true, LO, ((InetSocketAddress) frozen.getLocalAddress()).getPort(), LO, fate);
        await("the connection fails", fate::failed);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(ms >= TIMEOUT.toMillis(), "failed after " + ms + " ms, before the timeout");
        assertTrue(fate.error().startsWith("the peer stopped answering: no sign of life from the process at "
                + "127.0.0.1 for "), fate.error());
        assertTrue(fate.error().contains("JMESH_LIVENESS_TIMEOUT_MS"), fate.error());
        // and it was asked: pings reached the frozen peer's socket
        ByteBuffer got = receive(frozen, (int) PATIENCE_MS);
        assertEquals(LivenessDatagram.LENGTH, got.remaining());
        assertEquals(LivenessDatagram.PING, got.get(LivenessDatagram.TYPE_OFFSET));
        assertEquals(7, got.getLong(LivenessDatagram.ID_OFFSET));
    }

    @Test
    void aClosedPeerFailsTheConnection() throws Exception {
        Liveness a = start(LINK);
        Liveness b = start(LINK);
        Fate fate = new Fate();
        a.watch(3, false, LO, b.port(LO), LO, fate);
        Thread.sleep(TIMEOUT.toMillis() / 2);
        b.close();
        await("the connection fails", fate::failed);
        assertTrue(fate.error().startsWith("the peer stopped answering"), fate.error());
    }

    @Test
    void aConnectionThatEndsIsNoLongerPinged() throws Exception {
        Liveness a = start(LINK);
        DatagramChannel peer = raw();
        Fate fate = new Fate();
        a.watch(5, true, LO, ((InetSocketAddress) peer.getLocalAddress()).getPort(), LO, fate);
        assertTrue(receive(peer, (int) PATIENCE_MS) != null, "the first ping");
        fate.fail("ended by the test");
        // a ping already sent may still land; after that, six intervals pass without one
        while (receive(peer, (int) TIMEOUT.toMillis() / Liveness.PINGS_PER_TIMEOUT * 2) != null) {
            // drain
        }
        assertEquals(null, receive(peer, (int) TIMEOUT.toMillis()), "pinged after it ended");
    }

    @Test
    void pongsFromAnotherPortOrForAnotherConnectionDoNotKeepASilentPeerAlive() throws Exception {
        Liveness a = start(LINK);
        DatagramChannel frozen = raw();
        DatagramChannel spoofer = raw();
        Fate fate = new Fate();
        a.watch(9, true, LO, ((InetSocketAddress) frozen.getLocalAddress()).getPort(), LO, fate);
        InetSocketAddress target = new InetSocketAddress(LO, a.port(LO));
        long seq = 0;
        while (!fate.failed()) {
            spoofer.send(datagram(LivenessDatagram.PONG, LivenessDatagram.ROLE_CONNECTOR, 9, ++seq), target);  // wrong port
            frozen.send(datagram(LivenessDatagram.PONG, LivenessDatagram.ROLE_ACCEPTOR, 9, ++seq), target);   // wrong role
            frozen.send(datagram(LivenessDatagram.PONG, LivenessDatagram.ROLE_CONNECTOR, 10, ++seq), target); // wrong id
            Thread.sleep(50);
            if (seq > 3 * PATIENCE_MS / 50) {
                fail("a silent peer was kept alive by pongs that were not its own");
            }
        }
        assertTrue(fate.error().startsWith("the peer stopped answering"), fate.error());
    }

    @Test
    void garbageIsDroppedAndTheThreadKeepsAnswering() throws Exception {
        Liveness a = start(LINK);
        Liveness b = start(LINK);
        DatagramChannel stranger = raw();
        InetSocketAddress bAddress = new InetSocketAddress(LO, b.port(LO));
        stranger.send(ByteBuffer.wrap(new byte[] {1, 2, 3}), bAddress);
        ByteBuffer wrongMagic = datagram(LivenessDatagram.PING, LivenessDatagram.ROLE_CONNECTOR, 1, 1);
        wrongMagic.putInt(0, 0x12345678);
        stranger.send(wrongMagic, bAddress);
        ByteBuffer wrongType = datagram(9, LivenessDatagram.ROLE_CONNECTOR, 1, 1);
        stranger.send(wrongType, bAddress);
        stranger.send(ByteBuffer.allocate(1400), bAddress);
        await("four drops counted", () -> b.dropped() == 4);
        // a stranger's well-formed PING is answered with a PONG of the same size, and nothing else
        stranger.send(datagram(LivenessDatagram.PING, LivenessDatagram.ROLE_ACCEPTOR, 42, 17), bAddress);
        ByteBuffer got = receive(stranger, (int) PATIENCE_MS);
        assertEquals(LivenessDatagram.LENGTH, got.remaining());
        assertEquals(LivenessDatagram.PONG, got.get(LivenessDatagram.TYPE_OFFSET));
        assertEquals(42, got.getLong(LivenessDatagram.ID_OFFSET));
        assertEquals(17, got.getLong(LivenessDatagram.SEQUENCE_OFFSET));
        Fate fate = new Fate();
        a.watch(2, true, LO, b.port(LO), LO, fate);
        Thread.sleep(2 * TIMEOUT.toMillis());
        assertFalse(fate.failed(), fate.error());
    }

    @Test
    void pingsFromOutsideTheLinkAreNotAnswered() throws Exception {
        Liveness b = start(List.of(IpPrefix.parse("127.0.0.1/32")));
        DatagramChannel outsider = DatagramChannel.open().bind(new InetSocketAddress(address("127.0.0.2"), 0));
        open.add(outsider);
        outsider.send(datagram(LivenessDatagram.PING, LivenessDatagram.ROLE_CONNECTOR, 1, 1), new InetSocketAddress(LO, b.port(LO)));
        await("the outsider's ping dropped", () -> b.dropped() == 1);
        assertEquals(null, receive(outsider, 300), "an address outside the link got an answer");
    }

    @Test
    void offMeansNoThreadNoPortAndNoWatch() throws Exception {
        Liveness off = Liveness.start(LINK, Duration.ZERO);
        open.add(off);
        assertEquals(0, off.port(LO));
        Fate fate = new Fate();
        off.watch(1, true, LO, 9, LO, fate); // nothing answers on port 9: a watch would fail it
        Thread.sleep(TIMEOUT.toMillis());
        assertFalse(fate.failed(), fate.error());
    }

    /** An end, a relay and an end on loopback: the ends watch the relay, the relay both ends (its legs). */
    private Fate[] relayedLine(Liveness connector, Liveness relay, Liveness acceptor) {
        Fate[] fates = {new Fate(), new Fate()};
        connector.watch(11, true, LO, relay.port(LO), LO, fates[0], "127.0.0.99");
        relay.relay(11, new InetSocketAddress(LO, connector.port(LO)), LO, 11,
                new InetSocketAddress(LO, acceptor.port(LO)), LO, "test line");
        acceptor.watch(11, false, LO, relay.port(LO), LO, fates[1]);
        return fates;
    }

    @Test
    void aRelayedConnectionLivesAndTheAcceptingEndLearnsItsNeighbourRelays() throws Exception {
        Liveness a = start(LINK);
        Liveness b = start(LINK);
        Liveness c = start(LINK);
        Fate[] f = relayedLine(a, b, c);
        Thread.sleep(3 * TIMEOUT.toMillis());
        assertFalse(f[0].failed(), f[0].error());
        assertFalse(f[1].failed(), f[1].error());
        b.close(); // the relay stops: both ends name it
        await("both ends fail", () -> f[0].failed() && f[1].failed());
        assertTrue(f[0].error().startsWith("the relay 127.0.0.1 stopped answering; the connection to 127.0.0.99 "
                + "through it is lost"), f[0].error());
        assertTrue(f[1].error().startsWith("the relay 127.0.0.1 stopped answering; the connection from the peer "
                + "behind it is lost"), f[1].error());
    }

    @Test
    void aRelayTellsOneEndThatTheOtherStopped() throws Exception {
        Liveness a = start(LINK);
        Liveness b = start(LINK);
        Liveness c = start(LINK);
        Fate[] f = relayedLine(a, b, c);
        Thread.sleep(TIMEOUT.toMillis());
        c.close(); // the far end's process stops; the relay is alive and answers a
        await("the connector learns it", f[0]::failed);
        assertTrue(f[0].error().contains("through the relay 127.0.0.1 is lost: the relay reports that a process "
                + "beyond it stopped answering"), f[0].error());
    }

    @Test
    void aRelayTellsOneEndThatTheOtherClosed() throws Exception {
        Liveness a = start(LINK);
        Liveness b = start(LINK);
        Liveness c = start(LINK);
        Fate[] f = relayedLine(a, b, c);
        Thread.sleep(TIMEOUT.toMillis()); // the legs see both ends have the connection
        f[1].fail("closed by the test"); // the accepting end no longer watches: it answers without KNOWN
        await("the connector learns it", f[0]::failed);
        assertTrue(f[0].error().contains("the other side no longer has it"), f[0].error());
    }
    /**
     * An end whose data path carries the peer's close through the relays (TCP) is not failed by the relay's report
     * that the other side closed (it would race the goodbye), yet the relay's silence still fails it.
     */
    @Test
    void aRelaysClosedReportLeavesAnInBandEndToItsDataPathButItsSilenceStillFailsIt() throws Exception {
        Liveness a = start(LINK);
        Liveness b = start(LINK);
        Liveness c = start(LINK);
        Fate inBand = new Fate() {
            @Override
            public boolean closeArrivesInBand() {
                return true;
            }
        };
        Fate closing = new Fate();
        a.watch(12, true, LO, b.port(LO), LO, inBand, "127.0.0.99");
        b.relay(12, new InetSocketAddress(LO, a.port(LO)), LO, 12, new InetSocketAddress(LO, c.port(LO)), LO, "line");
        c.watch(12, false, LO, b.port(LO), LO, closing);
        Thread.sleep(TIMEOUT.toMillis()); // the legs see both ends have the connection
        closing.fail("closed by the test"); // the accepting end no longer watches: it answers without KNOWN
        Thread.sleep(3 * TIMEOUT.toMillis()); // the relay's LOST comes with every ping meanwhile
        assertFalse(inBand.failed(), inBand.error());
        b.close();
        await("the relay's silence fails it", inBand::failed);
        assertTrue(inBand.error().startsWith("the relay 127.0.0.1 stopped answering"), inBand.error());
    }

    /**
     * A receiving end (the acceptor) whose sender closed gets the sender's goodbye through the relays on both
     * providers, so the relay's report that the other side closed leaves it alone too, a plain (verbs) end included;
     * the relay's silence still fails it.
     */
    @Test
    void aRelaysClosedReportLeavesAReceivingEndToItsDataPathButItsSilenceStillFailsIt() throws Exception {
        Liveness a = start(LINK);
        Liveness b = start(LINK);
        Liveness c = start(LINK);
        Fate receiving = new Fate();
        Fate closing = new Fate();
        c.watch(13, true, LO, b.port(LO), LO, closing, "127.0.0.98");
        b.relay(13, new InetSocketAddress(LO, c.port(LO)), LO, 13, new InetSocketAddress(LO, a.port(LO)), LO, "line");
        a.watch(13, false, LO, b.port(LO), LO, receiving);
        Thread.sleep(TIMEOUT.toMillis()); // the legs see both ends have the connection
        closing.fail("closed by the test"); // the connecting end no longer watches: it answers without KNOWN
        Thread.sleep(3 * TIMEOUT.toMillis()); // the relay's LOST comes with every ping meanwhile
        assertFalse(receiving.failed(), receiving.error());
        b.close();
        await("the relay's silence fails it", receiving::failed);
        assertTrue(receiving.error().startsWith("the relay 127.0.0.1 stopped answering"), receiving.error());
    }
}
