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
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.jmesh.cli.perf.PerfProtocol.VERSION;
import static io.jmesh.cli.perf.PerfProtocol.hex;
import static io.jmesh.cli.perf.PerfProtocol.region;
import static io.jmesh.cli.perf.PerfProtocol.requireField;

/**
 * The server side of 'jmesh bw' and 'jmesh lat': waits for a client on the out-of-band port, checks its hello,
 * accepts its connections (and for lat connects back), then runs the loop the test needs.
 */
final class PerfServer {
    /** How long a client may take to say hello: a real one does at once, a stray one must not hold the port. */
    private static final Duration HELLO_WAIT = Duration.ofSeconds(10);
    private final PerfOptions o;
    private final PrintStream out;
    private final PrintStream json;

    /** @param json where each result goes as a JSON object (--json), or null */
    PerfServer(PerfOptions o, PrintStream out, PrintStream json) {
        this.o = o;
        this.out = out;
        this.json = json;
    }

    /**
     * Opens the fabric, then waits on the out-of-band port for a client whose hello this server can serve: anything
     * else (a stray connection, another program, a client of another version or test) is answered where it speaks
     * the protocol, dropped, and the wait goes on until its deadline, so one bad client cannot end the server's run.
     * Only a good hello gets the listen handle.
     */
    void run() throws IOException, NoRouteException {
        Context config = o.context();
        PerfHeader header = new PerfHeader(o, out, FabricSupport.discover(config)); // before the fabric opens
        try (Fabric fabric = FabricSupport.open(config); Listener listener = fabric.listen();
             OobServer ss = OobServer.listen(o.port(), bindAddresses(fabric), loopback())) {
            out.println(" Waiting for a client on TCP port " + ss.port() + " of " + ss.where() + " ...");
            out.flush();
            long deadline = System.nanoTime() + o.timeout().multipliedBy(10).toNanos();
            while (true) {
                Duration left = Duration.ofNanos(Math.max(1, deadline - System.nanoTime()));
                try (Oob oob = ss.accept(left, o.timeout())) {
                    Map<String, String> hello;
                    try {
                        oob.timeout(HELLO_WAIT.compareTo(o.timeout()) < 0 ? HELLO_WAIT : o.timeout());
                        hello = hello(oob);
                        oob.timeout(o.timeout());
                    } catch (IOException e) {
                        out.println(" Dropped a client from " + oob.peer() + ": " + e.getMessage() + "; still waiting");
                        out.flush();
                        continue;
                    }
                    serve(oob, hello, fabric, listener, header);
                    return;
                }
            }
        }
    }

    /**
     * Where a client on this machine looks ('jmesh bw 127.0.0.1'): the out-of-band port listens there too, unless
     * --oob-bind chose. Only this host reaches it, so the handle is not offered to any other network.
     */
    private List<InetAddress> loopback() {
        return o.oobBind() == null ? List.of(InetAddress.getLoopbackAddress()) : List.of();
    }

    /** The mesh links' addresses, unless --oob-bind says otherwise (empty: every address). */
    private List<InetAddress> bindAddresses(Fabric fabric) throws IOException {
        if ("any".equals(o.oobBind())) {
            return List.of();
        }
        if (o.oobBind() != null) {
            return List.of(InetAddress.getByName(o.oobBind()));
        }
        List<InetAddress> mesh = new ArrayList<>();
        for (LocalLink l : fabric.links()) {
            mesh.add(l.prefix().address());
        }
        return mesh;
    }

