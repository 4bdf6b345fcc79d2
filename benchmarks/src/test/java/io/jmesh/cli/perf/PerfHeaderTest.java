package io.jmesh.cli.perf;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.LocalLink;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The peer's MTU for the header: the one on the local link's subnet, from the peer's "ADDR:MTU,..." list. */
class PerfHeaderTest {
    private static final LocalLink LINK = new LocalLink("rxe0", 1, 1, IpPrefix.parse("192.168.101.1/24"), 25_000);

    @Test
    void thePeersMtuOnThisLinksSubnet() {
        assertEquals(1024, PerfHeader.peerMtu(LINK, "10.0.0.2:4096,192.168.101.2:1024"));
        assertEquals(4096, PerfHeader.peerMtu(LINK, "192.168.101.3:4096"));
    }

    @Test
    void unknownOrMalformedIsZero() {
        assertEquals(0, PerfHeader.peerMtu(LINK, null), "an older peer sends none");
        assertEquals(0, PerfHeader.peerMtu(LINK, "10.0.0.2:4096"), "no address on this subnet");
        for (String bad : new String[] {"", ",", "192.168.101.2", "192.168.101.2:", "192.168.101.2:x",
                "192.168.101.2:99999999", "host:1024", ":1024"}) {
            assertEquals(0, PerfHeader.peerMtu(LINK, bad), bad);
        }
    }
}
