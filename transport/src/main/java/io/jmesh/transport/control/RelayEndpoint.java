package io.jmesh.transport.control;

import io.jmesh.transport.liveness.Liveness;
import io.jmesh.transport.route.RelayPolicy;

import java.net.InetAddress;
import java.util.Map;

/**
 * A provider's relay: the endpoint other nodes' relayed connections come in through and the data mover that carries
 * them on. The control plane binds it first (route discovery advertises its ports), then starts it once the routing
 * table it decides by exists.
 */
public interface RelayEndpoint extends AutoCloseable {
    /** This node's relay endpoint port on each link address (absent or 0: no relay there). */
    Map<InetAddress, Integer> ports();

    /**
     * Starts admitting requests: {@code policy} decides each from the routing table, {@code liveness} watches the
     * relayed connections' neighbours.
     */
    void start(RelayPolicy policy, Liveness liveness);

    /** Ends every relayed connection and frees the endpoint; safe to call twice. */
    @Override
    void close();

    /** Binds a provider's relay with the handshake's limits and the mesh key. */
    @FunctionalInterface
    interface Binder {
        RelayEndpoint bind(io.jmesh.transport.handshake.HandshakeSettings settings) throws java.io.IOException;
    }
}
