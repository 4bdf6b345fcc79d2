package io.jmesh.transport.rdma;

import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.testbed.TestbedEnv;

import java.util.concurrent.TimeUnit;

/**
 * The relay node of {@link RdmaKilledRelayTest}, as a child JVM: a verbs fabric that only relays (as {@code jmesh
 * relay} does), which announces itself and then waits to be killed. Exit code 3 means it was not killed in time.
 */
public final class RelayChild {
    static final String UP = "killed-relay-up";

    private RelayChild() {
    }

    public static void main(String[] args) throws Exception {
        try (Fabric fabric = Fabric.open(new Context().provider("rdma"))) {
            System.out.println("relay child: relaying on " + fabric.links());
            TestbedEnv.publish(UP, Long.toString(ProcessHandle.current().pid()));
            TimeUnit.SECONDS.sleep(600);
        }
        System.exit(3);
    }
}
