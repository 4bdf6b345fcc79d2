package io.jmesh.cli.doctor;

import io.jmesh.transport.discovery.DiscoveryResult;
import io.jmesh.transport.discovery.PortAddress;
import io.jmesh.transport.discovery.RdmaDevice;
import io.jmesh.transport.discovery.RdmaPort;
import io.jmesh.api.IpPrefix;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The doctor's checks on fake discovery results: each problem is found, and each finding carries its fix. */
class ChecksTest {
    private static final Memlock ROOT = new Memlock(8L << 20, true);

    static RdmaPort port(int mtu, boolean active, String netdev, int netdevMtu, PortAddress... addresses) {
        return new RdmaPort(1, active ? "PORT_ACTIVE" : "PORT_DOWN", active, mtu, "Ethernet", "100 Gb/sec (4X EDR)",
                100_000, netdev, netdevMtu, List.of(addresses), List.of());
    }

    static PortAddress addr(String prefix, int gid) {
        return new PortAddress(IpPrefix.parse(prefix), gid, null);
    }

    static DiscoveryResult found(RdmaDevice... devices) {
        return new DiscoveryResult(List.of(devices), List.of(), null);
    }

    static RdmaDevice dev(String name, RdmaPort port) {
        return new RdmaDevice(name, 1, "", List.of(port));
    }

    private static List<Check> problems(List<Check> checks) {
        return checks.stream().filter(c -> c.status() == Check.Status.FAIL || c.status() == Check.Status.WARN)
                .toList();
    }

    @Test
    void aHealthyTriangleNodePassesEveryCheck() {
        List<Check> checks = Checks.local(found(
                dev("rocep1s0f0", port(4096, true, "enp1s0f0np0", 9000, addr("192.168.101.2/24", 3),
                        addr("fe80::5054:ff:fe12:0/64", 0))),
                dev("rocep1s0f1", port(4096, true, "enp1s0f1np1", 9000, addr("192.168.100.2/24", 3)))),
                new Memlock(Memlock.UNLIMITED, false));
        assertEquals(List.of(), problems(checks), checks.toString());
        String all = checks.stream().map(Check::render).reduce("", String::concat);
        assertTrue(all.contains("RDMA devices: 2 (rocep1s0f0, rocep1s0f1)"), all);
        assertTrue(all.contains("ports ACTIVE: rocep1s0f0:1, rocep1s0f1:1"), all);
        assertTrue(all.contains("192.168.101.0/24 (rocep1s0f0), 192.168.100.0/24 (rocep1s0f1)"), all);
        assertTrue(all.contains("memlock: unlimited"), all);
        // link-local addresses are on every link: never routed by, so not listed
        assertTrue(checks.stream().anyMatch(c -> c.title().equals("RoCE v2 GID for every address: rocep1s0f0 "
                + "192.168.101.2/24 -> GID 3, rocep1s0f1 192.168.100.2/24 -> GID 3")), all);
        assertFalse(all.contains("fe80"), all);
    }

    @Test
    void noRdmaAtAllFailsWithTheReasonAsTheFix() {
        List<Check> checks = Checks.local(DiscoveryResult.unavailable("no RDMA devices: load mlx5_ib"), ROOT);
        Check c = checks.getFirst();
        assertEquals(Check.Status.FAIL, c.status());
        assertTrue(c.fix().startsWith("no RDMA devices: load mlx5_ib; "), c.fix());
        // the way out for a node without RDMA is a mode of doctor that can pass, not 'use TCP' alone
        assertTrue(c.fix().contains("'jmesh doctor --provider tcp [PEER...]'"), c.fix());
    }

    @Test
    void aPortThatIsDownFailsAndSaysHowToBringItUp() {
        List<Check> p = problems(Checks.local(found(dev("rxe1", port(1024, false, "eth1", 1500,
                addr("192.168.102.2/24", 1)))), ROOT));
        Check down = p.stream().filter(c -> c.title().contains("DOWN")).findFirst().orElseThrow();
        assertEquals(Check.Status.FAIL, down.status());
        assertTrue(down.title().startsWith("rxe1:1 is DOWN, not ACTIVE (netdev eth1)"), down.title());
        assertTrue(down.fix().contains("ip link set eth1 up") && down.fix().contains("ethtool eth1"), down.fix());
    }

