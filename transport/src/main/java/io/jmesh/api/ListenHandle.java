package io.jmesh.api;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;

/**
 * What a listener publishes so that peers can reach it: every mesh address it listens on (with its prefix, TCP port
 * and a link-speed hint), a protocol version and a random per-listener secret that the handshake checks. NCCL carries
 * it between nodes as an opaque handle of at most {@value #MAX_BYTES} bytes.
 *
 * <p>Binary layout, big-endian (network order), all offsets in bytes:
 * <pre>
 *  0  u32 magic      0x4A4D5348 "JMSH"
 *  4  u8  version    1
 *  5  u8  flags      bit 0: the listener is the TCP provider; other bits must be 0
 *  6  u8  count      number of addresses, 1..11
 *  7  u8  reserved   0
 *  8  u8[8] secret   random per listener
 * 16  entries, each:
 *       +0 u8  family   4 or 6
 *       +1 u8  prefix   prefix length, 0..32 or 0..128
 *       +2 u16 port     TCP port of the handshake listener on this address
 *       +4 u16 speed    link speed hint in Gb/s, 0 = unknown
 *       +6 u8[4|16] address
 * </pre>
 * An IPv4 entry takes 10 bytes and an IPv6 entry 22, so a handle holds up to 11 IPv4 or 5 IPv6 addresses. Bytes after
 * the last entry are ignored (NCCL's handle buffer is larger than the encoding).
 *
 * <p>Printable form, for logs and tests: {@code jmesh1:<16 hex digits secret>@<entry>,<entry>...} where an entry is
 * {@code 192.168.101.2/24:40123} or {@code [fd00::2]/64:40124}, optionally followed by {@code #100} (Gb/s); non-zero
 * flags are written as {@code jmesh1/01:...}.
 *
 * <pre>{@code
 * ListenHandle h = new ListenHandle(0, secret, List.of(new ListenAddress(IpPrefix.parse("192.168.101.2/24"), 40123, 100)));
 * byte[] wire = h.encode();                       // <= 128 bytes
 * ListenHandle back = ListenHandle.decode(wire);  // validates everything
 * ListenHandle same = ListenHandle.parse(h.toString());
 * }</pre>
 */
public final class ListenHandle {
    /** NCCL's handle size limit (NCCL_NET_HANDLE_MAXSIZE). */
    public static final int MAX_BYTES = 128;
    public static final int MAGIC = 0x4A4D5348;
    public static final int VERSION = 1;
    /** The listener runs the TCP provider; an RDMA connector must not use it, and vice versa. */
    public static final int FLAG_TCP_PROVIDER = 0x01;
    public static final int SECRET_BYTES = 8;

    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 4;
    static final int FLAGS_OFFSET = 5;
    static final int COUNT_OFFSET = 6;
    static final int RESERVED_OFFSET = 7;
    static final int SECRET_OFFSET = 8;
    static final int HEADER_LENGTH = 16;

    static final int ENTRY_FAMILY_OFFSET = 0;
    static final int ENTRY_PREFIX_OFFSET = 1;
    static final int ENTRY_PORT_OFFSET = 2;
    static final int ENTRY_SPEED_OFFSET = 4;
    static final int ENTRY_ADDRESS_OFFSET = 6;
    static final int FAMILY_IPV4 = 4;
    static final int FAMILY_IPV6 = 6;

    private static final int KNOWN_FLAGS = FLAG_TCP_PROVIDER;
    private static final String PREFIX = "jmesh" + VERSION;
    private static final HexFormat HEX = HexFormat.of();

    /** How many IPv4-only addresses fit in one handle. */
    public static final int MAX_IPV4_ADDRESSES = (MAX_BYTES - HEADER_LENGTH) / entryLength(false);
    /** How many IPv6-only addresses fit in one handle. */
    public static final int MAX_IPV6_ADDRESSES = (MAX_BYTES - HEADER_LENGTH) / entryLength(true);

    private final int flags;
    private final long secret;
    private final List<ListenAddress> addresses;

