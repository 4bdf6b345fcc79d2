package io.jmesh.transport.tcp;

import io.jmesh.transport.core.Fate;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * The data sockets of one end of a connection and its fate: it owns the sockets and closes them once, on failure or
 * on close. The first failure wins and is what {@code error()} reports; it names the peer, the cause and what it
 * means. Closing the sockets on failure tells the peer at once.
 */
final class DataConnection extends Fate {
    private static final Logger LOG = JmeshLog.logger(DataConnection.class);

    final SocketChannel[] sockets;
    /** The peer's end of socket 0, e.g. "127.0.101.3:40123". */
    final String peer;
    private final String role;
    /** Who may have gone: "the peer process", or on a relayed connection "the relay or the peer process". */
    private final String who;
    /** The peer ended every socket at a message boundary: what its close() does. */
    private boolean orderly;
    /** Where a sender's sockets go when its owner closes it in order; null: they close right after the goodbye. */
    private TcpLinger linger;

    DataConnection(SocketChannel[] sockets, String role) {
        this(sockets, role, null);
    }

    /** @param peer how errors name the far end ("10.0.3.3 through the relay 10.0.1.2:40100"); null: socket 0's peer */
    DataConnection(SocketChannel[] sockets, String role, String peer) {
        this.sockets = sockets.clone();
        this.peer = peer != null ? peer : DataSockets.remote(sockets[0]);
        this.role = role;
        this.who = peer != null ? "the relay or the peer process" : "the peer process";
    }

    /** Hands this end's sockets to {@code l} when its owner closes it in order ({@link #closeInOrder}). */
    DataConnection lingerWith(TcpLinger l) {
        linger = l;
        return this;
    }

    /**
     * The owner closed this sending end with every socket between frames: the goodbye ({@link ByeFrame}) behind the
     * last data on socket 0, then the end of every stream, so the peer delivers what was sent and reports CLOSED.
     * {@code records}: the eager records written.
     */
    void closeInOrder(long records) {
        ByteBuffer bye = ByteBuffer.allocateDirect(ByeFrame.BYTES);
        ByeFrame.write(bye, 0, records);
        if (linger != null) {
            linger.hand(sockets, bye, peer);
            return;
        }
        try {                                      // no fabric to linger on (tests): the goodbye if it fits now
            sockets[0].write(bye);
            if (!bye.hasRemaining()) {
                for (SocketChannel ch : sockets) {
                    ch.shutdownOutput();
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("jmesh tcp {}: goodbye to {} not sent: {}", role, peer, e.toString());
        }
        close();
    }

    /** The peer's goodbye and the end of every stream arrived: everything it sent is in. */
    void peerClosed() {
        end("the connection to " + peer + " was closed by the peer (everything it sent before its close arrived); "
                + "connect again to go on");
        // this end writes nothing more: its end of stream lets the closed sender's lingering sockets go at once
        for (SocketChannel ch : sockets) {
            try {
                ch.shutdownOutput();
            } catch (IOException | RuntimeException e) {
                LOG.debug("jmesh tcp {}: ending the stream to {}: {}", role, peer, e.toString());
            }
        }
        // how a peer's close() looks: no WARN in the logs of a program that ends normally
        LOG.info("jmesh tcp {}: the connection to {} ended between messages (the peer closed it)", role, peer);
    }

    /** The number of data sockets. */
    int count() {
        return sockets.length;
    }

    /** This side's address of data socket i (on the link the connection runs over). */
    InetSocketAddress localAddress(int socket) {
        return DataSockets.localAddress(sockets[socket]);
    }

    /** The peer's address of data socket i. */
    InetSocketAddress remoteAddress(int socket) {
        return DataSockets.remoteAddress(sockets[socket]);
    }

    @Override
    public boolean closeArrivesInBand() {
        return true;
    }

    @Override
    protected void failed(String why) {
        if (orderly) {
            // how a peer's close() looks: no WARN in the logs of a program that ends normally
            LOG.info("jmesh tcp {}: the connection to {} ended between messages (the peer closed it)", role, peer);
        } else {
            LOG.warn("jmesh tcp {}: {}", role, why);
        }
        close();
    }

    /** A socket call failed: reset, broken pipe, or this side closed it (then the result is CLOSED). */
    int lost(IOException e) {
        String what = e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
        return fail("connection to " + peer + " lost: " + what + "; " + who + " died or closed the connection");
    }

    /** The peer closed its end; {@code detail} is empty at a message boundary. */
    int lostEndOfStream(String detail) {
        orderly = detail.isEmpty();
        return fail("connection to " + peer + " lost: the peer closed the connection" + detail
                + "; " + who + " died or closed the connection");
    }

    /** The registered memory went away under a transfer (its arena was closed). */
    int memoryGone(RuntimeException e) {
        return fail("the memory of a transfer on the connection to " + peer + " is no longer accessible ("
                + e.getMessage() + "); close the connection before freeing registered memory");
    }

    /** The peer broke the protocol. */
    int violation(String what) {
        return fail("protocol violation by " + peer + ": " + what + "; the connection was dropped (run the same "
                + "jmesh version on every node)");
    }

    /** Closes the sockets (idempotent): on failure, and when the owner closes this end. */
    void close() {
        for (SocketChannel ch : sockets) {
            DataSockets.closeQuietly(ch);
        }
    }

    @Override
    public String toString() {
        return role + " " + DataSockets.describe(DataSockets.localAddress(sockets[0])) + " -> " + peer;
    }
}
