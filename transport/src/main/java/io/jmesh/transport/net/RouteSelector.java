package io.jmesh.transport.net;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.ListenAddress;
import io.jmesh.api.LocalLink;
import io.jmesh.api.NoRouteException;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Chooses how to reach a peer: which local link shares a subnet with which of the peer's addresses. Both ends' real
 * netmasks must agree ({@link IpPrefix#sharesSubnetWith}), so a /24 facing a /16 is not taken for one link.
 *
 * <p>All matching (local link, peer address) pairs are ranked fastest first, and then picked greedily so that each
 * local link and each peer address is used at most once: the result has one route per physical link between the two
 * nodes. With one link that is a single route; with twins (two links joining the same two nodes on distinct subnets)
 * it is both, and the caller may use all of them. Ties are broken by address bytes (IPv4 before IPv6), then device
 * name and port, so the answer does not depend on discovery or handle order.
 *
 * <p>Link-local addresses (fe80::/10, 169.254.0.0/16) are ignored on both sides: every link has the same link-local
 * subnet, so it cannot tell links apart.
 *
 * <pre>{@code
 * List<Route> routes = RouteSelector.select(localLinks, ListenHandle.decode(handleBytes));
 * Route best = routes.getFirst();
 * }</pre>
 */
public final class RouteSelector {
    private static final Comparator<Route> ORDER = Comparator
            .comparingLong(Route::speedMbps).reversed()
            .thenComparing((Route r) -> r.local().prefix(), RouteSelector::compareAddress)
            .thenComparing((Route r) -> r.peer().prefix(), RouteSelector::compareAddress)
            .thenComparing((Route r) -> r.local().device())
            .thenComparingInt((Route r) -> r.local().port())
            .thenComparingInt(Route::peerIndex);

    private RouteSelector() {
    }

    /**
     * The routes to {@code peer}, fastest first, one per distinct link (see the class comment).
     *
     * @param local this node's usable mesh links
     * @param peer  the peer's decoded listen handle
     * @throws NoRouteException when no local link shares a subnet with any peer address; the message lists both sides
     */
    public static List<Route> select(List<LocalLink> local, ListenHandle peer) throws NoRouteException {
        List<Route> candidates = new ArrayList<>();
        List<ListenAddress> peerAddresses = peer.addresses();
        for (int i = 0; i < peerAddresses.size(); i++) {
            ListenAddress p = peerAddresses.get(i);
            if (p.prefix().address().isLinkLocalAddress()) {
                continue;
            }
            for (LocalLink l : local) {
                if (!l.prefix().address().isLinkLocalAddress() && l.prefix().sharesSubnetWith(p.prefix())) {
                    candidates.add(new Route(l, p, i));
                }
            }
        }
        if (candidates.isEmpty()) {
            throw noRoute(local, peer);
        }
        candidates.sort(ORDER);
        List<Route> routes = new ArrayList<>();
        Set<LocalLink> usedLocal = new HashSet<>();
        Set<Integer> usedPeer = new HashSet<>();
        for (Route r : candidates) {
            if (!usedLocal.contains(r.local()) && !usedPeer.contains(r.peerIndex())) {
                usedLocal.add(r.local());
                usedPeer.add(r.peerIndex());
                routes.add(r);
            }
        }
        return List.copyOf(routes);
    }

    /**
     * The routes of {@link #select}, with those over {@code preferredLink} (a device name or a local address) moved
     * to the front; unchanged when {@code preferredLink} is null or reaches no peer address (check with {@link
     * #usesLink}).
     */
    public static List<Route> select(List<LocalLink> local, ListenHandle peer, String preferredLink)
            throws NoRouteException {
        List<Route> routes = select(local, peer);
        if (preferredLink == null || preferredLink.isEmpty()) {
            return routes;
        }
        List<Route> preferred = new ArrayList<>();
        List<Route> rest = new ArrayList<>();
        for (Route r : routes) {
            (usesLink(r, preferredLink) ? preferred : rest).add(r);
        }
        preferred.addAll(rest);
        return List.copyOf(preferred);
    }

    /** The link among {@code local} whose own address is {@code address} (where a connection arrived), or null. */
    public static LocalLink linkAt(List<LocalLink> local, java.net.InetAddress address) {
        for (LocalLink l : local) {
            if (l.prefix().address().equals(address)) {
                return l;
            }
        }
        return null;
    }

    /** True when the route leaves through {@code link}: its device name or its local address. */
    public static boolean usesLink(Route route, String link) {
        return link != null && (route.local().device().equals(link)
                || route.local().prefix().address().getHostAddress().equals(link)
                || route.local().prefix().toString().equals(link));
    }

    /** The local links of {@link #select}'s routes, in its order; empty when none shares a subnet with the peer. */
    public static List<LocalLink> directLinks(List<LocalLink> local, ListenHandle peer) {
        try {
            return select(local, peer).stream().map(Route::local).toList();
        } catch (NoRouteException e) {
            return List.of();
        }
    }

    /** The best route only; see {@link #select}. */
    public static Route best(List<LocalLink> local, ListenHandle peer) throws NoRouteException {
        return select(local, peer).getFirst();
    }

    private static NoRouteException noRoute(List<LocalLink> local, ListenHandle peer) {
        List<IpPrefix> localPrefixes = local.stream().map(LocalLink::prefix).toList();
        List<IpPrefix> peerPrefixes = peer.prefixes();
        StringBuilder sb = new StringBuilder("no shared subnet with peer ").append(peerPrefixes)
                .append("; local addresses ").append(local.isEmpty() ? "[] (this node has no usable mesh address)"
                        : local.toString())
                .append(": each mesh link needs both ends on one subnet; check 'ip addr' on both nodes");
        for (LocalLink l : local) {
            for (IpPrefix p : peerPrefixes) {
                if (l.prefix().contains(p.address()) != p.contains(l.prefix().address())) {
                    sb.append(". Netmask mismatch: local ").append(l.prefix()).append(" and peer ").append(p)
                            .append(" disagree on the prefix length (one contains the other, not both ways);"
                                    + " give both ends of the link the same prefix length");
                }
            }
        }
        boolean linkLocal = localPrefixes.stream().anyMatch(p -> p.address().isLinkLocalAddress())
                || peerPrefixes.stream().anyMatch(p -> p.address().isLinkLocalAddress());
        if (linkLocal) {
            sb.append(". Link-local addresses (fe80::/10, 169.254.0.0/16) are ignored: they exist on every link and"
                    + " cannot tell links apart; assign a global or ULA/private address per link");
        }
        return new NoRouteException(sb.toString(), localPrefixes, peerPrefixes);
    }

    /** IPv4 before IPv6, then unsigned address bytes. */
    static int compareAddress(IpPrefix a, IpPrefix b) {
        byte[] x = a.address().getAddress();
        byte[] y = b.address().getAddress();
        if (x.length != y.length) {
            return Integer.compare(x.length, y.length);
        }
        return Arrays.compareUnsigned(x, y);
    }
}
