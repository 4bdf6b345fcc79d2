package io.jmesh.nccl;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

class HandleTableTest {
    @Test
    void handlesAreNonZeroAndReusedAfterRemove() {
        HandleTable<String> t = new HandleTable<>();
        long a = t.add("a");
        long b = t.add("b");
        assertNotEquals(0, a);
        assertNotEquals(a, b);
        assertSame("a", t.get(a));
        assertEquals("a", t.remove(a));
        assertNull(t.get(a));
        assertNull(t.remove(a));
        long c = t.add("c");
        assertEquals(a, c);
        assertEquals(2, t.size());
        assertNull(t.get(0));
        assertNull(t.get(-5));
        assertNull(t.get(1L << 40));
    }

    @Test
    void growsPastItsFirstArray() {
        HandleTable<Integer> t = new HandleTable<>();
        long[] h = new long[1000];
        for (int i = 0; i < h.length; i++) {
            h[i] = t.add(i);
        }
        for (int i = 0; i < h.length; i++) {
            assertEquals(i, t.get(h[i]));
        }
        assertEquals(1000, t.drain().size());
        assertEquals(0, t.size());
    }

    @Test
    void requestsCarryCommAndIdAndAreNeverNull() {
        long r = Comm.request(3, 0);
        assertNotEquals(0, r);
        assertEquals(3, Comm.commOf(r));
        assertEquals(0, Comm.idOf(r));
        long s = Comm.request(1 << 20, 255);
        assertEquals(1 << 20, Comm.commOf(s));
        assertEquals(255, Comm.idOf(s));
    }
}
