package io.jmesh.transport.rdma;

import io.jmesh.transport.verbs.QpEndpoint;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * What the two ends of a verbs connection exchange in the handshake: the queue pair (QPN, PSN, GID, MTU) and the one
 * control region the peer writes into: for the sender, its clear-to-send FIFO; for the receiver, its array of
 * received sizes. 40 bytes, big-endian, validated on decode: it came from the network.
 *
 * <pre>
 *  0 u8  version (1)      1 u8  ibv_mtu (1..5)   2 u16 flags (0)
 *  4 u32 qpn (24 bits)    8 u32 psn (24 bits)   12 u8[16] gid
 * 28 u64 control address 36 u32 control rkey
 * </pre>
 */
public record ConnectInfo(QpEndpoint qp, long controlAddress, int controlRkey) {
    public static final int VERSION = 1;
    public static final int BYTES = 40;

    public byte[] encode() {
        ByteBuffer b = ByteBuffer.allocate(BYTES);
        b.put((byte) VERSION).put((byte) qp.ibvMtu()).putShort((short) 0);
        b.putInt(qp.qpn()).putInt(qp.psn()).put(qp.gid());
        b.putLong(controlAddress).putInt(controlRkey);
        return b.array();
    }

    /** @throws IllegalArgumentException "bad jmesh connection info: ..." for anything malformed */
    public static ConnectInfo decode(byte[] bytes) {
        if (bytes == null || bytes.length != BYTES) {
            throw bad("expected " + BYTES + " bytes, got " + (bytes == null ? "none" : bytes.length));
        }
        ByteBuffer b = ByteBuffer.wrap(bytes);
        int version = Byte.toUnsignedInt(b.get());
        if (version != VERSION) {
            throw bad("version " + version + " (this jmesh speaks " + VERSION + "; run the same jmesh on both nodes)");
        }
        int mtu = Byte.toUnsignedInt(b.get());
        int flags = Short.toUnsignedInt(b.getShort());
        if (flags != 0) {
            throw bad("unknown flags 0x" + Integer.toHexString(flags));
        }
        int qpn = b.getInt();
        int psn = b.getInt();
        byte[] gid = new byte[16];
        b.get(gid);
        long address = b.getLong();
        int rkey = b.getInt();
        if (Arrays.equals(gid, new byte[16])) {
            throw bad("zero GID");
        }
        if (address == 0) {
            throw bad("zero control address");
        }
        try {
            return new ConnectInfo(new QpEndpoint(qpn, psn, gid, mtu), address, rkey);
        } catch (IllegalArgumentException e) {
            throw bad(e.getMessage());
        }
    }

    private static IllegalArgumentException bad(String why) {
        return new IllegalArgumentException("bad jmesh connection info: " + why);
    }
}
