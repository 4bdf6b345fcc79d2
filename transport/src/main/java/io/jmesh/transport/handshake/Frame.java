package io.jmesh.transport.handshake;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * The handshake's wire format. Every frame is a 12-byte header and a body of at most {@value #MAX_BODY} bytes, all
 * big-endian:
 * <pre>
 *  0 u32 magic    0x4A4D4853 "JMHS"
 *  4 u16 version  1
 *  6 u16 type     HELLO 1, ACCEPT 2, REJECT 3, READY 4, ATTACH 5 (reserved)
 *  8 u32 length   body length, 0..4096; more is a protocol violation and the socket is dropped
 * 12 body
 * </pre>
 * Bodies: HELLO = secret u8[8] + connector payload; ACCEPT = connection id u64 + acceptor payload; REJECT = reason,
 * UTF-8, at most {@value #MAX_REASON} bytes (its layout is frozen across versions so a peer of another version can
 * still read why it was turned away); READY = empty. ATTACH (reserved for extra data sockets) = secret u8[8] +
 * connection id u64 + socket index u16.
 */
final class Frame {
    static final int MAGIC = 0x4A4D4853;
    static final int VERSION = 1;

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

    static final int SECRET_LENGTH = 8;
    /** HELLO: the secret, then the payload. */
    static final int HELLO_SECRET_OFFSET = 0;
    static final int HELLO_PAYLOAD_OFFSET = SECRET_LENGTH;
    /** ACCEPT: the connection id, then the payload. */
    static final int ACCEPT_CONNECTION_ID_OFFSET = 0;
    static final int ACCEPT_PAYLOAD_OFFSET = 8;
    static final int MAX_PAYLOAD = MAX_BODY - 8;
    static final int MAX_REASON = 512;

    private Frame() {
    }

    static ByteBuffer hello(byte[] secret, byte[] payload) {
        ByteBuffer b = start(HELLO, HELLO_PAYLOAD_OFFSET + payload.length);
        b.put(secret).put(payload);
        return b.flip();
    }

    static ByteBuffer accept(long connectionId, byte[] payload) {
        ByteBuffer b = start(ACCEPT, ACCEPT_PAYLOAD_OFFSET + payload.length);
        b.putLong(connectionId).put(payload);
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
