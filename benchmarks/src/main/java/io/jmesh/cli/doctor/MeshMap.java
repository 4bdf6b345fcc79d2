package io.jmesh.cli.doctor;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Draws a mesh in the terminal (plain ASCII): every link between the given nodes (two addresses, one on each node,
 * that share a subnet by both ends' prefixes) with its subnet, speed and MTU, a node-by-node matrix of subnets, and
 * for exactly three fully linked nodes the triangle of the seeds' guides.
 */
public final class MeshMap {
    /** A link between two nodes. */
    public record Edge(NodeReport a, NodeReport.Link la, NodeReport b, NodeReport.Link lb) {
        String subnet() {
            return la.address().network().toString();
        }
    }

    private MeshMap() {
    }

    public static List<Edge> edges(List<NodeReport> nodes) {
        List<Edge> out = new ArrayList<>();
        for (int i = 0; i < nodes.size(); i++) {
            for (int j = i + 1; j < nodes.size(); j++) {
                for (NodeReport.Link la : nodes.get(i).links()) {
                    for (NodeReport.Link lb : nodes.get(j).links()) {
                        if (la.address().sharesSubnetWith(lb.address())) {
                            out.add(new Edge(nodes.get(i), la, nodes.get(j), lb));
                        }
                    }
                }
            }
        }
        return out;
    }

    public static String render(List<NodeReport> nodes, Map<String, String> status) {
        return render(nodes, status, Map.of());
    }

    /**
     * @param nodes  this node first, then the peers that answered
     * @param status per peer node name, what the handshake showed (e.g. "RDMA ok"); absent: not tested from here
     * @param routes per peer node name, the route its connection took ({@code Connector.route()}), drawn at the end
     */
    public static String render(List<NodeReport> nodes, Map<String, String> status, Map<String, String> routes) {
        StringBuilder sb = new StringBuilder();
        List<Edge> edges = edges(nodes);
        String me = nodes.getFirst().name();
        sb.append("mesh: ").append(nodes.size()).append(nodes.size() == 1 ? " node, " : " nodes, ")
                .append(edges.size()).append(edges.size() == 1 ? " link" : " links")
                .append(nodes.size() > 1 ? " (as " + me + " and its peers report them)" : "").append('\n');
        if (nodes.size() == 3 && triangle(nodes, edges, sb)) {
            sb.append('\n');
        }
        int w = nodes.stream().mapToInt(n -> n.name().length()).max().orElse(4);
        for (Edge e : edges) {
            String mid = String.format(Locale.ROOT, "==[ %-18s %8s  MTU %-4s ]==", e.subnet(),
                    speed(Math.min(nonZero(e.la().speedMbps()), nonZero(e.lb().speedMbps()))),
                    mtu(e.la()) == mtu(e.lb()) ? Integer.toString(mtu(e.la()))
                            : mtu(e.la()) + "/" + mtu(e.lb()));
            String what = e.a().name().equals(me) ? status.getOrDefault(e.b().name(), "")
                    : e.b().name().equals(me) ? status.getOrDefault(e.a().name(), "") : "(reported by the peers)";
            sb.append(String.format(Locale.ROOT, "  %-" + w + "s  %-8s %-15s %s %-15s %-8s  %-" + w + "s  %s",
                    e.a().name(), e.la().device(), e.la().address().address().getHostAddress(), mid,
                    e.lb().address().address().getHostAddress(), e.lb().device(), e.b().name(), what).stripTrailing())
                    .append('\n');
        }
        for (NodeReport n : nodes) {
            for (NodeReport.Link l : n.links()) {
                boolean linked = edges.stream().anyMatch(e -> e.la() == l || e.lb() == l);
                if (!linked) {
                    sb.append(String.format(Locale.ROOT, "  %-" + w + "s  %-8s %-15s ==[ %-18s %8s  MTU %-4s ]== %s",
                            n.name(), l.device(), l.address().address().getHostAddress(), l.address().network(),
                            speed(l.speedMbps()), mtu(l), nodes.size() == 1 ? "(give peers to see who is "
                                    + "there)" : "no node checked here is on this subnet")).append('\n');
                }
            }
        }
        if (nodes.size() > 1) {
            sb.append('\n');
            int cw = Math.max(w, 18) + 2;
            sb.append(" ".repeat(w + 4));
            for (NodeReport n : nodes) {
                sb.append(String.format(Locale.ROOT, "%-" + cw + "s", n.name()));
            }
            sb.setLength(sb.length() - (sb.length() - sb.toString().stripTrailing().length()));
            sb.append('\n');
            for (NodeReport r : nodes) {
                StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "  %-" + w + "s  ", r.name()));
                for (NodeReport c : nodes) {
                    String cell;
                    if (r == c) {
                        cell = "-";
                    } else {
                        List<String> subnets = edges.stream().filter(e -> (e.a() == r && e.b() == c)
                                || (e.a() == c && e.b() == r)).map(Edge::subnet).distinct().toList();
                        NodeReport peer = r.name().equals(me) ? c : c.name().equals(me) ? r : null;
                        String relay = peer == null ? null : relayName(nodes, routes.get(peer.name()));
                        cell = !subnets.isEmpty() ? String.join("+", subnets)
                                : relay != null ? "via " + relay : "NO LINK";
                    }
                    row.append(String.format(Locale.ROOT, "%-" + cw + "s", cell));
                }
                sb.append(row.toString().stripTrailing()).append('\n');
            }
        }
        if (!routes.isEmpty()) {
            sb.append('\n').append("routes from ").append(me).append(":\n");
            for (Map.Entry<String, String> e : routes.entrySet()) {
                String relay = relayName(nodes, e.getValue());
                String path = relay == null ? me + " ==> " + e.getKey()
                        : me + " ==> " + relay + " ==> " + e.getKey();
                sb.append(String.format(Locale.ROOT, "  %-" + w + "s  %-8s %-" + (3 * w + 12) + "s %s", e.getKey(),
                        relay == null ? "direct" : "relayed", path, e.getValue()).stripTrailing()).append('\n');
            }
        }
        return sb.toString();
    }

    /**
     * The relay of a route ("... via 192.168.100.2"): the name of the node that has that address, else the address;
     * null for a direct route.
     */
    static String relayName(List<NodeReport> nodes, String route) {
        int at = route == null ? -1 : route.indexOf(" via ");
        if (at < 0) {
            return null;
        }
        String address = route.substring(at + 5).split("[ ,]")[0];
        for (NodeReport n : nodes) {
            for (NodeReport.Link l : n.links()) {
                if (l.address().address().getHostAddress().equals(address)) {
                    return n.name();
                }
            }
        }
        return address;
    }

    /** The seeds' triangle picture, when each pair of the three nodes has a link. */
    private static boolean triangle(List<NodeReport> n, List<Edge> edges, StringBuilder sb) {
        String ab = subnet(edges, n.get(0), n.get(1));
        String ac = subnet(edges, n.get(0), n.get(2));
        String bc = subnet(edges, n.get(1), n.get(2));
        if (ab == null || ac == null || bc == null) {
            return false;
        }
        String a = n.get(0).name();
        String b = n.get(1).name();
        String c = n.get(2).name();
        int mid = Math.max(ab.length(), b.length() + 4) + 6; // the column of the apex
        sb.append('\n');
        sb.append(" ".repeat(Math.max(0, mid - a.length() / 2))).append(a).append('\n');
        sb.append(" ".repeat(mid - 2)).append('/').append(" ".repeat(4)).append('\\').append('\n');
        sb.append(" ".repeat(mid - 4 - ab.length())).append(ab).append(" ".repeat(8)).append(ac).append('\n');
        sb.append(" ".repeat(mid - 6)).append('/').append(" ".repeat(12)).append('\\').append('\n');
        sb.append(" ".repeat(Math.max(0, mid - 8 - b.length()))).append(b).append(' ').append("-".repeat(16))
                .append(' ').append(c).append('\n');
        sb.append(" ".repeat(Math.max(0, mid - bc.length() / 2 + 1))).append(bc).append('\n');
        return true;
    }

    private static String subnet(List<Edge> edges, NodeReport x, NodeReport y) {
        return edges.stream().filter(e -> (e.a() == x && e.b() == y) || (e.a() == y && e.b() == x))
                .map(Edge::subnet).findFirst().orElse(null);
    }

    private static long nonZero(long mbps) {
        return mbps <= 0 ? Long.MAX_VALUE : mbps;
    }

    static String speed(long mbps) {
        if (mbps <= 0 || mbps == Long.MAX_VALUE) {
            return "? Gb/s";
        }
        return mbps % 1000 == 0 ? mbps / 1000 + " Gb/s" : String.format(Locale.ROOT, "%.1f Gb/s", mbps / 1000.0);
    }

    /** The RDMA MTU of a link, or its interface's for a TCP link (which has none). */
    private static int mtu(NodeReport.Link l) {
        return l.activeMtu() > 0 ? l.activeMtu() : l.netdevMtu();
    }
}
