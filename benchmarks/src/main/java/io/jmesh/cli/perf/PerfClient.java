package io.jmesh.cli.perf;

import io.jmesh.api.Connections;
import io.jmesh.api.Connector;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.IdleStrategy;
import io.jmesh.api.Listener;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
import io.jmesh.api.Sender;
import io.jmesh.cli.FabricSupport;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.api.NoRouteException;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.jmesh.cli.perf.PerfProtocol.VERSION;
import static io.jmesh.cli.perf.PerfProtocol.hex;
import static io.jmesh.cli.perf.PerfProtocol.region;
import static io.jmesh.cli.perf.PerfProtocol.requireField;

/**
 * The client side of 'jmesh bw' and 'jmesh lat': says hello on the out-of-band port, connects to the server's handle
 * (and for lat accepts its connection back), prints the header and one result line per size, and has the server print
 * them too.
 */
final class PerfClient {
    private static final String NO_SERVER_FIX = ": start the server side first (the same command without an "
            + "address), give one of its mesh link addresses or, on its own machine, 127.0.0.1 (a 'jmesh bw' or 'lat' "
            + "server listens there only, unless started with --oob-bind), check -p and that no firewall blocks the "
            + "port";

    private final PerfOptions o;
    private final PrintStream out;
    private final PrintStream err;
    private final PrintStream json;

    /** @param json where each result goes as a JSON object (--json), or null */
    PerfClient(PerfOptions o, PrintStream out, PrintStream err, PrintStream json) {
        this.o = o;
        this.out = out;
        this.err = err;
        this.json = json;
    }

    void run() throws IOException, NoRouteException {
        boolean lat = o.test().equals("lat");
        Context config = o.context();
        PerfHeader header = new PerfHeader(o, out, FabricSupport.discover(config)); // before the fabric opens
        List<AutoCloseable> open = new ArrayList<>();
        try (Fabric fabric = FabricSupport.open(config); Arena arena = Arena.ofShared()) {
            Registration reg = fabric.register(arena.allocate(lat ? 2 * o.maxSize() : o.maxSize(), 4096));
            open.add(reg);
            boolean write = lat && o.op().equals("write");
            Listener listener = null;
            if (lat) {
                listener = fabric.listen();
                open.add(listener);
            }
            // connected only now, when the hello can go at once: a server drops a client that stays silent (a
            // fabric can take many seconds to open on a slow node)
            try (Oob oob = Oob.connect(o.server(), o.port(), o.timeout(), o.timeout(), err, NO_SERVER_FIX)) {
                oob.send("hello version=" + VERSION + " test=" + o.test() + " qps=" + o.qps() + " maxsize="
                        + o.maxSize() + (listener == null ? "" : " handle=" + FabricSupport.restrictOwn(
                        ListenHandle.parse(listener.handleText()), fabric.links(), o.device()))
                        + (lat ? " op=" + o.op() : "") + (write ? " region=" + hex(reg) : "")
                        + (header.mtus(fabric).isEmpty() ? "" : " mtus=" + header.mtus(fabric)));
                Map<String, String> handle = oob.expect("handle");
                ListenHandle peer = ListenHandle.parse(requireField(handle, "handle"));
                RemoteRegion peerRegion = write ? region(handle, 2 * o.maxSize()) : null;
                ListenHandle target = FabricSupport.restrictPeer(peer, fabric.links(), o.device());
                LocalLink local = FabricSupport.directLink(fabric, target);    // null: relayed
                Sender[] senders = new Sender[o.qps()];
                String routeText = null;
                for (int i = 0; i < o.qps(); i++) {
                    Connector c = fabric.connect(target.encode());
                    open.add(c);
                    routeText = c.route();
                    senders[i] = Connections.await(c, o.timeout(), IdleStrategy.controlPlane());
                    open.add(senders[i]);
                }
                Receiver back = null;
                if (lat) {
                    back = Connections.accept(listener, o.timeout(), IdleStrategy.controlPlane());
                    open.add(back);
                }
                oob.expect("ready");
                header.print(fabric, local, routeText, o.qps(), write, handle.get("mtus"));
                String columns = lat ? PerfReport.LAT_COLUMNS : o.gbits() ? PerfReport.BW_COLUMNS_GB
                        : PerfReport.BW_COLUMNS_MB;
                out.println(columns);
                oob.send("report " + columns);
                long[] totals = new long[o.qps()];
                JitSettle jit = new JitSettle(o, err);
                LatencyClient latency = lat ? new LatencyClient(o, jit, peerRegion) : null;
                BandwidthClient bandwidth = lat ? null : new BandwidthClient(o, jit, json == null ? out : json);
                for (long size : o.sizes()) {
                    String line = lat ? latency.latency(oob, senders[0], back, reg, size, totals)
                            : bandwidth.bandwidth(oob, senders, reg, size, totals);
                    out.println(line);
                    out.flush();
                    if (json != null) {
                        json.println(PerfReport.json(o, "client", fabric.provider(), routeText, line));
                        json.flush();
                    }
                    oob.send("report " + line);
                }
                out.println(PerfReport.RULE);
                oob.send("report " + PerfReport.RULE);
                oob.send("bye");
                oob.expect("bye"); // the server has stopped using the connections: now they may close
            }
        } finally {
            PerfCommand.closeAll(open);
        }
    }
}
