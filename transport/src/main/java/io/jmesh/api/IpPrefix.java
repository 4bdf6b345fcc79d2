package io.jmesh.api;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Objects;

/**
 * An interface address with its real prefix length, e.g. 192.168.101.2/24 or fd00::2/64. Two nodes share a link when
 * one's address lies in the other's prefix; mesh links are told apart by exactly this, so every netmask (/24, /16,
 * /30, /31, /127 ...) must work.
 */
public record IpPrefix(InetAddress address, int prefixLength) {

    public IpPrefix {
        Objects.requireNonNull(address, "address");
        int max = maxPrefix(address);
        if (prefixLength < 0 || prefixLength > max) {
            throw new IllegalArgumentException("prefix length " + prefixLength + " out of range 0.." + max + " for "
                    + address.getHostAddress());
        }
    }

    /**
     * Parses "192.168.101.2/24" or "fd00::2/64"; a bare address gets the full-length prefix. ASCII only, and an IPv4
     * address in its four-part dotted form only ("1.2.3", which C's inet_aton reads as 1.2.0.3, is refused).
     */
    public static IpPrefix parse(String text) {
        String s = text.strip();
        int slash = s.indexOf('/');
        String host = slash < 0 ? s : s.substring(0, slash);
        if (host.isEmpty() || !host.chars().allMatch(c -> hexDigit(c) || c == '.' || c == ':')
                || host.indexOf(':') < 0 && !dottedQuad(host)) {
            throw new IllegalArgumentException("not an IP address: '" + shorten(text) + "' (expected e.g. "
                    + "192.168.101.2/24)");
        }
        InetAddress address;
        try {
            address = InetAddress.getByName(host); // literal only: the character check above rules out host names
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("not an IP address: '" + shorten(text) + "'", e);
        }
        int prefix = slash < 0 ? maxPrefix(address)
                : decimal(s.substring(slash + 1), "prefix length in '" + shorten(text) + "'", maxPrefix(address));
        return new IpPrefix(address, prefix);
    }

    /**
     * An unsigned decimal of ASCII digits up to {@code max}; the error names {@code what}. Integer.parseInt would
     * take '+', and digits of every script.
     */
    public static int decimal(String text, String what, int max) {
        boolean ok = !text.isEmpty() && text.length() <= 10 && text.chars().allMatch(c -> c >= '0' && c <= '9');
        long v = ok ? Long.parseLong(text) : -1;
        if (v < 0 || v > max) {
            throw new IllegalArgumentException(what + ": '" + shorten(text) + "' is not a number from 0 to " + max);
        }
        return (int) v;
    }

    /** At most 64 characters of untrusted text, for an error message. */
    public static String shorten(String text) {
        return text.length() <= 64 ? text : text.substring(0, 61) + "...";
    }

    private static boolean hexDigit(int c) {
        return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F';
    }

    private static boolean dottedQuad(String host) {
        String[] parts = host.split("\\.", -1);
        if (parts.length != 4) {
            return false;
        }
        for (String p : parts) {
            if (p.isEmpty() || p.length() > 3 || !p.chars().allMatch(c -> c >= '0' && c <= '9')
                    || Integer.parseInt(p) > 255) {
                return false;
            }
        }
        return true;
    }

    static int maxPrefix(InetAddress address) {
        return address instanceof Inet4Address ? 32 : 128;
    }

    public boolean isIpv4() {
        return address instanceof Inet4Address;
    }

    public boolean isIpv6() {
        return address instanceof Inet6Address;
    }

    /** True when {@code other} lies inside this prefix (same family, same first prefixLength bits). */
    public boolean contains(InetAddress other) {
        byte[] a = address.getAddress();
        byte[] b = other.getAddress();
        if (a.length != b.length) {
            return false;
        }
        int full = prefixLength / 8;
        for (int i = 0; i < full; i++) {
            if (a[i] != b[i]) {
                return false;
            }
        }
        int rest = prefixLength % 8;
        if (rest == 0) {
            return true;
        }
        int mask = (0xff << (8 - rest)) & 0xff;
        return (a[full] & mask) == (b[full] & mask);
    }

    /**
     * True when both ends are on one link: each address lies in the other's prefix. Using both netmasks rejects a
     * misconfigured pair (a /24 facing a /16) that a one-sided test would accept.
     */
    public boolean sharesSubnetWith(IpPrefix peer) {
        return contains(peer.address) && peer.contains(address);
    }

    /** The network part, e.g. 192.168.101.0/24. */
    public IpPrefix network() {
        byte[] a = address.getAddress();
        for (int i = 0; i < a.length; i++) {
            int bitsBefore = i * 8;
            if (bitsBefore >= prefixLength) {
                a[i] = 0;
            } else if (bitsBefore + 8 > prefixLength) {
                a[i] = (byte) (a[i] & (0xff << (8 - (prefixLength - bitsBefore))));
            }
        }
        try {
            return new IpPrefix(InetAddress.getByAddress(a), prefixLength);
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public String toString() {
        String host = address.getHostAddress();
        int percent = host.indexOf('%');
        return (percent < 0 ? host : host.substring(0, percent)) + "/" + prefixLength;
    }
}
