package io.jmesh.cli.perf;

import io.jmesh.api.Fabric;
import io.jmesh.cli.FabricSupport;
import io.jmesh.transport.discovery.DiscoveryResult;
import io.jmesh.transport.discovery.RdmaPort;
import io.jmesh.transport.net.LocalLink;

import java.io.PrintStream;

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

    void print(Fabric fabric, LocalLink local, String route, int qps, boolean write) {
        boolean lat = o.test().equals("lat");
        String mtu = "-";
        String device = local == null ? (o.device() == null ? "(any)" : o.device()) : local.device();
        String gid = local == null || local.gidIndex() < 0 ? "-" : Integer.toString(local.gidIndex());
        if (fabric.provider().equals("rdma") && local != null) {
            // from the discovery made before the fabric opened: a second discovery while verbs connections are
            // open was followed by EBADF from ibv_destroy_qp/ibv_dereg_mr at close in the testbed (reported)
            RdmaPort p = FabricSupport.portOf(found, local.device(), local.prefix().address());
            if (p != null) {
                mtu = p.activeMtu() + "[B]";
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
                "Data ex. method", "TCP port " + o.port() + " (jmesh listen handles)");
        out.flush();
    }
}
