package io.jmesh.transport.tcp;

import io.jmesh.api.Context;
import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
import io.jmesh.api.Setting;
import io.jmesh.api.Status;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.CoreSender;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.jmesh.transport.tcp.TcpTestSupport.assertSameBytes;
import static io.jmesh.transport.tcp.TcpTestSupport.await;
import static io.jmesh.transport.tcp.TcpTestSupport.fill;
import static io.jmesh.transport.tcp.TcpTestSupport.send;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Connections through relays on loopback subnets: a line of 3 (a reaches c through b), a line of 4 (two relays), a
 * ring of 4 with all 12 ordered pairs at once, one-sided operations relayed, and a relay that closes mid-transfer.
 * Every byte is checked; every wait is a hang guard.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class TcpRelayTest {
    private static final long MIB = 1 << 20;
    /** 0 B to several MiB, odd sizes included. */
    private static final long[] SIZES = {0, 1, 4097, 65_539, MIB + 7, 3 * MIB};

    private Arena arena;
    private RelayMesh mesh;

    @BeforeEach
    void setUp() {
        arena = Arena.ofShared();
    }

    @AfterEach
    void tearDown() {
        if (mesh != null) {
            mesh.close();
        }
        arena.close();
    }

    /** One connection's transfers: every size as its own receive, then three sizes as one grouped receive. */
    private final class Traffic {
        final CoreSender s;
        final CoreReceiver r;
        final MemorySegment src = arena.allocate(8 * MIB, 4096);
        final MemorySegment dst = arena.allocate(8 * MIB, 4096);
        final Registration rs;
        final Registration rd;
        final List<int[]> sends = new ArrayList<>();
        final List<int[]> recvs = new ArrayList<>();
        final long seed;

        Traffic(TcpProvider from, TcpProvider to, TcpTestSupport.Pair p, long seed) {
            this.s = p.sender();
            this.r = p.receiver();
            this.rs = from.register(src);
            this.rd = to.register(dst);
            this.seed = seed;
            fill(src, 0, 8 * MIB, seed);
        }

        /** Posts the single receives and sends of every size, at offsets that differ per message. */
        void postSingles() {
            long off = 0;
            for (long size : SIZES) {
                int rr = r.irecv(1, new Registration[] {rd}, new long[] {off}, new long[] {size}, new int[] {7});
                assertTrue(rr >= 0, "irecv " + Status.describe(rr));
                recvs.add(new int[] {rr, (int) off, (int) size});
                int sr = send(s, rs, off, size, 7);
                assertTrue(sr >= 0, "isend " + Status.describe(sr) + " " + s.error());
                sends.add(new int[] {sr});
                off += size + 513;
            }
        }

        /** True once every posted request has completed; fails on any error. */
        boolean done() {
            boolean all = true;
            for (int[] q : sends) {
                if (q[0] >= 0) {
                    int t = s.test(q[0]);
                    assertTrue(t >= 0, "send " + Status.describe(t) + ": " + s.error());
                    if (t == 1) {
                        q[0] = -1;
                    } else {
                        all = false;
                    }
                }
            }
            for (int[] q : recvs) {
                if (q[0] >= 0) {
                    int t = r.test(q[0]);
                    assertTrue(t >= 0, "receive " + Status.describe(t) + ": " + r.error());
                    if (t == 1) {
                        assertEquals(q[2], r.size(q[0], 0), "received size");
                        q[0] = -1;
                    } else {
                        all = false;
                    }
                }
            }
            return all;
        }

        void checkSingles() {
            for (int[] q : recvs) {
                assertSameBytes(src, q[1], dst, q[1], q[2], "message of " + q[2] + " bytes (seed " + seed + ")");
            }
            sends.clear();
            recvs.clear();
        }

        /** A grouped receive of three buffers matched by tag, the sends in the opposite order. */
        void grouped() {
            int[] tags = {3, 1, 2};
            long[] offsets = {0, 2 * MIB, 4 * MIB};
            long[] sizes = {65_537, 0, MIB + 3};
            int rr = r.irecv(3, new Registration[] {rd, rd, rd}, offsets, new long[] {MIB, MIB, 2 * MIB}, tags);
            assertTrue(rr >= 0, "grouped irecv " + Status.describe(rr));
            int[] srs = new int[3];
            for (int i = 2; i >= 0; i--) {
                srs[i] = send(s, rs, offsets[i], sizes[i], tags[i]);
                assertTrue(srs[i] >= 0, "isend " + Status.describe(srs[i]) + " " + s.error());
            }
            boolean[] received = new boolean[1];
            await("a grouped receive through the relay", () -> {
                boolean all = true;
                for (int i = 0; i < 3; i++) {
                    if (srs[i] >= 0) {
                        int t = s.test(srs[i]);
                        assertTrue(t >= 0, "send " + Status.describe(t) + ": " + s.error());
                        srs[i] = t == 1 ? -1 : srs[i];
                        all &= t == 1;
                    }
                }
                if (!received[0]) {
                    int t = r.test(rr);
                    assertTrue(t >= 0, "grouped receive " + Status.describe(t) + ": " + r.error());
                    received[0] = t == 1;
                }
                return all && received[0];
            });
            for (int i = 0; i < 3; i++) {
                assertEquals(sizes[i], r.size(rr, i), "grouped buffer " + i);
                assertSameBytes(src, offsets[i], dst, offsets[i], sizes[i], "grouped buffer " + i);
            }
        }
    }

    @Test
    void lineOfThreeReachesTheFarEndThroughTheMiddle() throws Exception {
        // the build's test JVM exports sun.nio.ch (pom.xml), as jmesh's launchers do: the relay must splice
        assertNull(KernelPipe.UNAVAILABLE, "the relay cannot splice here");
        int sockets = new Context().tcpSockets();
        long pipesBefore = openPipes();
        mesh = RelayMesh.line("127.61", 3);
        assertEquals(sockets, lineOfThree(1), "all " + sockets + " data sockets went through kernel pipes");
        assertTrue(openPipes() >= pipesBefore + 2L * sockets, "two pipes per spliced socket while it is open");
        mesh.close();
        mesh = null;
        assertEquals(pipesBefore, openPipes(), "the relay closed every pipe it opened (the kernel's count)");
    }

    @Test
    void lineOfThreeCopiesThroughTheRelayWhereItCannotSplice() throws Exception {
        // as JMESH_TCP_RELAY_SPLICE=0 or a JVM that keeps NIO's descriptors to itself
        mesh = RelayMesh.line("127.71", 3, Setting.TCP_RELAY_SPLICE.property(), "0");
        assertEquals(0, lineOfThree(11), "nothing spliced");
    }

    /** This process's open pipe descriptors, as the kernel lists them. */
    private static long openPipes() throws IOException {
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(f -> {
                try {
                    return Files.readSymbolicLink(f).toString().startsWith("pipe:");
                } catch (IOException e) {
                    return false; // the listing's own descriptor, closed by now
                }
            }).count();
        }
    }

    /** a reaches c through b, every size and a grouped receive; the relayed sockets b spliced in the kernel. */
    private long lineOfThree(long seed) throws Exception {
        TcpProvider a = mesh.nodes.get(0);
        TcpProvider c = mesh.nodes.get(2);
        TcpTestSupport.Pair p = mesh.connect(a, mesh.listen(c));
        assertTrue(mesh.lastRoute.contains("via " + mesh.address(1, 2)), mesh.lastRoute);
        Traffic t = new Traffic(a, c, p, seed);
        t.postSingles();
        await("every size through the relay", t::done);
        t.checkSingles();
        t.grouped();
        return mesh.nodes.get(1).relay().spliced();
    }

    @Test
    void lineOfFourGoesThroughTwoRelays() throws Exception {
        mesh = RelayMesh.line("127.62", 4);
        TcpProvider a = mesh.nodes.get(0);
        TcpProvider d = mesh.nodes.get(3);
        TcpTestSupport.Pair p = mesh.connect(a, mesh.listen(d));
        assertTrue(mesh.lastRoute.contains("via " + mesh.address(1, 2) + " (2 relays)"), mesh.lastRoute);
        TcpTestSupport.Pair back = mesh.connect(d, mesh.listen(a));
        assertTrue(mesh.lastRoute.contains("via " + mesh.address(3, 3) + " (2 relays)"), mesh.lastRoute);
        Traffic t = new Traffic(a, d, p, 2);
        Traffic u = new Traffic(d, a, back, 3);
        t.postSingles();
        u.postSingles();
        await("both directions through two relays", () -> t.done() & u.done());
        t.checkSingles();
        u.checkSingles();
    }

    @Test
    void ringOfFourCarriesAllTwelvePairsAtOnce() throws Exception {
        mesh = RelayMesh.ring4("127.63");
        List<TcpListener> listeners = new ArrayList<>();
        for (TcpProvider n : mesh.nodes) {
            listeners.add(mesh.listen(n));
        }
        List<Traffic> all = new ArrayList<>();
        int relayed = 0;
        for (int i = 0; i < 4; i++) {
            for (int j = 0; j < 4; j++) {
                if (i != j) {
                    TcpTestSupport.Pair p = mesh.connect(mesh.nodes.get(i), listeners.get(j));
                    relayed += mesh.lastRoute.contains(" via ") ? 1 : 0;
                    assertEquals(Math.abs(i - j) == 2, mesh.lastRoute.contains(" via "), i + "->" + j + ": "
                            + mesh.lastRoute);
                    all.add(new Traffic(mesh.nodes.get(i), mesh.nodes.get(j), p, 100 + i * 4 + j));
                }
            }
        }
        assertEquals(4, relayed, "the two diagonals, both ways");
        all.forEach(Traffic::postSingles);
        await("12 pairs at once", () -> {
            boolean done = true;
            for (Traffic t : all) {
                done &= t.done();
            }
            return done;
        });
        all.forEach(Traffic::checkSingles);
        all.forEach(Traffic::grouped);
    }

    @Test
    void oneSidedWriteAndReadWorkRelayed() throws Exception {
        mesh = RelayMesh.line("127.64", 3);
        TcpProvider a = mesh.nodes.get(0);
        TcpProvider c = mesh.nodes.get(2);
        TcpTestSupport.Pair p = mesh.connect(a, mesh.listen(c));
        MemorySegment local = arena.allocate(4 * MIB, 4096);
        MemorySegment back = arena.allocate(4 * MIB, 4096);
        MemorySegment far = arena.allocate(4 * MIB, 4096);
        Registration lr = a.register(local);
        Registration br = a.register(back);
        RemoteRegion region = RemoteRegion.decode(c.register(far).remote().encode());
        for (long size : new long[] {0, 3, 65_537, 3 * MIB + 1}) {
            fill(local, 0, size, size);
            int w = p.sender().write(lr, 0, size, region, 5);
            assertTrue(w >= 0, Status.describe(w) + " " + p.sender().error());
            await("relayed write of " + size, () -> {
                p.receiver().poll();
                int t = p.sender().test(w);
                assertTrue(t >= 0, Status.describe(t) + " " + p.sender().error());
                return t == 1;
            });
            assertSameBytes(local, 0, far, 5, size, "written " + size);
            int rd = p.sender().read(br, 0, size, region, 5);
            assertTrue(rd >= 0, Status.describe(rd));
            await("relayed read of " + size, () -> {
                p.receiver().poll();
                int t = p.sender().test(rd);
                assertTrue(t >= 0, Status.describe(t) + " " + p.sender().error());
                return t == 1;
            });
            assertSameBytes(far, 5, back, 0, size, "read back " + size);
        }
    }

    @Test
    void aRelayThatClosesMidTransferFailsBothEndsNamingIt() throws Exception {
        mesh = RelayMesh.line("127.65", 3);
        TcpProvider a = mesh.nodes.get(0);
        TcpProvider b = mesh.nodes.get(1);
        TcpProvider c = mesh.nodes.get(2);
        TcpTestSupport.Pair p = mesh.connect(a, mesh.listen(c));
        // more than the socket buffers of three hops hold while the receiver does not poll: the send cannot finish
        long size = 64 * MIB;
        MemorySegment src = arena.allocate(size, 4096);
        MemorySegment dst = arena.allocate(size, 4096);
        Registration rs = a.register(src);
        Registration rd = c.register(dst);
        int rr = p.receiver().irecv(1, new Registration[] {rd}, new long[] {0}, new long[] {size}, new int[] {1});
        int sr = send(p.sender(), rs, 0, size, 1);
        assertTrue(rr >= 0 && sr >= 0);
        for (int i = 0; i < 100; i++) {
            assertEquals(0, p.sender().test(sr), "the send is still on its way");
        }
        b.close();
        int[] sent = new int[1];
        int[] got = new int[1];
        await("both ends see the relay gone", () -> {
            if (sent[0] >= 0) {
                int t = p.sender().test(sr);
                assertTrue(t == 0 || t == Status.FAILED, "send: " + Status.describe(t));
                sent[0] = t == Status.FAILED ? -1 : 0;
            }
            if (got[0] >= 0) {
                int t = p.receiver().test(rr);
                assertTrue(t == 0 || t == Status.FAILED, "receive: " + Status.describe(t));
                got[0] = t == Status.FAILED ? -1 : 0;
            }
            return sent[0] < 0 && got[0] < 0;
        });
        String relayA = mesh.address(1, 2);
        String relayC = mesh.address(2, 2);
        assertTrue(p.sender().error().contains(relayA), p.sender().error());
        assertTrue(p.receiver().error().contains(relayC), p.receiver().error());
    }
}
