package io.jmesh.transport.tcp;

import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.net.ListenHandle;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

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
        CoreSender sender = null;
        CoreReceiver receiver = null;
        long deadline = System.nanoTime() + TcpTestSupport.PATIENCE_MS * 1_000_000;
        while (sender == null || receiver == null) {
            if (sender == null) {
                sender = connect.poll();
            }
            if (receiver == null) {
                receiver = listener.accept();
            }
            if (System.nanoTime() - deadline > 0) {
                System.out.println("child: connections not up in time");
                System.exit(3);
            }
            Thread.onSpinWait();
        }
        System.out.println("connected");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (in.readLine() != null) {
            // never polls: the test's end must learn that this process lives from its liveness thread alone
        }
        provider.close();
    }
}
