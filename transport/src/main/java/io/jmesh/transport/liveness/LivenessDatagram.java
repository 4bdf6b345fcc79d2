package io.jmesh.transport.liveness;

import java.nio.ByteBuffer;

/**
 * The one datagram {@link Liveness} sends and takes: what its bytes mean, how one is written, and why a datagram
 * received is not one. 24 bytes, big-endian:
 * <pre>
 *  0 u32 magic 0x4A4D4C56 "JMLV"   4 u8 version 2   5 u8 type (PING 1, PONG 2, LOST 3)
 *  6 u8 role (PING, LOST: the sender's end; PONG: the pinger's, echoed)
 *  7 u8 flags (PING, PONG: RELAY 2 the sender relays this connection; PONG: KNOWN 1 the answerer has it;
 *              LOST: why, SILENT 1, CLOSED 2)
 *  8 u64 connection id (the handshake's, as this hop saw it)    16 u64 sequence (echoed)
 * </pre>
 * A PONG or LOST answer is never larger than what asked for it.
 */
final class LivenessDatagram {
    static final int MAGIC = 0x4A4D4C56;
    static final int VERSION = 2;
    static final int PING = 1;
    static final int PONG = 2;
    static final int LOST = 3;
    static final int ROLE_CONNECTOR = 1;
    static final int ROLE_ACCEPTOR = 2;
    static final int KNOWN = 1;
    static final int RELAY = 2;
    static final int SILENT = 1;
    static final int CLOSED = 2;
    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 4;
    static final int TYPE_OFFSET = 5;
    static final int ROLE_OFFSET = 6;
    static final int FLAGS_OFFSET = 7;
    static final int ID_OFFSET = 8;
    static final int SEQUENCE_OFFSET = 16;
    static final int LENGTH = 24;

    private LivenessDatagram() {
    }

    /** Writes a datagram into {@code tx}, from 0 to its limit. */
    static void write(ByteBuffer tx, int type, int role, int flags, long id, long sequence) {
        tx.clear();
        tx.putInt(MAGIC_OFFSET, MAGIC).put(VERSION_OFFSET, (byte) VERSION).put(TYPE_OFFSET, (byte) type)
                .put(ROLE_OFFSET, (byte) role).put(FLAGS_OFFSET, (byte) flags).putLong(ID_OFFSET, id)
                .putLong(SEQUENCE_OFFSET, sequence);
        tx.limit(LENGTH);
    }

    /** Why a datagram is not one of ours, or null. */
    static String problem(ByteBuffer d) {
        if (d.remaining() != LENGTH) {
            return "a datagram of " + d.remaining() + " bytes (a liveness datagram has " + LENGTH + ")";
        }
        if (d.getInt(MAGIC_OFFSET) != MAGIC) {
            return "bad magic 0x" + Integer.toHexString(d.getInt(MAGIC_OFFSET)) + " (not jmesh liveness)";
        }
        if (d.get(VERSION_OFFSET) != VERSION) {
            return "liveness version " + d.get(VERSION_OFFSET) + ", this node speaks " + VERSION
                    + " (run the same jmesh version on every node)";
        }
        int type = d.get(TYPE_OFFSET);
        int role = d.get(ROLE_OFFSET);
        if ((type != PING && type != PONG && type != LOST) || (role != ROLE_CONNECTOR && role != ROLE_ACCEPTOR)) {
            return "type " + type + ", role " + role;
        }
        return null;
    }
}