    @Test
    void anAddressWithoutRoceV2GidFailsWithDiscoverysReason() {
        PortAddress bad = new PortAddress(IpPrefix.parse("10.9.9.1/24"), -1, "no RoCE v2 GID maps 10.9.9.1 on rxe0 "
                + "port 1: enable RoCE v2");
        List<Check> p = problems(Checks.local(found(dev("rxe0", port(4096, true, "eth0", 9000, bad))), ROOT));
        assertEquals(1, p.size(), p.toString());
        assertEquals("no RoCE v2 GID for 10.9.9.1/24 on rxe0:1", p.getFirst().title());
        assertEquals(bad.problem(), p.getFirst().fix());
    }

    @Test
    void aPortWithoutAddressIsAWarningWithTheCommandToAddOne() {
        List<Check> p = problems(Checks.local(found(dev("rxe0", port(4096, true, "eth0", 9000))), ROOT));
        assertEquals(1, p.size(), p.toString());
        assertEquals(Check.Status.WARN, p.getFirst().status());
        assertTrue(p.getFirst().fix().contains("ip addr add") && p.getFirst().fix().contains("dev eth0"));
    }

    @Test
    void anMtuBelow4096WarnsWithTheMtu9000Fix() {
        List<Check> p = problems(Checks.local(found(dev("rxe0", port(1024, true, "eth0", 1500,
                addr("192.168.100.1/24", 1)))), ROOT));
        assertEquals(1, p.size(), p.toString());
        Check mtu = p.getFirst();
        assertEquals(Check.Status.WARN, mtu.status());
        assertTrue(mtu.title().contains("RDMA MTU 1024 (eth0 MTU 1500)"), mtu.title());
        assertTrue(mtu.fix().contains("ip link set eth0 mtu 9000"), mtu.fix());
    }

    @Test
    void twoLinksOnOneSubnetFail() {
        // the seeds' warning: DO NOT use the same subnet on both twins
        List<Check> p = problems(Checks.local(found(
                dev("rocep1s0f1", port(4096, true, "enp1s0f1np1", 9000, addr("192.168.177.11/24", 3))),
                dev("roceP2p1s0f1", port(4096, true, "enP2p1s0f1np1", 9000, addr("192.168.177.12/24", 3)))),
                ROOT));
        assertEquals(1, p.size(), p.toString());
        assertEquals(Check.Status.FAIL, p.getFirst().status());
        assertTrue(p.getFirst().title().contains("are on one subnet (192.168.177.0/24)"), p.getFirst().title());
        assertTrue(p.getFirst().fix().contains("subnet of its own"), p.getFirst().fix());
    }

    /** The testbed's old /30 triangle gave guest c its subnet's broadcast address: doctor must fail that. */
    @Test
    void aNetworkOrBroadcastAddressFailsAndA31DoesNot() {
        List<Check> p = problems(Checks.local(found(
                dev("rxe0", port(4096, true, "eth0", 9000, addr("10.0.0.3/30", 1))),
                dev("rxe1", port(4096, true, "eth1", 9000, addr("10.0.1.0/24", 1)))), ROOT));
        assertEquals(2, p.size(), p.toString());
        assertTrue(p.get(0).title().contains("10.0.0.3/30 is the broadcast address of 10.0.0.0/30"), p.get(0).title());
        assertTrue(p.get(0).fix().contains("give eth0 one of the subnet's host addresses (10.0.0.1 to 10.0.0.2)"),
                p.get(0).fix());
        assertTrue(p.get(1).title().contains("is the network address of 10.0.1.0/24"), p.get(1).title());
        assertTrue(problems(Checks.local(found(
                dev("rxe0", port(4096, true, "eth0", 9000, addr("10.0.0.0/31", 1))),
                dev("rxe1", port(4096, true, "eth1", 9000, addr("10.0.1.1/31", 1)))), ROOT)).isEmpty(),
                "both addresses of a /31 are hosts (RFC 3021)");
    }

    @Test
    void overlappingPrefixesOfDifferentLengthsAlsoClash() {
        List<Check> p = problems(Checks.local(found(
                dev("rxe0", port(4096, true, "eth0", 9000, addr("10.1.0.1/16", 1))),
                dev("rxe1", port(4096, true, "eth1", 9000, addr("10.1.2.1/24", 1)))), ROOT));
        assertEquals(1, p.size(), p.toString());
        assertTrue(p.getFirst().title().contains("(10.1.0.0/16)"), p.getFirst().title());
    }

