package io.jmesh.transport.rdma;

import io.jmesh.transport.config.JmeshConfig;
import io.jmesh.transport.net.ListenHandle;
import io.jmesh.transport.testbed.TestbedEnv;
import io.jmesh.transport.verbs.MemoryRegion;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

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
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The verbs transport end to end inside the Soft-RoCE testbed. Every guest listens and connects to every peer over
 * the link they share; then each sends to each: every size class from 0 B to 64 MiB including odd sizes, with
 * checksums, 32 messages in flight, grouped receives matched by tag.
 */
@Tag("rdma")
class RdmaMeshTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(240);
    private static RdmaProvider provider;
    private static RdmaListener listener;
    private static final Map<String, RdmaSender> senders = new HashMap<>();
    private static final Map<String, RdmaReceiver> receivers = new HashMap<>();
    private static final Map<String, MemoryRegion> regions = new HashMap<>();
    private static Arena arena;
    private static MemorySegment sendBuf;
    private static MemorySegment recvBuf;
    private static final long BUF = (64L << 20) + 4096;

    @BeforeAll
    static void connectToEveryPeer() throws Exception {
        TestbedEnv.require();
        String me = TestbedEnv.name();
        provider = RdmaProvider.open(JmeshConfig.fromEnvironment());
        listener = provider.listen();
        TestbedEnv.publish("handle-" + me, HexFormat.of().formatHex(listener.handle().encode()));
        arena = Arena.ofShared();
        sendBuf = arena.allocate(BUF, 4096);
        recvBuf = arena.allocate(BUF * Math.max(1, TestbedEnv.peers().size()), 4096);

        Map<String, RdmaConnect> connecting = new HashMap<>();
        for (String peer : TestbedEnv.peers()) {
            ListenHandle h = ListenHandle.decode(HexFormat.of().parseHex(TestbedEnv.await("handle-" + peer, TIMEOUT)
                    .trim()));
            connecting.put(peer, provider.connect(h));
        }
        // the first message on each connection names its sender, so each receiver learns its peer
        List<RdmaReceiver> anonymous = new ArrayList<>();
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (senders.size() < connecting.size() || anonymous.size() < connecting.size()) {
            for (var e : connecting.entrySet()) {
                if (!senders.containsKey(e.getKey())) {
                    RdmaSender s = e.getValue().poll();
                    if (s != null) {
                        senders.put(e.getKey(), s);
                    }
                }
            }
            RdmaReceiver r = listener.accept();
            if (r != null) {
                anonymous.add(r);
            }
            if (System.nanoTime() > deadline) {
                fail("connections not complete after " + TIMEOUT.toSeconds() + " s: senders " + senders.keySet()
                        + ", receivers " + anonymous.size());
            }
            Thread.onSpinWait();
        }
        for (String d : List.of(senders.values().stream().map(RdmaSender::device).distinct().toArray(String[]::new))) {
            regions.computeIfAbsent(d, dev -> provider.register(dev, sendBuf));
        }
        // name exchange: each receiver posts a 64-byte buffer in the receive region, each sender sends its name
        long[] addrs = new long[1];
        long[] sizes = {64};
        int[] rkeys = new int[1];
        int[] tags = {0};
        MemorySegment names = arena.allocate(64L * anonymous.size(), 64);
        int[] requests = new int[anonymous.size()];
        for (int i = 0; i < anonymous.size(); i++) {
            RdmaReceiver r = anonymous.get(i);
            MemoryRegion mr = regions.computeIfAbsent("names-" + r.device() + i,
                    k -> provider.register(r.device(), names));
            addrs[0] = names.address() + 64L * i;
            rkeys[0] = mr.rkey();
            requests[i] = r.irecv(1, addrs, sizes, rkeys, tags);
            assertTrue(requests[i] >= 0, "irecv: " + Status.describe(requests[i]));
        }
        byte[] myName = me.getBytes();
        for (var e : senders.entrySet()) {
            MemorySegment.copy(myName, 0, sendBuf, JAVA_BYTE, 0, myName.length);
            int req = awaitRequest(() -> e.getValue().isend(sendBuf.address(), myName.length,
                    regions.get(e.getValue().device()).lkey(), 0), e.getValue()::error);
            awaitDone(() -> e.getValue().test(req), e.getValue()::error);
        }
        for (int i = 0; i < anonymous.size(); i++) {
            RdmaReceiver r = anonymous.get(i);
            int req = requests[i];
            awaitDone(() -> r.test(req), r::error);
            String from = new String(names.asSlice(64L * i, r.size(req, 0)).toArray(JAVA_BYTE));
            receivers.put(from, r);
        }
        assertEquals(senders.keySet(), receivers.keySet());
        for (String d : receivers.values().stream().map(RdmaReceiver::device).distinct().toList()) {
            regions.computeIfAbsent("recv-" + d, k -> provider.register(d, recvBuf));
        }
    }

    @AfterAll
    static void closeInOrder() {
        senders.values().forEach(RdmaSender::close);
        receivers.values().forEach(RdmaReceiver::close);
        regions.values().forEach(MemoryRegion::close);
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

    interface Error {
        String get();
    }

    private static int awaitRequest(Call c, Error error) {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (true) {
            int r = c.call();
            if (r >= 0) {
                return r;
            }
            if (r != Status.NOT_READY) {
                fail(Status.describe(r) + ": " + error.get());
            }
            if (System.nanoTime() > deadline) {
                fail("no clear-to-send within " + TIMEOUT.toSeconds() + " s");
            }
            Thread.onSpinWait();
        }
    }

    private static void awaitDone(Call test, Error error) {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        int r;
        while ((r = test.call()) == 0) {
            if (System.nanoTime() > deadline) {
                fail("request not complete within " + TIMEOUT.toSeconds() + " s");
            }
            Thread.onSpinWait();
        }
        if (r != 1) {
            fail(Status.describe(r) + ": " + error.get());
        }
    }

    /** Deterministic content for message k from sender s, so the receiver can check every byte by checksum. */
    private static long fill(MemorySegment seg, long length, String sender, int k) {
        SplittableRandom rnd = new SplittableRandom(sender.hashCode() * 1_000_003L + k);
        for (long i = 0; i + 4 <= length; i += 4) {
            seg.set(JAVA_INT, i, rnd.nextInt());
        }
        for (long i = length & ~3L; i < length; i++) {
            seg.set(JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        return crc(seg, length);
    }

    private static long crc(MemorySegment seg, long length) {
        CRC32C crc = new CRC32C();
        crc.update(seg.asSlice(0, length).asByteBuffer());
        return crc.getValue();
    }

    private static final long[] SIZES = {0, 1, 7, 4095, 4096, 4097, 65_537, (1 << 20) + 3, (8 << 20) + 1, 64L << 20};

    @Test
    void everySizeFromZeroTo64MiBArrivesIntactFromEveryPeer() throws Exception {
        TestbedEnv.require();
        String me = TestbedEnv.name();
        List<String> peers = TestbedEnv.peers();
        long[] addrs = new long[1];
        long[] max = {BUF};
        int[] rkeys = new int[1];
        int[] tags = {7};
        for (int k = 0; k < SIZES.length; k++) {
            long size = SIZES[k];
            // post one receive per peer, then send to each peer, then check what arrived
            int[] rreq = new int[peers.size()];
            for (int p = 0; p < peers.size(); p++) {
                RdmaReceiver r = receivers.get(peers.get(p));
                addrs[0] = recvBuf.address() + BUF * p;
                rkeys[0] = regions.get("recv-" + r.device()).rkey();
                rreq[p] = r.irecv(1, addrs, max, rkeys, tags);
                assertTrue(rreq[p] >= 0, Status.describe(rreq[p]));
            }
            fill(sendBuf, size, me, k);
            for (String peer : peers) {
                RdmaSender s = senders.get(peer);
                int req = awaitRequest(() -> s.isend(sendBuf.address(), size, regions.get(s.device()).lkey(), 7),
                        s::error);
                awaitDone(() -> s.test(req), s::error);
                assertEquals(size, s.size(req));
            }
            for (int p = 0; p < peers.size(); p++) {
                RdmaReceiver r = receivers.get(peers.get(p));
                int req = rreq[p];
                awaitDone(() -> r.test(req), r::error);
                assertEquals(size, r.size(req, 0), "size of message " + k + " from " + peers.get(p));
                MemorySegment got = recvBuf.asSlice(BUF * p, BUF);
                long expected = fill(sendBuf, size, peers.get(p), k);
                assertEquals(expected, crc(got, size), "checksum of " + size + "-byte message from " + peers.get(p));
            }
        }
    }

    @Test
    void thirtyTwoMessagesInFlightAndGroupedReceivesMatchByTag() throws Exception {
        TestbedEnv.require();
        String me = TestbedEnv.name();
        List<String> peers = TestbedEnv.peers();
        int inFlight = Cts.MAX_REQUESTS;
        long slice = 4096 + 17;
        // the receiver posts 32 receives, the last 8 of them one grouped receive of 4 buffers with tags 3,1,0,2
        for (int p = 0; p < peers.size(); p++) {
            RdmaReceiver r = receivers.get(peers.get(p));
            int rkey = regions.get("recv-" + r.device()).rkey();
            long base = recvBuf.address() + BUF * p;
            int[] reqs = new int[inFlight];
            for (int i = 0; i < inFlight - 1; i++) {
                reqs[i] = r.irecv(1, new long[] {base + i * slice}, new long[] {slice}, new int[] {rkey},
                        new int[] {100 + i});
                assertTrue(reqs[i] >= 0, "irecv " + i + ": " + Status.describe(reqs[i]));
            }
            long[] group = new long[4];
            for (int g = 0; g < 4; g++) {
                group[g] = base + (inFlight + g) * slice;
            }
            reqs[inFlight - 1] = r.irecv(4, group, new long[] {slice, slice, slice, slice},
                    new int[] {rkey, rkey, rkey, rkey}, new int[] {3, 1, 0, 2});
            assertTrue(reqs[inFlight - 1] >= 0);
            pendingReceives.put(peers.get(p), reqs);
        }
        for (String peer : peers) {
            RdmaSender s = senders.get(peer);
            int lkey = regions.get(s.device()).lkey();
            int[] reqs = new int[inFlight - 1 + 4];
            for (int i = 0; i < inFlight - 1; i++) {
                MemorySegment m = sendBuf.asSlice(i * slice, slice);
                fill(m, slice - i, me, 1000 + i);
                int tag = 100 + i;
                long len = slice - i;
                reqs[i] = awaitRequest(() -> s.isend(m.address(), len, lkey, tag), s::error);
            }
            int[] order = {2, 0, 3, 1}; // tags, sent in another order than posted
            for (int j = 0; j < 4; j++) {
                int tag = order[j];
                MemorySegment m = sendBuf.asSlice((inFlight + j) * slice, slice);
                fill(m, 100 + tag, me, 2000 + tag);
                reqs[inFlight - 1 + j] = awaitRequest(() -> s.isend(m.address(), 100 + tag, lkey, tag), s::error);
            }
            for (int req : reqs) {
                awaitDone(() -> s.test(req), s::error);
            }
        }
        for (int p = 0; p < peers.size(); p++) {
            String peer = peers.get(p);
            RdmaReceiver r = receivers.get(peer);
            int[] reqs = pendingReceives.get(peer);
            MemorySegment base = recvBuf.asSlice(BUF * p, BUF);
            MemorySegment scratch = arena.allocate(slice);
            for (int i = 0; i < inFlight - 1; i++) {
                int req = reqs[i];
                awaitDone(() -> r.test(req), r::error);
                assertEquals(slice - i, r.size(req, 0));
                assertEquals(fill(scratch, slice - i, peer, 1000 + i), crc(base.asSlice(i * slice, slice), slice - i),
                        "message " + i + " from " + peer);
            }
            int group = reqs[inFlight - 1];
            awaitDone(() -> r.test(group), r::error);
            int[] postedTags = {3, 1, 0, 2};
            for (int g = 0; g < 4; g++) {
                int tag = postedTags[g];
                assertEquals(100 + tag, r.size(group, g), "grouped buffer " + g + " (tag " + tag + ")");
                assertEquals(fill(scratch, 100 + tag, peer, 2000 + tag),
                        crc(base.asSlice((inFlight + g) * slice, slice), 100 + tag), "grouped buffer " + g);
            }
        }
    }

    private static final Map<String, int[]> pendingReceives = new HashMap<>();
}
