package io.jmesh.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class IpPrefixTest {
    private static IpPrefix p(String s) {
        return IpPrefix.parse(s);
    }

    @Test
    void parsesAndPrints() {
        assertEquals("192.168.101.2/24", p("192.168.101.2/24").toString());
        assertEquals("fd00:0:0:0:0:0:0:2/64", p("fd00::2/64").toString());
        assertEquals(32, p("10.0.0.1").prefixLength());
        assertEquals("192.168.0.0/16", p("192.168.101.2/16").network().toString());
    }

    @Test
    void rejectsBadText() {
        assertThrows(IllegalArgumentException.class, () -> p("example.com/24"));
        assertThrows(IllegalArgumentException.class, () -> p("10.0.0.1/33"));
        assertThrows(IllegalArgumentException.class, () -> p("10.0.0.1/x"));
    }

    @Test
    void sharedSubnetNeedsBothNetmasks() {
        assertTrue(p("192.168.101.2/24").sharesSubnetWith(p("192.168.101.3/24")));
        assertFalse(p("192.168.101.2/24").sharesSubnetWith(p("192.168.102.3/24")));
        assertTrue(p("10.0.0.0/31").sharesSubnetWith(p("10.0.0.1/31")));
        assertFalse(p("10.0.0.1/31").sharesSubnetWith(p("10.0.0.2/31")));
        // a /16 contains the /24 peer, but the /24 peer does not contain the /16 address: not one link
        assertFalse(p("192.168.1.2/16").sharesSubnetWith(p("192.168.101.3/24")));
        assertFalse(p("192.168.1.2/24").sharesSubnetWith(p("fd00::2/64")));
    }
}
