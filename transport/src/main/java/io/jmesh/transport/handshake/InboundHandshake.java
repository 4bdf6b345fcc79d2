package io.jmesh.transport.handshake;

import java.net.InetSocketAddress;
import java.util.Objects;

/**
 * A connector that proved the listener's secret and is waiting for this side's answer. Returned by
 * {@link HandshakeListener#pollInbound()} with status ACTION_REQUIRED; every method returns at once.
 *
 * <pre>{@code
 * InboundHandshake in = listener.pollInbound();          // null: nothing yet, call again
 * if (in != null) {
 *     QpInfo theirs = QpInfo.decode(in.peerPayload());   // create and connect the local QP with it
 *     in.accept(mine.encode());                          // or in.reject("why")
 * }
 * // later: in.poll() == COMPLETE once the connector has applied our reply (READY)
 * }</pre>
 */
public final class InboundHandshake extends Handshake {
    /**
     * How much longer than its handshake timeout the accepting side waits for READY. The connector's own deadline
     * started earlier, so a live connector answers first (READY, or a REJECT saying why, e.g. nobody polled it); the
     * grace absorbs two threads' scheduling, so that reason is heard instead of a guess.
     */
    public static final long READY_GRACE_NANOS = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(250);

    private final InetSocketAddress remoteAddress;
    private final InetSocketAddress localAddress;
    private final InboundSession session;

    InboundHandshake(HandshakeAgent agent, InboundSession session, InetSocketAddress remoteAddress,
                     InetSocketAddress localAddress) {
        super(agent, HandshakeStatus.IN_PROGRESS);
        this.session = session;
        this.remoteAddress = remoteAddress;
        this.localAddress = localAddress;
    }

    /** The connector's address and port (its link address, since it binds the route's local address). */
    public InetSocketAddress remoteAddress() {
        return remoteAddress;
    }

    /** The local address and port the connection arrived on: tells which local link it uses. */
    public InetSocketAddress localAddress() {
        return localAddress;
    }

    /**
     * Sends ACCEPT with {@code payload}; the status becomes IN_PROGRESS, then COMPLETE when the connector confirms.
     *
     * @return false when the handshake had already failed (deadline, connector gone); poll() then says why
     * @throws IllegalStateException when called twice or before ACTION_REQUIRED
     */
    public boolean accept(byte[] payload) {
        Objects.requireNonNull(payload, "payload");
        HandshakeAgent.checkPayload(payload);
        if (!startAction("accept()")) {
            return false;
        }
        byte[] copy = payload.clone();
        return agent.execute(() -> session.accept(copy), this);
    }

    /** Turns the connector away with a reason it will report; the status becomes FAILED. */
    public void reject(String reason) {
        Objects.requireNonNull(reason, "reason");
        String why = "rejected by this side: " + reason;
        if (fail(why)) {
            agent.execute(() -> session.reject(reason), null);
        }
    }

    @Override
    public void close() {
        reject("closed before the handshake completed");
    }
}
