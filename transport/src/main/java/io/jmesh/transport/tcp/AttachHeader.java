package io.jmesh.transport.tcp;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The first bytes a connector writes on each data socket: which connection (the token from the {@link AcceptReply})
 * and which socket of it this is. Fixed layout, big-endian:
 * <pre>
 *  0 u32 magic     0x4A4D5444 "JMTD"
 *  4 u16 version   the TCP data protocol's, as in {@link ConnectRequest} (2)
 *  6 u16 index     0..sockets-1
 *  8 u16 sockets   the connection's data sockets, 1..16
 * 10 u16 reserved  0
 * 12 u32 reserved  0
 * 16 u8[16] token
 * 32 (length)
 * </pre>
 */
record AttachHeader(int index, int sockets, byte[] token) {
    static final int MAGIC = 0x4A4D5444;
    static final int VERSION = ConnectRequest.VERSION;
    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 4;
    static final int INDEX_OFFSET = 6;
    static final int SOCKETS_OFFSET = 8;
    static final int RESERVED_OFFSET = 10;
    static final int RESERVED2_OFFSET = 12;
    static final int TOKEN_OFFSET = 16;
    static final int LENGTH = 32;

    AttachHeader {
        if (sockets < 1 || sockets > ConnectRequest.MAX_SOCKETS || index < 0 || index >= sockets
                || token.length != AcceptReply.TOKEN_BYTES) {
            throw new IllegalArgumentException("bad data socket header: index " + index + " of " + sockets);
        }
        token = token.clone();
    }

    @Override
    public byte[] token() {
        return token.clone();
    }

    /** The header, ready to write (position 0, limit {@value #LENGTH}). */
    ByteBuffer encode() {
        ByteBuffer b = ByteBuffer.allocate(LENGTH);
        b.putInt(MAGIC_OFFSET, MAGIC);
        b.putShort(VERSION_OFFSET, (short) VERSION);
        b.putShort(INDEX_OFFSET, (short) index);
        b.putShort(SOCKETS_OFFSET, (short) sockets);
        b.put(TOKEN_OFFSET, token);
        return b;
    }

    /**
     * Checks and decodes the {@value #LENGTH} bytes at the start of {@code b} (absolute reads).
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    static AttachHeader decode(ByteBuffer b) {
        if (b.getInt(MAGIC_OFFSET) != MAGIC) {
            throw new IllegalArgumentException("bad magic 0x" + Integer.toHexString(b.getInt(MAGIC_OFFSET))
                    + " (not a jmesh data socket)");
        }
        int version = Short.toUnsignedInt(b.getShort(VERSION_OFFSET));
        if (version != VERSION) {
            throw new IllegalArgumentException("data protocol version " + version + ", expected " + VERSION);
        }
        if (b.getShort(RESERVED_OFFSET) != 0 || b.getInt(RESERVED2_OFFSET) != 0) {
            throw new IllegalArgumentException("non-zero reserved bytes");
        }
        int index = Short.toUnsignedInt(b.getShort(INDEX_OFFSET));
        int sockets = Short.toUnsignedInt(b.getShort(SOCKETS_OFFSET));
        if (sockets < 1 || sockets > ConnectRequest.MAX_SOCKETS || index >= sockets) {
            throw new IllegalArgumentException("socket index " + index + " of " + sockets);
        }
        byte[] token = new byte[AcceptReply.TOKEN_BYTES];
        b.get(TOKEN_OFFSET, token);
        return new AttachHeader(index, sockets, token);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof AttachHeader h && h.index == index && h.sockets == sockets
                && Arrays.equals(h.token, token);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * index + sockets) + Arrays.hashCode(token);
    }
}
