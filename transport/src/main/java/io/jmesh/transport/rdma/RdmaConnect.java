package io.jmesh.transport.rdma;

import io.jmesh.api.ListenHandle;
import io.jmesh.transport.connect.ConnectMachine;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.Fate;
import io.jmesh.transport.core.SendSlot;
import io.jmesh.transport.net.Route;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;

/**
 * The verbs side of a connect ({@link ConnectMachine} runs it): the queue pairs, created in INIT for the HELLO and
 * brought to RTR and RTS by the listener's answer, under an {@link RdmaSendWire} (or, through a relay node, a
 * {@link RelayedSendWire} with one queue pair to the relay). The control plane chose the links that share a subnet
 * with the peer ({@code ControlPlane.plan}: the preferred link first when it can reach the peer, then the fastest);
 * the connect uses the first plus every other equally fast one when multi-link is on (twins), each with the
 * configured number of queue pairs.
 */
public final class RdmaConnect extends ConnectMachine {
    private static final Logger LOG = JmeshLog.logger(RdmaConnect.class);

    private final RdmaProvider provider;
    private List<Route> routes = List.of();
    private Endpoint[] rails = new Endpoint[0];

    /** A direct connect over {@code all}: the links that share a subnet with the peer, in order of preference. */
    RdmaConnect(RdmaProvider provider, ListenHandle peer, List<Route> all) {
        super(provider.agent(), provider.control(), peer);
        this.provider = provider;
        Route first = all.getFirst();
        List<Route> used = new ArrayList<>();
        used.add(first);
        int qps = provider.qpsPerConnection();
        for (Route r : all.subList(1, all.size())) {
            if (provider.multiLink() && r.speedMbps() == first.speedMbps()
                    && (used.size() + 1) * qps <= Cts.MAX_RAILS) {
                used.add(r);
            }
        }
        this.routes = List.copyOf(used);
        start(first);
    }

    /**
     * A connect through a relay node: one queue pair, to the relay. With {@code route} null, polls wait for route
     * discovery to find one, up to the handshake timeout.
     */
    RdmaConnect(RdmaProvider provider, ListenHandle peer, Route route) {
        super(provider.agent(), provider.control(), peer);
        this.provider = provider;
        if (route != null) {
            start(route);
        }
    }

    @Override
    protected byte[] offer(Route first) {
        if (first.isRelayed()) {
            routes = List.of(first);
            rails = new Endpoint[1];
            rails[0] = provider.endpoint(first.local(), RelayLayout.SENDER_CONTROL_BYTES);
            ConnectInfo.Rail rail = new ConnectInfo.Rail(rails[0].local(), rails[0].deviceIndex,
                    first.via().endpoint().getAddress());
            return new ConnectInfo(List.of(rail), rails[0].control.address(), rails[0].controlMr.rkey()).encode();
        }
        int qps = provider.qpsPerConnection();
        rails = new Endpoint[routes.size() * qps];
        List<ConnectInfo.Rail> info = new ArrayList<>();
        for (int i = 0; i < rails.length; i++) {
            Route r = routes.get(i / qps);
            rails[i] = provider.endpoint(r.local(), i > 0 ? 4096 : provider.eagerThreshold() > 0
                    ? ControlRegion.EAGER_BYTES : ControlRegion.BYTES);
            info.add(new ConnectInfo.Rail(rails[i].local(), rails[i].deviceIndex, r.peer().prefix().address()));
        }
        ConnectInfo mine = new ConnectInfo(info, rails[0].control.address(), rails[0].controlMr.rkey());
        return (provider.eagerThreshold() > 0 ? mine.withEager() : mine).encode();
    }

    @Override
    protected CoreSender build(byte[] answer) {
        ConnectInfo peer = ConnectInfo.decode(answer);
        if (peer.relay()) {
            throw new IllegalArgumentException("the peer answered with a relay's record ring (a jmesh of another "
                    + "version there? run the same jmesh on every node)");
        }
        if (peer.rails().size() != rails.length) {
            throw new IllegalArgumentException("the listener answered with " + peer.rails().size()
                    + " queue pairs for this connection's " + rails.length);
        }
        for (int i = 0; i < rails.length; i++) {
            rails[i].connect(peer.rails().get(i).qp());
        }
        Fate fate = new Fate();
        SendSlot[] ring = CoreSender.ring();
        Route first = firstRoute();
        CoreSender sender;
        if (first.isRelayed()) {
            RelayedSendWire relayed = new RelayedSendWire(fate, ring, rails[0],
                    first.via().endpoint().getAddress().getHostAddress(), peer.controlAddress(), peer.controlRkey());
            sender = new CoreSender(fate, relayed.fifo(), ring, relayed, provider::forget);
        } else {
            RdmaSendWire wire = new RdmaSendWire(fate, ring, rails, peer.controlAddress(), peer.controlRkey(),
                    peer.rails().getFirst().deviceIndex(),
                    peer.eager() && provider.eagerThreshold() > 0 ? provider.eagerThreshold() : 0);
            sender = new CoreSender(fate, wire.fifo(), ring, wire, provider::forget);
        }
        provider.watchEvents(rails, fate); // once the sender exists: its close ends the watch
        return sender;
    }

    @Override
    protected boolean adopt(CoreSender s) {
        return provider.track(s);
    }

    @Override
    protected void freeUnowned() {
        Endpoint[] created = rails;
        rails = new Endpoint[0];
        Endpoint.closeQuietly(created, LOG);
    }

    /**
     * The links this connection uses, e.g. "rxe0 192.168.101.2/24 -> 192.168.101.3/24"; with several links or
     * queue pairs, each link once and the queue pairs per link.
     */
    @Override
    public String route() {
        if (firstRoute() == null) {
            return "no route to " + peer.prefixes() + " yet (route discovery is still looking)";
        }
        StringJoiner j = new StringJoiner(", ");
        for (Route r : routes) {
            j.add(r.local().device() + " " + r.local().prefix() + " -> " + r.peer().prefix()
                    + (r.isRelayed() ? " via " + r.via().endpoint().getAddress().getHostAddress() : ""));
        }
        int qps = rails.length / Math.max(1, routes.size());
        return j + (qps > 1 ? " (" + qps + " QPs per link)" : "");
    }
}
