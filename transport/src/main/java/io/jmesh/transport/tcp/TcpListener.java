package io.jmesh.transport.tcp;

import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.transport.connect.AcceptLoop;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.Eager;
import io.jmesh.transport.handshake.HandshakeListener;
import io.jmesh.transport.handshake.InboundHandshake;

import java.io.IOException;
import java.net.InetAddress;
import java.security.SecureRandom;
import java.util.List;

/**
 * The TCP side of accepting ({@link AcceptLoop} runs it). Accepting a connection opens (once per link address) a
 * data port on the address the handshake arrived on and answers with its port and a fresh random token
 * ({@link AcceptReply}); the connector's data sockets present that token ({@link AttachHeader}) and attach while the
 * application calls {@link #accept()}, as NCCL does until it gets its connection. The receiver is handed out once all
 * have attached.
 */
public final class TcpListener extends AcceptLoop<PendingAccept> {
    private static final SecureRandom RANDOM = new SecureRandom();
    /** Slots of a connection's eager ring: more than NCCL keeps in flight per connection (8 steps). */
    static final int EAGER_SLOTS = 16;

    private final TcpProvider provider;
    private final HandshakeListener listener;
    private final DataAcceptor data;

    TcpListener(TcpProvider provider, HandshakeListener listener) {
        super(provider.agent(), listener);
        this.provider = provider;
        this.listener = listener;
        this.data = new DataAcceptor(provider.handshakeTimeout().toNanos());
    }

    /** The handle to give connectors: every local address with its prefix, the ports, the secret, the TCP flag. */
    public ListenHandle listenHandle() {
        return listener.handle();
    }

    @Override
    protected PendingAccept admit(InboundHandshake in) throws IOException {
        ConnectRequest request = ConnectRequest.decode(in.peerPayload());
        InetAddress local = in.localAddress().getAddress();
        LocalLink link = provider.linkFor(local);
        if (link == null) {
            throw new IllegalStateException("the connection arrived on " + in.localAddress()
                    + ", which is not one of this listener's TCP links");
        }
        int port = data.port(local);
        int sockets = Math.min(request.sockets(), provider.sockets());
        byte[] token = new byte[AcceptReply.TOKEN_BYTES];
        RANDOM.nextBytes(token);
        int eager = Math.min(request.eager(), provider.eagerThreshold());
        Eager ring = eager > 0 ? Eager.of(EAGER_SLOTS, eager) : null;
        AcceptReply reply = new AcceptReply(sockets, port, ring == null ? 0 : EAGER_SLOTS, eager, token);
        return new PendingAccept(in, reply, ring, link.prefix().toString());
    }

    @Override
    protected byte[] answer(PendingAccept p) {
        return p.reply.encode();
    }

    @Override
    protected void advance(List<PendingAccept> pending, long nowNanos) {
        data.poll(pending, nowNanos);
    }

    @Override
    protected CoreReceiver receiver(PendingAccept p) {
        return TcpReceiveWire.receiver(new DataConnection(p.takeSockets(), "receiver"), provider.registry(),
                provider.pumps(), p.eager, provider::release);
    }

    @Override
    protected boolean adopt(CoreReceiver r) {
        return provider.adopt(r);
    }

    @Override
    protected void closed() {
        data.close();
        provider.release(this);
    }

    /** Data sockets this listener dropped for misbehaving (for tests and diagnostics). */
    long droppedDataSockets() {
        return data.dropped();
    }

    /** Why the latest dropped data socket was dropped, or null. */
    String lastDropReason() {
        return data.lastDropReason();
    }

    /** The data port open on {@code local}, or 0. */
    synchronized int dataPort(InetAddress local) {
        return data.openPort(local);
    }
}
