package io.jmesh.transport.handshake;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * The handshake's wire format. Every frame is a 12-byte header and a body of at most {@value #MAX_BODY} bytes, all
 * big-endian:
 * <pre>
 *  0 u32 magic    0x4A4D4853 "JMHS"
 *  4 u16 version  2 (version 1 sent the secret in clear: a captured HELLO could be replayed)
 *  6 u16 type     HELLO 1, ACCEPT 2, REJECT 3, READY 4, ATTACH 5 (reserved), CHALLENGE 6, PROOF 7
 *  8 u32 length   body length, 0..4096; more is a protocol violation and the socket is dropped
 * 12 body
 * </pre>
 * The exchange; the secret never travels, and each side proves it knows it for this socket's nonces only:
 * <pre>
 * connector                                         listener
 *   HELLO     nonce_c u8[16] + port u16 + payload ->
 *                                        <-------   CHALLENGE nonce_l u8[16] (fresh for every socket)
 *   PROOF     mac_c u8[32]               ------->   checked: only now does the application see it
 *                                        <-------   ACCEPT id u64 + mac_l u8[32] + port u16 + payload
 *   (checks mac_l)  READY (empty)        ------->
 *
 * mac_c = HMAC-SHA256(secret, "jmesh-hs2 proof"  | nonce_l | nonce_c)
 * mac_l = HMAC-SHA256(secret, "jmesh-hs2 accept" | nonce_c | nonce_l)
 * </pre>
 * port: the UDP port where the sender's process answers liveness pings on this link (0: none, as on a relayed
 * connection). A replayed HELLO and PROOF fail, since the PROOF answered another socket's nonce_l. The payloads stay outside the
 * MACs so a verbs relay can forward CHALLENGE, PROOF and mac_l without the secret while it puts its own queue pair in
 * the payloads. REJECT = reason, UTF-8, at most {@value #MAX_REASON} bytes (its layout is frozen across versions so a
 * peer of another version can still read why it was turned away). ATTACH is reserved.
 */
final class Frame {
    static final int MAGIC = 0x4A4D4853;
    static final int VERSION = 2;

    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 4;
    static final int TYPE_OFFSET = 6;
    static final int LENGTH_OFFSET = 8;
    static final int HEADER_LENGTH = 12;
    static final int MAX_BODY = 4096;

    static final int HELLO = 1;
    static final int ACCEPT = 2;
    static final int REJECT = 3;
    static final int READY = 4;
    static final int ATTACH = 5;
    static final int CHALLENGE = 6;
    static final int PROOF = 7;

    static final int NONCE_LENGTH = 16;
    static final int MAC_LENGTH = 32;
    /** HELLO: the connector's nonce, its liveness port, then the payload. */
    static final int HELLO_NONCE_OFFSET = 0;
    static final int HELLO_PORT_OFFSET = NONCE_LENGTH;
    static final int HELLO_PAYLOAD_OFFSET = HELLO_PORT_OFFSET + 2;
    /** ACCEPT: the connection id, the listener's MAC, its liveness port, then the payload. */
    static final int ACCEPT_CONNECTION_ID_OFFSET = 0;
    static final int ACCEPT_MAC_OFFSET = 8;
    static final int ACCEPT_PORT_OFFSET = ACCEPT_MAC_OFFSET + MAC_LENGTH;
    static final int ACCEPT_PAYLOAD_OFFSET = ACCEPT_PORT_OFFSET + 2;
    static final int MAX_PAYLOAD = MAX_BODY - ACCEPT_PAYLOAD_OFFSET;
    static final int MAX_REASON = 512;

    private Frame() {
    }

    static ByteBuffer hello(byte[] nonce, int livenessPort, byte[] payload) {
        ByteBuffer b = start(HELLO, HELLO_PAYLOAD_OFFSET + payload.length);
        b.put(nonce).putShort((short) livenessPort).put(payload);
        return b.flip();
    }

    static ByteBuffer challenge(byte[] nonce) {
        return start(CHALLENGE, NONCE_LENGTH).put(nonce).flip();
    }

    static ByteBuffer proof(byte[] mac) {
        return start(PROOF, MAC_LENGTH).put(mac).flip();
    }

    static ByteBuffer accept(long connectionId, byte[] mac, int livenessPort, byte[] payload) {
        ByteBuffer b = start(ACCEPT, ACCEPT_PAYLOAD_OFFSET + payload.length);
        b.putLong(connectionId).put(mac).putShort((short) livenessPort).put(payload);
        return b.flip();
    }

    static ByteBuffer reject(String reason) {
        byte[] text = reason.getBytes(StandardCharsets.UTF_8);
        int n = Math.min(text.length, MAX_REASON);
        ByteBuffer b = start(REJECT, n);
        b.put(text, 0, n);
        return b.flip();
    }

    static ByteBuffer ready() {
        return start(READY, 0).flip();
    }

    /** A REJECT body as text; undecodable bytes become U+FFFD and control characters '?', so it is safe to log. */
    static String reason(ByteBuffer body) {
        byte[] bytes = new byte[Math.min(body.remaining(), MAX_REASON)];
        body.get(bytes);
        char[] chars = new String(bytes, StandardCharsets.UTF_8).toCharArray();
        for (int i = 0; i < chars.length; i++) {
            if (Character.isISOControl(chars[i])) {
                chars[i] = '?';
            }
        }
        return new String(chars);
    }

    static String typeName(int type) {
        return switch (type) {
            case HELLO -> "HELLO";
            case ACCEPT -> "ACCEPT";
            case REJECT -> "REJECT";
            case READY -> "READY";
            case ATTACH -> "ATTACH";
            case CHALLENGE -> "CHALLENGE";
            case PROOF -> "PROOF";
            default -> "type " + type;
        };
    }

    private static ByteBuffer start(int type, int bodyLength) {
        if (bodyLength > MAX_BODY) {
            throw new IllegalArgumentException("frame body of " + bodyLength + " bytes exceeds " + MAX_BODY);
        }
        ByteBuffer b = ByteBuffer.allocate(HEADER_LENGTH + bodyLength).order(ByteOrder.BIG_ENDIAN);
        b.putInt(MAGIC_OFFSET, MAGIC);
        b.putShort(VERSION_OFFSET, (short) VERSION);
        b.putShort(TYPE_OFFSET, (short) type);
        b.putInt(LENGTH_OFFSET, bodyLength);
        return b.position(HEADER_LENGTH);
    }
}
