package io.jmesh.transport.rdma;

import io.jmesh.transport.lifecycle.Closer;
import io.jmesh.transport.handshake.HandshakeStatus;
import io.jmesh.transport.handshake.OutboundHandshake;
import io.jmesh.transport.handshake.RelayFrames;
import io.jmesh.api.IpPrefix;
import io.jmesh.api.ListenAddress;
import io.jmesh.api.LocalLink;
import io.jmesh.transport.net.RelayHop;
import io.jmesh.transport.net.Route;
import io.jmesh.transport.route.NextHop;
import io.jmesh.transport.security.MeshKey;
import io.jmesh.transport.route.RelayPolicy;
import io.jmesh.transport.route.RelayRequest;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/**
 * One relay handshake on the relay node, on its own virtual thread, within the handshake timeout: reads the
 * connector's relay request and HELLO (each checked before use), connects to the listener itself on the connector's
 * behalf (the listener's challenge goes to the connector, whose proof goes back: the secret never reaches this node),
 * and answers the connector with its own queue pair and descriptor ring and the listener's proof. Whatever fails is
 * told to the connector in a REJECT that names this relay, and everything made is freed.
 *
 * <p>Where no link of this node reaches the listener, it goes on through the next relay that route discovery knows,
 * as a connector would (the relay request with one hop fewer); the two relays then exchange records (its ACCEPT
 * carries its record ring, {@link ConnectInfo#relay()}). A relay before this one gets this node's record ring instead
 * of the descriptor ring.
 *
 * <pre>
 * connector            relay (this)                          listener
 *   relay request + HELLO(nonce_c, its QP) -->
 *                        HELLO(nonce_c, relay's QP) ---------->
 *                        <------------------------------ CHALLENGE(nonce_l)
 *   <-- CHALLENGE(nonce_l)
 *   PROOF(mac_c) -->     PROOF(mac_c) ------------------------>   checked by the listener
 *                        <------------------------------ ACCEPT(mac_l, its QP, size array)
 *   <-- ACCEPT(mac_l, relay's QP, descriptor ring)                mac_l checked by the connector
 *   READY -->            READY -------------------------------->   then data flows through a RelayPipe
 * </pre>
 */
final class RelaySession {
    private static final SecureRandom RANDOM = new SecureRandom();
    /** How often a request whose target's route was lost moments ago asks the table again (adverts come per round). */
    private static final long ROUTE_RETRY_NANOS = 50_000_000L;

    private final VerbsRelay relay;
    private final Socket socket;
    private final long deadline;
    private String peer;
    private Endpoint up;
    private Endpoint down;
    private OutboundHandshake listener;
    private Arena arena;
    private io.jmesh.api.Registration ring;

    RelaySession(VerbsRelay relay, Socket socket) {
        this.relay = relay;
        this.socket = socket;
        this.deadline = System.nanoTime() + relay.timeoutNanos();
        this.peer = String.valueOf(socket.getRemoteSocketAddress());
    }

    /** The connected pipe, or null when the handshake failed (logged, and told to the connector where it can be). */
    RelayPipe run() {
        try {
            RelayPipe pipe = handshake();
            up = null;
            down = null;
            ring = null;
            arena = null;
            return pipe;
        } catch (Rejected e) {
            relay.warnings.warn("refused a relayed connection from {}: {}", peer, e.getMessage());
            try {
                send(RelayFrames.reject("through the relay " + socket.getLocalAddress().getHostAddress() + ": "
                        + e.getMessage()));
            } catch (IOException ignored) {
                // the connector is gone; its own timeout tells it
            }
        } catch (IOException | RuntimeException e) {
            relay.warnings.warn("dropped a relay handshake from {}: {}", peer, e.toString());
        } finally {
            if (listener != null && up != null) {
                listener.abort("the relayed connection's other half failed");
            }
            Closer.closeAll(e -> VerbsRelay.LOG.warn("{}", e.toString()), up, down, ring, arena);
        }
        return null;
    }

