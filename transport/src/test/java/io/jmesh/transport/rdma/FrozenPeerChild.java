package io.jmesh.transport.rdma;

import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.net.ListenHandle;
import java.io.BufferedReader;
import java.io.InputStreamReader;
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
        CoreSender sender = null;
        CoreReceiver receiver = null;
        long deadline = System.nanoTime() + RdmaTestbedSupport.STEP.toNanos();
        while (sender == null || receiver == null) {
            if (sender == null) {
                sender = connect.poll();
            }
            if (receiver == null) {
                receiver = listener.accept();
            }
            if (System.nanoTime() > deadline) {
                System.out.println("child: connections not up in time");
                System.exit(3);
            }
            Thread.onSpinWait();
        }
        System.out.println("connected");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (in.readLine() != null) {
            // never polls again
        }
        provider.close();
    }
}
