package io.jmesh.transport.tcp;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * What a TCP listener answers in its handshake ACCEPT: where to open the data sockets, the token that proves they
 * belong to this connection, and the eager ring it keeps for the connector's small messages ({@link EagerFrame}).
 * Fixed layout, big-endian:
 * <pre>
 *  0 u32 magic     0x4A4D5441 "JMTA"
 *  4 u16 version   2
 *  6 u16 sockets   data sockets to open, 1..the number asked for
 *  8 u16 port      the data port on the listener's address of this link, 1..65535
 * 10 u16 slots     the eager ring's slots, a power of two 2..1024, or 0: send nothing eagerly
 * 12 u32 eager     the largest eager message, 1..what the connector offered (0 with no ring)
 * 16 u8[16] token  random per connection
 * 32 (length)
 * </pre>
 */
record AcceptReply(int sockets, int port, int slots, int eager, byte[] token) {
    static final int MAGIC = 0x4A4D5441;
    static final int VERSION = ConnectRequest.VERSION;
    static final int TOKEN_BYTES = 16;
    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 4;
    static final int SOCKETS_OFFSET = 6;
    static final int PORT_OFFSET = 8;
    static final int SLOTS_OFFSET = 10;
    static final int EAGER_OFFSET = 12;
    static final int MAX_SLOTS = 1024;
    static final int TOKEN_OFFSET = 16;
    static final int LENGTH = 32;

    AcceptReply {
        if (sockets < 1 || sockets > ConnectRequest.MAX_SOCKETS || port < 1 || port > 0xFFFF
                || token.length != TOKEN_BYTES) {
            throw new IllegalArgumentException("bad accept reply: " + sockets + " sockets, port " + port);
        }
        if (slots == 0 ? eager != 0 : slots < 2 || slots > MAX_SLOTS || Integer.bitCount(slots) != 1 || eager < 1
                || eager > ConnectRequest.MAX_EAGER) {
            throw new IllegalArgumentException("bad accept reply: an eager ring of " + slots + " slots of " + eager
                    + " bytes");
        }
        token = token.clone();
    }

    @Override
    public byte[] token() {
        return token.clone();
    }

    byte[] encode() {
        ByteBuffer b = ByteBuffer.allocate(LENGTH);
        b.putInt(MAGIC_OFFSET, MAGIC);
        b.putShort(VERSION_OFFSET, (short) VERSION);
        b.putShort(SOCKETS_OFFSET, (short) sockets);
        b.putShort(PORT_OFFSET, (short) port);
        b.putShort(SLOTS_OFFSET, (short) slots);
        b.putInt(EAGER_OFFSET, eager);
        b.put(TOKEN_OFFSET, token);
        return b.array();
    }

    /**
     * Checks and decodes the listener's reply.
     *
     * @param requested the number of sockets this side asked for: the listener may grant fewer, never more
     * @param offered   the largest eager message this side offered: the listener's ring may take less, never more
     * @throws IllegalArgumentException naming what is wrong
     */
    static AcceptReply decode(byte[] payload, int requested, int offered) {
        if (payload.length != LENGTH) {
            throw new IllegalArgumentException("the listener's TCP accept reply has " + payload.length
                    + " bytes, expected " + LENGTH + " (is it the rdma provider, or another jmesh version? set "
                    + "JMESH_PROVIDER and the jmesh version the same on both nodes)");
        }
        ByteBuffer b = ByteBuffer.wrap(payload);
        if (b.getInt(MAGIC_OFFSET) != MAGIC) {
            throw new IllegalArgumentException("the listener's reply is not a TCP accept reply (magic 0x"
                    + Integer.toHexString(b.getInt(MAGIC_OFFSET)) + "); set JMESH_PROVIDER the same on both nodes");
        }
        int version = Short.toUnsignedInt(b.getShort(VERSION_OFFSET));
        if (version != VERSION) {
            throw new IllegalArgumentException("the listener speaks TCP data protocol version " + version
                    + ", this node " + VERSION + ": run the same jmesh version on every node");
        }
        int sockets = Short.toUnsignedInt(b.getShort(SOCKETS_OFFSET));
        if (sockets < 1 || sockets > requested) {
            throw new IllegalArgumentException("the listener grants " + sockets + " data sockets; 1.." + requested
                    + " were asked for");
        }
        int port = Short.toUnsignedInt(b.getShort(PORT_OFFSET));
        if (port == 0) {
            throw new IllegalArgumentException("the listener's TCP accept reply names data port 0");
        }
        int slots = Short.toUnsignedInt(b.getShort(SLOTS_OFFSET));
        int eager = b.getInt(EAGER_OFFSET);
        if (slots == 0 ? eager != 0 : slots < 2 || slots > MAX_SLOTS || Integer.bitCount(slots) != 1 || eager < 1
                || eager > offered) {
            throw new IllegalArgumentException("the listener's TCP accept reply offers an eager ring of " + slots
                    + " slots for messages of up to " + Integer.toUnsignedString(eager) + " bytes (this side offered "
                    + offered + "; slots a power of two up to " + MAX_SLOTS + ", or 0 with no messages)");
        }
        return new AcceptReply(sockets, port, slots, eager,
                Arrays.copyOfRange(payload, TOKEN_OFFSET, TOKEN_OFFSET + TOKEN_BYTES));
    }
}
