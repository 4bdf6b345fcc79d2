package io.jmesh.api;

import java.net.InetSocketAddress;
import java.util.Objects;

/**
 * What a connector knows about one of its own usable mesh addresses: which device and port carry it, the GID index
 * that maps it, the address with its real prefix, and the link speed. The TCP provider uses device {@code "tcp"},
 * port 0 and GID index -1.
 *
 * <pre>{@code
 * LocalLink l = new LocalLink("rocep1s0f0", 1, 3, IpPrefix.parse("192.168.101.2/24"), 200_000);
 * LocalLink t = LocalLink.tcp(IpPrefix.parse("192.168.101.2/24"), 10_000);
 * }</pre>
 *
 * @param device    RDMA device name, e.g. "rocep1s0f0", or "tcp"
 * @param port      1-based RDMA port number, 0 for TCP
 * @param gidIndex  the RoCE v2 GID index for this address, -1 for TCP
 * @param prefix    the address and its real prefix length
 * @param speedMbps the link speed in Mb/s, 0 when unknown
 */
public record LocalLink(String device, int port, int gidIndex, IpPrefix prefix, long speedMbps) {
    /** Device name used by the TCP provider. */
    public static final String TCP = "tcp";

    public LocalLink {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(prefix, "prefix");
        if (device.isEmpty()) {
            throw new IllegalArgumentException("empty device name for " + prefix);
        }
        if (port < 0 || gidIndex < -1 || speedMbps < 0) {
            throw new IllegalArgumentException("bad local link " + device + " port " + port + " gid " + gidIndex
                    + " speed " + speedMbps + " for " + prefix);
        }
    }

    /** A link used by the TCP provider. */
    public static LocalLink tcp(IpPrefix prefix, long speedMbps) {
        return new LocalLink(TCP, 0, -1, prefix, speedMbps);
    }

    /** Where a handshake socket over this link binds: this address, an ephemeral port. */
    public InetSocketAddress bindAddress() {
        return new InetSocketAddress(prefix.address(), 0);
    }

    /** {@code 192.168.101.2/24 (rocep1s0f0:1)}, used in error messages. */
    @Override
    public String toString() {
        return prefix + " (" + device + (port > 0 ? ":" + port : "") + ")";
    }
}
