package io.jmesh.cli.doctor;

import io.jmesh.transport.discovery.DiscoveryResult;
import io.jmesh.transport.discovery.PortAddress;
import io.jmesh.transport.discovery.RdmaDevice;
import io.jmesh.transport.discovery.RdmaPort;
import io.jmesh.api.IpPrefix;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The checks of 'jmesh doctor', as pure functions of plain records (discovery results, the memlock limit, what the
 * peers reported), so that every finding and its fix can be tested with fake inputs. They follow the troubleshooting
 * sections of the DGX Spark and mesh guides: devices, ports, GIDs, MTUs, memlock, one subnet per link, reachability.
 */
public final class Checks {
    /** Below this, registering the buffers of a real job fails; a warning above it until unlimited. */
    static final long MEMLOCK_MIN = 64L << 20;

    /** For a node without RDMA: what to check instead (a mode of doctor that can pass, so no fix goes round). */
    static final String TCP_INSTEAD = "for a mesh without RDMA, 'jmesh doctor --provider tcp [PEER...]' checks what "
            + "the TCP provider needs (peers: 'jmesh doctor --serve --provider tcp')";

    private Checks() {
    }

    /** Everything that can be checked on this node alone. */
    public static List<Check> local(DiscoveryResult found, Memlock memlock) {
        List<Check> out = new ArrayList<>();
        devices(found, out);
        if (found.unavailable() == null && !found.devices().isEmpty()) {
            ports(found, out);
            gids(found, out);
            mtus(found, out);
            subnets(NodeReport.of("local", found), out);
        }
        out.add(memlock(memlock));
        return out;
    }

    static void devices(DiscoveryResult found, List<Check> out) {
        if (found.unavailable() != null) {
            out.add(Check.fail("RDMA devices: none", found.unavailable() + "; " + TCP_INSTEAD));
            return;
        }
        if (found.devices().isEmpty()) {
            out.add(Check.fail("RDMA devices: none could be opened", String.join("; ", found.problems())
                    + " (see 'jmesh devices')"));
            return;
        }
        out.add(Check.ok("RDMA devices: " + found.devices().size() + " (" + String.join(", ",
                found.devices().stream().map(RdmaDevice::name).toList()) + ")"));
        for (String p : found.problems()) {
            if (p.contains("skipped")) {
                out.add(Check.fail(p, "'jmesh devices' shows every device; the reason above names the cause"));
            }
        }
    }

    static void ports(DiscoveryResult found, List<Check> out) {
        List<String> active = new ArrayList<>();
        for (RdmaDevice d : found.devices()) {
            for (RdmaPort p : d.ports()) {
                String name = d.name() + ":" + p.number();
                String netdev = p.netdev().isEmpty() ? "<netdev>" : p.netdev();
                if (p.active()) {
                    active.add(name);
                } else {
                    out.add(Check.fail(name + " is " + p.state().replace("PORT_", "").toUpperCase(Locale.ROOT)
                                    + ", not ACTIVE" + (p.netdev().isEmpty() ? "" : " (netdev " + p.netdev() + ")"),
                            "check the cable and the link ('ethtool " + netdev + "', 'ip -s link show " + netdev
                                    + "'), then 'ip link set " + netdev + " up'; for a ConnectX also 'dmesg | grep "
                                    + "mlx5'"));
                }
            }
        }
        if (!active.isEmpty()) {
            out.add(Check.ok("ports ACTIVE: " + String.join(", ", active)));
        }
    }

    static void gids(DiscoveryResult found, List<Check> out) {
        List<String> good = new ArrayList<>();
        for (RdmaDevice d : found.devices()) {
            for (RdmaPort p : d.ports()) {
                if (p.addresses().isEmpty()) {
                    String netdev = p.netdev().isEmpty() ? "<netdev>" : p.netdev();
                    out.add(Check.warn(d.name() + ":" + p.number() + " (" + netdev + ") has no IP address, so "
                                    + "jmesh cannot use it",
                            "give the link an address on a subnet of its own, the same on both ends' prefix "
                                    + "length: 'ip addr add 192.168.10X.Y/24 dev " + netdev + "' (persist it with "
                                    + "netplan: docs/dgx-spark.md), or ignore this port if it is not cabled"));
                    continue;
                }
                for (PortAddress a : p.addresses()) {
                    if (a.prefix().address().isLinkLocalAddress()) {
                        continue; // every link has one: jmesh never routes by them
                    }
                    if (a.usable()) {
                        good.add(d.name() + " " + a.prefix() + " -> GID " + a.gidIndex());
                    } else {
                        out.add(Check.fail("no RoCE v2 GID for " + a.prefix() + " on " + d.name() + ":"
                                + p.number(), a.problem()));
                    }
                }
            }
        }
        if (!good.isEmpty()) {
            out.add(Check.ok("RoCE v2 GID for every address: " + String.join(", ", good)));
        }
    }

