package io.jmesh.transport.handshake;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * The acceptor's side of one handshake socket, on the agent thread: AWAIT_HELLO → (CHALLENGE sent) AWAIT_PROOF →
 * (proof checked) AWAIT_APP → (accept) AWAIT_READY → COMPLETE, or REJECT and close. Anything out of order, a wrong
 * proof, a wrong version, or the deadline drops the socket with a WARN; nothing else is affected. Until the proof is
 * checked the application sees nothing and the socket is the first to be evicted when the listener is full.
 */
final class InboundSession extends Session {
    enum State { AWAIT_HELLO, AWAIT_PROOF, AWAIT_APP, AWAIT_READY, CLOSING }

    private final HandshakeListener listener;
    /** The READY wait has had its {@link InboundHandshake#READY_GRACE_NANOS}. */
    private boolean graced;
    private final byte[] connectorNonce = new byte[Frame.NONCE_LENGTH];
    private final byte[] listenerNonce;
    private final InetAddress remoteHost;
    private State state = State.AWAIT_HELLO;
    private byte[] payload;
    private int peerLivenessPort;
    private InboundHandshake handshake;

    InboundSession(HandshakeAgent agent, HandshakeListener listener, SocketChannel channel, long deadlineNanos,
                   String peer, InetAddress remoteHost, byte[] listenerNonce) {
        super(agent, channel, deadlineNanos, peer);
        this.listener = listener;
        this.remoteHost = remoteHost;
        this.listenerNonce = listenerNonce;
    }

    @Override
    Handshake handshake() {
        return handshake;
    }

    HandshakeListener listener() {
        return listener;
    }

    /** True once the connector has proven the secret; unproven sessions are the first to be evicted. */
    boolean authenticated() {
        return handshake != null;
    }

    /** The connector's address, for the pending cap's fairness between addresses. */
    InetAddress remoteHost() {
        return remoteHost;
    }

    State state() {
        return state;
    }

    @Override
    void onFrame(int version, int type, ByteBuffer body) {
        switch (state) {
            case AWAIT_HELLO -> onHello(version, type, body);
            case AWAIT_PROOF -> onProof(version, type, body);
            case AWAIT_READY -> {
                if (type == Frame.READY && version == Frame.VERSION && !body.hasRemaining()) {
                    handshake.complete();
                    agent.debug("handshake from {} complete", peer);
                    close();
                } else if (type == Frame.REJECT) {
                    handshake.fail("the connector at " + peer + " gave up after our reply: " + Frame.reason(body));
                    close();
                } else if (version != Frame.VERSION) {
                    onViolation("expected READY of handshake version " + Frame.VERSION + ", got "
                            + Frame.typeName(type) + " of version " + version + " (run the same jmesh version on all "
                            + "nodes)");
                } else {
                    onViolation("expected READY with no body, got " + Frame.typeName(type) + " of " + body.limit()
                            + " bytes");
                }
            }
            case AWAIT_APP -> onViolation("sent " + Frame.typeName(type) + " before we replied");
            case CLOSING -> {
                // rejected already; whatever else it says changes nothing
            }
        }
    }

    private void onHello(int version, int type, ByteBuffer body) {
        if (version != Frame.VERSION) {
            refuse("handshake version " + version + " is not supported; this node speaks version " + Frame.VERSION
                    + ": run the same jmesh version on all nodes");
            return;
        }
        if (type != Frame.HELLO) {
            refuse(type == Frame.ATTACH ? "ATTACH (extra sockets) is not supported by this jmesh version"
                    : "expected HELLO, got " + Frame.typeName(type));
            return;
        }
        if (body.remaining() < Frame.HELLO_PAYLOAD_OFFSET) {
            refuse("HELLO of " + body.remaining() + " bytes is shorter than its " + Frame.HELLO_PAYLOAD_OFFSET
                    + " bytes of nonce and liveness port");
            return;
        }
        body.get(Frame.HELLO_NONCE_OFFSET, connectorNonce);
        peerLivenessPort = body.getShort(Frame.HELLO_PORT_OFFSET) & 0xffff;
        payload = new byte[body.remaining() - Frame.HELLO_PAYLOAD_OFFSET];
        body.get(Frame.HELLO_PAYLOAD_OFFSET, payload);
        state = State.AWAIT_PROOF;
        try {
            send(Frame.CHALLENGE, Frame.challenge(listenerNonce));
        } catch (IOException e) {
            onViolation("sending CHALLENGE failed: " + e.getMessage());
        }
    }

