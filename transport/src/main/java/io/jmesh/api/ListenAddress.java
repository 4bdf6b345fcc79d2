package io.jmesh.api;

import java.net.InetSocketAddress;
import java.util.Objects;

/**
 * One address in a {@link ListenHandle}: where the listener can be reached, on which subnet, and how fast that link is.
 * The prefix travels with the address so the connector can apply the listener's own netmask as well as its own.
 *
 * <pre>{@code
 * ListenAddress a = new ListenAddress(IpPrefix.parse("192.168.101.2/24"), 40123, 100);
 * }</pre>
 *
 * @param prefix    the listener's address and its real prefix length
 * @param port      the TCP port the handshake listens on at this address, 1..65535
 * @param speedGbps the link's speed in Gb/s as the listener sees it, 0 when unknown (a hint for route ordering)
 */
public record ListenAddress(IpPrefix prefix, int port, int speedGbps) {
    /** The largest speed hint the handle can carry (u16). */
    public static final int MAX_SPEED_GBPS = 0xFFFF;

    public ListenAddress {
        Objects.requireNonNull(prefix, "prefix");
        if (port < 1 || port > 0xFFFF) {
            throw new IllegalArgumentException("port " + port + " out of range 1..65535 for " + prefix);
        }
        if (speedGbps < 0 || speedGbps > MAX_SPEED_GBPS) {
            throw new IllegalArgumentException("speed " + speedGbps + " Gb/s out of range 0.." + MAX_SPEED_GBPS
                    + " for " + prefix);
        }
    }

    /** Rounds a speed in Mb/s up to whole Gb/s (a known speed never becomes "unknown"), clamped to the u16 range. */
    public static int gbpsOf(long speedMbps) {
        if (speedMbps <= 0) {
            return 0;
        }
        return (int) Math.min(MAX_SPEED_GBPS, (speedMbps + 999) / 1000);
    }

    /** The TCP endpoint a connector dials. */
    public InetSocketAddress socketAddress() {
        return new InetSocketAddress(prefix.address(), port);
    }

    /** {@code 192.168.101.2/24:40123} or {@code [fd00::2]/64:40123}, with {@code #100} appended for 100 Gb/s. */
    @Override
    public String toString() {
        String p = prefix.toString();
        if (prefix.isIpv6()) {
            int slash = p.lastIndexOf('/');
            p = "[" + p.substring(0, slash) + "]" + p.substring(slash);
        }
        return p + ":" + port + (speedGbps > 0 ? "#" + speedGbps : "");
    }
}
