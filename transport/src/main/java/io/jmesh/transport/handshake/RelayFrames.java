package io.jmesh.transport.handshake;

import java.nio.ByteBuffer;

/**
 * The handshake's frames for a node that answers a connector on the listener's behalf: the verbs relay reads the
 * connector's HELLO, handshakes with the listener itself (passing the challenge and both proofs through, so it never
 * needs the secret), and replies with its own ACCEPT; the TCP relay passes the frames through but rewrites them as
 * the verbs relay does. One rule for both: no liveness port crosses a relay. A relay puts its own port, on the link
 * the frame goes out on, in every HELLO and ACCEPT it passes on, so each process watches its neighbour, never a peer
 * it has no link to. Everything read is checked here before it is trusted; the layout stays {@link Frame}'s.
 */
public final class RelayFrames {
    public static final int HEADER_BYTES = Frame.HEADER_LENGTH;
    public static final int MAX_BODY = Frame.MAX_BODY;
    public static final int NONCE_BYTES = Frame.NONCE_LENGTH;
    /** Where a HELLO's payload starts (after the nonce and the liveness port). */
    public static final int HELLO_PAYLOAD_OFFSET = Frame.HELLO_PAYLOAD_OFFSET;
    public static final int HELLO_PORT_OFFSET = Frame.HELLO_PORT_OFFSET;
    public static final int ACCEPT_PAYLOAD_OFFSET = Frame.ACCEPT_PAYLOAD_OFFSET;
    public static final int ACCEPT = Frame.ACCEPT;
    public static final int CHALLENGE = Frame.CHALLENGE;
    public static final int MAC_BYTES = Frame.MAC_LENGTH;
    public static final int HELLO = Frame.HELLO;
    public static final int PROOF = Frame.PROOF;
    public static final int REJECT = Frame.REJECT;
    public static final int READY = Frame.READY;

    private RelayFrames() {
    }

    /** Why a frame header is not one this node reads (magic, version, length), or null. Never throws. */
    public static String problem(ByteBuffer header) {
        if (header.limit() < HEADER_BYTES) {
            return "a frame header of " + header.limit() + " bytes";
        }
        if (header.getInt(Frame.MAGIC_OFFSET) != Frame.MAGIC) {
            return "bad magic 0x" + Integer.toHexString(header.getInt(Frame.MAGIC_OFFSET)) + " (not a jmesh handshake)";
        }
        int version = header.getShort(Frame.VERSION_OFFSET) & 0xffff;
        if (version != Frame.VERSION) {
            return "handshake version " + version + ", this node speaks " + Frame.VERSION
                    + " (run the same jmesh version on every node)";
        }
        int length = header.getInt(Frame.LENGTH_OFFSET);
        if (length < 0 || length > MAX_BODY) {
            return "a frame body of " + length + " bytes (at most " + MAX_BODY + ")";
        }
        return null;
    }

    public static int type(ByteBuffer header) {
        return header.getShort(Frame.TYPE_OFFSET) & 0xffff;
    }

    public static int length(ByteBuffer header) {
        return header.getInt(Frame.LENGTH_OFFSET);
    }

    public static String typeName(int type) {
        return Frame.typeName(type);
    }

    public static ByteBuffer challenge(byte[] nonce) {
        return Frame.challenge(nonce);
    }

    /**
     * An ACCEPT that carries the listener's proof {@code mac} (passed on, not made here), this relay's liveness port
     * on the connector's link and this node's payload.
     */
    public static ByteBuffer accept(long connectionId, byte[] mac, int livenessPort, byte[] payload) {
        return Frame.accept(connectionId, mac, livenessPort, payload);
    }

    /** The liveness port in a HELLO body (absolute, from its start); the caller checked its length. */
    public static int helloPort(ByteBuffer body, int at) {
        return body.getShort(at + Frame.HELLO_PORT_OFFSET) & 0xffff;
    }

    /** The connection id and liveness port of an ACCEPT body at {@code at}; the caller checked its length. */
    public static long acceptId(ByteBuffer body, int at) {
        return body.getLong(at + Frame.ACCEPT_CONNECTION_ID_OFFSET);
    }

    public static int acceptPort(ByteBuffer body, int at) {
        return body.getShort(at + Frame.ACCEPT_PORT_OFFSET) & 0xffff;
    }

    /**
     * Puts this relay's liveness port in the HELLO or ACCEPT body at {@code at} (the rule above), in place.
     *
     * @param type the frame's type: HELLO or ACCEPT; other frames carry no port and are left as they are
     */
    public static void passOn(ByteBuffer body, int at, int type, int ownPort) {
        if (type == Frame.HELLO) {
            body.putShort(at + Frame.HELLO_PORT_OFFSET, (short) ownPort);
        } else if (type == Frame.ACCEPT) {
            body.putShort(at + Frame.ACCEPT_PORT_OFFSET, (short) ownPort);
        }
    }

    public static ByteBuffer reject(String reason) {
        return Frame.reject(reason);
    }

    /** A REJECT body as text that is safe to log. */
    public static String reason(ByteBuffer body) {
        return Frame.reason(body);
    }
}
