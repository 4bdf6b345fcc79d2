package io.jmesh.transport.handshake;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * State shared by both ends of a handshake, readable from any thread without blocking. The agent thread and the
 * application thread both move the state, so every transition is a compare-and-set: the first failure wins and a
 * terminal state never changes.
 */
public abstract sealed class Handshake permits InboundHandshake, OutboundHandshake {
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Handshake.class, "state", Object.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Failed, with the reason; kept in the same field as the status so both are read together. */
    private record Failed(String reason) {
    }

    final HandshakeAgent agent;
    /** A {@link HandshakeStatus} other than FAILED, or a {@link Failed}. */
    @SuppressWarnings("unused") // accessed through STATE
    private volatile Object state;
    // Written by the agent thread before the volatile state write that publishes them.
    private byte[] peerPayload;
    private long connectionId;
    private int peerLivenessPort;
    /** When the application last polled, and when the peer's reply came: a deadline can tell who kept it waiting. */
    private volatile long lastPollNanos = System.nanoTime();
    private volatile long replyNanos;

    Handshake(HandshakeAgent agent, HandshakeStatus initial) {
        this.agent = agent;
        this.state = initial;
    }

    /** The current status; never blocks. */
    public final HandshakeStatus poll() {
        lastPollNanos = System.nanoTime();
        return state instanceof HandshakeStatus s ? s : HandshakeStatus.FAILED;
    }

    /** Nanoseconds since the application last polled (or since the handshake began, if it never did). */
    final long sinceLastPollNanos(long nowNanos) {
        return nowNanos - lastPollNanos;
    }

    /** True when the peer's reply came and the application has not polled since: the next step was its to take. */
    final boolean replyUnpolled() {
        long reply = replyNanos;
        return reply != 0 && lastPollNanos - reply < 0;
    }

    /** Why it failed, naming the cause and the fix; null unless {@link #poll()} is FAILED. */
    public final String failure() {
        return state instanceof Failed f ? f.reason() : null;
    }

    /** A copy of the peer's payload; available once the status has been ACTION_REQUIRED. */
    public final byte[] peerPayload() {
        byte[] p = peerPayload;
        if (p == null) {
            throw new IllegalStateException("no peer payload yet: status is " + poll());
        }
        return p.clone();
    }

    /** The id the acceptor gave this connection (used to attach extra sockets later); 0 before it is known. */
    public final long connectionId() {
        return connectionId;
    }

    /**
     * The UDP port where the peer's process answers liveness pings on the address this connection reaches it at, or
     * 0 when it has none (a relayed connection, liveness off); known once the status has been ACTION_REQUIRED.
     */
    public final int peerLivenessPort() {
        return peerLivenessPort;
    }

    /** Gives up unless already COMPLETE or FAILED; the agent closes the socket. Never blocks. */
    public abstract void close();

    final boolean transition(HandshakeStatus from, HandshakeStatus to) {
        return STATE.compareAndSet(this, from, to);
    }

    /** Agent thread: the peer's payload arrived; publishes it with ACTION_REQUIRED. */
    final boolean peerPayloadArrived(long id, int livenessPort, byte[] payload) {
        this.connectionId = id;
        this.peerLivenessPort = livenessPort;
        this.peerPayload = payload;
        this.replyNanos = System.nanoTime();
        return transition(HandshakeStatus.IN_PROGRESS, HandshakeStatus.ACTION_REQUIRED);
    }

    final boolean complete() {
        return transition(HandshakeStatus.IN_PROGRESS, HandshakeStatus.COMPLETE);
    }

    /** Moves to FAILED unless already terminal; returns false when another outcome won. */
    final boolean fail(String reason) {
        Failed failed = new Failed(reason);
        for (;;) {
            Object s = state;
            if (s instanceof Failed || s == HandshakeStatus.COMPLETE) {
                return false;
            }
            if (STATE.compareAndSet(this, s, failed)) {
                return true;
            }
        }
    }

    /** The checks shared by accept/confirm: true when the app may act now, false when it already failed. */
    final boolean startAction(String action) {
        if (transition(HandshakeStatus.ACTION_REQUIRED, HandshakeStatus.IN_PROGRESS)) {
            return true;
        }
        HandshakeStatus s = poll();
        if (s == HandshakeStatus.FAILED) {
            return false;
        }
        throw new IllegalStateException(action + " needs status ACTION_REQUIRED, but it is " + s);
    }

    @Override
    public String toString() {
        HandshakeStatus s = poll();
        return getClass().getSimpleName() + "[" + s + (s == HandshakeStatus.FAILED ? ": " + failure() : "") + "]";
    }
}
