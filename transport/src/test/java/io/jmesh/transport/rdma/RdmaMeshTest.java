package io.jmesh.transport.rdma;

import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.Cts;
import io.jmesh.api.Context;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.testbed.TestbedEnv;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import static io.jmesh.transport.rdma.RdmaMeshFixture.BUF;
import static io.jmesh.transport.rdma.RdmaMeshFixture.TIMEOUT;
import static io.jmesh.transport.rdma.RdmaMeshFixture.arena;
import static io.jmesh.transport.rdma.RdmaMeshFixture.awaitDone;
import static io.jmesh.transport.rdma.RdmaMeshFixture.awaitRequest;
import static io.jmesh.transport.rdma.RdmaMeshFixture.crc;
import static io.jmesh.transport.rdma.RdmaMeshFixture.fill;
import static io.jmesh.transport.rdma.RdmaMeshFixture.provider;
import static io.jmesh.transport.rdma.RdmaMeshFixture.receivers;
import static io.jmesh.transport.rdma.RdmaMeshFixture.recvBuf;
import static io.jmesh.transport.rdma.RdmaMeshFixture.recvReg;
import static io.jmesh.transport.rdma.RdmaMeshFixture.routes;
import static io.jmesh.transport.rdma.RdmaMeshFixture.sendBuf;
import static io.jmesh.transport.rdma.RdmaMeshFixture.sendReg;
import static io.jmesh.transport.rdma.RdmaMeshFixture.senders;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The verbs transport end to end inside the Soft-RoCE testbed, on any topology: every guest listens and connects to
 * every peer over the link they share, then each sends to each: every size class from 0 B to 64 MiB including odd
 * sizes, checksummed; 32 messages in flight; grouped receives matched by tag. Every guest runs the same methods in
 * the same order, so the two ends of each exchange meet.
 */
