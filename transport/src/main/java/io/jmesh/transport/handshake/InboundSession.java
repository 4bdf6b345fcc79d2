package io.jmesh.transport.handshake;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.security.MessageDigest;

/**
 * The acceptor's side of one handshake socket, on the agent thread:
 * AWAIT_HELLO → (secret checked) AWAIT_APP → (accept) AWAIT_READY → COMPLETE, or REJECT and close. Anything out of
 * order, a wrong secret, a wrong version, or the deadline drops the socket with a WARN; nothing else is affected.
 */
final class InboundSession extends Session {
    private enum State { AWAIT_HELLO, AWAIT_APP, AWAIT_READY, CLOSING }

    private final HandshakeListener listener;
    private final byte[] secretSeen = new byte[Frame.SECRET_LENGTH];
    private State state = State.AWAIT_HELLO;
    private InboundHandshake handshake;

    InboundSession(HandshakeAgent agent, HandshakeListener listener, SocketChannel channel, long deadlineNanos,
                   String peer) {
        super(agent, channel, deadlineNanos, peer);
        this.listener = listener;
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

    @Override
    void onFrame(int version, int type, ByteBuffer body) {
        switch (state) {
            case AWAIT_HELLO -> onHello(version, type, body);
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
            refuse("HELLO of " + body.remaining() + " bytes is shorter than its " + Frame.SECRET_LENGTH
                    + "-byte secret");
            return;
        }
        body.get(Frame.HELLO_SECRET_OFFSET, secretSeen);
        if (!MessageDigest.isEqual(secretSeen, listener.secret())) {
            refuse("wrong secret: the handle it used is not this listener's (a stale handle from a closed "
                    + "listener, or a stray client)");
            return;
        }
        byte[] payload = new byte[body.remaining() - Frame.HELLO_PAYLOAD_OFFSET];
        body.get(Frame.HELLO_PAYLOAD_OFFSET, payload);
        handshake = new InboundHandshake(agent, this, (InetSocketAddress) remote(),
                (InetSocketAddress) local());
        state = State.AWAIT_APP;
        handshake.peerPayloadArrived(agent.newConnectionId(), payload);
        listener.offer(handshake);
    }

    /** Agent thread: the application accepted. */
    void accept(byte[] payload) {
        if (isClosed() || state != State.AWAIT_APP) {
            return;
        }
        state = State.AWAIT_READY;
        try {
            send(Frame.ACCEPT, Frame.accept(handshake.connectionId(), payload));
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
            case AWAIT_APP -> drop("this process did not accept() it within " + limit
                    + " (is the accepting side polling its listener?)");
            case AWAIT_READY -> drop("the connector did not confirm with READY within " + limit);
            case CLOSING -> drop("it did not read our REJECT within " + limit);
        }
    }

    /** Evicted to make room for a new connection under the per-listener cap. */
    void evict(int cap) {
        drop("evicted: the listener holds its limit of " + cap
                + " pending connections and this one had not sent a valid HELLO yet");
    }

    void listenerClosed() {
        if (handshake != null) {
            handshake.fail("the listener was closed before the handshake with " + peer + " completed");
        }
        close();
    }

    private void drop(String reason) {
        if (handshake != null) {
            handshake.fail("handshake with " + peer + " dropped: " + reason);
        }
        agent.warn("handshake from {} dropped: {}", peer, reason);
        agent.countDropped(reason);
        close();
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
