package io.jmesh.transport.tcp;

import io.jmesh.api.RemoteRegion;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The registry of open registrations by id, and the region a registration hands out. */
class TcpRegistryTest {
    @Test
    void idsAreFoundUntilClosedThroughGrowthAndShrinking() {
        try (Arena arena = Arena.ofConfined()) {
            TcpRegistry registry = new TcpRegistry();
            MemorySegment m = arena.allocate(64);
            List<TcpRegistration> regs = new ArrayList<>();
            Set<Long> ids = new HashSet<>();
            for (int i = 0; i < 1000; i++) {
                TcpRegistration r = new TcpRegistration(m, registry);
                regs.add(r);
                ids.add(r.id);
                assertNotEquals(0, r.id);
            }
            assertEquals(1000, ids.size(), "distinct ids");
            assertEquals(1000, registry.size());
            for (TcpRegistration r : regs) {
                assertSame(r, registry.lookup(r.id));
            }
            for (int i = 0; i < 1000; i += 2) {
                regs.get(i).close();
                regs.get(i).close(); // twice is harmless
            }
            assertEquals(500, registry.size());
            for (int i = 0; i < 1000; i++) {
                TcpRegistration r = regs.get(i);
                if (i % 2 == 0) {
                    assertNull(registry.lookup(r.id), "closed registration " + i);
                } else {
                    assertSame(r, registry.lookup(r.id), "open registration " + i);
                }
            }
            for (int i = 1; i < 1000; i += 2) {
                regs.get(i).close();
            }
            assertEquals(0, registry.size());
            assertNull(registry.lookup(0));
            assertNull(registry.lookup(regs.get(1).id));
        }
    }

    @Test
    void theRegionCarriesTheIdAsTwoKeys() {
        try (Arena arena = Arena.ofConfined()) {
            TcpRegistry registry = new TcpRegistry();
            MemorySegment m = arena.allocate(4096);
            TcpRegistration r = new TcpRegistration(m, registry);
            RemoteRegion region = RemoteRegion.decode(r.remote().encode());
            assertEquals("tcp", region.provider());
            assertEquals(m.address(), region.address());
            assertEquals(4096, region.length());
            assertEquals(2, region.keyCount());
            assertEquals(r.id, TcpRegistration.idOf(region));
            assertSame(r, registry.lookup(TcpRegistration.idOf(region)));
            assertEquals(0, TcpRegistration.idOf(new RemoteRegion("tcp", 0, 1, new int[] {1})), "one key is no id");
            TcpRegistration unregistered = new TcpRegistration(m);
            assertThrows(IllegalStateException.class, unregistered::remote);
            r.close();
            IllegalStateException e = assertThrows(IllegalStateException.class, r::remote);
            assertEquals("the registration is closed; register the memory again to share it", e.getMessage());
        }
    }
}