    /**
     * @throws IllegalArgumentException when there are no addresses, unknown flags, or more addresses than fit in
     *                                  {@value #MAX_BYTES} bytes (the message says how many fit)
     */
    public ListenHandle(int flags, long secret, List<ListenAddress> addresses) {
        Objects.requireNonNull(addresses, "addresses");
        if ((flags & ~KNOWN_FLAGS) != 0) {
            throw new IllegalArgumentException("unknown handle flags 0x" + Integer.toHexString(flags));
        }
        if (addresses.isEmpty()) {
            throw new IllegalArgumentException("a listen handle needs at least one address: the node has no usable "
                    + "mesh address (check 'ip addr' and the jmesh device list)");
        }
        this.flags = flags;
        this.secret = secret;
        this.addresses = List.copyOf(addresses);
        int length = encodedLength(this.addresses);
        if (length > MAX_BYTES) {
            long v6 = this.addresses.stream().filter(a -> a.prefix().isIpv6()).count();
            throw new IllegalArgumentException(this.addresses.size() + " addresses (" + v6 + " IPv6) need " + length
                    + " bytes, more than NCCL's " + MAX_BYTES + "-byte handle: at most " + MAX_IPV4_ADDRESSES
                    + " IPv4 or " + MAX_IPV6_ADDRESSES + " IPv6 addresses fit (IPv4 entries take "
                    + entryLength(false) + " bytes, IPv6 " + entryLength(true) + "); restrict the mesh addresses "
                    + "jmesh listens on");
        }
    }

    public int flags() {
        return flags;
    }

    public boolean isTcpProvider() {
        return (flags & FLAG_TCP_PROVIDER) != 0;
    }

    public long secret() {
        return secret;
    }

    /** The secret as the 8 big-endian bytes the handshake sends. */
    public byte[] secretBytes() {
        return ByteBuffer.allocate(SECRET_BYTES).putLong(0, secret).array();
    }

    public List<ListenAddress> addresses() {
        return addresses;
    }

    /** The addresses' prefixes, for messages and routing. */
    public List<IpPrefix> prefixes() {
        return addresses.stream().map(ListenAddress::prefix).toList();
    }

    static int entryLength(boolean ipv6) {
        return ENTRY_ADDRESS_OFFSET + (ipv6 ? 16 : 4);
    }

    private static int encodedLength(List<ListenAddress> addresses) {
        int length = HEADER_LENGTH;
        for (ListenAddress a : addresses) {
            length += entryLength(a.prefix().isIpv6());
        }
        return length;
    }

    /** The encoded size in bytes, at most {@value #MAX_BYTES}. */
    public int encodedLength() {
        return encodedLength(addresses);
    }

    /** The binary form, exactly {@link #encodedLength()} bytes. */
    public byte[] encode() {
        byte[] out = new byte[encodedLength()];
        encodeTo(ByteBuffer.wrap(out));
        return out;
    }

    private void encodeTo(ByteBuffer b) {
        b.order(ByteOrder.BIG_ENDIAN);
        b.putInt(MAGIC_OFFSET, MAGIC);
        b.put(VERSION_OFFSET, (byte) VERSION);
        b.put(FLAGS_OFFSET, (byte) flags);
        b.put(COUNT_OFFSET, (byte) addresses.size());
        b.put(RESERVED_OFFSET, (byte) 0);
        b.putLong(SECRET_OFFSET, secret);
        int at = HEADER_LENGTH;
        for (ListenAddress a : addresses) {
            byte[] ip = a.prefix().address().getAddress();
            b.put(at + ENTRY_FAMILY_OFFSET, (byte) (ip.length == 4 ? FAMILY_IPV4 : FAMILY_IPV6));
            b.put(at + ENTRY_PREFIX_OFFSET, (byte) a.prefix().prefixLength());
            b.putShort(at + ENTRY_PORT_OFFSET, (short) a.port());
            b.putShort(at + ENTRY_SPEED_OFFSET, (short) a.speedGbps());
            b.put(at + ENTRY_ADDRESS_OFFSET, ip);
            at += entryLength(ip.length == 16);
        }
    }

