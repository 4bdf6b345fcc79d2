package io.jmesh.transport.tcp;

import io.jmesh.transport.handshake.RelayFrames;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * What a TCP relay lets through a relayed handshake socket before it copies bytes blindly: whole handshake frames,
 * checked, in the protocol's order, each side's only after the other side's frame that allows it. So the target must
 * answer as a jmesh listener (a CHALLENGE) before anything but one HELLO reaches it, and the READY, after which the
 * socket is spliced as is, can only follow the listener's ACCEPT. On the way it applies the relay rule of {@link
 * RelayFrames} (this relay's liveness port replaces the one in each HELLO and ACCEPT) and keeps what the relay needs
 * to watch both neighbours: the connection id, each neighbour's liveness port and the listener's data port.
 *
 * <pre>
 * up   (connector side):  HELLO  ..........  PROOF | REJECT  ..........  READY | REJECT  -> open
 * down (listener side):          CHALLENGE | REJECT  ->  ACCEPT | REJECT                  -> open
 * </pre>
 * A frame that breaks this order, or a malformed one, ends the socket with the reason (the relay logs it). Only the
 * relay thread touches it.
 */
final class SpliceGate {
    /** The bytes after the relay request that tell a handshake socket (a frame header) from a data socket. */
    static final int PEEK = RelayFrames.HEADER_BYTES;
    private static final int HELLO = 0;
    private static final int PROOF = 1;
    private static final int READY = 2;
    private static final int OPEN = 3;

    private final int upOwnPort;
    private final int downOwnPort;
    private final ByteBuffer upFrame = ByteBuffer.allocate(RelayFrames.HEADER_BYTES + RelayFrames.MAX_BODY);
    private final ByteBuffer downFrame = ByteBuffer.allocate(RelayFrames.HEADER_BYTES + RelayFrames.MAX_BODY);
    private int up = HELLO;
    /** Down: 0 awaiting CHALLENGE, 1 awaiting ACCEPT, OPEN. */
    private int down;
    private boolean completed;
    int upPort;
    int downPort;
    long connectionId;
    int dataPort;

    /**
     * @param peek        the {@value #PEEK} bytes read after the request: the HELLO's header
     * @param upOwnPort   this relay's liveness port on the connector's link (goes into the ACCEPT)
     * @param downOwnPort this relay's liveness port on the listener's link (goes into the HELLO)
     */
    SpliceGate(ByteBuffer peek, int upOwnPort, int downOwnPort) {
        this.upOwnPort = upOwnPort;
        this.downOwnPort = downOwnPort;
        upFrame.put(peek.duplicate()).limit(RelayFrames.HEADER_BYTES);
        downFrame.limit(RelayFrames.HEADER_BYTES);
    }

    /** Whether the {@value #PEEK} bytes at {@code at} open a HELLO frame (a handshake socket). */
    static boolean isHello(ByteBuffer b, int at) {
        ByteBuffer header = b.slice(at, PEEK);
        return RelayFrames.problem(header) == null && RelayFrames.type(header) == RelayFrames.HELLO
                && RelayFrames.length(header) > RelayFrames.HELLO_PAYLOAD_OFFSET;
    }

    /** Whether the connector side may be read now (its next frame is allowed). */
    boolean upReady() {
        return up == OPEN || up == HELLO || (up == PROOF && down >= 1) || (up == READY && down == OPEN);
    }

    /** True once, when the READY passed: the connection is up end to end, and the relay starts watching it. */
    boolean takeCompleted() {
        boolean c = completed;
        completed = false;
        return c;
    }

    /** Moves what may pass from the connector side into {@code dst}; -1 at end of stream. */
    int up(SocketChannel src, ByteBuffer dst) throws IOException {
        if (up == OPEN) {
            return src.read(dst);
        }
        int n = fill(src, upFrame, dst);
        if (n < 0 || !whole(upFrame)) {
            return n;
        }
        int type = RelayFrames.type(upFrame);
        int length = RelayFrames.length(upFrame);
        int at = RelayFrames.HEADER_BYTES;
        if (type == RelayFrames.REJECT && up != HELLO) {
            up = OPEN;
        } else if (up == HELLO && type == RelayFrames.HELLO && length > RelayFrames.HELLO_PAYLOAD_OFFSET) {
            upPort = RelayFrames.helloPort(upFrame, at);
            RelayFrames.passOn(upFrame, at, type, downOwnPort);
            up = PROOF;
        } else if (up == PROOF && type == RelayFrames.PROOF && length == RelayFrames.MAC_BYTES) {
            up = READY;
        } else if (up == READY && type == RelayFrames.READY && length == 0) {
            up = OPEN;
            completed = true;
        } else {
            throw new IOException("the connector sent " + RelayFrames.typeName(type) + " of " + length + " bytes out "
                    + "of the handshake's order");
        }
        pass(upFrame, dst);
        return n;
    }

    /** Moves what may pass from the listener side into {@code dst}; -1 at end of stream. */
    int down(SocketChannel src, ByteBuffer dst) throws IOException {
        if (down == OPEN) {
            return src.read(dst);
        }
        int n = fill(src, downFrame, dst);
        if (n < 0 || !whole(downFrame)) {
            return n;
        }
        int type = RelayFrames.type(downFrame);
        int length = RelayFrames.length(downFrame);
        int at = RelayFrames.HEADER_BYTES;
        if (type == RelayFrames.REJECT) {
            down = OPEN;
            up = OPEN; // a jmesh listener turned it away: what is left is its reason and the closes
        } else if (down == 0 && type == RelayFrames.CHALLENGE && length == RelayFrames.NONCE_BYTES) {
            down = 1;
        } else if (down == 1 && type == RelayFrames.ACCEPT && length >= RelayFrames.ACCEPT_PAYLOAD_OFFSET) {
            connectionId = RelayFrames.acceptId(downFrame, at);
            downPort = RelayFrames.acceptPort(downFrame, at);
            int payload = at + RelayFrames.ACCEPT_PAYLOAD_OFFSET;
            if (length - RelayFrames.ACCEPT_PAYLOAD_OFFSET >= AcceptReply.LENGTH
                    && downFrame.getInt(payload + AcceptReply.MAGIC_OFFSET) == AcceptReply.MAGIC) {
                dataPort = downFrame.getShort(payload + AcceptReply.PORT_OFFSET) & 0xffff;
            }
            RelayFrames.passOn(downFrame, at, type, upOwnPort);
            down = OPEN;
        } else {
            throw new IOException("the target answered " + RelayFrames.typeName(type) + " of " + length + " bytes "
                    + "where a jmesh listener sends " + (down == 0 ? "CHALLENGE" : "ACCEPT")
                    + " (is it a jmesh listener?)");
        }
        pass(downFrame, dst);
        return n;
    }

    /** Reads into the frame, never more than {@code dst} can take once the frame is whole. */
    private static int fill(SocketChannel src, ByteBuffer frame, ByteBuffer dst) throws IOException {
        if (dst.remaining() < frame.capacity()) {
            return 0; // the frame could not be passed on whole: wait for the other side to drain
        }
        return src.read(frame);
    }

    /** Whether the frame is whole; a header that just became complete is checked and opens the body. */
    private static boolean whole(ByteBuffer frame) throws IOException {
        if (frame.hasRemaining()) {
            return false;
        }
        if (frame.limit() == RelayFrames.HEADER_BYTES) {
            String problem = RelayFrames.problem(frame.duplicate().flip());
            if (problem != null) {
                throw new IOException(problem);
            }
            frame.limit(RelayFrames.HEADER_BYTES + RelayFrames.length(frame));
        }
        return !frame.hasRemaining();
    }

    private static void pass(ByteBuffer frame, ByteBuffer dst) {
        dst.put(frame.flip());
        frame.clear().limit(RelayFrames.HEADER_BYTES);
    }
}
