package io.jmesh.transport.discovery;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * One valid entry of a port's GID table.
 *
 * @param index   the GID index, as used in {@code ibv_ah_attr.grh.sgid_index}
 * @param port    the port number (1-based)
 * @param type    RoCE v1, RoCE v2 or IB
 * @param gid     the 16 GID bytes (for RoCE v2, the IPv6 address or the IPv4-mapped one)
 * @param ifindex the netdev the entry belongs to, 0 when none
 */
public record GidEntry(int index, int port, GidType type, byte[] gid, int ifindex) {
    public GidEntry {
        if (gid.length != 16) {
            throw new IllegalArgumentException("a GID has 16 bytes, not " + gid.length);
        }
        gid = gid.clone();
    }

    @Override
    public byte[] gid() {
        return gid.clone();
    }

    /** True when this entry carries {@code address}: the IPv6 address itself, or the IPv4-mapped {@code ::ffff:a.b.c.d}. */
    public boolean maps(InetAddress address) {
        return Arrays.equals(gid, gidOf(address));
    }

    /** The GID that RoCE v2 derives from an IP address. */
    public static byte[] gidOf(InetAddress address) {
        byte[] ip = address.getAddress();
        if (ip.length == 16) {
            return ip;
        }
        byte[] g = new byte[16];
        g[10] = (byte) 0xff;
        g[11] = (byte) 0xff;
        System.arraycopy(ip, 0, g, 12, 4);
        return g;
    }

    /** The GID in IPv6 notation, e.g. "::ffff:192.168.100.2" or "fe80::5054:ff:fe12:0". */
    public String text() {
        try {
            if (isIpv4Mapped()) {
                return "::ffff:" + InetAddress.getByAddress(Arrays.copyOfRange(gid, 12, 16)).getHostAddress();
            }
            return InetAddress.getByAddress(gid).getHostAddress();
        } catch (UnknownHostException e) {
            return HexFormat.of().formatHex(gid);
        }
    }

    private boolean isIpv4Mapped() {
        for (int i = 0; i < 10; i++) {
            if (gid[i] != 0) {
                return false;
            }
        }
        return gid[10] == (byte) 0xff && gid[11] == (byte) 0xff;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GidEntry e && e.index == index && e.port == port && e.type == type
                && e.ifindex == ifindex && Arrays.equals(e.gid, gid);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(gid) * 31 + index;
    }

    @Override
    public String toString() {
        return "GID[" + index + "] " + text() + " " + type.label();
    }
}
