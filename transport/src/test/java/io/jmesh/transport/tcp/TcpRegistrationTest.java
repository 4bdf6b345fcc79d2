package io.jmesh.transport.tcp;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Registrations and their ByteBuffer views, including a segment larger than a ByteBuffer can hold (a view over a
 * small allocation, reinterpreted; no byte of it is touched).
 */
class TcpRegistrationTest {
    @Test
    void rangeChecks() {
        try (Arena arena = Arena.ofConfined()) {
            TcpRegistration r = new TcpRegistration(arena.allocate(100));
            assertTrue(r.contains(0, 100));
            assertTrue(r.contains(100, 0));
            assertFalse(r.contains(1, 100));
            assertFalse(r.contains(-1, 1));
            assertFalse(r.contains(0, -1));
            assertFalse(r.contains(Long.MAX_VALUE, 1));
            r.close();
            assertFalse(r.contains(0, 1), "closed");
        }
    }

    @Test
    void viewsOfASegmentOverTwoGiBCoverEveryChunk() {
        try (Arena arena = Arena.ofConfined()) {
            long size = (5L << 30) + 12345;
            MemorySegment big = MemorySegment.ofAddress(arena.allocate(8).address()).reinterpret(size);
            TcpRegistration r = new TcpRegistration(big);
            assertEquals(6, r.windowCount());
            ViewCache cache = new ViewCache();
            int chunk = ChunkHeader.MAX_CHUNK;
            long[] offsets = {0, (1L << 30) - 5, (2L << 30) - 1, 3L << 30, (3L << 30) + 7, size - chunk, size - 1};
            for (long offset : offsets) {
                int length = (int) Math.min(chunk, size - offset);
                ByteBuffer b = cache.view(r, offset, length);
                assertEquals(length, b.remaining(), "at " + offset);
                assertEquals(big.address() + offset, MemorySegment.ofBuffer(b).address(), "at " + offset);
            }
            // the same registration and window reuse the same view: no allocation per chunk
            assertSame(cache.view(r, 10, 10), cache.view(r, 20, 10));
        }
    }

    @Test
    void theCacheKeepsAFewRegistrations() {
        try (Arena arena = Arena.ofConfined()) {
            ViewCache cache = new ViewCache();
            TcpRegistration[] regs = new TcpRegistration[ViewCache.ENTRIES];
            ByteBuffer[] first = new ByteBuffer[regs.length];
            for (int i = 0; i < regs.length; i++) {
                regs[i] = new TcpRegistration(arena.allocate(64));
                first[i] = cache.view(regs[i], 0, 8);
            }
            for (int i = 0; i < regs.length; i++) {
                assertSame(first[i], cache.view(regs[i], 8, 8), "registration " + i + " is still cached");
            }
        }
    }
}
