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
    // Set by the agent thread on behalf of a relayed connector only.
    private volatile byte[] challenge;
    private volatile byte[] acceptorProof;

    OutboundHandshake(HandshakeAgent agent, Route route) {
        super(agent, HandshakeStatus.IN_PROGRESS);
        this.route = route;
    }

    public Route route() {
        return route;
    }

    /**
     * On behalf of a relayed connector ({@link HandshakeAgent#connectOnBehalf}): the listener's challenge nonce, to
     * pass on to the connector, or null until it has arrived.
     */
    public byte[] challenge() {
        byte[] c = challenge;
        return c == null ? null : c.clone();
    }

    /**
     * On behalf of a relayed connector: sends the connector's answer to {@link #challenge()} to the listener. The
     * listener checks it; a wrong one ends in FAILED with the listener's reason.
     *
     * @return false when the handshake had already failed; poll() then says why
     */
    public boolean prove(byte[] proof) {
        if (proof.length != Frame.MAC_LENGTH) {
            throw new IllegalArgumentException("a proof has " + Frame.MAC_LENGTH + " bytes, not " + proof.length);
        }
        byte[] copy = proof.clone();
        return agent.execute(() -> {
            if (session != null) {
                session.prove(copy);
            }
        }, this);
    }

    /**
     * On behalf of a relayed connector: the listener's proof from its ACCEPT, to pass on in the relay's own ACCEPT
     * (the connector checks it); null before ACTION_REQUIRED.
     */
    public byte[] acceptorProof() {
        byte[] p = acceptorProof;
        return p == null ? null : p.clone();
    }

    void challengeArrived(byte[] nonce) {
        challenge = nonce;
    }

    void acceptorProofArrived(byte[] mac) {
        acceptorProof = mac;
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
