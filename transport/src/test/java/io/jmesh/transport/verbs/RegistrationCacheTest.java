package io.jmesh.transport.verbs;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

class RegistrationCacheTest {
    /** Records what would be registered: "start+length". */
    static final class Recorder implements RegistrationCache.Registrar<String> {
        final List<String> registered = new ArrayList<>();
        final List<String> deregistered = new ArrayList<>();

        @Override
        public String register(long start, long length) {
            String r = Long.toHexString(start) + "+" + Long.toHexString(length);
            registered.add(r);
            return r;
        }

        @Override
        public void deregister(String region) {
            deregistered.add(region);
        }
    }

    @Test
    void registersWholePagesAndSharesACoveringRegistration() {
        Recorder rec = new Recorder();
        try (RegistrationCache<String> cache = new RegistrationCache<>(4096, rec)) {
            var a = cache.acquire(0x10010, 100);
            assertEquals("10000+1000", a.region());
            var b = cache.acquire(0x10800, 0x800); // same page
            assertSame(a, b);
            var c = cache.acquire(0x10f00, 0x200); // crosses into the next page: new registration
            assertEquals("10000+2000", c.region());
            var d = cache.acquire(0x11000, 0x100); // covered by c
            assertSame(c, d);
            assertEquals(List.of("10000+1000", "10000+2000"), rec.registered);
            assertEquals(2, cache.size());

            cache.release(a);
            assertEquals(List.of(), rec.deregistered);
            cache.release(b);
            assertEquals(List.of("10000+1000"), rec.deregistered);
            cache.release(c);
            cache.release(d);
            assertEquals(List.of("10000+1000", "10000+2000"), rec.deregistered);
            assertEquals(0, cache.size());
            assertThrows(IllegalStateException.class, () -> cache.release(a));
        }
    }

    @Test
    void zeroLengthStillRegistersAPageAndBadRangesAreRefused() {
        Recorder rec = new Recorder();
        try (RegistrationCache<String> cache = new RegistrationCache<>(4096, rec)) {
            assertEquals("2000+1000", cache.acquire(0x2000, 0).region());
            assertThrows(IllegalArgumentException.class, () -> cache.acquire(0x1000, -1));
            assertThrows(IllegalArgumentException.class, () -> cache.acquire(Long.MAX_VALUE - 10, 100));
        }
        assertThrows(IllegalArgumentException.class, () -> new RegistrationCache<>(3000, rec));
    }

    @Test
    void closeDeregistersWhatIsStillHeld() {
        Recorder rec = new Recorder();
        RegistrationCache<String> cache = new RegistrationCache<>(4096, rec);
        cache.acquire(0x1000, 10);
        cache.acquire(0x9000, 0x3000);
        cache.close();
        assertEquals(rec.registered, rec.deregistered);
        assertThrows(IllegalStateException.class, () -> cache.acquire(0x1000, 10));
    }
}
