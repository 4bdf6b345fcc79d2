package io.jmesh.transport.route;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.LocalLink;
import io.jmesh.api.StaticRoute;
import io.jmesh.transport.route.RouteFrame.Link;
import io.jmesh.transport.route.RouteFrame.Reach;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;

/**
 * What this node knows about the mesh beyond its own links: each neighbour heard from (its links, relay ports, and
 * the subnets it reaches through others), each entry forgotten when not refreshed within the expiry; and the static
 * map, which overrides discovery. Written by the route thread, read by connectors and the relay: not the hot path,
 * so plain synchronisation.
 */
public final class RouteTable {
    private record Neighbour(long nodeId, InetAddress address, LocalLink via, List<Link> links, List<Reach> reach,
                             long seenNanos) {
        int relayPort() {
            for (Link l : links) {
                if (l.prefix().address().equals(address)) {
                    return l.relayPort();
                }
            }
            return 0;
        }

        /** Relays from here to {@code target} through this neighbour, or 0 when it does not reach it. */
        int relaysTo(InetAddress target) {
            for (Link l : links) {
                if (l.prefix().contains(target)) {
                    return 1;
                }
            }
            int best = 0;
            for (Reach r : reach) {
                if (r.subnet().contains(target) && r.hops() < RouteFrame.MAX_HOPS
                        && (best == 0 || r.hops() + 1 < best)) {
                    best = r.hops() + 1;
                }
            }
            return best;
        }
    }

    /**
     * A subnet that an expired neighbour reached: it was in the mesh moments ago. A relay asked for it waits for a
     * route to come back (a starved neighbour misses a few probes) instead of refusing on the table of one instant.
     */
    public record Lost(IpPrefix subnet, InetAddress via, long seenNanos) {
    }

    /** How many expiry periods a lost subnet is remembered, and at most how many are. */
    static final int REMEMBER_EXPIRIES = 10;
    static final int MAX_LOST = 256;

    private final List<LocalLink> local;
    private final List<StaticRoute> statics;
    private final long expiryNanos;
    private final Map<InetAddress, Neighbour> neighbours = new HashMap<>();
    private final Map<IpPrefix, Lost> lost = new LinkedHashMap<>();

    public RouteTable(List<LocalLink> local, List<StaticRoute> statics, long expiryNanos) {
        this.local = List.copyOf(local);
        this.statics = List.copyOf(statics);
        this.expiryNanos = expiryNanos;
    }

    /** The local link whose subnet contains {@code address}, or null. */
    public LocalLink linkTo(InetAddress address) {
        for (LocalLink l : local) {
            if (l.prefix().contains(address)) {
                return l;
            }
        }
        return null;
    }

    /** This node's link whose own address is {@code address}, or null. */
    public LocalLink ownLink(InetAddress address) {
        for (LocalLink l : local) {
            if (l.prefix().address().equals(address)) {
                return l;
            }
        }
        return null;
    }

    public boolean isOwnAddress(InetAddress address) {
        return ownLink(address) != null;
    }

    /** An ADVERT from {@code from}; the caller checked that it is not our own. False when it is not on our links. */
    synchronized boolean heard(InetAddress from, long nodeId, List<Link> links, List<Reach> reach, long now) {
        LocalLink via = linkTo(from);
        if (via == null || isOwnAddress(from)) {
            return false;
        }
        neighbours.put(from, new Neighbour(nodeId, from, via, links, reach, now));
        return true;
    }

    /** Whether {@code address} is a live neighbour: it answered a probe within the expiry. */
    synchronized boolean knows(InetAddress address, long now) {
        Neighbour n = neighbours.get(address);
        return n != null && now - n.seenNanos() <= expiryNanos;
    }

    /** The live neighbours' addresses on {@code link}, which a round between sweeps probes. */
    synchronized List<InetAddress> neighboursOn(LocalLink link, long now) {
        expire(now);
        List<InetAddress> on = new ArrayList<>();
        for (Neighbour n : neighbours.values()) {
            if (n.via().equals(link)) {
                on.add(n.address());
            }
        }
        return on;
    }

    /** The neighbours' addresses the static map names, to be probed even where no sweep runs. */
    List<InetAddress> staticNeighbours() {
        return statics.stream().map(StaticRoute::neighbour).distinct().toList();
    }

    /**
     * The way to {@code target}: the static entry that covers it, else the live neighbour with the fewest relays to
     * it, then the fastest shared link, then the lowest address; null when nothing known reaches it.
     */
    public synchronized NextHop nextHop(InetAddress target, long now) {
        expire(now);
        for (StaticRoute s : statics) {
            if (s.subnet().contains(target)) {
                LocalLink via = linkTo(s.neighbour());
                if (via == null) {
                    continue;
                }
                Neighbour n = neighbours.get(s.neighbour());
                // a neighbour that answered without a link to the target or a way to it is at least 2 relays
                // away from it (it may learn one later): then a peer address the neighbour is linked to wins
                int known = n == null ? 0 : n.relaysTo(target);
                int relays = n == null ? 1 : known == 0 ? 2 : known;
                return new NextHop(via, s.neighbour(), n == null ? 0 : n.relayPort(), relays, true);
            }
        }
        NextHop best = null;
        for (Neighbour n : neighbours.values()) {
            int relays = n.relaysTo(target);
            if (relays == 0) {
                continue;
            }
            NextHop candidate = new NextHop(n.via(), n.address(), n.relayPort(), relays, false);
            if (best == null || ORDER.compare(candidate, best) < 0) {
                best = candidate;
            }
        }
        return best;
    }