    private RelayPipe handshake() throws IOException {
        InetAddress local = socket.getLocalAddress();
        InetAddress remote = socket.getInetAddress();
        RdmaProvider provider = relay.provider();
        String refused = relay.policy().admission(local, remote);
        if (refused != null) {
            throw new IOException(refused);
        }
        LocalLink upLink = provider.linkFor(local);
        MeshKey key = provider.agent().settings().meshKey();
        ByteBuffer request = read(RelayRequest.BYTES + key.requestTrailer());
        String problem = RelayRequest.problem(request, 0);
        if (problem == null) {
            problem = RelayRequest.unsigned(request, 0, key);
        }
        if (problem != null) {
            throw new IOException(problem);
        }
        InetSocketAddress target = RelayRequest.target(request, 0);
        int hopsLeft = RelayRequest.hopsLeft(request, 0);
        peer = remote.getHostAddress() + " for " + target;
        ByteBuffer header = read(RelayFrames.HEADER_BYTES);
        problem = RelayFrames.problem(header);
        if (problem != null) {
            throw new IOException(problem);
        }
        int length = RelayFrames.length(header);
        if (RelayFrames.type(header) != RelayFrames.HELLO || length <= RelayFrames.HELLO_PAYLOAD_OFFSET) {
            throw new IOException("expected HELLO, got " + RelayFrames.typeName(RelayFrames.type(header)) + " of "
                    + length + " bytes");
        }
        ByteBuffer body = read(length);
        int upPort = RelayFrames.helloPort(body, 0);
        byte[] nonce = new byte[RelayFrames.NONCE_BYTES];
        body.get(0, nonce);
        byte[] payload = new byte[length - RelayFrames.HELLO_PAYLOAD_OFFSET];
        body.get(RelayFrames.HELLO_PAYLOAD_OFFSET, payload);
        ConnectInfo from;
        try {
            from = ConnectInfo.decode(payload);
        } catch (IllegalArgumentException e) {
            throw new Rejected(e.getMessage() + " (is the connector a verbs fabric? this is a verbs relay)");
        }
        if (from.rails().size() != 1 || !local.equals(from.rails().getFirst().target())) {
            throw new Rejected("a relayed connection has one queue pair, to the relay's address " + local
                    .getHostAddress() + "; got " + from.rails().size() + " to " + from.rails().getFirst().target());
        }
        boolean fromRelay = from.relay();
        RelayPolicy.Decision d;
        while ((d = relay.policy().decide(target, hopsLeft, System.nanoTime(), deadline)).waiting()) {
            if (!relay.running() || socket.isClosed()) {
                throw new IOException("closed while waiting for a route to " + target + " (relay closed or evicted)");
            }
            LockSupport.parkNanos(this, ROUTE_RETRY_NANOS); // this session's own virtual thread
        }
        if (d.refusal() != null) {
            throw new Rejected(d.refusal() + " (" + provider.describeRoutes() + ")");
        }
        LocalLink downLink = d.link();
        NextHop hop = d.hop();
        up = provider.endpoint(upLink, RelayLayout.RELAY_CONTROL_BYTES);
        up.connect(from.rails().getFirst().qp());
        down = provider.endpoint(downLink, RelayLayout.RELAY_DOWN_CONTROL_BYTES);
        int bits = hop == null ? downLink.prefix().prefixLength() : target.getAddress().getAddress().length * 8;
        ListenAddress at = new ListenAddress(new IpPrefix(target.getAddress(), bits), target.getPort(), 0);
        ConnectInfo mine = new ConnectInfo(List.of(new ConnectInfo.Rail(down.local(), down.deviceIndex,
                hop == null ? target.getAddress() : hop.neighbour())), down.control.address(), down.controlMr.rkey(),
                hop != null, 0, 0);
        Route onward = new Route(downLink, at, 0, hop == null ? null : hop.relayHop(d.hopsLeft()));
        listener = provider.agent().connectOnBehalf(onward, nonce, mine.encode());
        send(RelayFrames.challenge(awaitChallenge()));
        header = read(RelayFrames.HEADER_BYTES);
        problem = RelayFrames.problem(header);
        if (problem != null) {
            throw new IOException(problem);
        }
        if (RelayFrames.type(header) != RelayFrames.PROOF || RelayFrames.length(header) != RelayFrames.MAC_BYTES) {
            String why = RelayFrames.type(header) == RelayFrames.REJECT
                    ? RelayFrames.reason(read(RelayFrames.length(header))) : "expected PROOF of "
                    + RelayFrames.MAC_BYTES + " bytes, got " + RelayFrames.typeName(RelayFrames.type(header));
            throw new IOException("the connector gave up after the challenge: " + why);
        }
        if (!listener.prove(read(RelayFrames.MAC_BYTES).array())) {
            throw new Rejected(listener.failure());
        }
        HandshakeStatus s = await(HandshakeStatus.IN_PROGRESS);
        if (s != HandshakeStatus.ACTION_REQUIRED) {
            throw new Rejected(listener.failure());
        }
        ConnectInfo to = ConnectInfo.decode(listener.peerPayload());
        String after = hop == null ? "the listener" : "the next relay " + hop.neighbour().getHostAddress();
        if (to.rails().size() != 1) {
            throw new Rejected(after + " answered with " + to.rails().size() + " queue pairs for one (run the same "
                    + "jmesh version on every node)");
        }
        if (to.relay() != (hop != null)) {
            throw new Rejected(after + (to.relay() ? " answered as a relay node" : " answered as a listener, not as a "
                    + "relay node") + " (run the same jmesh version on every node)");
        }
        if (hop != null && (to.records() < 1 || to.records() > RelayLayout.MAX_RECORDS || to.recordBytes() < 1
                || to.recordBytes() > RelayLayout.MAX_RECORD_BYTES)) {
            throw new Rejected(after + " offered a record ring of " + to.records() + " x " + to.recordBytes()
                    + " bytes (1.." + RelayLayout.MAX_RECORDS + " records of at most " + RelayLayout.MAX_RECORD_BYTES
                    + ")");
        }
        down.connect(to.rails().getFirst().qp());
        arena = Arena.ofShared();
        long chunkBytes = relay.chunkBytes();
        int chunks = relay.chunks();
        ring = provider.register(arena.allocate(fromRelay ? RecordIntake.bytes(chunkBytes, chunks)
                : RelayLayout.CHUNKS_AT + chunkBytes * chunks, 4096));
        RdmaRegistration rr = (RdmaRegistration) ring;
        ConnectInfo reply = new ConnectInfo(List.of(new ConnectInfo.Rail(up.local(), up.deviceIndex, null)),
                rr.address, rr.rkey(up.deviceIndex), fromRelay, fromRelay ? (int) chunkBytes : 0,
                fromRelay ? chunks : 0);
        long upId = RANDOM.nextLong();
        send(RelayFrames.accept(upId, listener.acceptorProof(), provider.agent().livenessPort(local), reply.encode()));
        header = read(RelayFrames.HEADER_BYTES);
        problem = RelayFrames.problem(header);
        if (problem != null) {
            throw new IOException(problem);
        }
        if (RelayFrames.type(header) != RelayFrames.READY || RelayFrames.length(header) != 0) {
            String why = RelayFrames.type(header) == RelayFrames.REJECT
                    ? RelayFrames.reason(read(RelayFrames.length(header))) : "expected READY";
            throw new IOException("the connector gave up after our reply: " + why);
        }
        if (!listener.confirm() || await(HandshakeStatus.IN_PROGRESS) != HandshakeStatus.COMPLETE) {
            throw new IOException((hop == null ? "the listener's" : after + "'s") + " side failed: "
                    + listener.failure());
        }
        Arena a = arena;
        io.jmesh.api.Registration r = ring;
        String name = remote.getHostAddress() + " -> " + target.getAddress().getHostAddress() + " (over "
                + upLink.device() + " and " + downLink.device() + (hop == null ? "" : ", on through "
                + hop.neighbour().getHostAddress()) + ")";
        Function<RelayPipe, RelayIntake> intake = fromRelay ? p -> new RecordIntake(p, chunkBytes, chunks)
                : p -> new PullIntake(p, chunkBytes);
        Function<RelayPipe, RelayOutlet> outlet = hop == null ? ReceiverOutlet::new
                : p -> new RecordOutlet(p, to.recordBytes(), to.records());
        RelayPipe pipe = new RelayPipe(name, up, from.controlAddress(), from.controlRkey(), down, to.controlAddress(),
                to.controlRkey(), rr, () -> Closer.closeAll(r, a), intake, outlet);
        // both neighbours watched from now on: a stopped one is told to the other (LOST), hop by hop to the ends
        provider.agent().liveness().relay(upId, new InetSocketAddress(remote, upPort), local,
                listener.connectionId(), new InetSocketAddress(hop == null ? target.getAddress() : hop.neighbour(),
                        listener.peerLivenessPort()),
                downLink.prefix().address(), remote.getHostAddress() + " -> " + target.getAddress().getHostAddress());
        VerbsRelay.LOG.info("jmesh relay: relaying {}", name);
        return pipe;
    }

