package io.jmesh.transport.rdma;

import io.jmesh.api.Fabric;
import io.jmesh.testbed.TestbedEnv;

import java.util.concurrent.TimeUnit;

/**
 * A relay node of {@link RdmaKilledRelayTest}, as a child JVM: a verbs fabric that only relays (as {@code jmesh
 * relay} does), with the test's short QP timeout (a relay behind it must notice the kill as soon as the ends do),
 * which announces itself under the key given as its argument and then waits to be killed. Exit code 3 means it was
 * not killed in time.
 */
public final class RelayChild {
    static final String UP = "killed-relay-up";

    private RelayChild() {
    }

    public static void main(String[] args) throws Exception {
        try (Fabric fabric = Fabric.open(RdmaTestbedSupport.failureContext().provider("rdma"))) {
            System.out.println("relay child: relaying on " + fabric.links());
            TestbedEnv.publish(args.length > 0 ? args[0] : UP, Long.toString(ProcessHandle.current().pid()));
            TimeUnit.SECONDS.sleep(600);
        }
        System.exit(3);
    }
}
