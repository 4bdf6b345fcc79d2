package io.jmesh.transport.connect;

import io.jmesh.api.Listener;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.handshake.HandshakeAgent;
import io.jmesh.transport.handshake.HandshakeListener;
import io.jmesh.transport.handshake.HandshakeStatus;
import io.jmesh.transport.handshake.InboundHandshake;
import io.jmesh.transport.liveness.Liveness;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The accept side both providers share: {@link #accept()} never blocks (NCCL's accept contract). Each connector that
 * proved the listener's secret is checked and answered ({@link #admit}: the provider validates its offer, creates what
 * the answer describes, or rejects it with the reason before creating anything); the answered connection waits here
 * until its handshake completes and the provider says it is {@link Pending#ready()} (TCP: every data socket
 * attached), then is handed out with liveness on the connector, or dropped with the reason when the handshake fails
 * or the connection is not ready within the handshake timeout.
 *
 * @param <P> the provider's pending connection
 */
public abstract class AcceptLoop<P extends AcceptLoop.Pending> implements Listener {
    /** Under the provider's class name, so a log line says which provider connected. */
    private final Logger log = JmeshLog.logger(getClass());

    /** A connection answered in the handshake and not yet handed out; owns what was created for it. */
    public abstract static class Pending {
        protected final InboundHandshake handshake;
        long deadlineNanos;

        protected Pending(InboundHandshake handshake) {
            this.handshake = handshake;
        }

        /** True once the connection can be handed out. */
        protected boolean ready() {
            return true;
        }

        /** Frees what it owns and fails the handshake if that has not completed. */
        protected abstract void close();
    }

    private final HandshakeListener listener;
    private final HandshakeAgent agent;
    private final long timeoutNanos;
    private final List<P> pending = new ArrayList<>();
    private boolean closed;
    /** The last connection that reached this listener and failed, as its WARN said. */
    private volatile String lastFailure;

    protected AcceptLoop(HandshakeAgent agent, HandshakeListener listener) {
        this.agent = agent;
        this.listener = listener;
        this.timeoutNanos = agent.settings().timeout().toNanos();
    }

    /**
     * Checks a connector's offer and creates what the answer describes.
     *
     * @return the pending connection; its {@code answer} is sent as the ACCEPT
     * @throws IOException or RuntimeException naming why the connector is rejected (nothing is left created)
     */
    protected abstract P admit(InboundHandshake in) throws IOException;

    /** The ACCEPT's payload for a connection {@link #admit} made. */
    protected abstract byte[] answer(P p);

    /** Work on the pending connections before they are checked (TCP attaches data sockets here). */
    protected void advance(List<P> pending, long nowNanos) {
    }

    /** Builds the receiver of a ready connection; it owns everything the pending connection owned. */
    protected abstract CoreReceiver receiver(P p);

    /** Hands the receiver to its provider; false when the provider closed meanwhile. */
    protected abstract boolean adopt(CoreReceiver r);

    /** After the handshake listener and pending connections are closed (a provider frees its ports, forgets this). */
    protected void closed() {
    }

    @Override
    public byte[] handle() {
        return listener.handle().encode();
    }

    @Override
    public String handleText() {
        return listener.handle().toString();
    }

    /**
     * A connected receiver, or null while none is ready.
     *
     * @throws IllegalStateException when the listener or its provider is closed
     */
    @Override
    public final synchronized CoreReceiver accept() {
        if (closed) {
            throw new IllegalStateException("the listener is closed");
        }
        InboundHandshake in;
        while ((in = listener.pollInbound()) != null) {
            start(in);
        }
        long now = System.nanoTime();
        advance(pending, now);
        for (Iterator<P> it = pending.iterator(); it.hasNext(); ) {
            P p = it.next();
            HandshakeStatus s = p.handshake.poll();
            if (s == HandshakeStatus.FAILED) {
                it.remove();
                failed("a connection from " + p.handshake.remoteAddress() + " failed during the handshake: "
                        + p.handshake.failure());
                p.close();
            } else if (s == HandshakeStatus.COMPLETE && p.ready()) {
                it.remove();
                return handOut(p);
            } else if (now - p.deadlineNanos >= 0) {
                it.remove();
                failed("dropped a connection from " + p.handshake.remoteAddress() + ": it was not ready within "
                        + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms of its ACCEPT (a firewall on the data "
                        + "port? the connector died?)");
                p.close();
            }
        }
        return null;
    }

    private void failed(String what) {
        log.warn("{}", what);
        lastFailure = what;
    }

    @Override
    public final String lastFailure() {
        return lastFailure;
    }

    private void start(InboundHandshake in) {
        P p;
        try {
            p = admit(in);
        } catch (IOException | RuntimeException e) {
            String why = e.getMessage() == null ? e.toString() : e.getMessage();
            log.warn("rejected a connection from {}: {}", in.remoteAddress(), why);
            in.reject(why);
            return;
        }
        if (!in.accept(answer(p))) {
            log.warn("rejected a connection from {}: the handshake ended before it could be accepted: {}",
                    in.remoteAddress(), in.failure());
            p.close();
            return;
        }
        // after the handshake's own READY wait, grace included, so that its verdict (a REJECT's reason) comes first
        p.deadlineNanos = System.nanoTime() + timeoutNanos + InboundHandshake.READY_GRACE_NANOS;
        pending.add(p);
        log.info("accepting a connection from {}: {}", in.remoteAddress(), p);
    }

    private CoreReceiver handOut(P p) {
        CoreReceiver r = receiver(p);
        if (!adopt(r)) {
            r.close();
            throw new IllegalStateException("the provider is closed (Fabric.close()); this listener accepts nothing "
                    + "more");
        }
        agent.liveness().watch(p.handshake.connectionId(), false, Liveness.host(p.handshake.remoteAddress()),
                p.handshake.peerLivenessPort(), Liveness.host(p.handshake.localAddress()), r.fate());
        log.info("accepted a connection from {}: {}", p.handshake.remoteAddress(), p);
        return r;
    }

    /** Stops listening: closes the handshake listener and the connections not yet handed out. */
    @Override
    public final synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        listener.close();
        for (P p : pending) {
            p.close();
        }
        pending.clear();
        closed();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + listener.handle() + "]";
    }
}
