package io.jmesh.transport.rdma;

import io.jmesh.api.CloseHelper;
import io.jmesh.transport.handshake.HandshakeStatus;
import io.jmesh.transport.handshake.OutboundHandshake;
import io.jmesh.transport.handshake.RelayFrames;
import io.jmesh.transport.net.IpPrefix;
import io.jmesh.transport.net.ListenAddress;
import io.jmesh.transport.net.ListenHandle;
import io.jmesh.transport.net.LocalLink;
import io.jmesh.transport.net.Route;
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

/**
 * One relay handshake on the relay node, on its own virtual thread, within the handshake timeout: reads the
 * connector's relay request and HELLO (each checked before use), connects to the listener itself with the connector's
 * secret (the listener checks it), and answers the connector with its own queue pair and descriptor ring. Whatever
 * fails is told to the connector in a REJECT that names this relay, and everything made is freed.
 *
 * <pre>
 * connector            relay (this)                          listener
 *   relay request + HELLO(secret, its QP) -->
 *                        HELLO(secret, relay's QP) ----------->
 *                        <------------------------------ ACCEPT(its QP, size array)
 *   <-- ACCEPT(relay's QP, descriptor ring)
 *   READY -->            READY -------------------------------->   then data flows through a RelayPipe
 * </pre>
 */
final class RelaySession {
    private static final SecureRandom RANDOM = new SecureRandom();

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
            CloseHelper.closeAll(e -> VerbsRelay.LOG.warn("{}", e.toString()), up, down, ring, arena);
        }
        return null;
    }

    private RelayPipe handshake() throws IOException {
        InetAddress local = socket.getLocalAddress();
        InetAddress remote = socket.getInetAddress();
        RdmaProvider provider = relay.provider();
        LocalLink upLink = provider.linkFor(local);
        if (upLink == null || !upLink.prefix().contains(remote)) {
            throw new IOException("not from an address of the link it arrived on (not an open proxy)");
        }
        ByteBuffer request = read(RelayRequest.BYTES);
        String problem = RelayRequest.problem(request, 0);
        if (problem != null) {
            throw new IOException(problem);
        }
        InetSocketAddress target = RelayRequest.target(request, 0);
        peer = remote.getHostAddress() + " for " + target;
        ByteBuffer header = read(RelayFrames.HEADER_BYTES);
        problem = RelayFrames.problem(header);
        if (problem != null) {
            throw new IOException(problem);
        }
        int length = RelayFrames.length(header);
        if (RelayFrames.type(header) != RelayFrames.HELLO || length <= RelayFrames.SECRET_BYTES) {
            throw new IOException("expected HELLO, got " + RelayFrames.typeName(RelayFrames.type(header)) + " of "
                    + length + " bytes");
        }
        ByteBuffer body = read(length);
        long secret = body.getLong(0);
        byte[] payload = new byte[length - RelayFrames.SECRET_BYTES];
        body.get(RelayFrames.SECRET_BYTES, payload);
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
        LocalLink downLink = null;
        for (LocalLink l : provider.links()) {
            if (l.prefix().contains(target.getAddress()) && !l.prefix().address().equals(target.getAddress())) {
                downLink = l;
                break;
            }
        }
        if (downLink == null) {
            throw new Rejected("no link of this node reaches " + target.getAddress().getHostAddress() + " directly; "
                    + "a verbs route through more than one relay is not supported yet (the TCP provider relays "
                    + "over several)");
        }
        up = provider.endpoint(upLink, RelayLayout.RELAY_CONTROL_BYTES);
        up.connect(from.rails().getFirst().qp());
        down = provider.endpoint(downLink, RdmaSendWire.CONTROL_BYTES);
        ListenAddress at = new ListenAddress(new IpPrefix(target.getAddress(), downLink.prefix().prefixLength()),
                target.getPort(), 0);
        ConnectInfo mine = new ConnectInfo(List.of(new ConnectInfo.Rail(down.local(), down.deviceIndex,
                target.getAddress())), down.control.address(), down.controlMr.rkey());
        listener = provider.agent().connect(new ListenHandle(0, secret, List.of(at)), new Route(downLink, at, 0),
                mine.encode());
        HandshakeStatus s = await(HandshakeStatus.IN_PROGRESS);
        if (s != HandshakeStatus.ACTION_REQUIRED) {
            throw new Rejected(listener.failure());
        }
        ConnectInfo to = ConnectInfo.decode(listener.peerPayload());
        if (to.rails().size() != 1) {
            throw new Rejected("the listener answered with " + to.rails().size() + " queue pairs for one");
        }
        down.connect(to.rails().getFirst().qp());
        arena = Arena.ofShared();
        ring = provider.register(arena.allocate(RelayLayout.DESCS + relay.chunkBytes() * relay.chunks(), 4096));
        RdmaRegistration rr = (RdmaRegistration) ring;
        ConnectInfo reply = new ConnectInfo(List.of(new ConnectInfo.Rail(up.local(), up.deviceIndex, null)),
                rr.address, rr.rkey(up.deviceIndex));
        send(RelayFrames.accept(RANDOM.nextLong(), reply.encode()));
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
            throw new IOException("the listener's side failed: " + listener.failure());
        }
        Arena a = arena;
        io.jmesh.api.Registration r = ring;
        String name = remote.getHostAddress() + " -> " + target.getAddress().getHostAddress() + " (over "
                + upLink.device() + " and " + downLink.device() + ")";
        RelayPipe pipe = new RelayPipe(name, up, from.controlAddress(), from.controlRkey(), down, to.controlAddress(),
                to.controlRkey(), (RdmaRegistration) r, () -> CloseHelper.closeAll(r, a), relay.chunkBytes());
        VerbsRelay.LOG.info("jmesh relay: relaying {}", name);
        return pipe;
    }

    /** Waits while the listener handshake is in {@code state}, until the deadline. */
    private HandshakeStatus await(HandshakeStatus state) throws IOException {
        HandshakeStatus s;
        while ((s = listener.poll()) == state) {
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
        return s;
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
