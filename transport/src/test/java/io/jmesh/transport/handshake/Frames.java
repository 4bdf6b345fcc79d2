package io.jmesh.transport.handshake;

import java.nio.ByteBuffer;

/** The handshake's frames for tests outside this package that play a connector byte by byte (a relay's tests). */
public final class Frames {
    private Frames() {
    }

    /** A HELLO as a connector sends it. */
    public static ByteBuffer hello(byte[] nonce, int livenessPort, byte[] payload) {
        return Frame.hello(nonce, livenessPort, payload);
    }
}
