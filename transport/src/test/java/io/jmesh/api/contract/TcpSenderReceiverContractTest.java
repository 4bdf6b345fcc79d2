package io.jmesh.api.contract;

import io.jmesh.api.Fabric;
import io.jmesh.transport.config.JmeshConfig;

import java.util.Map;

/**
 * The contract suite on the TCP provider: one fabric on a loopback address, connected to itself. Part of the unit
 * run.
 */
class TcpSenderReceiverContractTest extends SenderReceiverContract {
    @Override
    protected Fabric openFabric() {
        return Fabric.open(JmeshConfig.of(Map.of(JmeshConfig.PROVIDER.property(), "tcp",
                JmeshConfig.ADDRESSES.property(), "127.0.101.2/24"), Map.of()));
    }

    /** One ordered stream per connection: the sender reports a request only once every earlier one is done. */
    @Override
    protected boolean reportsAllKindsInIssueOrder() {
        return true;
    }

    /** A socket has nothing to gain from holding a clear-to-send: each leaves at once. */
    @Override
    protected boolean holdsReceivesPostedWithMore() {
        return false;
    }

    /** The owner's receiver applies writes and serves reads, and only while its application polls it. */
    @Override
    protected boolean ownerServesOnlyWhilePolled() {
        return true;
    }

    @Override
    protected OwnerRefusal ownerRefusal() {
        return OwnerRefusal.REFUSED_CONNECTION_KEPT;
    }
}
