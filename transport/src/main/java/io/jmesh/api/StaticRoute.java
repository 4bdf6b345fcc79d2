package io.jmesh.api;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One entry of the static route map ({@code JMESH_ROUTES}): the peers in {@code subnet} are reached through the
 * neighbour at {@code neighbour}, whatever discovery says. The neighbour's relay port is still learned from its answer
 * on the route port, so a static entry chooses the way but needs no port numbers.
 *
 * <pre>{@code
 * List<StaticRoute> map = StaticRoute.parseList("10.0.3.0/24=10.0.1.2, 10.0.4.0/24=10.0.1.2");
 * }</pre>
 *
 * @param subnet    the destination subnet (stored as its network part)
 * @param neighbour the neighbour's address on a link this node shares with it
 */
public record StaticRoute(IpPrefix subnet, InetAddress neighbour) {
    public StaticRoute {
        Objects.requireNonNull(subnet, "subnet");
        Objects.requireNonNull(neighbour, "neighbour");
        subnet = subnet.network();
    }

    /**
     * Parses "SUBNET=NEIGHBOUR" entries separated by commas, e.g. "10.0.3.0/24=10.0.1.2"; blank means none.
     *
     * @throws IllegalArgumentException naming the entry and what it must look like
     */
    public static List<StaticRoute> parseList(String text) {
        List<StaticRoute> out = new ArrayList<>();
        for (String part : text.split(",")) {
            String entry = part.trim();
            if (entry.isEmpty()) {
                continue;
            }
            int eq = entry.indexOf('=');
            String hint = "'" + entry + "' is not SUBNET=NEIGHBOUR (e.g. 10.0.3.0/24=10.0.1.2: peers in 10.0.3.0/24 "
                    + "are reached through the neighbour 10.0.1.2)";
            if (eq <= 0 || eq == entry.length() - 1 || !entry.substring(0, eq).contains("/")) {
                throw new IllegalArgumentException(hint);
            }
            IpPrefix subnet;
            IpPrefix neighbour;
            try {
                subnet = IpPrefix.parse(entry.substring(0, eq));
                neighbour = IpPrefix.parse(entry.substring(eq + 1));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(hint + ": " + e.getMessage(), e);
            }
            if (neighbour.prefixLength() != (neighbour.isIpv4() ? 32 : 128)) {
                throw new IllegalArgumentException(hint + ": the neighbour is one address, without a prefix");
            }
            if (subnet.isIpv4() != neighbour.isIpv4()) {
                throw new IllegalArgumentException(hint + ": the subnet and the neighbour are of different families");
            }
            out.add(new StaticRoute(subnet, neighbour.address()));
        }
        return List.copyOf(out);
    }

    @Override
    public String toString() {
        return subnet + "=" + neighbour.getHostAddress();
    }
}
