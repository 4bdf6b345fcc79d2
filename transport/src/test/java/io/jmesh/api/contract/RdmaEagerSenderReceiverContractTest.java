package io.jmesh.api.contract;

import io.jmesh.api.Context;
import org.junit.jupiter.api.Tag;

/**
 * The contract on verbs with the eager path on ({@code JMESH_EAGER_THRESHOLD=4096}): small messages go into the
 * receiver's ring before their receive is posted, and every promise of the suite holds as with it off.
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
}