    static void mtus(DiscoveryResult found, List<Check> out) {
        for (RdmaDevice d : found.devices()) {
            for (RdmaPort p : d.ports()) {
                if (!p.active() || !p.linkLayer().equals("Ethernet")) {
                    continue;
                }
                String netdev = p.netdev().isEmpty() ? "<netdev>" : p.netdev();
                String what = d.name() + ":" + p.number() + " RDMA MTU " + p.activeMtu()
                        + (p.netdevMtu() > 0 ? " (" + netdev + " MTU " + p.netdevMtu() + ")" : "");
                if (p.activeMtu() < 4096) {
                    out.add(Check.warn("MTU " + what + ": below 4096, which costs bandwidth",
                            "set MTU 9000 on both ends of the link: 'ip link set " + netdev + " mtu 9000' (RoCE "
                                    + "then uses 4096; persist it with netplan: docs/dgx-spark.md); both ends must "
                                    + "agree"));
                } else {
                    out.add(Check.ok("MTU " + what));
                }
            }
        }
    }

    /** Each link on its own subnet: two links of different netdevs whose subnets overlap cannot be told apart. */
    static void subnets(NodeReport me, List<Check> out) {
        List<NodeReport.Link> links = me.links();
        boolean clash = false;
        for (int i = 0; i < links.size(); i++) {
            for (int j = i + 1; j < links.size(); j++) {
                NodeReport.Link a = links.get(i);
                NodeReport.Link b = links.get(j);
                boolean sameLink = a.device().equals(b.device()) && a.port() == b.port();
                if (!sameLink && overlap(a.address(), b.address())) {
                    clash = true;
                    out.add(Check.fail(label(a) + " and " + label(b) + " are on one subnet ("
                                    + wider(a.address(), b.address()).network() + ")",
                            "give each link a subnet of its own (e.g. 192.168.177.0/24 on one and 192.168.178.0/24 "
                                    + "on the other): jmesh, like NCCL, picks the link that reaches a peer by its "
                                    + "subnet and cannot tell these two apart"));
                }
            }
        }
        for (NodeReport.Link l : links) {
            String edge = edge(l.address());
            if (edge != null) {
                clash = true;
                out.add(Check.fail(label(l) + " is " + edge + " of " + l.address().network(),
                        "give " + (l.netdev().isEmpty() ? l.device() : l.netdev()) + " one of the subnet's host "
                                + "addresses (" + hosts(l.address()) + "): packets to " + edge + " go to every "
                                + "host or none, never to this link alone (a /31 has no such addresses)"));
            }
        }
        if (!clash && !links.isEmpty()) {
            out.add(Check.ok("each link on its own subnet: " + String.join(", ", links.stream()
                    .map(l -> l.address().network() + " (" + l.device() + ")").distinct().toList())));
        }
    }

    /** "the network address" or "the broadcast address" when an IPv4 address below /31 is one; else null. */
    static String edge(IpPrefix p) {
        byte[] a = p.address().getAddress();
        if (a.length != 4 || p.prefixLength() >= 31) {
            return null;
        }
        long v = ipv4(a);
        long host = (1L << (32 - p.prefixLength())) - 1;
        return (v & host) == 0 ? "the network address" : (v & host) == host ? "the broadcast address" : null;
    }

    /** The first and last host address of an IPv4 prefix below /31, e.g. "192.168.1.1 to 192.168.1.2". */
    private static String hosts(IpPrefix p) {
        long host = (1L << (32 - p.prefixLength())) - 1;
        long net = ipv4(p.address().getAddress()) & ~host & 0xffff_ffffL;
        return dotted(net + 1) + " to " + dotted(net + host - 1);
    }

    private static long ipv4(byte[] a) {
        return (a[0] & 0xffL) << 24 | (a[1] & 0xffL) << 16 | (a[2] & 0xffL) << 8 | (a[3] & 0xffL);
    }

    private static String dotted(long v) {
        return (v >>> 24 & 0xff) + "." + (v >>> 16 & 0xff) + "." + (v >>> 8 & 0xff) + "." + (v & 0xff);
    }

    static String label(NodeReport.Link l) {
        return l.device() + (l.netdev().isEmpty() ? "" : " (" + l.netdev() + ")") + " " + l.address();
    }

    static boolean overlap(IpPrefix a, IpPrefix b) {
        return a.contains(b.address()) || b.contains(a.address());
    }

    private static IpPrefix wider(IpPrefix a, IpPrefix b) {
        return a.prefixLength() <= b.prefixLength() ? a : b;
    }

