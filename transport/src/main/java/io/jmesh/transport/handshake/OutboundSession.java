package io.jmesh.transport.handshake;

import io.jmesh.transport.net.Route;
import io.jmesh.transport.security.MeshKey;
import io.jmesh.transport.route.RelayRequest;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

/**
 * The connector's side of one handshake socket, on the agent thread: CONNECTING → (HELLO sent) AWAIT_CHALLENGE →
 * (PROOF sent) AWAIT_REPLY → (ACCEPT, its proof checked) AWAIT_APP → (confirm: READY sent) COMPLETE; a REJECT, a
 * protocol violation, a closed socket or the deadline ends it with a message that says what the peer did and what to
 * check. On behalf of a relayed connector (no secret here) it waits in AWAIT_FORWARD for that connector's proof and
 * leaves the check of the listener's proof to it.
 */
final class OutboundSession extends Session {
    private enum State { CONNECTING, AWAIT_CHALLENGE, AWAIT_FORWARD, AWAIT_REPLY, AWAIT_APP, FINISHING }

    private final OutboundHandshake handshake;
    /** Null on behalf of a relayed connector. */
    private final byte[] secret;
    private final byte[] nonce;
    private final byte[] payload;
    private final String via;
    private byte[] listenerNonce;
    private State state = State.CONNECTING;

    OutboundSession(HandshakeAgent agent, OutboundHandshake handshake, SocketChannel channel, long deadlineNanos,
                    byte[] secret, byte[] nonce, byte[] payload) {
        super(agent, channel, deadlineNanos, describe(handshake.route().peerSocketAddress()));
        Route route = handshake.route();
        this.handshake = handshake;
        this.secret = secret;
        this.nonce = nonce;
        this.payload = payload;
        this.via = " over " + route.local() + (route.isRelayed() ? " " + route.via() : "");
    }

    @Override
    Handshake handshake() {
        return handshake;
    }

    @Override
    void onIoError(IOException e) {
        failQuietly("the connection to " + peer + via + " failed: " + e.getMessage());
    }

    /** The connect completed at once (possible on loopback) or the selector says it is ready. */
    @Override
    void onConnectable() throws IOException {
        try {
            if (!channel.finishConnect()) {
                return;
            }
        } catch (IOException e) {
            failQuietly("cannot connect to " + peer + via + ": " + e.getMessage()
                    + " (is the peer's listener still open, and the link up? try 'ping -I <local address> <peer>')");
            return;
        }
        key.interestOps(SelectionKey.OP_READ);
        state = State.AWAIT_CHALLENGE;
        // this process's port on the link it dials: the neighbour there (the listener, or the first relay, which
        // watches this node and puts its own port in what it passes on) is who pings it
        int livenessPort = agent.livenessPort(handshake.route().local().prefix().address());
        send(Frame.HELLO, relayed(handshake.route(), Frame.hello(nonce, livenessPort, payload),
                agent.settings().meshKey()));
    }

    /**
     * The HELLO, behind a relay request naming the listener when the route goes through a relay: the relay reads the
     * request, connects onwards and passes the challenge and the proofs through, so they are checked end to end.
     */
    private static ByteBuffer relayed(Route route, ByteBuffer hello, MeshKey key) {
        if (!route.isRelayed()) {
            return hello;
        }
        ByteBuffer b = ByteBuffer.allocate(RelayRequest.BYTES + key.requestTrailer() + hello.remaining());
        RelayRequest.encode(b, route.peerSocketAddress(), route.via().hopsLeft(), key);
        return b.put(hello).flip();
    }

    @Override
    void onFrame(int version, int type, ByteBuffer body) {
        boolean waiting = state == State.AWAIT_CHALLENGE || state == State.AWAIT_REPLY;
        if (type == Frame.REJECT && (waiting || state == State.AWAIT_FORWARD)) { // the same layout in every version
            failQuietly("the peer at " + peer + " rejected the handshake: " + Frame.reason(body));
            return;
        }
        if (!waiting) {
            onViolation("sent " + Frame.typeName(type) + " when nothing was expected");
            return;
        }
        if (version != Frame.VERSION) {
            onViolation("it speaks handshake version " + version + ", this node speaks " + Frame.VERSION
                    + ": run the same jmesh version on all nodes");
            return;
        }
        if (state == State.AWAIT_CHALLENGE) {
            onChallenge(type, body);
            return;
        }
        if (type != Frame.ACCEPT || body.remaining() < Frame.ACCEPT_PAYLOAD_OFFSET) {
            onViolation("expected ACCEPT or REJECT, got " + Frame.typeName(type) + " of " + body.remaining()
                    + " bytes");
            return;
        }
        long connectionId = body.getLong(Frame.ACCEPT_CONNECTION_ID_OFFSET);
        byte[] mac = new byte[Frame.MAC_LENGTH];
        body.get(Frame.ACCEPT_MAC_OFFSET, mac);
        if (secret != null && !HandshakeMac.matches(HandshakeMac.acceptProof(secret, nonce, listenerNonce), mac)) {
            agent.warn("handshake to {} failed: {}", peer, "its ACCEPT does not prove the listener's secret");
            handshake.fail("the peer at " + peer + via + " answered without proof that it knows the listener's "
                    + "secret: it is not the listener whose handle this is (a stale handle whose address now belongs "
                    + "to another program?)");
            abort("your ACCEPT does not prove the secret of the listener we connect to");
            return;
        }
        byte[] reply = new byte[body.remaining() - Frame.ACCEPT_PAYLOAD_OFFSET];
        body.get(Frame.ACCEPT_PAYLOAD_OFFSET, reply);
        state = State.AWAIT_APP;
        if (secret == null) {
            handshake.acceptorProofArrived(mac);
        }
        handshake.peerPayloadArrived(connectionId, body.getShort(Frame.ACCEPT_PORT_OFFSET) & 0xffff, reply);
    }

