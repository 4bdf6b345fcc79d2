package io.jmesh.transport.handshake;

import io.jmesh.transport.net.Route;
import java.util.Objects;

/**
 * A connect in progress, over one {@link Route}. Returned by {@link HandshakeAgent#connect}; every method returns at
 * once, so it fits NCCL's connect contract (return a NULL comm until ready, be called again).
 *
 * <pre>{@code
 * OutboundHandshake out = agent.connect(peerHandle, route, mine.encode());
 * // each time NCCL calls connect():
 * switch (out.poll()) {
 *     case IN_PROGRESS -> { return null; }
 *     case ACTION_REQUIRED -> { qp.connect(QpInfo.decode(out.peerPayload())); out.confirm(); return null; }
 *     case COMPLETE -> { return sendComm; }
 *     case FAILED -> throw new IOException(out.failure());
 * }
 * }</pre>
 */
public final class OutboundHandshake extends Handshake {
    private final Route route;
    OutboundSession session; // agent thread only

    OutboundHandshake(HandshakeAgent agent, Route route) {
        super(agent, HandshakeStatus.IN_PROGRESS);
        this.route = route;
    }

    public Route route() {
        return route;
    }

    /**
     * Tells the acceptor that this side has applied its reply (sends READY). The status becomes IN_PROGRESS, then
     * COMPLETE once READY is sent.
     *
     * @return false when the handshake had already failed; poll() then says why
     * @throws IllegalStateException when called twice or before ACTION_REQUIRED
     */
    public boolean confirm() {
        if (!startAction("confirm()")) {
            return false;
        }
        return agent.execute(() -> {
            if (session != null) {
                session.confirm();
            }
        }, this);
    }

    /** Gives up, telling the acceptor why (e.g. the local QP could not be connected); the status becomes FAILED. */
    public void abort(String reason) {
        Objects.requireNonNull(reason, "reason");
        if (fail("aborted by this side: " + reason)) {
            agent.execute(() -> {
                if (session != null) {
                    session.abort(reason);
                }
            }, null);
        }
    }

    @Override
    public void close() {
        abort("closed before the handshake completed");
    }
}
