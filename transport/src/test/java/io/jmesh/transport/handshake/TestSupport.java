package io.jmesh.transport.handshake;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.api.NoRouteException;
import io.jmesh.transport.net.Route;
import io.jmesh.transport.net.RouteSelector;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Loopback-only helpers: every socket in these tests is on 127.0.0.1 or ::1. */
final class TestSupport {
    static final IpPrefix LOOPBACK4 = IpPrefix.parse("127.0.0.1/8");
    static final IpPrefix LOOPBACK6 = IpPrefix.parse("::1/128");
    static final List<LocalLink> LINKS4 = List.of(LocalLink.tcp(LOOPBACK4, 0));

    /**
     * The bound of every wait in these tests. It only turns a hang into a failure: nothing is expected to take
     * anywhere near this long, and no test asserts how fast anything was (that belongs in benchmarks).
     */
    static final long PATIENCE_MS = 20_000;
    /**
     * A handshake deadline no test runs into: a connection dropped or failed in a test with this deadline was
     * dropped for what it did, not for running out of time.
     */
    static final long NO_DEADLINE_MS = 60_000;

    private TestSupport() {
    }

    static HandshakeSettings settings(long timeoutMillis, int cap) {
        return new HandshakeSettings(Duration.ofMillis(timeoutMillis), cap);
    }

    /** Milliseconds since {@code startNanos} (a {@link System#nanoTime()} reading), rounded down. */
    static long millisSince(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }

    static Route route(ListenHandle peer) {
        try {
            return RouteSelector.best(LINKS4, peer);
        } catch (NoRouteException e) {
            throw new AssertionError(e);
        }
    }

    /** Polls until {@code condition} holds; fails after {@code millis} (a hang guard, not a speed requirement). */
    static void await(String what, long millis, BooleanSupplier condition) {
        long end = System.nanoTime() + millis * 1_000_000;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                fail("not within " + millis + " ms: " + what);
            }
            Thread.onSpinWait();
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }

    static <T> T awaitNonNull(String what, long millis, Supplier<T> supplier) {
        Object[] box = new Object[1];
        await(what, millis, () -> (box[0] = supplier.get()) != null);
        @SuppressWarnings("unchecked")
        T t = (T) box[0];
        return t;
    }

    static HandshakeStatus awaitTerminalOrAction(Handshake h, long millis) {
        await("handshake progress " + h, millis, () -> h.poll() != HandshakeStatus.IN_PROGRESS);
        return h.poll();
    }

    /**
     * Runs one well-behaved handshake to the end the way a provider would (accept on one side, confirm on the other)
     * and checks both sides reached COMPLETE with the same connection id.
     */
    static void fullHandshake(HandshakeAgent agent, HandshakeListener listener, byte[] mine, byte[] theirs) {
        OutboundHandshake out = agent.connect(listener.handle(), route(listener.handle()), mine);
        InboundHandshake in = awaitNonNull("inbound handshake", PATIENCE_MS, listener::pollInbound);
        assertEquals(HandshakeStatus.ACTION_REQUIRED, in.poll());
        assertEquals(List.of(mine.length), List.of(in.peerPayload().length));
        in.accept(theirs);
        assertEquals(HandshakeStatus.ACTION_REQUIRED, awaitTerminalOrAction(out, PATIENCE_MS),
                () -> "" + out.failure());
        out.confirm();
        await("outbound COMPLETE", PATIENCE_MS, () -> out.poll() == HandshakeStatus.COMPLETE);
        await("inbound COMPLETE", PATIENCE_MS, () -> in.poll() == HandshakeStatus.COMPLETE);
        assertNotNull(out.peerPayload());
        assertEquals(in.connectionId(), out.connectionId());
    }
}
