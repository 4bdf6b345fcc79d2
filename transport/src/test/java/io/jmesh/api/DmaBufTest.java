package io.jmesh.api;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** GPU memory over TCP: the provider says it cannot, and a registration attempt says what to do instead. */
class DmaBufTest {
    @Test
    void theTcpProviderCannotRegisterGpuMemoryAndSaysSo() {
        try (Fabric f = ProgressTest.tcp("127.0.0.1/8")) {
            assertFalse(f.supportsDmaBuf("tcp"));
            assertFalse(f.supportsDmaBuf("lo"));
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    () -> f.registerDmaBuf(3, 0, 4096, 0x7f00_0000_0000L));
            assertTrue(e.getMessage().contains("tcp provider cannot register GPU memory"), e.getMessage());
            assertTrue(e.getMessage().contains("host memory"), e.getMessage());
        }
    }
}