    /**
     * Decodes and validates a handle. Trailing bytes after the last entry are ignored.
     *
     * @throws IllegalArgumentException "bad jmesh handle: ..." naming what is wrong and the likely cause
     */
    public static ListenHandle decode(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        int limit = Math.min(bytes.length, MAX_BYTES);
        if (limit < HEADER_LENGTH) {
            throw bad(bytes.length + " bytes, shorter than the " + HEADER_LENGTH + "-byte header (truncated)");
        }
        ByteBuffer b = ByteBuffer.wrap(bytes, 0, limit).order(ByteOrder.BIG_ENDIAN);
        int magic = b.getInt(MAGIC_OFFSET);
        if (magic != MAGIC) {
            throw bad(String.format("magic 0x%08X is not 0x%08X 'JMSH': the handle was not made by jmesh (does the "
                    + "peer load another NCCL net plugin?) or it was corrupted", magic, MAGIC));
        }
        int version = b.get(VERSION_OFFSET) & 0xFF;
        if (version != VERSION) {
            throw bad("version " + version + ", this node speaks version " + VERSION
                    + ": run the same jmesh version on all nodes");
        }
        int flags = b.get(FLAGS_OFFSET) & 0xFF;
        if ((flags & ~KNOWN_FLAGS) != 0) {
            throw bad(String.format("unknown flags 0x%02X (made by a newer jmesh?): run the same jmesh version on "
                    + "all nodes", flags));
        }
        if (b.get(RESERVED_OFFSET) != 0) {
            throw bad("reserved byte 7 is " + (b.get(RESERVED_OFFSET) & 0xFF) + ", expected 0 (corrupted handle)");
        }
        int count = b.get(COUNT_OFFSET) & 0xFF;
        if (count == 0) {
            throw bad("no addresses: the peer has no usable mesh address (check 'ip addr' on the peer)");
        }
        if (count > MAX_IPV4_ADDRESSES) {
            throw bad(count + " addresses, more than the " + MAX_IPV4_ADDRESSES + " that fit in " + MAX_BYTES
                    + " bytes (corrupted handle)");
        }
        long secret = b.getLong(SECRET_OFFSET);
        List<ListenAddress> addresses = new ArrayList<>(count);
        int at = HEADER_LENGTH;
        for (int i = 0; i < count; i++) {
            String which = "address " + (i + 1) + " of " + count;
            if (at + ENTRY_ADDRESS_OFFSET > limit) {
                throw bad(which + " starts at byte " + at + " but the handle has only " + limit + " bytes (truncated)");
            }
            int family = b.get(at + ENTRY_FAMILY_OFFSET) & 0xFF;
            if (family != FAMILY_IPV4 && family != FAMILY_IPV6) {
                throw bad(which + " has family " + family + ", expected 4 (IPv4) or 6 (IPv6)");
            }
            int entryLength = entryLength(family == FAMILY_IPV6);
            if (at + entryLength > limit) {
                throw bad(which + " ends at byte " + (at + entryLength) + " but the handle has only " + limit
                        + " bytes (truncated)");
            }
            byte[] ip = new byte[family == FAMILY_IPV4 ? 4 : 16];
            b.get(at + ENTRY_ADDRESS_OFFSET, ip);
            InetAddress address = address(ip, which);
            if (family == FAMILY_IPV6 && !(address instanceof Inet6Address)) {
                throw bad(which + " is an IPv4-mapped IPv6 address; IPv4 addresses use family 4");
            }
            if (address.isAnyLocalAddress() || address.isMulticastAddress()) {
                throw bad(which + " is " + address.getHostAddress() + ", not a unicast address a peer can reach");
            }
            int prefix = b.get(at + ENTRY_PREFIX_OFFSET) & 0xFF;
            int maxPrefix = IpPrefix.maxPrefix(address);
            if (prefix > maxPrefix) {
                throw bad(which + " (" + address.getHostAddress() + ") has prefix length " + prefix + ", more than "
                        + maxPrefix);
            }
            int port = b.getShort(at + ENTRY_PORT_OFFSET) & 0xFFFF;
            if (port == 0) {
                throw bad(which + " (" + address.getHostAddress() + ") has port 0");
            }
            int speed = b.getShort(at + ENTRY_SPEED_OFFSET) & 0xFFFF;
            addresses.add(new ListenAddress(new IpPrefix(address, prefix), port, speed));
            at += entryLength;
        }
        return new ListenHandle(flags, secret, addresses);
    }

    private static InetAddress address(byte[] ip, String which) {
        try {
            return ip.length == 4 ? Inet4Address.getByAddress(ip) : InetAddress.getByAddress(ip);
        } catch (UnknownHostException e) {
            throw bad(which + ": " + e.getMessage());
        }
    }

    private static IllegalArgumentException bad(String why) {
        return new IllegalArgumentException("bad jmesh handle: " + why);
    }

