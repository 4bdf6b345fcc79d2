package io.jmesh.transport.tcp;

import io.jmesh.api.CloseHelper;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.api.Setting;
import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenHandle;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.tcp.TcpTestSupport.assertSameBytes;
import static io.jmesh.transport.tcp.TcpTestSupport.await;
import static io.jmesh.transport.tcp.TcpTestSupport.complete;
import static io.jmesh.transport.tcp.TcpTestSupport.connect;
import static io.jmesh.transport.tcp.TcpTestSupport.fill;
import static io.jmesh.transport.tcp.TcpTestSupport.send;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TCP provider end to end over loopback: every size from 0 B to 64 MiB, 32 requests in flight, grouped receives
 * matched by tag, many connections, a three-node triangle on three subnets, heap memory. Failures and hostile
 * clients are in {@link TcpFailureTest}. What every provider must do (TRUNCATED, NOT_READY, bad arguments, ...) is in
 * the contract suite ({@code io.jmesh.api.contract}). Nothing here measures speed; every wait is a hang guard.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpProviderTest {
    private static final long MIB = 1 << 20;

    private final List<AutoCloseable> cleanup = new ArrayList<>();
    private Arena arena;

    @BeforeEach
    void setUp() {
        arena = Arena.ofShared();
    }

    @AfterEach
    void tearDown() throws Exception {
        CloseHelper.closeAll(cleanup.reversed());
        arena.close();
    }

    private TcpProvider provider(String addresses, String... extra) {
        TcpProvider p = TcpTestSupport.provider(addresses, extra);
        cleanup.add(p);
        return p;
    }

    private static Registration[] regs(Registration r, int n) {
        Registration[] out = new Registration[n];
        java.util.Arrays.fill(out, r);
        return out;
    }

    @Test
    void providerBasics() throws Exception {
        TcpProvider a = provider("127.0.101.2/24,127.0.100.2/24");
        assertEquals("tcp", a.name());
        assertEquals(List.of(IpPrefix.parse("127.0.101.2/24"), IpPrefix.parse("127.0.100.2/24")),
                a.links().stream().map(l -> l.prefix()).toList());
        TcpListener l = a.listen();
        ListenHandle h = ListenHandle.decode(l.handle());
        assertTrue(h.isTcpProvider(), "a TCP listener's handle carries the TCP flag");
        assertEquals(2, h.addresses().size());
        assertTrue(l.handleText().startsWith("jmesh1/01:"), l.handleText());
    }

    @Test
    void everySizeFromZeroTo64MiBArrivesIntact() throws Exception {
        TcpProvider a = provider("127.0.101.2/24");
        TcpProvider b = provider("127.0.101.3/24");
        TcpTestSupport.Pair p = connect(a, b.listen());
        long cap = 64 * MIB + 64;
        MemorySegment src = arena.allocate(cap, 4096);
        MemorySegment dst = arena.allocate(cap, 4096);
        Registration rs = a.register(src);
        Registration rd = b.register(dst);
        long[] sizes = {0, 1, 7, 4095, 4096, 4097, 65537, MIB + 3, 8 * MIB + 1, 64 * MIB};
        for (int i = 0; i < sizes.length; i++) {
            long n = sizes[i];
            long srcOff = i % 2 == 0 ? 0 : 3;
            long dstOff = i % 3 == 0 ? 0 : 5;
            fill(src, srcOff, n, 1000 + i);
            dst.asSlice(0, Math.min(cap, dstOff + n + 16)).fill((byte) 0x5A);
            int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {dstOff}, new long[] {cap - dstOff},
                    new int[] {i});
            assertTrue(rr >= 0, "irecv: " + Status.describe(rr));
            int sr = send(p.sender(), rs, srcOff, n, i);
            assertTrue(sr >= 0, "isend: " + Status.describe(sr));
            complete(p.sender(), sr, p.receiver(), rr);
            assertEquals(n, p.receiver().size(rr, 0), "received size of message " + i);
            assertEquals(n, p.sender().size(sr), "sent size of message " + i);
            assertSameBytes(src, srcOff, dst, dstOff, n, "message of " + n + " bytes");
            if (dstOff + n + 16 <= cap) {
                assertEquals((byte) 0x5A, dst.get(JAVA_BYTE, dstOff + n), "nothing written past the message");
            }
            if (dstOff > 0) {
                assertEquals((byte) 0x5A, dst.get(JAVA_BYTE, dstOff - 1), "nothing written before the buffer");
            }
        }
        assertEquals(null, p.sender().error());
        assertEquals(null, p.receiver().error());
    }

    @Test
    void thirtyTwoRequestsInFlight() throws Exception {
        TcpProvider a = provider("127.0.101.2/24");
        TcpProvider b = provider("127.0.101.3/24");
        TcpTestSupport.Pair p = connect(a, b.listen());
        long region = 256 << 10;
        MemorySegment src = arena.allocate(region * 33, 4096);
        MemorySegment dst = arena.allocate(region * 33, 4096);
        Registration rs = a.register(src);
        Registration rd = b.register(dst);
        int[] recv = new int[32];
        int[] sent = new int[32];
        for (int i = 0; i < 32; i++) {
            fill(src, i * region, region, 77 + i);
            // MORE on all but the last (TCP accepts the flag and announces each receive at once anyway)
            recv[i] = p.receiver().irecv(1, new Registration[] {rd}, new long[] {i * region}, new long[] {region},
                    new int[] {i}, i < 31 ? Receiver.MORE : 0);
            assertTrue(recv[i] >= 0, "irecv " + i + ": " + Status.describe(recv[i]));
        }
        assertEquals(Status.NOT_READY, p.receiver().irecv(1, new Registration[] {rd}, new long[] {32 * region},
                new long[] {region}, new int[] {32}), "a 33rd receive while 32 are in flight");
        for (int i = 0; i < 32; i++) {
            sent[i] = send(p.sender(), rs, i * region, 100_000 + i * 997L, i);
            assertTrue(sent[i] >= 0, "isend " + i + ": " + Status.describe(sent[i]));
        }
        assertEquals(32, java.util.Arrays.stream(sent).distinct().count(), "32 distinct request ids");
        // above the eager threshold: a small one would go at once, into the receiver's ring
        assertEquals(Status.NOT_READY, p.sender().isend(rs, 0, 100_000, 32), "a 33rd send has no clear-to-send yet");
        boolean[] sDone = new boolean[32];
        boolean[] rDone = new boolean[32];
        await("32 transfers", () -> {
            boolean all = true;
            for (int i = 0; i < 32; i++) {
                if (!sDone[i]) {
                    int t = p.sender().test(sent[i]);
                    assertTrue(t >= 0, "send test: " + p.sender().error());
                    sDone[i] = t == 1;
                }
                if (!rDone[i]) {
                    int t = p.receiver().test(recv[i]);
                    assertTrue(t >= 0, "receive test: " + p.receiver().error());
                    rDone[i] = t == 1;
                }
                all &= sDone[i] && rDone[i];
            }
            return all;
        });
        for (int i = 0; i < 32; i++) {
            long n = 100_000 + i * 997L;
            assertEquals(n, p.receiver().size(recv[i], 0));
            assertSameBytes(src, i * region, dst, i * region, n, "message " + i);
        }
        // the slots are free again
        int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {32 * region}, new long[] {region},
                new int[] {32});
        assertTrue(rr >= 0);
        int sr = send(p.sender(), rs, 0, 12345, 32);
        complete(p.sender(), sr, p.receiver(), rr);
        assertEquals(12345, p.receiver().size(rr, 0));
    }

    @Test
    void groupedReceiveIsMatchedByTag() throws Exception {
        TcpProvider a = provider("127.0.101.2/24");
        TcpProvider b = provider("127.0.101.3/24");
        TcpTestSupport.Pair p = connect(a, b.listen());
        MemorySegment src = arena.allocate(16 * MIB, 4096);
        MemorySegment dst = arena.allocate(16 * MIB, 4096);
        Registration rs = a.register(src);
        Registration rd = b.register(dst);
        for (int round = 0; round < 3; round++) {
            int[] tags = {3, 1, 0, 2};
            long[] dstOffsets = {0, MIB, 2 * MIB, 3 * MIB};
            long[] max = {1000, 70_000, MIB, 65537};
            Map<Integer, Long> sizeOfTag = Map.of(0, 4000L + round, 1, 0L, 2, 65537L, 3, 999L - round);
            Map<Integer, Long> srcOfTag = Map.of(0, 8 * MIB, 1, 9 * MIB, 2, 10 * MIB + 1, 3, 11 * MIB + 3);
            for (int t = 0; t < 4; t++) {
                fill(src, srcOfTag.get(t), sizeOfTag.get(t), round * 10 + t);
            }
            int rr = p.receiver().irecv(4, regs(rd, 4), dstOffsets, max, tags);
            assertTrue(rr >= 0);
            int[] order = {2, 0, 3, 1};
            int[] reqs = new int[4];
            for (int i = 0; i < 4; i++) {
                int tag = order[i];
                reqs[i] = send(p.sender(), rs, srcOfTag.get(tag), sizeOfTag.get(tag), tag);
                assertTrue(reqs[i] >= 0, "isend tag " + tag + ": " + Status.describe(reqs[i]));
                if (i < 3) {
                    assertEquals(0, p.receiver().test(rr), "the grouped receive completes only with all its buffers");
                }
            }
            assertEquals(4, java.util.Arrays.stream(reqs).distinct().count());
            int[] done = new int[5];
            await("grouped transfer", () -> {
                for (int i = 0; i < 4; i++) {
                    if (done[i] == 0) {
                        done[i] = p.sender().test(reqs[i]);
                        assertTrue(done[i] >= 0, p.sender().error());
                    }
                }
                if (done[4] == 0) {
                    done[4] = p.receiver().test(rr);
                    assertTrue(done[4] >= 0, p.receiver().error());
                }
                return java.util.Arrays.stream(done).allMatch(d -> d == 1);
            });
            assertEquals(4, p.receiver().buffers(rr));
            for (int i = 0; i < 4; i++) {
                long n = sizeOfTag.get(tags[i]);
                assertEquals(n, p.receiver().size(rr, i), "buffer " + i + " (tag " + tags[i] + ")");
                assertSameBytes(src, srcOfTag.get(tags[i]), dst, dstOffsets[i], n, "buffer " + i);
            }
            for (int i = 0; i < 4; i++) {
                assertEquals(sizeOfTag.get(order[i]), p.sender().size(reqs[i]));
            }
        }
        // eight buffers in one request, all the same tag: taken in order
        long[] offs = new long[8];
        long[] max = new long[8];
        int[] tags = new int[8];
        for (int i = 0; i < 8; i++) {
            offs[i] = i * MIB;
            max[i] = MIB;
            tags[i] = 9;
        }
        int rr = p.receiver().irecv(8, regs(rd, 8), offs, max, tags);
        assertTrue(rr >= 0);
        int[] reqs = new int[8];
        for (int i = 0; i < 8; i++) {
            fill(src, i * MIB, 1000 + i, 500 + i);
            reqs[i] = send(p.sender(), rs, i * MIB, 1000 + i, 9);
            assertTrue(reqs[i] >= 0);
        }
        int[] done = new int[9];
        await("eight-buffer transfer", () -> {
            for (int i = 0; i < 8; i++) {
                if (done[i] == 0) {
                    done[i] = p.sender().test(reqs[i]);
                    assertTrue(done[i] >= 0, p.sender().error());
                }
            }
            if (done[8] == 0) {
                done[8] = p.receiver().test(rr);
                assertTrue(done[8] >= 0, p.receiver().error());
            }
            return java.util.Arrays.stream(done).allMatch(d -> d == 1);
        });
        for (int i = 0; i < 8; i++) {
            assertEquals(1000 + i, p.receiver().size(rr, i), "same tag: buffers taken in order");
            assertSameBytes(src, i * MIB, dst, i * MIB, 1000 + i, "buffer " + i);
        }
    }

    @Test
    void sixteenConnectionsBetweenTheSameTwoProviders() throws Exception {
        TcpProvider a = provider("127.0.101.2/24");
        TcpProvider b = provider("127.0.101.3/24");
        TcpListener l = b.listen();
        int n = 16;
        List<TcpConnect> connects = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            connects.add(a.connect(l.listenHandle()));
        }
        CoreSender[] senders = new CoreSender[n];
        List<CoreReceiver> receivers = new ArrayList<>();
        await("16 connections", () -> {
            for (int i = 0; i < n; i++) {
                if (senders[i] == null) {
                    senders[i] = connects.get(i).poll();
                }
            }
            CoreReceiver r = l.accept();
            if (r != null) {
                receivers.add(r);
            }
            return receivers.size() == n && java.util.Arrays.stream(senders).allMatch(s -> s != null);
        });
        long region = 512 << 10;
        MemorySegment src = arena.allocate(region * n, 4096);
        MemorySegment dst = arena.allocate(region * n, 4096);
        Registration rs = a.register(src);
        Registration rd = b.register(dst);
        int[] rr = new int[n];
        for (int j = 0; j < n; j++) {
            rr[j] = receivers.get(j).irecv(1, new Registration[] {rd}, new long[] {j * region}, new long[] {region},
                    new int[] {0});
            assertTrue(rr[j] >= 0);
        }
        int[] sr = new int[n];
        java.util.Arrays.fill(sr, Status.NOT_READY);
        boolean[] sDone = new boolean[n];
        boolean[] rDone = new boolean[n];
        for (int i = 0; i < n; i++) {
            fill(src, i * region, 300_000 + i, 4000 + i);
        }
        await("16 transfers at once", () -> {
            boolean all = true;
            for (int i = 0; i < n; i++) {
                if (sr[i] == Status.NOT_READY) {
                    sr[i] = senders[i].isend(rs, i * region, 300_000 + i, 0);
                    assertTrue(sr[i] >= 0 || sr[i] == Status.NOT_READY, Status.describe(sr[i]));
                }
                if (sr[i] >= 0 && !sDone[i]) {
                    int t = senders[i].test(sr[i]);
                    assertTrue(t >= 0, senders[i].error());
                    sDone[i] = t == 1;
                }
                if (!rDone[i]) {
                    int t = receivers.get(i).test(rr[i]);
                    assertTrue(t >= 0, receivers.get(i).error());
                    rDone[i] = t == 1;
                }
                all &= sDone[i] && rDone[i];
            }
            return all;
        });
        boolean[] seen = new boolean[n];
        for (int j = 0; j < n; j++) {
            int from = (int) (receivers.get(j).size(rr[j], 0) - 300_000);
            assertTrue(from >= 0 && from < n && !seen[from], "each sender's message arrives once");
            seen[from] = true;
            assertSameBytes(src, from * region, dst, j * region, 300_000 + from, "message of sender " + from);
        }
    }

    /** Three nodes, each pair on its own subnet; each connects to both others over the link they share. */
    @Test
    void triangleOnThreeSubnets() throws Exception {
        String[] names = {"A", "B", "C"};
        String[][] addrs = {
                {"127.0.101.2", "127.0.100.2"},   // A: A-B on .101, A-C on .100
                {"127.0.101.3", "127.0.102.3"},   // B: A-B on .101, B-C on .102
                {"127.0.102.4", "127.0.100.4"}};  // C: B-C on .102, A-C on .100
        TcpProvider[] nodes = new TcpProvider[3];
        TcpListener[] listeners = new TcpListener[3];
        for (int i = 0; i < 3; i++) {
            nodes[i] = provider(addrs[i][0] + "/24," + addrs[i][1] + "/24");
            listeners[i] = nodes[i].listen();
        }
        // the address of node i on the link it shares with node j
        java.util.function.BiFunction<Integer, Integer, String> on = (i, j) -> {
            for (String x : addrs[i]) {
                for (String y : addrs[j]) {
                    if (x.substring(0, x.lastIndexOf('.')).equals(y.substring(0, y.lastIndexOf('.')))) {
                        return x;
                    }
                }
            }
            throw new AssertionError();
        };
        Map<String, TcpConnect> connects = new HashMap<>();
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++) {
                if (i != j) {
                    connects.put(i + ">" + j, nodes[i].connect(listeners[j].listenHandle()));
                }
            }
        }
        Map<String, CoreSender> senders = new HashMap<>();
        List<List<CoreReceiver>> accepted = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        await("6 connections", () -> {
            for (var e : connects.entrySet()) {
                if (!senders.containsKey(e.getKey())) {
                    CoreSender s = e.getValue().poll();
                    if (s != null) {
                        senders.put(e.getKey(), s);
                    }
                }
            }
            for (int j = 0; j < 3; j++) {
                CoreReceiver r = listeners[j].accept();
                if (r != null) {
                    accepted.get(j).add(r);
                }
            }
            return senders.size() == 6 && accepted.stream().allMatch(x -> x.size() == 2);
        });
        Map<String, CoreReceiver> receivers = new HashMap<>();
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++) {
                if (i == j) {
                    continue;
                }
                String key = i + ">" + j;
                CoreSender s = senders.get(key);
                assertEquals("tcp " + on.apply(i, j) + "/24 -> " + on.apply(j, i) + "/24", connects.get(key).route());
                for (int k = 0; k < TcpTestSupport.conn(s).count(); k++) {
                    assertEquals(InetAddress.getByName(on.apply(i, j)), TcpTestSupport.conn(s).localAddress(k).getAddress(),
                            names[i] + "->" + names[j] + " socket " + k + " leaves on the shared subnet");
                    assertEquals(InetAddress.getByName(on.apply(j, i)), TcpTestSupport.conn(s).remoteAddress(k).getAddress());
                }
                CoreReceiver match = null;
                for (CoreReceiver r : accepted.get(j)) {
                    if (TcpTestSupport.conn(r).remoteAddress(0).getAddress().equals(InetAddress.getByName(on.apply(i, j)))) {
                        match = r;
                    }
                }
                assertNotNull(match, names[j] + " accepted a connection from " + names[i]);
                for (int k = 0; k < TcpTestSupport.conn(match).count(); k++) {
                    assertEquals(InetAddress.getByName(on.apply(j, i)), TcpTestSupport.conn(match).localAddress(k).getAddress());
                    assertEquals(InetAddress.getByName(on.apply(i, j)), TcpTestSupport.conn(match).remoteAddress(k).getAddress());
                }
                receivers.put(key, match);
            }
        }
        // all traffic at once: one thread per node drives its two senders and two receivers
        long size = 4 * MIB + 1;
        int rounds = 3;
        MemorySegment[] src = new MemorySegment[3];
        MemorySegment[] dst = new MemorySegment[3];
        Registration[] rsrc = new Registration[3];
        Registration[] rdst = new Registration[3];
        for (int i = 0; i < 3; i++) {
            src[i] = arena.allocate(3 * size, 4096);
            dst[i] = arena.allocate(3 * size * rounds, 4096);
            rsrc[i] = nodes[i].register(src[i]);
            rdst[i] = nodes[i].register(dst[i]);
            for (int j = 0; j < 3; j++) {
                fill(src[i], j * size, size, 31L * i + j);
            }
        }
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int me = 0; me < 3; me++) {
                int i = me;
                futures.add(pool.submit(() -> {
                    for (int round = 0; round < rounds; round++) {
                        int[] peers = {(i + 1) % 3, (i + 2) % 3};
                        int[] rr = new int[2];
                        int[] sr = {Status.NOT_READY, Status.NOT_READY};
                        boolean[] done = new boolean[4];
                        for (int x = 0; x < 2; x++) {
                            int j = peers[x];
                            rr[x] = receivers.get(j + ">" + i).irecv(1, new Registration[] {rdst[i]},
                                    new long[] {(round * 3L + j) * size}, new long[] {size}, new int[] {round});
                            assertTrue(rr[x] >= 0);
                        }
                        int r = round;
                        await(names[i] + " round " + round, () -> {
                            for (int x = 0; x < 2; x++) {
                                int j = peers[x];
                                CoreSender s = senders.get(i + ">" + j);
                                if (sr[x] == Status.NOT_READY) {
                                    sr[x] = s.isend(rsrc[i], j * size, size, r);
                                    assertTrue(sr[x] >= 0 || sr[x] == Status.NOT_READY, s.error());
                                }
                                if (sr[x] >= 0 && !done[x]) {
                                    int t = s.test(sr[x]);
                                    assertTrue(t >= 0, s.error());
                                    done[x] = t == 1;
                                }
                                if (!done[2 + x]) {
                                    CoreReceiver rcv = receivers.get(j + ">" + i);
                                    int t = rcv.test(rr[x]);
                                    assertTrue(t >= 0, rcv.error());
                                    done[2 + x] = t == 1;
                                }
                            }
                            return done[0] && done[1] && done[2] && done[3];
                        });
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get(TcpTestSupport.PATIENCE_MS * 2, TimeUnit.MILLISECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++) {
                if (i != j) {
                    for (int round = 0; round < rounds; round++) {
                        assertSameBytes(src[j], i * size, dst[i], (round * 3L + j) * size, size,
                                names[j] + " -> " + names[i] + " round " + round);
                    }
                }
            }
        }
    }

    @Test
    void heapMemoryWorksToo() throws Exception {
        TcpProvider a = provider("127.0.101.2/24");
        TcpProvider b = provider("127.0.101.3/24");
        TcpTestSupport.Pair p = connect(a, b.listen());
        int n = (int) MIB + 3;
        MemorySegment src = MemorySegment.ofArray(new byte[n]);
        MemorySegment dst = MemorySegment.ofArray(new byte[n + 10]);
        fill(src, 0, n, 12);
        Registration rs = a.register(src);
        Registration rd = b.register(dst);
        int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {10}, new long[] {n}, new int[] {0});
        int sr = send(p.sender(), rs, 0, n, 0);
        complete(p.sender(), sr, p.receiver(), rr);
        assertSameBytes(src, 0, dst, 10, n, "heap message");
        assertThrows(IllegalArgumentException.class, () -> a.register(MemorySegment.ofArray(new int[4])),
                "an int[] segment has no ByteBuffer view");
    }
}
