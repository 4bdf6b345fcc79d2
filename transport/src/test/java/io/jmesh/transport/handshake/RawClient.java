package io.jmesh.transport.handshake;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.security.SecureRandom;

/**
 * A handshake peer written by hand on a blocking socket, for tests that must send what a well-behaved agent never
 * would: replays, wrong proofs, frames of other versions, a connector that stops half-way.
 */
final class RawClient {
    private static final SecureRandom RANDOM = new SecureRandom();

    /** One frame as read. */
    record In(int version, int type, byte[] body) {
    }

    /** What a connector sent on the wire (a HELLO and a PROOF), as an eavesdropper on the link would capture it. */
    record Captured(byte[] hello, byte[] proof) {
    }

    private RawClient() {
    }

    static byte[] header(int magic, int version, int type, long length) {
        return ByteBuffer.allocate(Frame.HEADER_LENGTH).putInt(magic).putShort((short) version)
                .putShort((short) type).putInt((int) length).array();
    }

    static byte[] bytes(ByteBuffer frame) {
        byte[] b = new byte[frame.remaining()];
        frame.duplicate().get(b);
        return b;
    }

    static byte[] nonce() {
        byte[] n = new byte[Frame.NONCE_LENGTH];
        RANDOM.nextBytes(n);
        return n;
    }

    static void write(Socket s, byte[] frame) throws IOException {
        s.getOutputStream().write(frame);
        s.getOutputStream().flush();
    }

    static In read(Socket s) throws IOException {
        InputStream in = s.getInputStream();
        byte[] head = in.readNBytes(Frame.HEADER_LENGTH);
        if (head.length < Frame.HEADER_LENGTH) {
            throw new IOException("the listener closed the connection after " + head.length + " header bytes");
        }
        ByteBuffer h = ByteBuffer.wrap(head);
        assertEquals(Frame.MAGIC, h.getInt(Frame.MAGIC_OFFSET));
        byte[] body = in.readNBytes(h.getInt(Frame.LENGTH_OFFSET));
        return new In(h.getShort(Frame.VERSION_OFFSET) & 0xffff, h.getShort(Frame.TYPE_OFFSET) & 0xffff, body);
    }

    /** Reads a CHALLENGE and returns the listener's nonce; fails the test on anything else. */
    static byte[] readChallenge(Socket s) throws IOException {
        In f = read(s);
        assertEquals(Frame.typeName(Frame.CHALLENGE), Frame.typeName(f.type()), () -> "got " + Frame.typeName(f.type())
                + ": " + (f.type() == Frame.REJECT ? Frame.reason(ByteBuffer.wrap(f.body())) : ""));
        assertEquals(Frame.NONCE_LENGTH, f.body().length);
        return f.body();
    }

    /**
     * Sends HELLO, answers the challenge with {@code secret} (a wrong one for tests that want it refused), and
     * returns the two frames it sent.
     */
    static Captured authenticate(Socket s, byte[] secret, byte[] payload) throws IOException {
        byte[] nonce = nonce();
        byte[] hello = bytes(Frame.hello(nonce, 0, payload));
        write(s, hello);
        byte[] challenge = readChallenge(s);
        byte[] proof = bytes(Frame.proof(HandshakeMac.proof(secret, challenge, nonce)));
        write(s, proof);
        return new Captured(hello, proof);
    }
}