    @Test
    void memlock() {
        assertEquals(Check.Status.OK, Checks.memlock(new Memlock(Memlock.UNLIMITED, false)).status());
        assertEquals(Check.Status.OK, Checks.memlock(new Memlock(64 << 10, true)).status());
        Check low = Checks.memlock(new Memlock(64 << 10, false));
        assertEquals(Check.Status.FAIL, low.status());
        assertTrue(low.title().contains("64 KiB") && low.fix().contains("memlock unlimited"), low.render());
        assertEquals(Check.Status.WARN, Checks.memlock(new Memlock(512L << 20, false)).status());
        assertEquals(Check.Status.WARN, Checks.memlock(new Memlock(Memlock.UNKNOWN, false)).status());
    }

    @Test
    void memlockIsReadFromProcText() {
        assertEquals(65536, Memlock.parseLimits("Limit                     Soft Limit           Hard Limit   Units\n"
                + "Max locked memory         65536                65536        bytes\n"));
        assertEquals(Memlock.UNLIMITED, Memlock.parseLimits("Max locked memory         unlimited            "
                + "unlimited            bytes\n"));
        assertTrue(Memlock.parseCapIpcLock("Name:\tjava\nCapEff:\t000001ffffffffff\n"));
        assertFalse(Memlock.parseCapIpcLock("CapEff:\t0000000000000000\n"));
    }

    static NodeReport node(String name, String... links) {
        List<NodeReport.Link> l = new java.util.ArrayList<>();
        for (String s : links) {
            String[] f = s.split(" ");
            l.add(new NodeReport.Link(f[0], 1, f[1], IpPrefix.parse(f[2]), Integer.parseInt(f[3]),
                    Integer.parseInt(f[4]), 100_000, true));
        }
        return new NodeReport(name, l);
    }

    @Test
    void anMtuMismatchWithThePeerFailsNamingBothEnds() {
        NodeReport a = node("spark1", "rocep1s0f0 enp1s0f0np0 192.168.101.2/24 9000 4096",
                "rocep1s0f1 enp1s0f1np1 192.168.100.2/24 9000 4096");
        NodeReport b = node("spark2", "rocep1s0f0 enp1s0f0np0 192.168.101.3/24 1500 1024");
        List<Check> c = Checks.peer(a, new PeerResult("spark2", b, "rdma", "rocep1s0f0 192.168.101.2/24 -> "
                + "192.168.101.3/24", 2_000_000, 65536, null, null));
        assertEquals(2, c.size(), c.toString());
        assertEquals(Check.Status.OK, c.get(0).status());
        Check mtu = c.get(1);
        assertEquals(Check.Status.FAIL, mtu.status());
        assertTrue(mtu.title().contains("MTU mismatch on 192.168.101.0/24: spark1 enp1s0f0np0 9000 / RDMA 4096, "
                + "spark2 enp1s0f0np0 1500 / RDMA 1024"), mtu.title());
        assertTrue(mtu.fix().contains("mtu 9000' on spark2"), mtu.fix());
    }

    @Test
    void aPeerThatAnsweredOverTcpOnlyOrNotAtAllFails() {
        NodeReport a = node("a", "rxe0 eth0 192.168.100.1/24 1500 1024");
        Check tcp = Checks.peer(a, new PeerResult("b", null, "tcp", "tcp x", 1, 1, null, null)).getFirst();
        assertEquals(Check.Status.FAIL, tcp.status());
        assertTrue(tcp.title().contains("not RDMA"));
        assertTrue(tcp.fix().contains("jmesh doctor --provider tcp"), tcp.fix());
        Check tcpMode = Checks.peer(a, new PeerResult("b", null, "tcp", "tcp x", 1, 1, null, null), "tcp")
                .getFirst();
        assertEquals(Check.Status.OK, tcpMode.status(), tcpMode.title());
        assertTrue(tcpMode.title().contains("TCP handshake over tcp x"), tcpMode.title());
        Check gone = Checks.peer(a, PeerResult.failed("b", null, "no jmesh server at b:18517", "start it"))
                .getFirst();
        assertEquals(Check.Status.FAIL, gone.status());
        assertEquals("start it", gone.fix());
    }

    @Test
    void aFailedCheckWithoutAFixCannotBeMade() {
        assertThrows(IllegalArgumentException.class, () -> Check.fail("broken", null));
        assertThrows(IllegalArgumentException.class, () -> Check.warn("odd", " "));
    }

