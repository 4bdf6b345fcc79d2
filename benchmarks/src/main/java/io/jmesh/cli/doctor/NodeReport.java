package io.jmesh.cli.doctor;

import io.jmesh.transport.discovery.DiscoveryResult;
import io.jmesh.transport.discovery.PortAddress;
import io.jmesh.transport.discovery.RdmaDevice;
import io.jmesh.transport.discovery.RdmaPort;
import io.jmesh.api.IpPrefix;

import java.util.ArrayList;
import java.util.List;

/**
 * What a node tells its peers about its RDMA links, over 'jmesh doctor''s out-of-band channel, so that each end can
 * compare MTUs and draw the mesh. One entry per (port, address); bad input is rejected, never trusted.
 *
 * <p>Wire form (one line, no spaces): {@code name=tb-a links=rxe0|1|eth0|192.168.101.1/24|1500|1024|10000|1;...}
 * with the fields of {@link Link} in order ({@code active} as 1/0).
 *
 * @param name  the node's host name
 * @param links its RDMA links
 */
public record NodeReport(String name, List<Link> links) {
    static final int MAX_LINKS = 64;

    /**
     * One address of one RDMA port.
     *
     * @param device    RDMA device, e.g. rocep1s0f1
     * @param port      port number
     * @param netdev    its netdev, "" when unknown
     * @param address   the address with its prefix
     * @param netdevMtu the netdev's MTU (Ethernet), 0 when unknown
     * @param activeMtu the port's active RDMA MTU
     * @param speedMbps the port's speed, 0 when unknown
     * @param active    the port is ACTIVE
     */
    public record Link(String device, int port, String netdev, IpPrefix address, int netdevMtu, int activeMtu,
                       long speedMbps, boolean active) {
    }

    public NodeReport {
        links = List.copyOf(links);
    }

    /** The links of a discovery result: every address of every port (link-local ones left out). */
    public static NodeReport of(String name, DiscoveryResult found) {
        List<Link> links = new ArrayList<>();
        for (RdmaDevice d : found.devices()) {
            for (RdmaPort p : d.ports()) {
                for (PortAddress a : p.addresses()) {
                    if (!a.prefix().address().isLinkLocalAddress()) {
                        links.add(new Link(d.name(), p.number(), p.netdev(), a.prefix(), p.netdevMtu(),
                                p.activeMtu(), p.speedMbps(), p.active()));
                    }
                }
            }
        }
        return new NodeReport(name, links);
    }

    public String encode() {
        StringBuilder sb = new StringBuilder("name=").append(safe(name)).append(" links=");
        for (int i = 0; i < links.size(); i++) {
            Link l = links.get(i);
            sb.append(i == 0 ? "" : ";").append(safe(l.device())).append('|').append(l.port()).append('|')
                    .append(safe(l.netdev())).append('|').append(l.address()).append('|').append(l.netdevMtu())
                    .append('|').append(l.activeMtu()).append('|').append(l.speedMbps()).append('|')
                    .append(l.active() ? 1 : 0);
        }
        return sb.toString();
    }

    /** Names travel without spaces or separators; anything else becomes '_'. */
    static String safe(String s) {
        return s.isEmpty() ? "-" : s.replaceAll("[^A-Za-z0-9._:-]", "_");
    }

    /**
     * Parses the fields of a {@code node} line.
     *
     * @throws IllegalArgumentException naming the bad field
     */
    public static NodeReport decode(String name, String links) {
        if (name == null || name.isEmpty() || name.length() > 64 || !name.matches("[A-Za-z0-9._:-]+")) {
            throw new IllegalArgumentException("bad node name '" + name + "'");
        }
        List<Link> out = new ArrayList<>();
        if (links != null && !links.isEmpty()) {
            String[] entries = links.split(";");
            if (entries.length > MAX_LINKS) {
                throw new IllegalArgumentException(entries.length + " links, more than " + MAX_LINKS);
            }
            for (String e : entries) {
                String[] f = e.split("\\|", -1);
                if (f.length != 8) {
                    throw new IllegalArgumentException("bad link entry '" + e + "': expected 8 fields");
                }
                try {
                    out.add(new Link(f[0], bounded(f[1], 1, 255), f[2].equals("-") ? "" : f[2], IpPrefix.parse(f[3]),
                            bounded(f[4], 0, 1 << 20), bounded(f[5], 0, 1 << 16), Long.parseLong(f[6]),
                            f[7].equals("1")));
                } catch (NumberFormatException ex) {
                    throw new IllegalArgumentException("bad number in link entry '" + e + "'");
                }
            }
        }
        return new NodeReport(name, out);
    }

    private static int bounded(String s, int min, int max) {
        int v = Integer.parseInt(s);
        if (v < min || v > max) {
            throw new NumberFormatException();
        }
        return v;
    }
}
