package io.jmesh.transport.rdma;

import io.jmesh.transport.core.BothWays;
import io.jmesh.api.ListenHandle;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;

/**
 * The peer that freezes, for {@link RdmaFrozenPeerTest}: a separate JVM in a guest that connects to the survivor both
 * ways, prints "connected", and then never polls again (it blocks on stdin and exits when stdin closes). Its test JVM
 * stops it with SIGSTOP: its kernel's rxe still acknowledges RDMA, so only liveness can tell.
 */
final class FrozenPeerChild {
    private FrozenPeerChild() {
    }

    public static void main(String[] args) throws Exception {
        String survivorKey = args[0];
        String childKey = args[1];
        RdmaProvider provider = RdmaProvider.open(RdmaTestbedSupport.failureContext());
        RdmaListener listener = provider.listen();
        RdmaTestbedSupport.publishHandle(childKey, listener.handle());
        RdmaConnect connect = provider.connect(RdmaTestbedSupport.awaitListenHandle(survivorKey));
        BothWays.Ends ends = BothWays.await(connect::poll, listener::accept, RdmaTestbedSupport.STEP);
        System.out.println("connected");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (in.readLine() != null) {
            // never polls again
        }
        Reference.reachabilityFence(ends);     // the connections stay up, unpolled, until stdin closes
        provider.close();
    }
}
