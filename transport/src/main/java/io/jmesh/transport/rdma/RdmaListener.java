package io.jmesh.transport.rdma;

import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.Fate;
import io.jmesh.transport.core.ReceiveSlot;
import io.jmesh.transport.handshake.HandshakeListener;
import io.jmesh.transport.handshake.HandshakeStatus;
import io.jmesh.transport.handshake.InboundHandshake;
import io.jmesh.transport.liveness.Liveness;
import io.jmesh.api.LocalLink;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * Accepts verbs connections: {@link #accept()} never blocks; it returns a receiver whose handshake has completed, or
 * null. A connector's data is checked before anything is created for it; a bad one is rejected with the reason.
 */
public final class RdmaListener implements io.jmesh.api.Listener {
    private static final Logger LOG = LogManager.getLogger(RdmaListener.class);

    private record Pending(InboundHandshake handshake, CoreReceiver receiver) {
    }

    private final RdmaProvider provider;
    private final HandshakeListener listener;
    private final List<Pending> pending = new ArrayList<>();
    private boolean closed;

    RdmaListener(RdmaProvider provider, HandshakeListener listener) {
        this.provider = provider;
        this.listener = listener;
    }

    @Override
    public byte[] handle() {
        return listener.handle().encode();
    }

    @Override
    public String handleText() {
        return listener.handle().toString();
    }

    /** A connected receiver, or null while none has completed. */
    @Override
    public synchronized CoreReceiver accept() {
        if (closed) {
            throw new IllegalStateException("the listener is closed");
        }
        InboundHandshake in;
        while ((in = listener.pollInbound()) != null) {
            start(in);
        }
        for (Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
            Pending p = it.next();
            HandshakeStatus s = p.handshake.poll();
            if (s == HandshakeStatus.COMPLETE) {
                it.remove();
                provider.track(p.receiver);
                return p.receiver;
            }
            if (s == HandshakeStatus.FAILED) {
                it.remove();
                LOG.warn("a connection from {} failed during the handshake: {}", p.handshake.remoteAddress(),
                        p.handshake.failure());
                p.receiver.close();
            }
        }
        return null;
    }

    private void start(InboundHandshake in) {
        Endpoint[] rails = null;
        try {
            ConnectInfo peer = ConnectInfo.decode(in.peerPayload());
            if (peer.relay()) {
                throw new IllegalArgumentException("a relay node offered to push relay records to a listener (a "
                        + "jmesh of another version there? run the same jmesh on every node)");
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
            rails = new Endpoint[n];
            List<ConnectInfo.Rail> reply = new ArrayList<>();
            boolean eager = peer.eager() && provider.eagerThreshold() > 0;  // the connector sends eagerly, we take it
            for (int i = 0; i < n; i++) {
                rails[i] = provider.endpoint(links[i], i > 0 ? 4096 : eager ? RdmaSendWire.EAGER_CONTROL_BYTES
                        : RdmaReceiveWire.CONTROL_BYTES);
                rails[i].connect(peer.rails().get(i).qp());
                reply.add(new ConnectInfo.Rail(rails[i].local(), rails[i].deviceIndex, null));
            }
            LocalLink first = links[0];
            Fate fate = new Fate();
            provider.watchEvents(rails, fate);
            ReceiveSlot[] ring = CoreReceiver.ring();
            CoreReceiver receiver = new CoreReceiver(fate, ring, new RdmaReceiveWire(fate, ring, rails,
                    peer.controlAddress(), peer.controlRkey(),
                    () -> provider.loopback(first, RdmaReceiveWire.FLUSH_BYTES), eager ? provider.eagerThreshold() : 0),
                    provider::forget);
            Endpoint[] owned = rails;
            rails = null; // the receiver owns them now
            long sizes = owned[0].control.address() + Cts.FIFO_BYTES;
            ConnectInfo answer = new ConnectInfo(reply, sizes, owned[0].controlMr.rkey());
            if (!in.accept((eager ? answer.withEager() : answer).encode())) {
                receiver.close();
                throw new IllegalStateException("the handshake ended before it could be accepted: " + in.failure());
            }
            pending.add(new Pending(in, receiver));
            provider.agent().liveness().watch(in.connectionId(), false, Liveness.host(in.remoteAddress()),
                    in.peerLivenessPort(), Liveness.host(in.localAddress()), fate);
            LOG.info("accepted a connection from {} on {} ({}{})", in.remoteAddress(), first.device(), first.prefix(),
                    n > 1 ? ", " + n + " queue pairs" : "");
        } catch (RuntimeException e) {
            LOG.warn("rejected a connection from {}: {}", in.remoteAddress(), e.getMessage());
            in.reject(e.getMessage());
            if (rails != null) {
                for (Endpoint ep : rails) {
                    if (ep != null) {
                        try {
                            ep.close();
                        } catch (RuntimeException ex) {
                            LOG.warn("{}", ex.getMessage());
                        }
                    }
                }
            }
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        listener.close();
        for (Pending p : pending) {
            p.handshake.close();
            p.receiver.close();
        }
        pending.clear();
    }
}
