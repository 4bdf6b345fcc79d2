package io.jmesh.cli.perf;

import io.jmesh.api.Fabric;
import io.jmesh.cli.FabricSupport;
import io.jmesh.transport.discovery.DiscoveryResult;
import io.jmesh.transport.discovery.RdmaPort;
import io.jmesh.api.LocalLink;

import io.jmesh.api.IpPrefix;

import java.io.PrintStream;
import java.util.StringJoiner;

/** The header both ends print before the result lines, in the layout of perftest's. */
final class PerfHeader {
    private final PerfOptions o;
    private final PrintStream out;
    /** The discovery made before the fabric opened (see {@link #print}). */
    private final DiscoveryResult found;

    PerfHeader(PerfOptions o, PrintStream out, DiscoveryResult found) {
        this.o = o;
        this.out = out;
        this.found = found;
    }

    /**
     * This end's active MTU on each of its links, "ADDR:MTU,...", for the peer's header (empty when not on verbs): a
     * link runs at the smaller of its two ends' MTUs, and only the peer knows its own.
     */
    String mtus(Fabric fabric) {
        StringJoiner j = new StringJoiner(",");
        if (fabric.provider().equals("rdma")) {
            for (LocalLink l : fabric.links()) {
                RdmaPort p = FabricSupport.portOf(found, l.device(), l.prefix().address());
                if (p != null) {
                    j.add(l.prefix().address().getHostAddress() + ":" + p.activeMtu());
                }
            }
        }
        return j.toString();
    }

    /**
     * @param peerMtus the peer's {@link #mtus} (null or empty when it sent none): the MTU printed is the link's, the
     *                 smaller of the two ends'
     */
    void print(Fabric fabric, LocalLink local, String route, int qps, boolean write, String peerMtus) {
        boolean lat = o.test().equals("lat");
        String mtu = "-";
        String device = local == null ? (o.device() == null ? "(any)" : o.device()) : local.device();
        String gid = local == null || local.gidIndex() < 0 ? "-" : Integer.toString(local.gidIndex());
        if (fabric.provider().equals("rdma") && local != null) {
            // from the discovery made before the fabric opened: a second discovery while verbs connections are
            // open was followed by EBADF from ibv_destroy_qp/ibv_dereg_mr at close in the testbed (reported)
            RdmaPort p = FabricSupport.portOf(found, local.device(), local.prefix().address());
            if (p != null) {
                int peer = peerMtu(local, peerMtus);
                mtu = peer > 0 && peer < p.activeMtu() ? peer + "[B] (the peer's; this end " + p.activeMtu() + ")"
                        : p.activeMtu() + "[B]";
            }
        }
        PerfReport.header(out, lat ? (write ? "jmesh Latency Test (one-sided RDMA write ping-pong)"
                        : "jmesh Latency Test (isend/irecv ping-pong)")
                        : "jmesh BW Test (isend/irecv, receiver-driven)",
                "Provider", fabric.provider(), "Device", device, "GID index", gid, "Number of qps",
                Integer.toString(qps), lat ? "Depth" : "Tx depth", Integer.toString(o.depth()), "Mtu", mtu,
                "Route", route, "Polling", o.poll().describe(), "Warmup", o.warmupFor() + (lat ? " round trips" : " messages") + " per size"
                        + (o.settle().isZero() ? "" : ", then until the JIT is quiet (at most " + o.settle().toSeconds()
                        + " s)"),
                "Receives", lat && !write ? (o.repostEach() ? "32 ahead, each reposted and announced on its own"
                        : "32 ahead, reposted 16 at a time, one announcement") : null,
                "Data ex. method", "TCP port " + o.port() + " (jmesh listen handles)");
        out.flush();
    }

    /** The peer's MTU on the subnet of {@code local}, from its "ADDR:MTU,..." list; 0 when unknown or malformed. */
    static int peerMtu(LocalLink local, String peerMtus) {
        if (peerMtus == null) {
            return 0;
        }
        for (String e : peerMtus.split(",")) {
            int colon = e.lastIndexOf(':');
            try {
                if (colon > 0 && local.prefix().contains(IpPrefix.parse(e.substring(0, colon)).address())) {
                    return IpPrefix.decimal(e.substring(colon + 1), "MTU", 65536);
                }
            } catch (IllegalArgumentException ignored) {
                // a peer's garbage only costs it the better header line
            }
        }
        return 0;
    }
}
