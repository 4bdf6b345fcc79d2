package io.jmesh.transport.tcp;

import java.nio.ByteBuffer;

/**
 * What a TCP connector sends in its handshake HELLO: how many data sockets it wants, and the largest message it would
 * send eagerly ({@link EagerFrame}). Fixed layout, big-endian:
 * <pre>
 *  0 u32 magic     0x4A4D5443 "JMTC"
 *  4 u16 version   3 (2: before small receives kept their clear-to-sends back; 1: before the eager path)
 *  6 u16 sockets   data sockets wanted, 1..16
 *  8 u32 eager     the largest message it sends eagerly, 0..{@value #MAX_EAGER} (0: none)
 * 12 u32 reserved  0
 * 16 (length)
 * </pre>
 *
 * @param sockets data sockets wanted, 1..{@value #MAX_SOCKETS}
 * @param eager   the largest message the connector sends eagerly, 0..{@value #MAX_EAGER}
 */
record ConnectRequest(int sockets, int eager) {
    static final int MAGIC = 0x4A4D5443;
    static final int VERSION = 3;
    static final int MAX_SOCKETS = 16;
    static final int MAX_EAGER = 1 << 20;
    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 4;
    static final int SOCKETS_OFFSET = 6;
    static final int EAGER_OFFSET = 8;
    static final int RESERVED_OFFSET = 12;
    static final int LENGTH = 16;

    ConnectRequest {
        if (sockets < 1 || sockets > MAX_SOCKETS) {
            throw new IllegalArgumentException("data sockets " + sockets + " out of range 1.." + MAX_SOCKETS);
        }
        if (eager < 0 || eager > MAX_EAGER) {
            throw new IllegalArgumentException("eager threshold " + eager + " out of range 0.." + MAX_EAGER);
        }
    }

    byte[] encode() {
        ByteBuffer b = ByteBuffer.allocate(LENGTH);
        b.putInt(MAGIC_OFFSET, MAGIC);
        b.putShort(VERSION_OFFSET, (short) VERSION);
        b.putShort(SOCKETS_OFFSET, (short) sockets);
        b.putInt(EAGER_OFFSET, eager);
        return b.array();
    }

    /**
     * Checks and decodes a connector's payload.
     *
     * @throws IllegalArgumentException naming what is wrong (it becomes the REJECT reason the connector reports)
     */
    static ConnectRequest decode(byte[] payload) {
        if (payload.length != LENGTH) {
            throw new IllegalArgumentException("the connector's TCP connect request has " + payload.length
                    + " bytes, expected " + LENGTH + " (is it the rdma provider, or another jmesh version? set "
                    + "JMESH_PROVIDER and the jmesh version the same on both nodes)");
        }
        ByteBuffer b = ByteBuffer.wrap(payload);
        if (b.getInt(MAGIC_OFFSET) != MAGIC) {
            throw new IllegalArgumentException("the connector's payload is not a TCP connect request (magic 0x"
                    + Integer.toHexString(b.getInt(MAGIC_OFFSET)) + "); set JMESH_PROVIDER the same on both nodes");
        }
        int version = Short.toUnsignedInt(b.getShort(VERSION_OFFSET));
        if (version != VERSION) {
            throw new IllegalArgumentException("the connector speaks TCP data protocol version " + version
                    + ", this node " + VERSION + ": run the same jmesh version on every node");
        }
        if (b.getInt(RESERVED_OFFSET) != 0) {
            throw new IllegalArgumentException("the connector's TCP connect request has non-zero reserved bytes");
        }
        int sockets = Short.toUnsignedInt(b.getShort(SOCKETS_OFFSET));
        if (sockets < 1 || sockets > MAX_SOCKETS) {
            throw new IllegalArgumentException("the connector asks for " + sockets + " data sockets (1.."
                    + MAX_SOCKETS + " allowed)");
        }
        int eager = b.getInt(EAGER_OFFSET);
        if (eager < 0 || eager > MAX_EAGER) {
            throw new IllegalArgumentException("the connector would send messages of up to "
                    + Integer.toUnsignedString(eager) + " bytes eagerly (0.." + MAX_EAGER + " allowed)");
        }
        return new ConnectRequest(sockets, eager);
    }
}