    private void onProof(int version, int type, ByteBuffer body) {
        if (type == Frame.REJECT) {
            drop("the connector gave up after our challenge: " + Frame.reason(body));
            return;
        }
        if (version != Frame.VERSION || type != Frame.PROOF || body.remaining() != Frame.MAC_LENGTH) {
            refuse("expected PROOF of " + Frame.MAC_LENGTH + " bytes, got " + Frame.typeName(type) + " of "
                    + body.remaining() + " bytes (version " + version + ")");
            return;
        }
        byte[] seen = new byte[Frame.MAC_LENGTH];
        body.get(0, seen);
        if (!HandshakeMac.matches(HandshakeMac.proof(listener.secret(), listenerNonce, connectorNonce), seen)) {
            refuse("wrong proof of the secret: the handle it used is not this listener's (a stale handle from a "
                    + "closed listener, a stray client, or a replayed handshake)");
            return;
        }
        handshake = new InboundHandshake(agent, this, (InetSocketAddress) remote(),
                (InetSocketAddress) local());
        state = State.AWAIT_APP;
        byte[] p = payload;
        payload = null;
        handshake.peerPayloadArrived(agent.newConnectionId(), peerLivenessPort, p);
        listener.offer(handshake);
    }

    /** Agent thread: the application accepted. */
    void accept(byte[] payload) {
        if (isClosed() || state != State.AWAIT_APP) {
            return;
        }
        state = State.AWAIT_READY;
        try {
            send(Frame.ACCEPT, Frame.accept(handshake.connectionId(),
                    HandshakeMac.acceptProof(listener.secret(), connectorNonce, listenerNonce),
                    agent.livenessPort(handshake.localAddress() == null ? null
                            : handshake.localAddress().getAddress()), payload));
        } catch (IOException e) {
            onViolation("sending ACCEPT failed: " + e.getMessage());
        }
    }

    /** Agent thread: the application rejected (the handshake is already FAILED). */
    void reject(String reason) {
        if (isClosed() || state == State.CLOSING) {
            return;
        }
        state = State.CLOSING;
        stopReading();
        try {
            send(Frame.REJECT, Frame.reject(reason));
        } catch (IOException e) {
            close();
        }
    }

    /** Tells the client why (it may be a legitimate peer of another version or with a stale handle) and drops it. */
    private void refuse(String reason) {
        agent.warn("handshake from {} refused: {}", peer, reason);
        agent.countDropped(reason);
        state = State.CLOSING;
        stopReading();
        try {
            send(Frame.REJECT, Frame.reject(reason));
        } catch (IOException e) {
            close();
        }
    }

    @Override
    void onSent(int type) {
        if (type == Frame.REJECT) {
            close();
        }
    }

    @Override
    void onEndOfStream() {
        switch (state) {
            case AWAIT_HELLO -> drop("closed the connection before sending HELLO");
            case AWAIT_PROOF -> drop("closed the connection before answering our CHALLENGE (a connector of "
                    + "handshake version 1, or a replayed HELLO)");
            case AWAIT_APP, AWAIT_READY -> {
                handshake.fail("the connector at " + peer + " closed the connection before the handshake completed"
                        + " (it failed or timed out; see its log)");
                agent.warn("handshake from {} failed: the connector closed the connection in state {}", peer, state);
                close();
            }
            case CLOSING -> close();
        }
    }

    @Override
    void onViolation(String problem) {
        drop(problem);
    }

    @Override
    void onDeadline() {
        String limit = agent.timeoutMillis() + " ms";
        switch (state) {
            case AWAIT_HELLO -> drop("no valid HELLO within " + limit + " (half-open, slow or stray client)");
            case AWAIT_PROOF -> drop("no PROOF answered our CHALLENGE within " + limit + " (a stray client, or a "
                    + "replayed HELLO)");
            case AWAIT_APP -> drop("this process did not accept() it within " + limit
                    + " (is the accepting side polling its listener?)");
            case AWAIT_READY -> {
                if (!graced) {
                    graced = true;
                    deadlineNanos += InboundHandshake.READY_GRACE_NANOS;
                    return;
                }
                // the connector's REJECT may sit unread when both deadlines fall in one turn of the agent
                try {
                    readFrames();
                } catch (IOException ignored) {
                    // nothing to read: the verdict below stands
                }
                if (!isClosed()) {
                    drop("the connector did not confirm with READY within " + limit);
                }
            }
            case CLOSING -> drop("it did not read our REJECT within " + limit);
        }
    }

    /** Evicted to make room for a new connection under the per-listener cap. */
    void evict(int cap) {
        String reason = "evicted: the listener holds its limit of " + cap + " pending connections and this one "
                + (state == State.AWAIT_READY ? "had not confirmed our ACCEPT with READY yet (the oldest such)"
                : "had not proven the secret yet");
        failAndCount(reason);
        rejectAndClose(reason); // a legit connector learns why, not only that the socket closed
    }

    void listenerClosed() {
        if (handshake != null) {
            handshake.fail("the listener was closed before the handshake with " + peer + " completed");
        }
        close();
    }

    private void drop(String reason) {
        failAndCount(reason);
        close();
    }

    private void failAndCount(String reason) {
        if (handshake != null) {
            handshake.fail("handshake with " + peer + " dropped: " + reason);
        }
        agent.warn("handshake from {} dropped: {}", peer, reason);
        agent.countDropped(reason);
    }

    private SocketAddress remote() {
        try {
            return channel.getRemoteAddress();
        } catch (IOException e) {
            return null;
        }
    }

    private SocketAddress local() {
        try {
            return channel.getLocalAddress();
        } catch (IOException e) {
            return null;
        }
    }
}
