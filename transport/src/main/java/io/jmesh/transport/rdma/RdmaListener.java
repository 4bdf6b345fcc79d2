package io.jmesh.transport.rdma;

import io.jmesh.transport.handshake.HandshakeListener;
import io.jmesh.transport.handshake.HandshakeStatus;
import io.jmesh.transport.handshake.InboundHandshake;
import io.jmesh.transport.net.ListenHandle;
import io.jmesh.transport.net.LocalLink;
import io.jmesh.transport.verbs.ProtectionDomain;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * Accepts verbs connections: {@link #accept()} never blocks; it returns a receiver whose handshake has completed, or
 * null. A connector's data is checked before anything is created for it; a bad one is rejected with the reason.
 */
public final class RdmaListener implements io.jmesh.api.Listener {
    private static final Logger LOG = LogManager.getLogger(RdmaListener.class);

    private record Pending(InboundHandshake handshake, Endpoint endpoint, RdmaReceiver receiver) {
    }

    private final RdmaProvider provider;
    private final HandshakeListener listener;
    private final List<Pending> pending = new ArrayList<>();
    private boolean closed;

    RdmaListener(RdmaProvider provider, HandshakeListener listener) {
        this.provider = provider;
        this.listener = listener;
    }

    /** The handle to give connectors: every local address with its prefix, the ports, the secret. */
    public ListenHandle listenHandle() {
        return listener.handle();
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
    public synchronized RdmaReceiver accept() {
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
                return p.receiver;
            }
            if (s == HandshakeStatus.FAILED) {
                it.remove();
                LOG.warn("a connection from {} failed during the handshake: {}", p.handshake.remoteAddress(),
                        p.handshake.failure());
                p.endpoint.close();
            }
        }
        return null;
    }

    private void start(InboundHandshake in) {
        Endpoint ep = null;
        try {
            ConnectInfo peer = ConnectInfo.decode(in.peerPayload());
            LocalLink link = provider.linkFor(in.localAddress().getAddress());
            if (link == null) {
                throw new IllegalStateException("the connection arrived on " + in.localAddress()
                        + ", which is not one of this listener's RDMA links");
            }
            ProtectionDomain pd = provider.domain(link.device());
            byte[] gid = RdmaProvider.gid(pd.device(), link.port(), link.gidIndex());
            ep = new Endpoint(pd, provider.deviceIndex(link.device()), link.port(), link.gidIndex(), gid,
                    RdmaReceiver.CONTROL_BYTES, provider.options());
            ep.connect(peer.qp());
            RdmaReceiver receiver = new RdmaReceiver(ep, peer.controlAddress(), peer.controlRkey());
            long sizes = ep.control.address() + Cts.FIFO_BYTES;
            if (!in.accept(new ConnectInfo(ep.local(), sizes, ep.controlMr.rkey()).encode())) {
                throw new IllegalStateException("the handshake ended before it could be accepted: " + in.failure());
            }
            pending.add(new Pending(in, ep, receiver));
            LOG.info("accepted a connection from {} on {} ({})", in.remoteAddress(), link.device(), link.prefix());
        } catch (RuntimeException e) {
            LOG.warn("rejected a connection from {}: {}", in.remoteAddress(), e.getMessage());
            in.reject(e.getMessage());
            if (ep != null) {
                ep.close();
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
            p.endpoint.close();
        }
        pending.clear();
    }
}
