package io.jmesh.transport.rdma;

import io.jmesh.api.Context;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;
import io.jmesh.testbed.TestbedEnv;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.CoreSender;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The mesh {@link RdmaMeshTest} runs on: every guest listens, connects to every peer over the link they share, and
 * learns which receiver is whose from a first message naming its sender; then the buffers, the waits and the
 * checksummed content its tests share. Static, as JUnit's {@code @BeforeAll} state is: one mesh per test class, so
 * every guest runs that class's methods in the same order over the same connections.
 */
final class RdmaMeshFixture {
    static final Duration TIMEOUT = Duration.ofSeconds(300);
    static final long BUF = (64L << 20) + 4096;
    static RdmaProvider provider;
    static RdmaListener listener;
    static final Map<String, CoreSender> senders = new HashMap<>();
    static final Map<String, CoreReceiver> receivers = new HashMap<>();
    static final Map<String, String> routes = new HashMap<>();
    static Arena arena;
    static MemorySegment sendBuf;
    static MemorySegment recvBuf;
    static Registration sendReg;
    static Registration recvReg;

    private RdmaMeshFixture() {
    }

    static void connectToEveryPeer() throws Exception {
        TestbedEnv.require();
        String me = TestbedEnv.name();
        List<String> peers = TestbedEnv.peers();
        Context context = new Context();
        long crowding = RdmaTestbedSupport.crowding();
        if (crowding > 1) { // more guests than the host has cores for: the usual 10 s ran out on mesh:5
            context.handshakeTimeoutMs(30_000 * crowding);
        }
        provider = RdmaProvider.open(context);
        listener = provider.listen();
        TestbedEnv.publish("handle-" + me, HexFormat.of().formatHex(listener.handle()));
        arena = Arena.ofShared();
        sendBuf = arena.allocate(BUF, 4096);
        recvBuf = arena.allocate(BUF * Math.max(1, peers.size()), 4096);
        sendReg = provider.register(sendBuf);
        recvReg = provider.register(recvBuf);

        Map<String, RdmaConnect> connecting = new HashMap<>();
        for (String peer : peers) {
            ListenHandle h = ListenHandle.decode(HexFormat.of().parseHex(TestbedEnv.await("handle-" + peer, TIMEOUT)
                    .trim()));
            RdmaConnect c = provider.connect(h);
            connecting.put(peer, c);
            routes.put(peer, c.route());
        }
        List<CoreReceiver> anonymous = new ArrayList<>();
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (senders.size() < peers.size() || anonymous.size() < peers.size()) {
            for (var e : connecting.entrySet()) {
                if (!senders.containsKey(e.getKey())) {
                    CoreSender s = e.getValue().poll();
                    if (s != null) {
                        senders.put(e.getKey(), s);
                    }
                }
            }
            CoreReceiver r = listener.accept();
            if (r != null) {
                anonymous.add(r);
            }
            if (System.nanoTime() > deadline) {
                fail("connections not complete after " + TIMEOUT.toSeconds() + " s: senders " + senders.keySet()
                        + ", receivers " + anonymous.size());
            }
            Thread.onSpinWait();
        }
        // the first message on each connection names its sender, so each receiver learns its peer
        int[] requests = new int[anonymous.size()];
        for (int i = 0; i < anonymous.size(); i++) {
            requests[i] = anonymous.get(i).irecv(1, new Registration[] {recvReg}, new long[] {64L * i},
                    new long[] {64}, new int[] {0});
            assertTrue(requests[i] >= 0, "irecv: " + Status.describe(requests[i]));
        }
        byte[] myName = me.getBytes();
        MemorySegment.copy(myName, 0, sendBuf, JAVA_BYTE, 0, myName.length);
        for (CoreSender s : senders.values()) {
            int req = awaitRequest(() -> s.isend(sendReg, 0, myName.length, 0), s);
            awaitDone(() -> s.test(req), s);
        }
        for (int i = 0; i < anonymous.size(); i++) {
            CoreReceiver r = anonymous.get(i);
            int req = requests[i];
            awaitDone(() -> r.test(req), r);
            receivers.put(new String(recvBuf.asSlice(64L * i, r.size(req, 0)).toArray(JAVA_BYTE)), r);
        }
        assertEquals(senders.keySet(), receivers.keySet());
        System.out.println(me + " connected: " + routes);
    }

    static void closeInOrder() {
        senders.values().forEach(Sender::close);
        receivers.values().forEach(Receiver::close);
        for (Registration r : new Registration[] {sendReg, recvReg}) {
            if (r != null) {
                r.close();
            }
        }
        if (listener != null) {
            listener.close();
        }
        if (provider != null) {
            provider.close();
        }
        if (arena != null) {
            arena.close();
        }
    }

    interface Call {
        int call();
    }

    static int awaitRequest(Call c, Object conn) {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (true) {
            int r = c.call();
            if (r >= 0) {
                return r;
            }
            if (r != Status.NOT_READY) {
                fail(Status.describe(r) + ": " + error(conn));
            }
            if (System.nanoTime() > deadline) {
                fail("no clear-to-send within " + TIMEOUT.toSeconds() + " s");
            }
            Thread.onSpinWait();
        }
    }

    static void awaitDone(Call test, Object conn) {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        int r;
        while ((r = test.call()) == 0) {
            if (System.nanoTime() > deadline) {
                fail("request not complete within " + TIMEOUT.toSeconds() + " s");
            }
            Thread.onSpinWait();
        }
        if (r != 1) {
            fail(Status.describe(r) + ": " + error(conn));
        }
    }

    static String error(Object conn) {
        return conn instanceof Sender s ? s.error() : ((Receiver) conn).error();
    }

    /** Deterministic content for message k from sender s, so the receiver can check every byte by checksum. */
    static long fill(MemorySegment seg, long length, String sender, int k) {
        SplittableRandom rnd = new SplittableRandom(sender.hashCode() * 1_000_003L + k);
        for (long i = 0; i + 4 <= length; i += 4) {
            seg.set(JAVA_INT_UNALIGNED, i, rnd.nextInt());
        }
        for (long i = length & ~3L; i < length; i++) {
            seg.set(JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        return crc(seg, length);
    }

    static long crc(MemorySegment seg, long length) {
        CRC32C crc = new CRC32C();
        crc.update(seg.asSlice(0, length).asByteBuffer());
        return crc.getValue();
    }
}