    /**
     * Parses the printable form written by {@link #toString()}. Accepts exactly what {@link #decode} accepts (the
     * parsed handle goes through it), in printable ASCII; surrounding whitespace is ignored.
     *
     * @throws IllegalArgumentException "bad jmesh handle: ..." with the expected form
     */
    public static ListenHandle parse(String text) {
        Objects.requireNonNull(text, "text");
        String s = text.strip();
        // both forms a listener prints: the TCP provider's carries its flag, verbs' a speed per address
        String expected = " (expected e.g. " + PREFIX + "/01:0123456789abcdef@192.168.101.2/24:40123,[fd00::2]/64:40124"
                + " from the TCP provider, or " + PREFIX + ":0123456789abcdef@192.168.101.2/24:40123#100 from verbs)";
        if (s.length() > 4 * MAX_BYTES) {
            throw bad(s.length() + " characters, more than any handle has ('" + IpPrefix.shorten(s) + "')");
        }
        if (!s.chars().allMatch(c -> c >= ' ' && c < 0x7f)) {
            throw bad("'" + IpPrefix.shorten(s) + "' has characters other than printable ASCII (a control character "
                    + "or a non-ASCII digit?)" + expected);
        }
        int colon = s.indexOf(':');
        int at = s.indexOf('@');
        if (colon < 0 || at < colon) {
            throw bad("'" + IpPrefix.shorten(s) + "' is not in printable form" + expected);
        }
        String head = s.substring(0, colon);
        int flags = 0;
        if (head.startsWith(PREFIX + "/")) {
            String f = head.substring(PREFIX.length() + 1);
            if (f.isEmpty() || f.length() > 2 || !f.chars().allMatch(ListenHandle::hexDigit)) {
                throw bad("bad flags in '" + IpPrefix.shorten(head) + "'" + expected);
            }
            flags = Integer.parseInt(f, 16);
        } else if (!head.equals(PREFIX)) {
            throw bad("'" + IpPrefix.shorten(head) + "' is not '" + PREFIX + "': not a jmesh handle, or one of another version"
                    + expected);
        }
        if ((flags & ~KNOWN_FLAGS) != 0) {
            throw bad(String.format("unknown flags 0x%02X", flags));
        }
        String hex = s.substring(colon + 1, at);
        if (hex.length() != 2 * SECRET_BYTES || !hex.chars().allMatch(ListenHandle::hexDigit)) {
            throw bad("secret '" + IpPrefix.shorten(hex) + "' is not " + 2 * SECRET_BYTES + " hex digits" + expected);
        }
        long secret = Long.parseUnsignedLong(hex, 16);
        String list = s.substring(at + 1);
        if (list.isEmpty()) {
            throw bad("no addresses" + expected);
        }
        List<ListenAddress> addresses = new ArrayList<>();
        for (String entry : list.split(",", -1)) {
            addresses.add(parseEntry(entry.trim(), expected));
        }
        ListenHandle h;
        try {
            h = new ListenHandle(flags, secret, addresses);
        } catch (IllegalArgumentException e) {
            throw bad(e.getMessage());
        }
        return decode(h.encode());
    }

    private static boolean hexDigit(int c) {
        return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F';
    }

    private static ListenAddress parseEntry(String entry, String expected) {
        try {
            int hash = entry.lastIndexOf('#');
            int speed = hash < 0 ? 0 : IpPrefix.decimal(entry.substring(hash + 1), "speed", 0xFFFF);
            String rest = hash < 0 ? entry : entry.substring(0, hash);
            int colon = rest.lastIndexOf(':');
            if (colon < 0) {
                throw new IllegalArgumentException("no port");
            }
            int port = IpPrefix.decimal(rest.substring(colon + 1), "port", 0xFFFF);
            String prefix = rest.substring(0, colon);
            if (prefix.startsWith("[")) {
                int close = prefix.indexOf(']');
                if (close < 0) {
                    throw new IllegalArgumentException("missing ']'");
                }
                prefix = prefix.substring(1, close) + prefix.substring(close + 1);
            }
            if (prefix.indexOf('/') < 0) {
                throw new IllegalArgumentException("no prefix length");
            }
            return new ListenAddress(IpPrefix.parse(prefix), port, speed);
        } catch (IllegalArgumentException e) { // NumberFormatException is one
            throw bad("address '" + IpPrefix.shorten(entry) + "': " + e.getMessage() + expected);
        }
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder(PREFIX);
        if (flags != 0) {
            sb.append('/').append(String.format("%02x", flags));
        }
        sb.append(':').append(HEX.toHexDigits(secret)).append('@');
        for (int i = 0; i < addresses.size(); i++) {
            sb.append(i == 0 ? "" : ",").append(addresses.get(i));
        }
        return sb.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ListenHandle h && h.flags == flags && h.secret == secret && h.addresses.equals(addresses);
    }

    @Override
    public int hashCode() {
        return Objects.hash(flags, secret, addresses);
    }
}