    static Check memlock(Memlock m) {
        if (m.softBytes() == Memlock.UNLIMITED) {
            return Check.ok("memlock: unlimited");
        }
        if (m.capIpcLock()) {
            return Check.ok("memlock: " + describe(m.softBytes()) + ", lifted by CAP_IPC_LOCK (running as root)");
        }
        String fix = "raise it for the users that run jobs: add '* soft memlock unlimited' and '* hard memlock "
                + "unlimited' to /etc/security/limits.conf and log in again (systemd services: "
                + "LimitMEMLOCK=infinity; containers: --ulimit memlock=-1); 'ulimit -l' shows the limit";
        if (m.softBytes() == Memlock.UNKNOWN) {
            return Check.warn("memlock: cannot read the limit (/proc/self/limits)", fix);
        }
        if (m.softBytes() < MEMLOCK_MIN) {
            return Check.fail("memlock: " + describe(m.softBytes()) + ": registering more than that fails "
                    + "(ENOMEM from ibv_reg_mr)", fix);
        }
        return Check.warn("memlock: " + describe(m.softBytes()) + ": large registrations may fail", fix);
    }

    static String describe(long bytes) {
        if (bytes == Memlock.UNLIMITED) {
            return "unlimited";
        }
        if (bytes == Memlock.UNKNOWN) {
            return "unknown";
        }
        return bytes >= (1L << 30) && bytes % (1L << 30) == 0 ? (bytes >> 30) + " GiB"
                : bytes >= (1L << 20) && bytes % (1L << 20) == 0 ? (bytes >> 20) + " MiB"
                : bytes >= 1024 && bytes % 1024 == 0 ? (bytes >> 10) + " KiB" : bytes + " bytes";
    }

    /** What one peer showed: reachability, the real handshake, and the MTUs at both ends of every shared link. */
    public static List<Check> peer(NodeReport me, PeerResult p) {
        return peer(me, p, "rdma");
    }

    /** As {@link #peer(NodeReport, PeerResult)}, for a check of {@code expected}'s provider ("rdma" or "tcp"). */
    public static List<Check> peer(NodeReport me, PeerResult p, String expected) {
        List<Check> out = new ArrayList<>();
        String who = "peer " + p.peer() + (p.report() == null ? "" : " (" + p.report().name() + ")");
        boolean tcp = expected.equals("tcp");
        if (p.error() != null) {
            out.add(Check.fail(who + ": " + p.error(), p.fix()));
        } else if (!expected.equals(p.provider())) {
            out.add(Check.fail(who + ": connected over " + p.provider() + ", not " + (tcp ? "TCP" : "RDMA"),
                    "this node or the peer has no usable RDMA link: 'jmesh doctor' on each names the cause; "
                            + TCP_INSTEAD));
        } else {
            out.add(Check.ok(who + ": " + (tcp ? "TCP" : "queue-pair") + " handshake over "
                    + p.route() + " in " + String.format(Locale.ROOT, "%.1f ms", p.handshakeNanos() / 1e6) + ", "
                    + p.verifiedBytes() + " bytes sent and verified"));
        }
        if (p.report() != null) {
            mtuMismatch(me, p.report(), out);
        }
        return out;
    }

    static void mtuMismatch(NodeReport me, NodeReport peer, List<Check> out) {
        for (NodeReport.Link a : me.links()) {
            for (NodeReport.Link b : peer.links()) {
                if (!a.address().sharesSubnetWith(b.address())) {
                    continue;
                }
                boolean eth = a.netdevMtu() > 0 && b.netdevMtu() > 0 && a.netdevMtu() != b.netdevMtu();
                boolean rdma = a.activeMtu() > 0 && b.activeMtu() > 0 && a.activeMtu() != b.activeMtu();
                String link = a.address().network().toString();
                if (eth || rdma) {
                    out.add(Check.fail("MTU mismatch on " + link + ": " + me.name() + " " + mtuText(a) + ", "
                                    + peer.name() + " " + mtuText(b),
                            "set the same MTU on both ends (9000 for RoCE's 4096): 'ip link set "
                                    + (a.netdev().isEmpty() ? "<netdev>" : a.netdev()) + " mtu 9000' on " + me.name()
                                    + " and 'ip link set " + (b.netdev().isEmpty() ? "<netdev>" : b.netdev())
                                    + " mtu 9000' on " + peer.name()));
                } else {
                    out.add(Check.ok("MTU on " + link + " agrees: " + mtuText(a) + " at both ends"));
                }
            }
        }
    }

    private static String mtuText(NodeReport.Link l) {
        return (l.netdev().isEmpty() ? "netdev" : l.netdev()) + " " + (l.netdevMtu() > 0 ? l.netdevMtu() : "?")
                + (l.activeMtu() > 0 ? " / RDMA " + l.activeMtu() : ""); // 0: a TCP link, which has none
    }

    /** "N ok, N warnings, N failed". */
    public static String summary(List<Check> checks) {
        long ok = checks.stream().filter(c -> c.status() == Check.Status.OK).count();
        long warn = checks.stream().filter(c -> c.status() == Check.Status.WARN).count();
        long fail = checks.stream().filter(c -> c.status() == Check.Status.FAIL).count();
        return ok + " ok, " + warn + (warn == 1 ? " warning, " : " warnings, ") + fail + " failed";
    }
}
