package io.jmesh.transport.discovery;

import io.jmesh.testbed.TestbedEnv;
import io.jmesh.api.IpPrefix;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Discovery on real rxe devices finds what the testbed set up: devices, netdevs, addresses, GID indexes. */
@Tag("rdma")
class DiscoveryInTestbedTest {
    @Test
    void findsEveryRxeDeviceWithItsNetdevAddressAndRoceV2Gid() {
        TestbedEnv.require();
        DiscoveryResult found = Discovery.scan(OptionalInt.empty());
        assertNull(found.unavailable());
        Map<String, RdmaDevice> byName = found.devices().stream()
                .collect(Collectors.toMap(RdmaDevice::name, d -> d));
        assertEquals(TestbedEnv.devices().stream().sorted().toList(), byName.keySet().stream().sorted().toList());
        for (String dev : TestbedEnv.devices()) {
            RdmaPort port = byName.get(dev).ports().getFirst();
            assertTrue(port.active(), dev + " is " + port.state());
            assertEquals("Ethernet", port.linkLayer());
            assertEquals(TestbedEnv.dev(dev, "NETDEV"), port.netdev());
            IpPrefix expected = IpPrefix.parse(TestbedEnv.dev(dev, "IP") + "/" + TestbedEnv.dev(dev, "PREFIX"));
            List<PortAddress> v4 = port.addresses().stream().filter(a -> a.prefix().isIpv4()).toList();
            assertEquals(List.of(expected), v4.stream().map(PortAddress::prefix).toList());
            assertEquals(Integer.parseInt(TestbedEnv.dev(dev, "GIDX")), v4.getFirst().gidIndex(),
                    "GID index of " + expected + " on " + dev);
            assertTrue(port.activeMtu() >= 256, "active MTU " + port.activeMtu());
        }
    }

    @Test
    void aForcedGidIndexIsUsedForEveryAddress() {
        TestbedEnv.require();
        DiscoveryResult found = Discovery.scan(OptionalInt.of(0));
        for (RdmaDevice d : found.devices()) {
            for (PortAddress a : d.ports().getFirst().addresses()) {
                assertEquals(0, a.gidIndex());
            }
        }
    }
}
