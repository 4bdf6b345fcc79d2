package io.jmesh.cli.doctor;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.LocalLink;

import java.net.InetAddress;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.List;

/**
 * The local checks of 'jmesh doctor --provider tcp': what a mesh without RDMA needs of this node, the addresses the
 * TCP provider uses (with the interface and MTU behind each) and one subnet per link. RDMA devices, GIDs and memlock
 * do not matter to it, so they are not checked; the peers' checks (listener, route, handshake) are the same.
 */
final class TcpChecks {
    static final String ADDRESS_FIX = "give this node's mesh interfaces an address each, on a subnet of their own "
            + "('ip addr add 192.168.10X.Y/24 dev <netdev>'), or name the ones jmesh may use with --addresses or "
            + "JMESH_ADDRESSES (e.g. 192.168.101.2/24,192.168.100.2/24)";

    private TcpChecks() {
    }

    /** This node as the TCP provider sees it: one link per address, with its interface and that one's MTU. */
    static NodeReport node(String name, List<LocalLink> links) {
        List<NodeReport.Link> out = new ArrayList<>();
        for (LocalLink l : links) {
            String netdev = "";
            int mtu = 0;
            try {
                NetworkInterface ni = carrier(l.prefix().address());
                if (ni != null) {
                    netdev = ni.getName();
                    mtu = Math.max(0, ni.getMTU());
                }
            } catch (SocketException e) {
                // left unknown: the MTU check says so
            }
            out.add(new NodeReport.Link("tcp", 1, netdev, l.prefix(), mtu, 0, 0, true));
        }
        return new NodeReport(name, out);
    }

    /**
     * The interface that carries {@code a}: the one with that address, else one whose subnet holds it (lo answers
     * all of 127/8 with only 127.0.0.1/8 configured); null when none.
     */
    private static NetworkInterface carrier(InetAddress a) throws SocketException {
        NetworkInterface exact = NetworkInterface.getByInetAddress(a);
        if (exact != null) {
            return exact;
        }
        for (NetworkInterface ni : NetworkInterface.networkInterfaces().toList()) {
            for (InterfaceAddress ia : ni.getInterfaceAddresses()) {
                if (ia.getAddress().getClass() == a.getClass() && IpPrefix.parse(ia.getAddress().getHostAddress()
                        .replaceFirst("%.*", "") + "/" + ia.getNetworkPrefixLength()).contains(a)) {
                    return ni;
                }
            }
        }
        return null;
    }

    /** @param openError why the TCP provider could not start on this node, or null */
    static List<Check> local(NodeReport me, String openError) {
        List<Check> out = new ArrayList<>();
        if (openError != null) {
            out.add(Check.fail("TCP provider: cannot start: " + openError, ADDRESS_FIX));
            return out;
        }
        if (me.links().isEmpty()) {
            out.add(Check.fail("TCP addresses: none", ADDRESS_FIX));
            return out;
        }
        out.add(Check.ok("TCP addresses: " + String.join(", ", me.links().stream().map(l -> l.address()
                + (l.netdev().isEmpty() ? "" : " (" + l.netdev() + ")")).toList())));
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (NodeReport.Link l : me.links()) {
            if (!l.netdev().isEmpty() && !seen.add(l.netdev())) {
                continue; // one line per interface, however many addresses it has
            }
            if (l.netdevMtu() == 0) {
                out.add(Check.warn("MTU of the interface of " + l.address() + ": unknown",
                        "'ip -br addr' shows which interface has the address, 'ip link show <netdev>' its MTU"));
            } else {
                out.add(Check.ok("MTU " + l.netdev() + " " + l.netdevMtu()));
            }
        }
        Checks.subnets(me, out);
        return out;
    }
}
