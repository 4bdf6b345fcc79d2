package io.jmesh.api.contract;

import io.jmesh.api.Context;

/**
 * The contract on TCP with the eager path on, at the threshold the verbs run uses (the suite's large messages are
 * above it): small messages go on socket 0 before their receive is posted, into the receiver's ring, and every promise
 * of the suite holds as with the path off. Part of the unit run.
 */
class TcpEagerSenderReceiverContractTest extends TcpSenderReceiverContractTest {
    @Override
    protected Context context(Context base) {
        return base.tcpEagerThreshold(4096);
    }

    @Override
    protected boolean sendsSmallMessagesEagerly() {
        return true;
    }
}
