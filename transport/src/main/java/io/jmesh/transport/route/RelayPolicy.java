package io.jmesh.transport.route;

import io.jmesh.api.LocalLink;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * The one policy of every relay, whatever moves its bytes (the TCP relay splices sockets, the verbs relay stores and
 * forwards by RDMA); the providers keep only their forwarding.
 * <ul>
 *   <li>Who may ask: a socket that arrives on one of this node's links from an address of that link's subnet. A
 *       relay serves its neighbours only; it is no proxy for the world.</li>
 *   <li>What may be asked for: a target inside the mesh (a subnet of this node's links, or one its routing table
 *       reaches), never this node itself, within the hop limit.</li>
 *   <li>Where it goes ({@link #decide}): the link that reaches the target, else the table's next hop, which must run a
 *       relay; the request goes on with one hop fewer. A target the table reached moments ago ({@link
 *       RouteTable#lost}) waits for its route to come back until the request's handshake deadline, as a connector
 *       waits for discovery: a neighbour starved for a few probes must not fail the connections relayed past it.</li>
 *   <li>How many wait at once: a bounded set, the oldest evicted when it is full, as the handshake listener does
 *       ({@link PendingRequests}).</li>
 *   <li>What of the handshake passes on: no liveness port crosses a relay; it puts its own in every HELLO and ACCEPT
 *       ({@code RelayFrames.passOn}), and watches both neighbours of each connection it carries.</li>
 *   <li>What it forwards to: only a jmesh listener that answered as one (TCP: {@code SpliceGate} passes nothing but a
 *       HELLO before the listener's CHALLENGE; verbs: the relay handshakes with the listener itself).</li>
 * </ul>
 */
public final class RelayPolicy {
    private final RouteTable table;

    /**
     * Where a request goes: {@code next} is the listener itself over {@code link} when {@code hop} is null, else the
     * next relay's endpoint, to be asked with {@code hopsLeft}; or only a {@code refusal} (a reason for the log).
     */
    public record Decision(LocalLink link, InetSocketAddress next, NextHop hop, int hopsLeft, String refusal) {
        /** No route now, but the target was reached moments ago: ask again until the deadline. */
        static final Decision WAIT = new Decision(null, null, null, 0, null);

        static Decision refused(String why) {
            return new Decision(null, null, null, 0, why);
        }

        public boolean waiting() {
            return this == WAIT;
        }
    }

    public RelayPolicy(RouteTable table) {
        this.table = table;
    }

    /**
     * Why a socket from {@code remote} that arrived on this node's address {@code local} may not ask for relaying,
     * or null when it may.
     */
    public String admission(InetAddress local, InetAddress remote) {
        LocalLink link = local == null ? null : table.ownLink(local);
        if (link == null || remote == null || !link.prefix().contains(remote)) {
            return "it comes from outside this node's link subnets (a relay serves only its neighbours, on the link "
                    + "they share with it)";
        }
        return null;
    }

    /** Why a request for {@code target} is refused before anything is dialled, or null: the cheap checks. */
    public String refusal(InetSocketAddress target, long now) {
        InetAddress t = target.getAddress();
        if (table.isOwnAddress(t)) {
            return "it names this relay itself (" + describe(target) + "): connect to it directly";
        }
        if (!table.inMesh(t, now) && table.lost(t, now) == null) {
            return notInMesh(target);
        }
        return null;
    }

    /** Where a request for {@code target} with {@code hopsLeft} goes, or why it cannot, with no time to wait. */
    public Decision decide(InetSocketAddress target, int hopsLeft, long now) {
        return decide(target, hopsLeft, now, now);
    }

    /**
     * Where a request for {@code target} with {@code hopsLeft} goes, or why it cannot; {@link Decision#WAIT} while
     * the route to a target reached moments ago may still come back before {@code deadline} (System.nanoTime).
     */
    public Decision decide(InetSocketAddress target, int hopsLeft, long now, long deadline) {
        InetAddress t = target.getAddress();
        if (table.isOwnAddress(t)) {
            return Decision.refused(refusal(target, now));
        }
        LocalLink direct = table.linkTo(t);
        if (direct != null) {
            return new Decision(direct, target, null, hopsLeft, null);
        }
        NextHop hop = table.nextHop(t, now);
        if (hop == null) {
            RouteTable.Lost lost = table.lost(t, now);
            if (lost == null) {
                return Decision.refused(notInMesh(target));
            }
            if (now - deadline < 0) {
                return Decision.WAIT;
            }
            return Decision.refused("no route to " + describe(target) + " came back within the handshake timeout: "
                    + "this relay reached " + lost.subnet() + " through " + lost.via().getHostAddress() + ", last "
                    + "heard from " + TimeUnit.NANOSECONDS.toMillis(now - lost.seenNanos()) + " ms ago on the route "
                    + "port (check that node, or raise JMESH_HANDSHAKE_TIMEOUT_MS on a busy mesh)");
        }
        if (hop.relayPort() == 0) {
            return Decision.refused("cannot pass it on towards " + describe(target) + ": the next node "
                    + hop.neighbour().getHostAddress() + " runs no relay of this provider");
        }
        if (hopsLeft <= 1) {
            return Decision.refused("cannot pass it on towards " + describe(target) + ": its hop limit is used up "
                    + "(a path has at most " + RelayRequest.MAX_HOPS + " relays)");
        }
        return new Decision(hop.local(), new InetSocketAddress(hop.neighbour(), hop.relayPort()), hop, hopsLeft - 1,
                null);
    }

    private static String notInMesh(InetSocketAddress target) {
        return describe(target) + " is not in the mesh: the relay forwards only to its link subnets and those its "
                + "routing table reaches";
    }

    private static String describe(InetSocketAddress a) {
        return a.getAddress().getHostAddress() + ":" + a.getPort();
    }
}
