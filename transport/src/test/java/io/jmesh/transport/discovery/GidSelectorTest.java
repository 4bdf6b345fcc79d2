package io.jmesh.transport.discovery;

import io.jmesh.api.IpPrefix;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.List;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GidSelectorTest {
    private static GidEntry entry(int index, int port, GidType type, String address) throws Exception {
        return new GidEntry(index, port, type, GidEntry.gidOf(InetAddress.getByName(address)), 3);
    }

    /** A ConnectX-style table: link-local v1/v2 at 0/1, the IPv4 address as v1 at 2 and v2 at 3. */
    private static List<GidEntry> connectX() throws Exception {
        return List.of(
                entry(0, 1, GidType.ROCE_V1, "fe80::1"),
                entry(1, 1, GidType.ROCE_V2, "fe80::1"),
                entry(2, 1, GidType.ROCE_V1, "192.168.101.2"),
                entry(3, 1, GidType.ROCE_V2, "192.168.101.2"),
                entry(4, 1, GidType.ROCE_V1, "fd00:101::2"),
                entry(5, 1, GidType.ROCE_V2, "fd00:101::2"));
    }

    @Test
    void picksTheRoceV2EntryThatMapsTheAddressNotAFixedIndex() throws Exception {
        assertEquals(3, GidSelector.roceV2Index(connectX(), 1, InetAddress.getByName("192.168.101.2")));
        assertEquals(5, GidSelector.roceV2Index(connectX(), 1, InetAddress.getByName("fd00:101::2")));
        // rxe: RoCE v2 only, the IPv4 GID at index 1
        List<GidEntry> rxe = List.of(entry(0, 1, GidType.ROCE_V2, "fe80::5054:ff:fe12:0"),
                entry(1, 1, GidType.ROCE_V2, "192.168.100.2"));
        assertEquals(1, GidSelector.roceV2Index(rxe, 1, InetAddress.getByName("192.168.100.2")));
    }

    @Test
    void otherPortsAndOtherAddressesDoNotMatch() throws Exception {
        assertEquals(-1, GidSelector.roceV2Index(connectX(), 2, InetAddress.getByName("192.168.101.2")));
        assertEquals(-1, GidSelector.roceV2Index(connectX(), 1, InetAddress.getByName("192.168.101.3")));
    }

    @Test
    void aRoceV1OnlyAddressIsExplained() throws Exception {
        List<GidEntry> v1 = List.of(entry(0, 1, GidType.ROCE_V1, "10.0.0.1"));
        InetAddress a = InetAddress.getByName("10.0.0.1");
        assertEquals(-1, GidSelector.roceV2Index(v1, 1, a));
        String why = GidSelector.missingReason(v1, 1, a, "mlx5_0", "enp1s0f0np0");
        assertTrue(why.contains("only RoCE v1") && why.contains("mlx5_0"), why);
    }

    @Test
    void aMissingAddressNamesTheDeviceAndTheNetdevToCheck() throws Exception {
        String why = GidSelector.missingReason(connectX(), 1, InetAddress.getByName("192.168.102.2"), "rocep1s0f0",
                "enp1s0f0np0");
        assertEquals("no RoCE v2 GID for 192.168.102.2 on rocep1s0f0; check 'ip addr' on enp1s0f0np0 (the address "
                + "must be up on that netdev) and 'rdma link' (the port must be ACTIVE)", why);
    }

    @Test
    void mapAddressesPairsEachAddressAndHonoursAForcedIndex() throws Exception {
        List<IpPrefix> addrs = List.of(IpPrefix.parse("192.168.101.2/24"), IpPrefix.parse("192.168.200.9/16"));
        List<PortAddress> auto = Discovery.mapAddresses("mlx5_0", 1, "eth1", addrs, connectX(), OptionalInt.empty());
        assertEquals(3, auto.get(0).gidIndex());
        assertNull(auto.get(0).problem());
        assertEquals(-1, auto.get(1).gidIndex());
        assertTrue(auto.get(1).problem().startsWith("no RoCE v2 GID for 192.168.200.9 on mlx5_0"));

        List<PortAddress> forced = Discovery.mapAddresses("mlx5_0", 1, "eth1", addrs, connectX(), OptionalInt.of(7));
        assertEquals(List.of(7, 7), forced.stream().map(PortAddress::gidIndex).toList());
    }

    @Test
    void gidTextShowsMappedAndIpv6Forms() throws Exception {
        assertEquals("::ffff:192.168.101.2", entry(3, 1, GidType.ROCE_V2, "192.168.101.2").text());
        assertEquals("fd00:101:0:0:0:0:0:2", entry(5, 1, GidType.ROCE_V2, "fd00:101::2").text());
    }

    @Test
    void mtuEnumToBytes() {
        assertEquals(1024, Discovery.mtuBytes(3));
        assertEquals(4096, Discovery.mtuBytes(5));
        assertEquals(0, Discovery.mtuBytes(0));
    }

    @Test
    void sysfsRateParsing() {
        assertEquals(100_000, Sysfs.rateMbps("100 Gb/sec (4X EDR)"));
        assertEquals(2_500, Sysfs.rateMbps("2.5 Gb/sec (1X SDR)"));
        assertEquals(0, Sysfs.rateMbps(""));
        assertEquals(0, Sysfs.rateMbps("fast"));
    }
}
