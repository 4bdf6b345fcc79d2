package io.jmesh.transport.rdma;

import io.jmesh.transport.handshake.HandshakeStatus;
import io.jmesh.transport.handshake.OutboundHandshake;
import io.jmesh.transport.net.ListenHandle;
import io.jmesh.transport.net.LocalLink;
import io.jmesh.transport.net.NoRouteException;
import io.jmesh.transport.net.Route;
import io.jmesh.transport.net.RouteSelector;
import io.jmesh.transport.verbs.ProtectionDomain;
import io.jmesh.verbs.VerbsException;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * A connect in progress, as a non-blocking state machine: {@link #poll()} returns null until the handshake is done,
 * then the {@link RdmaSender}. The route is chosen here (the local link that shares a subnet with the peer, fastest
 * first); the queue pair is created in INIT at once and brought to RTR and RTS when the listener's reply arrives.
 */
public final class RdmaConnect implements io.jmesh.api.Connector {
    private static final Logger LOG = LogManager.getLogger(RdmaConnect.class);

    private final Route route;
    private final Endpoint endpoint;
    private final OutboundHandshake handshake;
    private RdmaSender sender;
    private boolean done;

    RdmaConnect(RdmaProvider provider, ListenHandle peer) throws NoRouteException {
        this.route = RouteSelector.best(provider.links(), peer);
        LocalLink link = route.local();
        ProtectionDomain pd = provider.domain(link.device());
        byte[] gid = RdmaProvider.gid(pd.device(), link.port(), link.gidIndex());
        this.endpoint = new Endpoint(pd, provider.deviceIndex(link.device()), link.port(), link.gidIndex(), gid,
                RdmaSender.CONTROL_BYTES,
                provider.options());
        byte[] payload = new ConnectInfo(endpoint.local(), endpoint.control.address(), endpoint.controlMr.rkey())
                .encode();
        this.handshake = provider.agent().connect(peer, route, payload);
        LOG.info("connecting to {} over {} ({} -> {})", peer.prefixes(), link.device(), link.prefix(),
                route.peer().prefix());
    }

    @Override
    public String route() {
        return route.local().device() + " " + route.local().prefix() + " -> " + route.peer().prefix();
    }

    /**
     * Advances the connect.
     *
     * @return the sender once connected, null while in progress
     * @throws VerbsException or IllegalStateException naming the cause when the connect failed (everything it
     *                        created is freed)
     */
    @Override
    public RdmaSender poll() {
        if (done) {
            return sender;
        }
        HandshakeStatus s = handshake.poll();
        try {
            switch (s) {
                case IN_PROGRESS -> {
                    return null;
                }
                case ACTION_REQUIRED -> {
                    if (sender == null) {
                        ConnectInfo peer = ConnectInfo.decode(handshake.peerPayload());
                        endpoint.connect(peer.qp());
                        sender = new RdmaSender(endpoint, peer.controlAddress(), peer.controlRkey());
                        handshake.confirm();
                    }
                    return null;
                }
                case COMPLETE -> {
                    done = true;
                    return sender;
                }
                default -> throw new IllegalStateException("connecting to " + route.peer().prefix() + " over "
                        + route.local().device() + " failed: " + handshake.failure());
            }
        } catch (RuntimeException e) {
            handshake.abort(e.getMessage());
            close();
            throw e;
        }
    }

    /** Abandons a connect that has not completed; a completed one is owned by its sender. */
    @Override
    public void close() {
        if (!done) {
            done = true;
            handshake.close();
            endpoint.close();
            sender = null;
        }
    }
}