    @Test
    void reportsSurviveTheWireAndHostileOnesAreRejected() {
        NodeReport a = node("tb-a", "rxe0 eth0 192.168.101.1/24 1500 1024", "rxe1 eth1 192.168.100.1/24 9000 4096");
        String wire = a.encode();
        Map<String, String> f = Map.of("name", wire.substring(5, wire.indexOf(' ')),
                "links", wire.substring(wire.indexOf("links=") + 6));
        assertEquals(a, NodeReport.decode(f.get("name"), f.get("links")));
        assertThrows(IllegalArgumentException.class, () -> NodeReport.decode("a b", ""));
        assertThrows(IllegalArgumentException.class, () -> NodeReport.decode("a", "rxe0|1|eth0|1.2.3.4/24|1500"));
        assertThrows(IllegalArgumentException.class, () -> NodeReport.decode("a", "rxe0|1|eth0|999.2.3.4/24|1|1|1|1"));
        assertThrows(IllegalArgumentException.class, () -> NodeReport.decode("a", "rxe0|0|eth0|1.2.3.4/24|1|1|1|1"));
        assertThrows(IllegalArgumentException.class, () -> NodeReport.decode("a",
                String.join(";", java.util.Collections.nCopies(65, "rxe0|1|eth0|1.2.3.4/24|1|1|1|1"))));
    }

    @Test
    void theMeshMapShowsEveryLinkAndWhatIsMissing() {
        NodeReport a = node("tb-a", "rxe0 eth0 192.168.101.1/24 1500 1024", "rxe1 eth1 192.168.100.1/24 1500 1024");
        NodeReport b = node("tb-b", "rxe0 eth0 192.168.101.2/24 1500 1024", "rxe1 eth1 192.168.102.2/24 1500 1024");
        NodeReport c = node("tb-c", "rxe0 eth0 192.168.100.3/24 1500 1024", "rxe1 eth1 192.168.102.3/24 1500 1024");
        String full = MeshMap.render(List.of(a, b, c), Map.of("tb-b", "RDMA ok", "tb-c", "RDMA ok"));
        assertTrue(full.startsWith("mesh: 3 nodes, 3 links"), full);
        assertTrue(full.contains("tb-a  rxe0     192.168.101.1   ==[ 192.168.101.0/24"), full);
        assertTrue(full.contains("192.168.101.2   rxe0      tb-b  RDMA ok"), full);
        assertTrue(full.contains("(reported by the peers)"), full); // b-c, seen by neither end of this node
        assertFalse(full.contains("NO LINK"), full);
        NodeReport lonely = node("tb-d", "rxe0 eth0 10.0.0.4/24 1500 1024");
        String broken = MeshMap.render(List.of(a, b, lonely), Map.of());
        assertTrue(broken.contains("NO LINK"), broken);
        assertTrue(broken.contains("no node checked here is on this subnet"), broken);
    }

    @Test
    void theMeshMapDrawsRelayedPathsThroughTheNodeThatRelays() {
        NodeReport a = node("tb-a", "rxe0 eth0 192.168.100.1/24 1500 1024");
        NodeReport b = node("tb-b", "rxe0 eth0 192.168.100.2/24 1500 1024", "rxe1 eth1 192.168.101.2/24 1500 1024");
        NodeReport c = node("tb-c", "rxe0 eth0 192.168.101.3/24 1500 1024");
        Map<String, String> routes = new java.util.LinkedHashMap<>();
        routes.put("tb-b", "rxe0 192.168.100.1/24 -> 192.168.100.2/24");
        routes.put("tb-c", "rxe0 192.168.100.1/24 -> 192.168.101.3/24 via 192.168.100.2");
        String map = MeshMap.render(List.of(a, b, c), Map.of("tb-b", "RDMA ok", "tb-c", "RDMA ok"), routes);
        assertTrue(map.contains("routes from tb-a:"), map);
        assertTrue(map.lines().anyMatch(l -> l.contains("tb-c") && l.contains("relayed")
                && l.contains("tb-a ==> tb-b ==> tb-c") && l.endsWith("via 192.168.100.2")), map);
        assertTrue(map.lines().anyMatch(l -> l.trim().startsWith("tb-b") && l.contains("direct")
                && l.contains("tb-a ==> tb-b ")), map);
        assertTrue(map.lines().anyMatch(l -> l.trim().startsWith("tb-a") && l.contains("via tb-b")), map);
        assertFalse(map.lines().filter(l -> l.trim().startsWith("tb-a")).anyMatch(l -> l.contains("NO LINK")), map);
        assertEquals("192.168.9.9", MeshMap.relayName(List.of(a), "x via 192.168.9.9"));
        assertEquals(null, MeshMap.relayName(List.of(a), "rxe0 192.168.100.1/24 -> 192.168.100.2/24"));
    }
}