    /** Waits for the listener's challenge, until the deadline; a failure on the way is told to the connector. */
    private byte[] awaitChallenge() throws IOException {
        byte[] challenge;
        while ((challenge = listener.challenge()) == null) {
            if (listener.poll() == HandshakeStatus.FAILED) {
                throw new Rejected(listener.failure());
            }
            pause();
        }
        return challenge;
    }

    /** Waits while the listener handshake is in {@code state}, until the deadline. */
    private HandshakeStatus await(HandshakeStatus state) throws IOException {
        HandshakeStatus s;
        while ((s = listener.poll()) == state) {
            pause();
        }
        return s;
    }

    private void pause() throws IOException {
        if (!relay.running()) {
            throw new IOException("the relay is closing");
        }
        if (System.nanoTime() - deadline > 0) {
            throw new Rejected("the listener did not answer within the handshake timeout");
        }
        try {
            Thread.sleep(1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
    }

    private ByteBuffer read(int n) throws IOException {
        byte[] b = new byte[n];
        InputStream in = socket.getInputStream();
        int got = 0;
        while (got < n) {
            long left = (deadline - System.nanoTime()) / 1_000_000;
            if (left <= 0) {
                throw new SocketTimeoutException("no complete frame within the handshake timeout");
            }
            socket.setSoTimeout((int) Math.min(left, Integer.MAX_VALUE));
            int r = in.read(b, got, n - got);
            if (r < 0) {
                throw new EOFException("the connector closed the connection");
            }
            got += r;
        }
        return ByteBuffer.wrap(b);
    }

    private void send(ByteBuffer frame) throws IOException {
        OutputStream out = socket.getOutputStream();
        out.write(frame.array(), frame.position(), frame.remaining());
        out.flush();
    }

    /** A refusal the connector is told about. */
    private static final class Rejected extends IOException {
        Rejected(String why) {
            super(why);
        }
    }
}
