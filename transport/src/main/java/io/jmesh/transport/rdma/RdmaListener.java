package io.jmesh.transport.rdma;

import io.jmesh.api.LocalLink;
import io.jmesh.transport.connect.AcceptLoop;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.Fate;
import io.jmesh.transport.core.ReceiveSlot;
import io.jmesh.transport.handshake.HandshakeListener;
import io.jmesh.transport.handshake.InboundHandshake;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * The verbs side of accepting ({@link AcceptLoop} runs it): a connector's queue pairs are checked before anything is
 * created for them (each must ask for one of this listener's RDMA addresses); then this side's queue pairs are
 * created, connected to the connector's and put under an {@link RdmaReceiveWire}, whose control region the ACCEPT
 * describes.
 */
public final class RdmaListener extends AcceptLoop<RdmaListener.Accepted> {
    private static final Logger LOG = JmeshLog.logger(RdmaListener.class);

    /** A connection answered in the handshake: its receiver exists from the start (the ACCEPT describes it). */
    static final class Accepted extends AcceptLoop.Pending {
        private final CoreReceiver receiver;
        private final byte[] answer;
        private final String description;

        Accepted(InboundHandshake handshake, CoreReceiver receiver, byte[] answer, String description) {
            super(handshake);
            this.receiver = receiver;
            this.answer = answer;
            this.description = description;
        }

        @Override
        protected void close() {
            handshake.close();
            receiver.close();
        }

        @Override
        public String toString() {
            return description;
        }
    }

    private final RdmaProvider provider;

    RdmaListener(RdmaProvider provider, HandshakeListener listener) {
        super(provider.agent(), listener);
        this.provider = provider;
    }

    @Override
    protected Accepted admit(InboundHandshake in) {
        ConnectInfo peer = ConnectInfo.decode(in.peerPayload());
        if (peer.relay()) {
            throw new IllegalArgumentException("a relay node offered to push relay records to a listener (a jmesh of "
                    + "another version there? run the same jmesh on every node)");
        }
        int n = peer.rails().size();
        LocalLink[] links = new LocalLink[n];
        for (int i = 0; i < n; i++) {
            InetAddress target = peer.rails().get(i).target();
            links[i] = target == null ? null : provider.linkFor(target);
            if (links[i] == null) {
                throw new IllegalArgumentException("queue pair " + i + " of the connection asks for "
                        + (target == null ? "no address" : target.getHostAddress())
                        + ", which is not one of this listener's RDMA addresses");
            }
        }
        Endpoint[] rails = new Endpoint[n];
        CoreReceiver receiver = null;
        try {
            List<ConnectInfo.Rail> reply = new ArrayList<>();
            boolean eager = peer.eager() && provider.eagerThreshold() > 0;  // the connector sends eagerly, we take it
            for (int i = 0; i < n; i++) {
                rails[i] = provider.endpoint(links[i], i > 0 ? 4096 : ControlRegion.bytes(eager));
                rails[i].connect(peer.rails().get(i).qp());
                reply.add(new ConnectInfo.Rail(rails[i].local(), rails[i].deviceIndex, null));
            }
            LocalLink first = links[0];
            Fate fate = new Fate();
            ReceiveSlot[] ring = CoreReceiver.ring();
            receiver = new CoreReceiver(fate, ring, new RdmaReceiveWire(fate, ring, rails,
                    peer.controlAddress(), peer.controlRkey(),
                    () -> provider.loopback(first, RdmaReceiveWire.FLUSH_BYTES), eager ? provider.eagerThreshold() : 0),
                    provider::forget);
            provider.watchEvents(rails, fate); // once the receiver exists: its close ends the watch
            long sizes = rails[0].control.address() + ControlRegion.SIZES_AT;
            ConnectInfo answer = new ConnectInfo(reply, sizes, rails[0].controlMr.rkey());
            return new Accepted(in, receiver, (eager ? answer.withEager() : answer).encode(),
                    "on " + first.device() + " " + first.prefix() + (n > 1 ? ", " + n + " queue pairs" : ""));
        } catch (RuntimeException e) {
            if (receiver != null) {
                receiver.close();              // it owns the queue pairs, and its close ends the device watch
            } else {
                Endpoint.closeQuietly(rails, LOG);
            }
            throw e;
        }
    }

    @Override
    protected byte[] answer(Accepted p) {
        return p.answer;
    }

    @Override
    protected CoreReceiver receiver(Accepted p) {
        return p.receiver;
    }

    @Override
    protected boolean adopt(CoreReceiver r) {
        return provider.track(r);
    }
}