    private void onChallenge(int type, ByteBuffer body) {
        if (type != Frame.CHALLENGE || body.remaining() != Frame.NONCE_LENGTH) {
            onViolation("expected CHALLENGE of " + Frame.NONCE_LENGTH + " bytes or REJECT, got "
                    + Frame.typeName(type) + " of " + body.remaining() + " bytes");
            return;
        }
        listenerNonce = new byte[Frame.NONCE_LENGTH];
        body.get(0, listenerNonce);
        if (secret == null) {
            state = State.AWAIT_FORWARD;
            handshake.challengeArrived(listenerNonce.clone());
            return;
        }
        sendProof(HandshakeMac.proof(secret, listenerNonce, nonce));
    }

    /** Agent thread: the relayed connector's answer to the challenge. */
    void prove(byte[] mac) {
        if (!isClosed() && state == State.AWAIT_FORWARD) {
            sendProof(mac);
        }
    }

    private void sendProof(byte[] mac) {
        state = State.AWAIT_REPLY;
        try {
            send(Frame.PROOF, Frame.proof(mac));
        } catch (IOException e) {
            failQuietly("sending PROOF to " + peer + via + " failed: " + e.getMessage());
        }
    }

    /** Agent thread: the application applied the reply. */
    void confirm() {
        if (isClosed() || state != State.AWAIT_APP) {
            return;
        }
        state = State.FINISHING;
        stopReading();
        try {
            send(Frame.READY, Frame.ready());
        } catch (IOException e) {
            failQuietly("sending READY to " + peer + via + " failed: " + e.getMessage());
        }
    }

    /** Agent thread: the application gave up (the handshake is already FAILED); tell the acceptor if connected. */
    void abort(String reason) {
        if (isClosed() || state == State.FINISHING) {
            return;
        }
        if (state == State.CONNECTING) {
            close();
            return;
        }
        state = State.FINISHING;
        stopReading();
        try {
            send(Frame.REJECT, Frame.reject(reason));
        } catch (IOException e) {
            close();
        }
    }

    @Override
    void onSent(int type) {
        if (type == Frame.READY) {
            handshake.complete();
            agent.debug("handshake to {} complete", peer);
            close();
        } else if (type == Frame.REJECT) {
            close();
        }
    }

    @Override
    void onEndOfStream() {
        failQuietly(switch (state) {
            case AWAIT_CHALLENGE, AWAIT_REPLY -> handshake.route().isRelayed()
                    ? "the connection to " + peer + via + " closed without a reply: the relay "
                    + handshake.route().via().node() + " refused or lost it, or the peer dropped us (see the WARN "
                    + "in the relay's and the peer's log)"
                    : "the peer at " + peer + " closed the connection without replying: it is not a jmesh "
                    + "listener of this version, or it dropped us (see the WARN in its log)";
            case AWAIT_APP -> "the peer at " + peer + " closed the connection before we confirmed (it timed out; "
                    + "confirm() sooner or raise the handshake timeout)";
            default -> "the peer at " + peer + " closed the connection";
        });
    }

    @Override
    void onViolation(String problem) {
        agent.warn("handshake to {} failed: {}", peer, problem);
        failQuietly("the peer at " + peer + via + " broke the handshake protocol: " + problem);
    }

    @Override
    void onDeadline() {
        String limit = " timed out after " + agent.timeoutMillis() + " ms ";
        if (state == State.AWAIT_APP && secret != null && handshake.replyUnpolled()) {
            // nothing was wrong on the wire: the application never came back to build its sender; the listener,
            // which would otherwise see only a closed socket, is told so too
            long idleMs = TimeUnit.NANOSECONDS.toMillis(handshake.sinceLastPollNanos(System.nanoTime()));
            String why = "the connecting side's Connector was not polled for " + idleMs + " ms, since before the "
                    + "listener's ACCEPT (only Connector.poll() finishes a connect): call poll() until it returns a "
                    + "Sender, or use Connections.connect or Connections.await, which poll for you";
            if (handshake.fail("handshake with " + peer + via + limit + "waiting for this process: " + why)) {
                rejectAndClose(why);
            } else {
                close();
            }
            return;
        }
        failQuietly("handshake with " + peer + via + limit + switch (state) {
            case CONNECTING -> "while connecting: no TCP connection; check the link is up and the peer reachable "
                    + "('ping -I <local address> <peer address>')";
            case AWAIT_CHALLENGE, AWAIT_REPLY -> "waiting for the peer's reply: its jmesh did not answer (is it "
                    + "alive? see its log)";
            case AWAIT_FORWARD -> "waiting for the relayed connector's proof";
            case AWAIT_APP -> "waiting for this process to confirm() the reply";
            case FINISHING -> "while sending the last frame: the peer stopped reading";
        });
    }

    /** Ends the handshake with {@code reason} and closes; the caller logged already where that was warranted. */
    private void failQuietly(String reason) {
        handshake.fail(reason);
        close();
    }
}