@Tag("rdma")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RdmaMeshTest {
    private static final long[] SIZES = {0, 1, 7, 4095, 4096, 4097, 65_537, (1 << 20) + 3, (8 << 20) + 1, 64L << 20};

    @BeforeAll
    static void connectToEveryPeer() throws Exception {
        RdmaMeshFixture.connectToEveryPeer();
    }

    @AfterAll
    static void closeInOrder() {
        RdmaMeshFixture.closeInOrder();
    }

    /** Every size on a pair; up to 8 MiB elsewhere, where several links share the testbed's two emulated cores. */
    private static long[] sizes() {
        return TestbedEnv.topology().equals("pair") ? SIZES
                : java.util.Arrays.stream(SIZES).filter(s -> s <= (8 << 20) + 1).toArray();
    }

    @Test
    @Order(1)
    void everySizeFromZeroTo64MiBArrivesIntactFromEveryPeer() {
        TestbedEnv.require();
        String me = TestbedEnv.name();
        List<String> peers = TestbedEnv.peers();
        MemorySegment scratch = arena.allocate(BUF, 4096);
        long[] sizes = sizes();
        for (int k = 0; k < sizes.length; k++) {
            long size = sizes[k];
            int[] rreq = new int[peers.size()];
            for (int p = 0; p < peers.size(); p++) {
                rreq[p] = receivers.get(peers.get(p)).irecv(1, new Registration[] {recvReg}, new long[] {BUF * p},
                        new long[] {BUF}, new int[] {7});
                assertTrue(rreq[p] >= 0, Status.describe(rreq[p]));
            }
            fill(sendBuf, size, me, k);
            for (String peer : peers) {
                CoreSender s = senders.get(peer);
                int req = awaitRequest(() -> s.isend(sendReg, 0, size, 7), s);
                awaitDone(() -> s.test(req), s);
                assertEquals(size, s.size(req));
            }
            for (int p = 0; p < peers.size(); p++) {
                CoreReceiver r = receivers.get(peers.get(p));
                int req = rreq[p];
                awaitDone(() -> r.test(req), r);
                assertEquals(size, r.size(req, 0), "size of message " + k + " from " + peers.get(p));
                assertEquals(fill(scratch, size, peers.get(p), k), crc(recvBuf.asSlice(BUF * p, BUF), size),
                        "checksum of the " + size + "-byte message from " + peers.get(p));
                // the flush reads the received buffer back through a loopback QP (a no-op read for size 0)
                int flush = r.iflush(1, new Registration[] {recvReg}, new long[] {BUF * p}, new long[] {size});
                assertTrue(flush >= 0, "iflush: " + Status.describe(flush) + " " + r.error());
                awaitDone(() -> r.test(flush), r);
                assertEquals(Status.BAD_ARGUMENT, r.test(flush), "a reported flush is reported once");
            }
        }
    }

    @Test
    @Order(2)
    void thirtyTwoMessagesInFlightAndGroupedReceivesMatchByTag() {
        TestbedEnv.require();
        String me = TestbedEnv.name();
        List<String> peers = TestbedEnv.peers();
        int singles = Cts.MAX_REQUESTS - 1;
        long slice = 4096 + 17;
        int[] postedTags = {3, 1, 0, 2};
        Map<String, int[]> pending = new HashMap<>();
        // 31 single receives and one grouped receive of 4 buffers: 32 requests in flight per connection
        for (int p = 0; p < peers.size(); p++) {
            CoreReceiver r = receivers.get(peers.get(p));
            int[] reqs = new int[singles + 1];
            for (int i = 0; i < singles; i++) {
                reqs[i] = r.irecv(1, new Registration[] {recvReg}, new long[] {BUF * p + i * slice},
                        new long[] {slice}, new int[] {100 + i});
                assertTrue(reqs[i] >= 0, "irecv " + i + ": " + Status.describe(reqs[i]));
            }
            long[] offsets = new long[4];
            for (int g = 0; g < 4; g++) {
                offsets[g] = BUF * p + (singles + g) * slice;
            }
            reqs[singles] = r.irecv(4, new Registration[] {recvReg, recvReg, recvReg, recvReg}, offsets,
                    new long[] {slice, slice, slice, slice}, postedTags);
            assertTrue(reqs[singles] >= 0, Status.describe(reqs[singles]));
            assertEquals(Status.NOT_READY, r.irecv(1, new Registration[] {recvReg}, new long[] {0},
                    new long[] {1}, new int[] {0}), "a 33rd receive must wait");
            pending.put(peers.get(p), reqs);
        }
        for (int i = 0; i < singles; i++) {
            fill(sendBuf.asSlice(i * slice, slice), slice - i, me, 1000 + i);
        }
        int[] sendOrder = {2, 0, 3, 1};
        for (int tag : sendOrder) {
            fill(sendBuf.asSlice((singles + tag) * slice, slice), 100 + tag, me, 2000 + tag);
        }
        for (String peer : peers) {
            CoreSender s = senders.get(peer);
            int[] reqs = new int[singles + 4];
            for (int i = 0; i < singles; i++) {
                long off = i * slice;
                long len = slice - i;
                int tag = 100 + i;
                reqs[i] = awaitRequest(() -> s.isend(sendReg, off, len, tag), s);
            }
            for (int j = 0; j < 4; j++) {
                int tag = sendOrder[j];
                reqs[singles + j] = awaitRequest(() -> s.isend(sendReg, (singles + tag) * slice, 100 + tag, tag), s);
            }
            for (int req : reqs) {
                awaitDone(() -> s.test(req), s);
            }
        }
        MemorySegment scratch = arena.allocate(slice);
        for (int p = 0; p < peers.size(); p++) {
            String peer = peers.get(p);
            CoreReceiver r = receivers.get(peer);
            int[] reqs = pending.get(peer);
            for (int i = 0; i < singles; i++) {
                int req = reqs[i];
                awaitDone(() -> r.test(req), r);
                assertEquals(slice - i, r.size(req, 0));
                assertEquals(fill(scratch, slice - i, peer, 1000 + i),
                        crc(recvBuf.asSlice(BUF * p + i * slice, slice), slice - i), "message " + i + " from " + peer);
            }
            int group = reqs[singles];
            awaitDone(() -> r.test(group), r);
            for (int g = 0; g < 4; g++) {
                int tag = postedTags[g];
                assertEquals(100 + tag, r.size(group, g), "grouped buffer " + g + " (tag " + tag + ") from " + peer);
                assertEquals(fill(scratch, 100 + tag, peer, 2000 + tag),
                        crc(recvBuf.asSlice(BUF * p + (singles + g) * slice, slice), 100 + tag),
                        "grouped buffer " + g + " from " + peer);
            }
        }
    }

    /**
     * Receives posted with {@link Receiver#MORE} are announced together: with one clear-to-send write (two where
     * the batch wraps around the FIFO ring), when the batch ends with a receive without the flag, when the
     * application tests a request, or when irecv answers NOT_READY. Twelve rounds of grouped receives of 1 to 8
     * buffers go round the 256-entry ring several times; every buffer is matched by tag and checksummed.
     */
    @Test
    @Order(6)
    void receivesPostedWithMoreAreAnnouncedTogetherAndArriveIntact() {
        TestbedEnv.require();
        String me = TestbedEnv.name();
        List<String> peers = TestbedEnv.peers();
        long slot = 4096;
        MemorySegment scratch = arena.allocate(slot);
        for (int round = 0; round < 12; round++) {
            int mode = round % 3; // 0: the last receive without MORE; 1: all MORE, then test(); 2: MORE to NOT_READY
            Map<String, int[]> posted = new HashMap<>();
            Map<String, int[]> groups = new HashMap<>();
            Map<String, Boolean> firstReported = new HashMap<>();
            for (int p = 0; p < peers.size(); p++) {
                CoreReceiver r = receivers.get(peers.get(p));
                long writesBefore = ((RdmaReceiveWire) r.wire()).ctsWrites();
                int want = mode == 2 ? Cts.MAX_REQUESTS : 5 + round;
                int[] reqs = new int[want];
                int[] ns = new int[want];
                for (int j = 0; j < want; j++) {
                    int n = 1 + (round * 5 + j * 3) % Receiver.MAX_RECVS;
                    Registration[] regs = new Registration[n];
                    long[] offsets = new long[n];
                    long[] max = new long[n];
                    int[] tags = new int[n];
                    for (int g = 0; g < n; g++) {
                        regs[g] = recvReg;
                        offsets[g] = BUF * p + ((long) j * Receiver.MAX_RECVS + g) * slot;
                        max[g] = slot;
                        tags[g] = n - 1 - g;           // posted in reverse tag order, sent in tag order
                    }
                    int flags = mode == 0 && j == want - 1 ? 0 : Receiver.MORE;
                    reqs[j] = r.irecv(n, regs, offsets, max, tags, flags);
                    assertTrue(reqs[j] >= 0, "irecv " + j + " of round " + round + ": " + Status.describe(reqs[j]));
                    ns[j] = n;
                    if (j < want - 1 || mode != 0) {
                        assertEquals(writesBefore, ((RdmaReceiveWire) r.wire()).ctsWrites(), "a receive posted with MORE waits for the batch");
                    }
                }
                if (mode == 1) {
                    // usually 0; but the peer may see the announcement, send, and the message land within this very
                    // call when the emulated CPU is descheduled after the clear-to-send write: then it is reported
                    int first = r.test(reqs[0]);
                    assertTrue(first == 0 || first == 1, "test of a receive just announced: " + Status.describe(first)
                            + " " + r.error());
                    firstReported.put(peers.get(p), first == 1);
                } else if (mode == 2) {
                    assertEquals(Status.NOT_READY, r.irecv(1, new Registration[] {recvReg}, new long[] {0},
                            new long[] {1}, new int[] {0}, Receiver.MORE), "a 33rd receive must wait");
                }
                long writes = ((RdmaReceiveWire) r.wire()).ctsWrites() - writesBefore;
                assertTrue(writes == 1 || writes == 2, "round " + round + ": " + want + " receives must leave in "
                        + "one clear-to-send write (two where the ring wraps), not " + writes);
                posted.put(peers.get(p), reqs);
                groups.put(peers.get(p), ns);
            }
            assertEquals(Status.BAD_ARGUMENT, receivers.get(peers.getFirst()).irecv(1, new Registration[] {recvReg},
                    new long[] {0}, new long[] {1}, new int[] {0}, 2), "an unknown irecv flag");
            int count = mode == 2 ? Cts.MAX_REQUESTS : 5 + round;
            for (int j = 0; j < count; j++) {
                int n = 1 + (round * 5 + j * 3) % Receiver.MAX_RECVS;
                for (int g = 0; g < n; g++) {
                    fill(sendBuf.asSlice(((long) j * Receiver.MAX_RECVS + g) * slot, slot), 1 + (j * 131 + g * 17)
                            % slot, me, round * 10_000 + j * 10 + g);
                }
            }
            for (String peer : peers) {
                CoreSender s = senders.get(peer);
                List<Integer> sends = new java.util.ArrayList<>();
                for (int j = 0; j < count; j++) {
                    int n = 1 + (round * 5 + j * 3) % Receiver.MAX_RECVS;
                    for (int tag = 0; tag < n; tag++) {
                        long off = ((long) j * Receiver.MAX_RECVS + tag) * slot;
                        long len = 1 + (j * 131 + tag * 17) % slot;
                        int t = tag;
                        sends.add(awaitRequest(() -> s.isend(sendReg, off, len, t), s));
                    }
                }
                for (int req : sends) {
                    awaitDone(() -> s.test(req), s);
                }
            }
            for (int p = 0; p < peers.size(); p++) {
                String peer = peers.get(p);
                CoreReceiver r = receivers.get(peer);
                int[] reqs = posted.get(peer);
                int[] ns = groups.get(peer);
                for (int j = 0; j < count; j++) {
                    int req = reqs[j];
                    if (j > 0 || !firstReported.getOrDefault(peer, false)) {
                        awaitDone(() -> r.test(req), r);
                    }
                    for (int g = 0; g < ns[j]; g++) {
                        int tag = ns[j] - 1 - g;
                        long len = 1 + (j * 131 + tag * 17) % slot;
                        assertEquals(len, r.size(req, g), "round " + round + ", receive " + j + ", buffer " + g);
                        assertEquals(fill(scratch, len, peer, round * 10_000 + j * 10 + tag),
                                crc(recvBuf.asSlice(BUF * p + ((long) j * Receiver.MAX_RECVS + g) * slot, slot), len),
                                "round " + round + ", receive " + j + ", buffer " + g + " from " + peer);
                    }
                }
            }
        }
    }

    /**
     * One-sided operations: each node writes into every peer's receive memory at an offset reserved for it, reads
     * the bytes back, and after a barrier checks what each peer wrote into its own memory. No receive is posted.
     */
    @Test
    @Order(3)
    void oneSidedWriteAndReadReachEveryPeersMemory() throws Exception {
        TestbedEnv.require();
        String me = TestbedEnv.name();
        List<String> peers = TestbedEnv.peers();
        TestbedEnv.publish("region-" + me, HexFormat.of().formatHex(recvReg.remote().encode()));
        long length = (3L << 20) + 13;          // several chunks' worth, odd
        long slot = 4L << 20;                    // node a writes at 0, b at 4 MiB, c at 8 MiB of the peer's memory
        fill(sendBuf, length, me, 5000);
        for (String peer : peers) {
            io.jmesh.api.RemoteRegion region = io.jmesh.api.RemoteRegion.decode(HexFormat.of().parseHex(
                    TestbedEnv.await("region-" + peer, TIMEOUT).trim()));
            CoreSender s = senders.get(peer);
            long at = slot * (me.charAt(0) - 'a');
            int w = awaitRequest(() -> s.write(sendReg, 0, length, region, at), s);
            awaitDone(() -> s.test(w), s);
            assertEquals(length, s.size(w));
            // read it back into the second half of the send buffer
            long back = 32L << 20;
            sendBuf.asSlice(back, length).fill((byte) 0);
            int rd = awaitRequest(() -> s.read(sendReg, back, length, region, at), s);
            awaitDone(() -> s.test(rd), s);
            assertEquals(crc(sendBuf, length), crc(sendBuf.asSlice(back), length), "read back from " + peer);
            assertEquals(Status.BAD_ARGUMENT, s.write(sendReg, 0, 2, region, region.length() - 1),
                    "a write past the end of the peer's region");
            assertEquals(Status.BAD_ARGUMENT, s.read(recvReg, recvReg.length() - 1, 2, region, 0),
                    "a read past the end of the local registration");
        }
        TestbedEnv.publish("written-" + me, "done");
        MemorySegment expected = arena.allocate(length, 4096);
        for (String peer : peers) {
            TestbedEnv.await("written-" + peer, TIMEOUT);
            long at = slot * (peer.charAt(0) - 'a');
            assertEquals(fill(expected, length, peer, 5000), crc(recvBuf.asSlice(at), length),
                    "bytes " + peer + " wrote into this node's memory");
        }
    }

    /**
     * Every link that joins this node to a peer carries data: on twins a connection spans both links (one queue pair
     * per link and JMESH_QPS_PER_CONNECTION per link), and each device's packet counter rises by at least a quarter
     * of the packets a 32 MiB message needs.
     */
    @Test
    @Order(4)
    void everyLinkToAPeerCarriesData() throws Exception {
        TestbedEnv.require();
        String me = TestbedEnv.name();
        List<String> peers = TestbedEnv.peers();
        int qps = new Context().qpsPerConnection();
        long size = 32L << 20;
        for (int p = 0; p < peers.size(); p++) {
            String peer = peers.get(p);
            CoreSender s = senders.get(peer);
            List<String> devices = TestbedEnv.devices().stream()
                    .filter(d -> List.of(TestbedEnv.get("TESTBED_PEER_" + peer.toUpperCase() + "_DEVS").split(" "))
                            .contains(d))
                    .toList();
            assertEquals(devices.size() * qps, ((RdmaSendWire) s.wire()).rails(), "queue pairs to " + peer + " over " + devices + ": "
                    + routes.get(peer));
            Map<String, Long> before = new HashMap<>();
            for (String d : devices) {
                before.put(d, sentPackets(d));
            }
            fill(sendBuf, size, me, 6000);
            TestbedEnv.publish("counted-" + me + "-" + peer, "ready");
            int rreq = receivers.get(peer).irecv(1, new Registration[] {recvReg}, new long[] {BUF * p},
                    new long[] {BUF}, new int[] {9});
            assertTrue(rreq >= 0, Status.describe(rreq));
            TestbedEnv.await("counted-" + peer + "-" + me, TIMEOUT);
            int req = awaitRequest(() -> s.isend(sendReg, 0, size, 9), s);
            awaitDone(() -> s.test(req), s);
            CoreReceiver r = receivers.get(peer);
            awaitDone(() -> r.test(rreq), r);
            MemorySegment scratch = arena.allocate(size, 4096);
            assertEquals(fill(scratch, size, peer, 6000), crc(recvBuf.asSlice(BUF * p), size));
            long mtu = 1024; // the smallest RoCE MTU: a lower bound on packets per byte
            for (String d : devices) {
                long sent = sentPackets(d) - before.get(d);
                assertTrue(sent >= size / mtu / devices.size() / 4,
                        d + " sent only " + sent + " packets while a " + size + "-byte message went to " + peer
                                + " over " + devices);
            }
        }
    }

    /**
     * GPU memory: the dma-buf probe runs against the real rxe driver, which has no dma-buf support: the provider
     * reports that, and a registration attempt fails with the reason and the fix instead of a bare errno.
     */
    @Test
    @Order(5)
    void softRoceReportsNoDmaBufSupportAndSaysWhat() {
        TestbedEnv.require();
        for (String d : TestbedEnv.devices()) {
            org.junit.jupiter.api.Assertions.assertFalse(provider.supportsDmaBuf(d), d);
        }
        UnsupportedOperationException e = org.junit.jupiter.api.Assertions.assertThrows(
                UnsupportedOperationException.class, () -> provider.registerDmaBuf(3, 0, 4096, 0x7f00_0000_0000L));
        assertTrue(e.getMessage().contains("cannot register GPU memory by dma-buf"), e.getMessage());
        assertTrue(e.getMessage().contains("host memory"), e.getMessage());
    }

    private static long sentPackets(String device) throws Exception {
        java.nio.file.Path counter = java.nio.file.Path.of("/sys/class/infiniband", device, "ports/1/hw_counters",
                "sent_pkts");
        return Long.parseLong(java.nio.file.Files.readString(counter).trim());
    }
}
