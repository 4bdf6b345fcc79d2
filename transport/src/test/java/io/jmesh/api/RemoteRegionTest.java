package io.jmesh.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RemoteRegionTest {
    @Test
    void encodesAndDecodesEveryField() {
        RemoteRegion r = new RemoteRegion("rdma", 0x7f12_3456_7000L, 1L << 33, new int[] {0x1234, -7, 99});
        byte[] wire = r.encode();
        assertEquals(28 + 12, wire.length);
        RemoteRegion back = RemoteRegion.decode(wire);
        assertEquals(r, back);
        assertEquals("rdma", back.provider());
        assertEquals(-7, back.key(1));
        assertArrayEquals(new int[] {0x1234, -7, 99}, back.keys());
        RemoteRegion tcp = new RemoteRegion("tcp", 4096, 10, new int[] {1, 2});
        assertEquals(tcp, RemoteRegion.decode(tcp.encode()));
    }

    @Test
    void rangesAreCheckedWithoutOverflow() {
        RemoteRegion r = new RemoteRegion("rdma", 4096, 100, new int[] {1});
        assertTrue(r.contains(0, 100));
        assertTrue(r.contains(100, 0));
        assertFalse(r.contains(1, 100));
        assertFalse(r.contains(-1, 1));
        assertFalse(r.contains(50, Long.MAX_VALUE));
    }

    @Test
    void rejectsMalformedBytesWithTheReason() {
        byte[] good = new RemoteRegion("rdma", 1, 2, new int[] {3}).encode();
        assertThrows(IllegalArgumentException.class, () -> RemoteRegion.decode(null));
        assertThrows(IllegalArgumentException.class, () -> RemoteRegion.decode(new byte[10]));
        byte[] magic = good.clone();
        magic[0] ^= 1;
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RemoteRegion.decode(magic)).getMessage()
                .contains("magic"));
        byte[] count = good.clone();
        count[27] = 2; // says two keys, carries one
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RemoteRegion.decode(count)).getMessage()
                .contains("keys"));
        byte[] kind = good.clone();
        kind[5] = 9;
        assertThrows(IllegalArgumentException.class, () -> RemoteRegion.decode(kind));
        byte[] negative = good.clone();
        negative[16] = (byte) 0x80; // length's sign bit
        assertThrows(IllegalArgumentException.class, () -> RemoteRegion.decode(negative));
    }

    @Test
    void randomBytesNeverDecodeToAnythingButARegionOrTheIllegalArgument() {
        Random random = new Random(42);
        byte[] good = new RemoteRegion("tcp", 1, 2, new int[] {3, 4}).encode();
        for (int i = 0; i < 10_000; i++) {
            byte[] b = Arrays.copyOf(good, random.nextInt(good.length + 8));
            if (b.length > 0) {
                b[random.nextInt(b.length)] = (byte) random.nextInt();
            }
            try {
                RemoteRegion.decode(b);
            } catch (IllegalArgumentException expected) {
                assertTrue(expected.getMessage().startsWith("bad remote region"), expected.getMessage());
            }
        }
    }
}
