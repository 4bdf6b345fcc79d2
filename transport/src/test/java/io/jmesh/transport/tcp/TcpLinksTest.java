package io.jmesh.transport.tcp;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.LocalLink;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which addresses the TCP provider uses, on a made-up host (no sockets are opened). */
class TcpLinksTest {
    private static final List<TcpLinks.InterfaceAddressInfo> HOST = List.of(
            new TcpLinks.InterfaceAddressInfo("lo", IpPrefix.parse("127.0.0.1/8"), true, true),
            new TcpLinks.InterfaceAddressInfo("lo", IpPrefix.parse("::1/128"), true, true),
            new TcpLinks.InterfaceAddressInfo("eth0", IpPrefix.parse("192.168.101.2/24"), true, false),
            new TcpLinks.InterfaceAddressInfo("eth0", IpPrefix.parse("fe80::1/64"), true, false),
            new TcpLinks.InterfaceAddressInfo("eth1", IpPrefix.parse("192.168.100.2/30"), true, false),
            new TcpLinks.InterfaceAddressInfo("eth1", IpPrefix.parse("fd00:100::2/64"), true, false),
            new TcpLinks.InterfaceAddressInfo("eth2", IpPrefix.parse("10.9.0.2/16"), false, false),
            new TcpLinks.InterfaceAddressInfo("virbr0", IpPrefix.parse("169.254.3.3/16"), true, false));

    private static long speed(String device) {
        return switch (device) {
            case "eth0" -> 100_000;
            case "eth1" -> -1;
            default -> 0;
        };
    }

    @Test
    void everyUpAddressButLoopbackAndLinkLocalWithItsRealPrefix() {
        List<LocalLink> links = TcpLinks.select(List.of(), HOST, TcpLinksTest::speed);
        assertEquals(List.of(LocalLink.tcp(IpPrefix.parse("192.168.101.2/24"), 100_000),
                LocalLink.tcp(IpPrefix.parse("192.168.100.2/30"), 0),
                LocalLink.tcp(IpPrefix.parse("fd00:100::2/64"), 0)), links);
        assertTrue(links.stream().allMatch(l -> l.device().equals(LocalLink.TCP)));
    }

    @Test
    void configuredAddressesAreUsedAsGiven() {
        List<LocalLink> links = TcpLinks.select(List.of(IpPrefix.parse("192.168.100.2/30"),
                IpPrefix.parse("127.0.101.2/24")), HOST, TcpLinksTest::speed);
        assertEquals(List.of(LocalLink.tcp(IpPrefix.parse("192.168.100.2/30"), 0),
                LocalLink.tcp(IpPrefix.parse("127.0.101.2/24"), 0)), links);
    }

    @Test
    void aConfiguredAddressNotOnThisHostIsNamedWithTheFix() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TcpLinks.select(List.of(IpPrefix.parse("192.168.102.2/24")), HOST, TcpLinksTest::speed));
        assertTrue(e.getMessage().contains("JMESH_ADDRESSES lists 192.168.102.2/24")
                && e.getMessage().contains("ip addr") && e.getMessage().contains("eth0 192.168.101.2/24"),
                e.getMessage());
    }

    @Test
    void aConfiguredAddressOnADownInterfaceIsNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TcpLinks.select(List.of(IpPrefix.parse("10.9.0.2/16")), HOST, TcpLinksTest::speed));
        assertTrue(e.getMessage().contains("eth2 is down"), e.getMessage());
    }

    @Test
    void noUsableAddressSaysWhatToDo() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> TcpLinks.select(List.of(), HOST.subList(0, 2), TcpLinksTest::speed));
        assertTrue(e.getMessage().contains("JMESH_ADDRESSES"), e.getMessage());
    }

    @Test
    void thisHostsInterfacesNeverYieldLoopbackOrLinkLocal() {
        List<LocalLink> links;
        try {
            links = TcpLinks.discover(List.of());
        } catch (IllegalStateException e) {
            return; // a host with no address but loopback: nothing to check
        }
        for (LocalLink l : links) {
            assertTrue(!l.prefix().address().isLoopbackAddress() && !l.prefix().address().isLinkLocalAddress(),
                    l.toString());
            assertTrue(l.speedMbps() >= 0);
        }
    }

    @Test
    void addressesArePrintedShort() throws Exception {
        assertEquals("[::1]", DataSockets.host(java.net.InetAddress.getByName("::1")));
        assertEquals("[fd00::3]", DataSockets.host(java.net.InetAddress.getByName("fd00:0:0:0:0:0:0:3")));
        assertEquals("[fd00:0:1::2]", DataSockets.host(java.net.InetAddress.getByName("fd00:0:1:0:0:0:0:2")));
        assertEquals("[1:0:2:3:4:5:6:7]", DataSockets.host(java.net.InetAddress.getByName("1:0:2:3:4:5:6:7")));
        assertEquals("[::]", DataSockets.host(java.net.InetAddress.getByName("::")));
        assertEquals("127.0.101.3", DataSockets.host(java.net.InetAddress.getByName("127.0.101.3")));
    }

    @Test
    void speedOfAnUnknownInterfaceIsZero() {
        assertEquals(0, TcpLinks.speedMbps("no-such-interface-jmesh"));
        assertEquals(0, TcpLinks.speedMbps("../etc"));
    }
}
