package io.jmesh.transport.rdma;

import io.jmesh.transport.verbs.QpEndpoint;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ConnectInfoTest {
    private static byte[] gid() {
        byte[] g = new byte[16];
        g[10] = (byte) 0xff;
        g[11] = (byte) 0xff;
        g[12] = (byte) 192;
        g[13] = (byte) 168;
        g[14] = 101;
        g[15] = 2;
        return g;
    }

    private static final ConnectInfo INFO = new ConnectInfo(new QpEndpoint(0x1234, 0xabcdef, gid(), 3),
            0x7f00_1234_5000L, 0xbeef);

    @Test
    void roundTripsAndHasTheDocumentedLayout() {
        byte[] b = INFO.encode();
        assertEquals(ConnectInfo.BYTES, b.length);
        assertEquals(1, b[0]);
        assertEquals(3, b[1]);
        assertEquals(0x34, b[7]);
        assertEquals(INFO, ConnectInfo.decode(b));
    }

    @Test
    void rejectsWhatAPeerMustNotSend() {
        assertBad(null, "expected 40 bytes, got none");
        assertBad(new byte[39], "expected 40 bytes, got 39");
        byte[] b = INFO.encode();
        b[0] = 2;
        assertBad(b, "version 2");
        b = INFO.encode();
        b[1] = 9;
        assertBad(b, "MTU enum out of range");
        b = INFO.encode();
        b[3] = 1;
        assertBad(b, "unknown flags");
        b = INFO.encode();
        b[4] = 1; // qpn above 24 bits
        assertBad(b, "24-bit");
        b = INFO.encode();
        Arrays.fill(b, 12, 28, (byte) 0);
        assertBad(b, "zero GID");
        b = INFO.encode();
        Arrays.fill(b, 28, 36, (byte) 0);
        assertBad(b, "zero control address");
    }

    @Test
    void randomBytesNeverThrowAnythingButAClearRejection() {
        SplittableRandom rnd = new SplittableRandom(42);
        for (int i = 0; i < 10_000; i++) {
            byte[] b = new byte[rnd.nextInt(0, 48)];
            rnd.nextBytes(b);
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
