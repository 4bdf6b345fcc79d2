package io.jmesh.transport.core;

import java.time.Duration;
import java.util.function.Supplier;

/**
 * For the peer processes that the failure tests start (frozen, killed): connect to the test both ways, a sender by
 * polling the connect and a receiver by accepting, on either provider; a child that is not connected in time says so
 * and exits with status 3, which its test reports.
 */
public final class BothWays {
    private BothWays() {
    }

    /** The two ends of a child's connections to its test. */
    public record Ends(CoreSender sender, CoreReceiver receiver) {
    }

    public static Ends await(Supplier<CoreSender> connect, Supplier<CoreReceiver> accept, Duration patience) {
        CoreSender sender = null;
        CoreReceiver receiver = null;
        long deadline = System.nanoTime() + patience.toNanos();
        while (sender == null || receiver == null) {
            if (sender == null) {
                sender = connect.get();
            }
            if (receiver == null) {
                receiver = accept.get();
            }
            if (System.nanoTime() - deadline > 0) {
                System.out.println("child: connections not up in " + patience.toMillis() + " ms");
                System.out.flush();
                System.exit(3);
            }
            Thread.onSpinWait();
        }
        return new Ends(sender, receiver);
    }
}