    /** The client's hello, checked; an IOException (after telling the client, where it is a jmesh client) if not. */
    private Map<String, String> hello(Oob oob) throws IOException {
        Map<String, String> hello = oob.expect("hello");
        String test = hello.getOrDefault("test", "?");
        if (Oob.number(hello, "version", 0, Integer.MAX_VALUE) != VERSION) {
            oob.send("error the server speaks protocol " + VERSION + ": run the same jmesh version on both ends");
            throw new IOException("the client speaks protocol " + hello.get("version") + ", this server "
                    + VERSION + ": run the same jmesh version on both ends");
        }
        if (!test.equals(o.test())) {
            oob.send("error this server runs 'jmesh " + o.test() + "', not '" + test + "'");
            throw new IOException("the client runs 'jmesh " + test + "' against this 'jmesh " + o.test()
                    + "' server: run the same command on both ends");
        }
        Oob.number(hello, "qps", 1, 64);
        Oob.number(hello, "maxsize", 1, PerfOptions.MAX_SIZE);
        boolean write = test.equals("lat") && hello.getOrDefault("op", "send").equals("write");
        if (!hello.getOrDefault("op", "send").equals(write ? "write" : "send")) {
            oob.send("error this server knows --op send and, for lat, --op write, not '" + hello.get("op")
                    + "': run the same jmesh version on both ends");
            throw new IOException("the client asked for op '" + hello.get("op") + "' with 'jmesh " + test
                    + "': run the same jmesh version on both ends");
        }
        return hello;
    }

    private void serve(Oob oob, Map<String, String> hello, Fabric fabric, Listener listener, PerfHeader header)
            throws IOException, NoRouteException {
        String test = hello.get("test");
        int qps = (int) Oob.number(hello, "qps", 1, 64);
        long maxSize = Oob.number(hello, "maxsize", 1, PerfOptions.MAX_SIZE);
        boolean write = test.equals("lat") && hello.getOrDefault("op", "send").equals("write");
        RemoteRegion peerRegion = write ? region(hello, 2 * maxSize) : null;
        try (Arena arena = Arena.ofShared()) {
            ListenHandle own = FabricSupport.restrictOwn(ListenHandle.parse(listener.handleText()), fabric.links(),
                    o.device());
            List<AutoCloseable> open = new ArrayList<>();
            try {
                // registered before the connections, so that closing in reverse order closes them first; lat: the
                // second half is where the peer's one-sided writes land (--op write)
                Registration reg = fabric.register(arena.allocate(test.equals("lat") ? 2 * maxSize : maxSize, 4096));
                open.add(reg);
                oob.send("handle handle=" + own + (write ? " region=" + hex(reg) : "")
                        + (header.mtus(fabric).isEmpty() ? "" : " mtus=" + header.mtus(fabric)));
                Receiver[] receivers = new Receiver[qps];
                for (int i = 0; i < qps; i++) {
                    receivers[i] = Connections.accept(listener, o.timeout(), IdleStrategy.controlPlane());
                    open.add(receivers[i]);
                }
                Sender echo = null;
                String route = "(accepting)";
                if (test.equals("lat")) {
                    ListenHandle peer = ListenHandle.parse(requireField(hello, "handle"));
                    LocalLink local = FabricSupport.directLink(fabric, FabricSupport.restrictPeer(peer,
                            fabric.links(), o.device()));                              // null: relayed
                    Connector c = fabric.connect(FabricSupport.restrictPeer(peer, fabric.links(), o.device())
                            .encode());
                    open.add(c);
                    echo = Connections.await(c, o.timeout(), IdleStrategy.controlPlane());
                    open.add(echo);
                    route = c.route();
                    header.print(fabric, local, route, qps, write, hello.get("mtus"));
                } else {
                    header.print(fabric, null, "accepted " + qps + " connection(s) on " + own, qps, false, null);
                }
                oob.send("ready");
                ServerLines lines = new ServerLines(o, out, json, fabric.provider());
                if (echo == null) {
                    new BandwidthServer(o, lines).sink(oob, receivers, reg, maxSize);
                } else if (write) {
                    new LatencyServer(o, lines).echoWrites(oob, receivers[0], echo, reg, maxSize, peerRegion);
                } else {
                    new LatencyServer(o, lines).echo(oob, receivers[0], echo, reg, maxSize);
                }
            } finally {
                PerfCommand.closeAll(open);
            }
        }
    }
}
