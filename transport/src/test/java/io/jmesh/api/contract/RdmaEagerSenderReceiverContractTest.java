package io.jmesh.api.contract;

import io.jmesh.api.Context;
import org.junit.jupiter.api.Tag;

/**
 * The contract on verbs with the eager path on ({@code JMESH_EAGER_THRESHOLD=4096}): small messages go into the
 * receiver's ring before their receive is posted, and every promise of the suite holds as with it off; the entries of
 * receives small enough for the ring are not announced when posted (the sender fetches them when it needs them).
 */
@Tag("rdma")
class RdmaEagerSenderReceiverContractTest extends RdmaSenderReceiverContractTest {
    @Override
    protected Context context(Context base) {
        return base.eagerThreshold(4096);
    }

    @Override
    protected boolean sendsSmallMessagesEagerly() {
        return true;
    }

    /**
     * No: on an eager connection a sender that needs a receive's entries and does not have them reads them from the
     * receiver's staging ring (where small receives' entries wait unannounced), held by MORE or not.
     */
    @Override
    protected boolean holdsReceivesPostedWithMore() {
        return false;
    }
}
