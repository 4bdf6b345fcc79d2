package io.jmesh.transport.rdma;

import io.jmesh.transport.core.Eager;
import io.jmesh.transport.verbs.QpEndpoint;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ConnectInfoTest {
    private static byte[] gid(int last) {
        byte[] g = new byte[16];
        g[10] = (byte) 0xff;
        g[11] = (byte) 0xff;
        g[12] = (byte) 192;
        g[13] = (byte) 168;
        g[14] = 101;
        g[15] = (byte) last;
        return g;
    }

    private static ConnectInfo twoRails() throws Exception {
        return new ConnectInfo(List.of(
                new ConnectInfo.Rail(new QpEndpoint(0x1234, 0xabcdef, gid(2), 3), 0,
                        InetAddress.getByName("192.168.101.3")),
                new ConnectInfo.Rail(new QpEndpoint(0x99, 0x42, gid(7), 5), 1,
                        InetAddress.getByName("fd00::3"))),
                0x7f00_1234_5000L, 0xbeef);
    }

    @Test
    void roundTripsEveryRailAndHasTheDocumentedLayout() throws Exception {
        ConnectInfo info = twoRails();
        byte[] b = info.encode();
        assertEquals(16 + 2 * 44, b.length);
        assertEquals(ConnectInfo.VERSION, b[0]);
        assertEquals(2, b[1]);
        assertEquals((byte) 0xef, b[7]);  // control rkey, big-endian
        assertEquals(3, b[16]);           // rail 0 MTU
        assertEquals(1, b[16 + 44 + 1]);  // rail 1 device index
        ConnectInfo back = ConnectInfo.decode(b);
        assertEquals(info.controlAddress(), back.controlAddress());
        assertEquals(info.controlRkey(), back.controlRkey());
        for (int r = 0; r < 2; r++) {
            assertEquals(info.rails().get(r).qp(), back.rails().get(r).qp());
            assertEquals(info.rails().get(r).deviceIndex(), back.rails().get(r).deviceIndex());
        }
        // an IPv4 target travels v4-mapped and comes back as the IPv4 address
        assertArrayEquals(InetAddress.getByName("192.168.101.3").getAddress(),
                back.rails().get(0).target().getAddress());
        assertEquals(InetAddress.getByName("fd00::3"), back.rails().get(1).target());
    }

    @Test
    void aListenerSendsNoTarget() {
        ConnectInfo info = new ConnectInfo(List.of(new ConnectInfo.Rail(new QpEndpoint(1, 2, gid(2), 1), 0, null)),
                4096, 1);
        assertNull(ConnectInfo.decode(info.encode()).rails().get(0).target());
    }

    @Test
    void rejectsWhatAPeerMustNotSend() throws Exception {
        byte[] good = twoRails().encode();
        assertBad(null, "got none");
        assertBad(new byte[15], "got 15");
        byte[] b = good.clone();
        b[0] = 1;
        assertBad(b, "version 1");
        b = good.clone();
        b[1] = 0;
        assertBad(b, "0 rails");
        b = good.clone();
        b[1] = 9;
        assertBad(b, "9 rails");
        b = good.clone();
        b[1] = 3; // claims three rails, carries two
        assertBad(b, "3 rails need");
        assertBad(Arrays.copyOf(good, good.length - 1), "got " + (good.length - 1));
        b = good.clone();
        b[3] = 4;
        assertBad(b, "unknown flags");
        b = good.clone();
        b[3] = 3;                  // RELAY and EAGER: a relay sends no eager records
        assertBad(b, "unknown flags");
        b = good.clone();
        b[3] = 2;                  // EAGER without the ring's geometry
        assertBad(b, "2 rails and an eager ring geometry need " + (good.length + 8) + " bytes");
        b = Arrays.copyOf(good, good.length + 8);
        b[3] = 2;
        java.nio.ByteBuffer.wrap(b, good.length, 8).putInt(Eager.SLOT_BYTES).putInt(Eager.SLOTS * 2);
        assertBad(b, "eager ring of " + Eager.SLOTS * 2 + " x " + Eager.SLOT_BYTES + " bytes, this jmesh has");
        java.nio.ByteBuffer.wrap(b, good.length, 8).putInt(Eager.SLOT_BYTES).putInt(Eager.SLOTS);
        assertTrue(ConnectInfo.decode(b).eager());
        assertArrayEquals(b, ConnectInfo.decode(b).encode());
        b = good.clone();
        b[3] = 1;                  // RELAY without the record geometry after the rails
        assertBad(b, "2 rails and a record geometry need " + (good.length + 8) + " bytes");
        b = good.clone();
        Arrays.fill(b, 8, 16, (byte) 0);
        assertBad(b, "zero control address");
        b = good.clone();
        b[16 + 44] = 9;
        assertBad(b, "rail 1: MTU enum out of range");
        b = good.clone();
        b[16 + 4] = 1; // qpn above 24 bits
        assertBad(b, "24-bit");
        b = good.clone();
        Arrays.fill(b, 16 + 44 + 12, 16 + 44 + 28, (byte) 0);
        assertBad(b, "zero GID on rail 1");
    }

    @Test
    void relaysExchangeTheirRecordGeometry() {
        ConnectInfo.Rail rail = new ConnectInfo.Rail(new QpEndpoint(1, 2, gid(2), 1), 0, null);
        ConnectInfo ring = new ConnectInfo(List.of(rail), 8192, 7, true, 512 * 1024, 8);
        ConnectInfo back = ConnectInfo.decode(ring.encode());
        assertEquals(8192, back.controlAddress());
        assertEquals(7, back.controlRkey());
        assertTrue(back.relay());
        assertEquals(512 * 1024, back.recordBytes());
        assertEquals(8, back.records());
        assertFalse(ConnectInfo.decode(new ConnectInfo(List.of(rail), 8192, 7).encode()).relay());
        byte[] huge = ring.encode();
        Arrays.fill(huge, huge.length - 4, huge.length, (byte) 0xff);   // 2^32 - 1 records
        assertBad(huge, "record geometry 4294967295 x 524288 bytes");
        assertThrows(IllegalArgumentException.class, () -> new ConnectInfo(List.of(rail), 1, 1, false, 4096, 1),
                "a geometry without RELAY");
    }

    @Test
    void railCountIsBounded() {
        List<ConnectInfo.Rail> nine = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            nine.add(new ConnectInfo.Rail(new QpEndpoint(1, 2, gid(2), 1), 0, null));
        }
        assertThrows(IllegalArgumentException.class, () -> new ConnectInfo(nine, 1, 1));
        assertThrows(IllegalArgumentException.class, () -> new ConnectInfo(List.of(), 1, 1));
    }

    @Test
    void randomBytesNeverThrowAnythingButAClearRejection() throws Exception {
        SplittableRandom rnd = new SplittableRandom(42);
        byte[] good = twoRails().encode();
        for (int i = 0; i < 20_000; i++) {
            byte[] b;
            if (i % 2 == 0) {
                b = new byte[rnd.nextInt(0, 120)];
                rnd.nextBytes(b);
                if (b.length > 0) {
                    b[0] = (byte) ConnectInfo.VERSION;
                }
            } else {
                b = good.clone();
                b[rnd.nextInt(b.length)] = (byte) rnd.nextInt();
            }
            try {
                ConnectInfo.decode(b);
            } catch (IllegalArgumentException e) {
                assertTrue(e.getMessage().startsWith("bad jmesh connection info: "), e.getMessage());
            }
        }
    }

    private static void assertBad(byte[] b, String why) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ConnectInfo.decode(b));
        assertTrue(e.getMessage().startsWith("bad jmesh connection info: ") && e.getMessage().contains(why),
                e.getMessage());
    }
}
