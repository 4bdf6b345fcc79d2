package io.jmesh.api.contract;

import io.jmesh.api.Context;
import io.jmesh.api.Fabric;

import java.util.Map;

/**
 * The contract suite on the TCP provider with the eager path off: one fabric on a loopback address, connected to
 * itself. Part of the unit run.
 */
class TcpSenderReceiverContractTest extends SenderReceiverContract {
    @Override
    protected Fabric openFabric() {
        return Fabric.open(context(Context.from(Map.of(), Map.of()).provider("tcp").addresses("127.0.101.2/24")));
    }

    /** The eager path's threshold for this run of the suite. */
    protected Context context(Context base) {
        return base.tcpEagerThreshold(0);
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

    /** Every message waits for its receive's clear-to-send frame. */
    @Override
    protected boolean sendsSmallMessagesEagerly() {
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
