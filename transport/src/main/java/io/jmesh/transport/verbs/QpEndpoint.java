package io.jmesh.transport.verbs;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * What one side of an RC connection tells the other in the handshake so the peer can bring its queue pair to RTR.
 *
 * @param qpn     queue pair number (24 bits)
 * @param psn     first packet sequence number (24 bits, random per QP)
 * @param gid     the GID the peer must address (16 bytes: the RoCE v2 GID of the link's address)
 * @param ibvMtu  the sender's active MTU as {@code enum ibv_mtu} (1..5); the path MTU is the smaller of both
 */
public record QpEndpoint(int qpn, int psn, byte[] gid, int ibvMtu) {
    public QpEndpoint {
        if ((qpn & ~0xffffff) != 0 || (psn & ~0xffffff) != 0) {
            throw new IllegalArgumentException("QPN and PSN are 24-bit values: qpn=" + qpn + " psn=" + psn);
        }
        if (gid.length != 16) {
            throw new IllegalArgumentException("a GID has 16 bytes, not " + gid.length);
        }
        if (ibvMtu < 1 || ibvMtu > 5) {
            throw new IllegalArgumentException("MTU enum out of range 1..5: " + ibvMtu);
        }
        gid = gid.clone();
    }

    @Override
    public byte[] gid() {
        return gid.clone();
    }

    /** The path MTU both ends support: the smaller of the two active MTUs. */
    public static int pathMtu(int localIbvMtu, int remoteIbvMtu) {
        return Math.min(localIbvMtu, remoteIbvMtu);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof QpEndpoint e && e.qpn == qpn && e.psn == psn && e.ibvMtu == ibvMtu
                && Arrays.equals(e.gid, gid);
    }

    @Override
    public int hashCode() {
        return qpn * 31 + Arrays.hashCode(gid);
    }

    @Override
    public String toString() {
        return "qpn=0x" + Integer.toHexString(qpn) + " psn=" + psn + " gid=" + HexFormat.of().formatHex(gid)
                + " mtu=" + (128 << ibvMtu);
    }
}
