package io.jmesh.transport.tcp;

import io.jmesh.transport.core.BothWays;
import io.jmesh.api.ListenHandle;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The peer that freezes, for {@link TcpFrozenPeerTest}: a separate JVM that connects to the test both ways, prints
 * "connected", and then never polls again (it blocks reading stdin, and exits when stdin closes). The test stops it
 * with SIGSTOP; until then only its liveness thread speaks for it.
 *
 * <p>Arguments: this peer's address with prefix, the test's listen handle. Prints "handle TEXT" first.
 */
final class FrozenPeerChild {
    private FrozenPeerChild() {
    }

    public static void main(String[] args) throws Exception {
        TcpProvider provider = TcpTestSupport.provider(args[0]);
        TcpListener listener = provider.listen();
        System.out.println("handle " + listener.handleText());
        System.out.flush();
        TcpConnect connect = provider.connect(ListenHandle.parse(args[1]));
        BothWays.Ends ends = BothWays.await(connect::poll, listener::accept, Duration.ofMillis(TcpTestSupport.PATIENCE_MS));
        System.out.println("connected");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (in.readLine() != null) {
            // never polls: the test's end must learn that this process lives from its liveness thread alone
        }
        Reference.reachabilityFence(ends);     // the connections stay up, unpolled, until stdin closes
        provider.close();
    }
}