    private static final Comparator<NextHop> ORDER = Comparator.comparingInt(NextHop::relays)
            .thenComparing(Comparator.comparingLong((NextHop h) -> h.local().speedMbps()).reversed())
            .thenComparing((NextHop h) -> h.neighbour().getAddress(), Arrays::compareUnsigned);

    /**
     * The subnets to tell the node {@code askerId}: every subnet a live neighbour reaches, with this node's relay
     * count to it, except this node's own link subnets (the asker sees those as links) and what was learned from the
     * asker itself (split horizon, which stops two nodes from counting to infinity through each other).
     */
    synchronized List<Reach> advertFor(long askerId, long now) {
        expire(now);
        Map<IpPrefix, Integer> best = new LinkedHashMap<>();
        for (Neighbour n : neighbours.values()) {
            if (n.nodeId() == askerId) {
                continue;
            }
            for (Link l : n.links()) {
                offer(best, l.prefix().network(), 1);
            }
            for (Reach r : n.reach()) {
                offer(best, r.subnet(), r.hops() + 1);
            }
        }
        List<Reach> out = new ArrayList<>();
        best.forEach((subnet, hops) -> out.add(new Reach(subnet, hops)));
        out.sort(Comparator.comparingInt(Reach::hops));
        return out.size() > RouteFrame.MAX_REACH ? List.copyOf(out.subList(0, RouteFrame.MAX_REACH)) : out;
    }

    private void offer(Map<IpPrefix, Integer> best, IpPrefix subnet, int hops) {
        if (hops >= RouteFrame.MAX_HOPS || subnet.address().isLinkLocalAddress()) {
            return;
        }
        for (LocalLink l : local) {
            if (l.prefix().network().equals(subnet)) {
                return;
            }
        }
        best.merge(subnet, hops, Math::min);
    }

    /** Whether {@code target} lies in the mesh as this node knows it: a local link's subnet, or one a route reaches. */
    public boolean inMesh(InetAddress target, long now) {
        return linkTo(target) != null || nextHop(target, now) != null;
    }

    /**
     * A local link on which no neighbour is live: its neighbour has not started yet (the ranks of one job start
     * seconds apart, a JVM under emulation tens of seconds) or went unheard, so what lies behind it is not known; null
     * when every link has a live neighbour.
     */
    public synchronized LocalLink unheardLink(long now) {
        expire(now);
        for (LocalLink l : local) {
            boolean heard = false;
            for (Neighbour n : neighbours.values()) {
                heard |= n.via().equals(l);
            }
            if (!heard) {
                return l;
            }
        }
        return null;
    }

    /** Live neighbours, for tests and diagnostics. */
    public synchronized int neighbourCount(long now) {
        expire(now);
        return neighbours.size();
    }

    /**
     * What an expired neighbour reached that contains {@code target}, seen within the memory (ten expiry periods), or
     * null: the relay waits for such a target's route within its handshake timeout and refuses any other at once.
     */
    public synchronized Lost lost(InetAddress target, long now) {
        expire(now);
        Lost latest = null;
        for (Lost l : lost.values()) {
            if (l.subnet().contains(target) && (latest == null || l.seenNanos() - latest.seenNanos() > 0)) {
                latest = l;
            }
        }
        return latest;
    }

    private void expire(long now) {
        var it = neighbours.values().iterator();
        while (it.hasNext()) {
            Neighbour n = it.next();
            if (now - n.seenNanos() > expiryNanos) {
                it.remove();
                for (Link l : n.links()) {
                    remember(l.prefix().network(), n);
                }
                for (Reach r : n.reach()) {
                    remember(r.subnet(), n);
                }
            }
        }
        lost.values().removeIf(l -> now - l.seenNanos() > REMEMBER_EXPIRIES * expiryNanos);
    }

    private void remember(IpPrefix subnet, Neighbour n) {
        lost.remove(subnet); // re-inserted last: the map's order is the order of loss, the oldest evicted first
        if (lost.size() >= MAX_LOST) {
            lost.remove(lost.keySet().iterator().next());
        }
        lost.put(subnet, new Lost(subnet, n.address(), n.seenNanos()));
    }

    /** What the table knows, for error messages: each neighbour with its links and what it reaches; the static map. */
    public synchronized String describe(long now) {
        expire(now);
        if (neighbours.isEmpty() && statics.isEmpty()) {
            return "the routing table is empty (no neighbour answered on the route port)";
        }
        StringJoiner sb = new StringJoiner("; ", "the routing table knows ", "");
        for (Neighbour n : neighbours.values()) {
            sb.add("neighbour " + n.address().getHostAddress() + " (links "
                    + n.links().stream().map(l -> l.prefix().toString()).toList()
                    + (n.reach().isEmpty() ? "" : ", reaches " + n.reach().stream()
                    .map(r -> r.subnet() + " in " + r.hops()).toList())
                    + (n.relayPort() == 0 ? ", no TCP relay)" : ")"));
        }
        if (!statics.isEmpty()) {
            sb.add("static map " + statics);
        }
        for (LocalLink l : local) {
            if (neighbours.values().stream().noneMatch(n -> n.via().equals(l))) {
                sb.add("no neighbour answers on link " + l.prefix() + " (what lies behind it is unknown)");
            }
        }
        return sb.toString();
    }
}
