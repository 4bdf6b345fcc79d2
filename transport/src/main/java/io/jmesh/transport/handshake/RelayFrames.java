package io.jmesh.transport.handshake;

import java.nio.ByteBuffer;

/**
 * The handshake's frames for a node that answers a connector on the listener's behalf: the verbs relay reads the
 * connector's HELLO, handshakes with the listener itself (passing the challenge and both proofs through, so it never
 * needs the secret), and replies with its own ACCEPT. Everything read is checked here before it is trusted; the
 * layout stays {@link Frame}'s.
 */
public final class RelayFrames {
    public static final int HEADER_BYTES = Frame.HEADER_LENGTH;
    public static final int MAX_BODY = Frame.MAX_BODY;
    public static final int NONCE_BYTES = Frame.NONCE_LENGTH;
    /** Where a HELLO's payload starts (after the nonce and the liveness port, which a relay does not use). */
    public static final int HELLO_PAYLOAD_OFFSET = Frame.HELLO_PAYLOAD_OFFSET;
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
     * An ACCEPT that carries the listener's proof {@code mac} (passed on, not made here) and this node's payload; no
     * liveness port, since the connector does not watch a relayed connection.
     */
    public static ByteBuffer accept(long connectionId, byte[] mac, byte[] payload) {
        return Frame.accept(connectionId, mac, 0, payload);
    }

    public static ByteBuffer reject(String reason) {
        return Frame.reject(reason);
    }

    /** A REJECT body as text that is safe to log. */
    public static String reason(ByteBuffer body) {
        return Frame.reason(body);
    }
}
