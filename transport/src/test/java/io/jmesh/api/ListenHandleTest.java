package io.jmesh.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

class ListenHandleTest {
    private static final long SECRET = 0x0123456789ABCDEFL;

    private static ListenAddress a(String prefix, int port, int gbps) {
        return new ListenAddress(IpPrefix.parse(prefix), port, gbps);
    }

    private static ListenHandle triangleNodeA() {
        return new ListenHandle(0, SECRET, List.of(a("192.168.101.2/24", 40123, 200), a("192.168.100.2/24", 40124, 0),
                a("fd00:101::2/64", 40125, 100)));
    }

    private static List<ListenAddress> ipv4(int n) {
        List<ListenAddress> list = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            list.add(a("10.0." + i + ".1/24", 1000 + i, 100));
        }
        return list;
    }

    private static List<ListenAddress> ipv6(int n) {
        List<ListenAddress> list = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            list.add(a("fd00:" + (i + 1) + "::1/64", 1000 + i, 100));
        }
        return list;
    }

    private static void assertBad(byte[] bytes, String expected) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ListenHandle.decode(bytes));
        assertTrue(e.getMessage().startsWith("bad jmesh handle: "), e.getMessage());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    private static byte[] mutate(byte[] bytes, Consumer<ByteBuffer> change) {
        byte[] copy = bytes.clone();
        change.accept(ByteBuffer.wrap(copy));
        return copy;
    }

    @Test
    void binaryRoundTripMixedFamilies() {
        ListenHandle h = triangleNodeA();
        byte[] wire = h.encode();
        assertEquals(16 + 10 + 10 + 22, wire.length);
        assertEquals(wire.length, h.encodedLength());
        ListenHandle back = ListenHandle.decode(wire);
        assertEquals(h, back);
        assertEquals(SECRET, back.secret());
        assertEquals(40124, back.addresses().get(1).port());
        assertEquals(200, back.addresses().get(0).speedGbps());
        assertArrayEquals(wire, back.encode());
    }

    @Test
    void layoutIsBigEndianWithMagicFirst() {
        ByteBuffer b = ByteBuffer.wrap(triangleNodeA().encode());
        assertEquals(0x4A4D5348, b.getInt(0));
        assertEquals(1, b.get(4));
        assertEquals(0, b.get(5));
        assertEquals(3, b.get(6));
        assertEquals(SECRET, b.getLong(8));
        assertEquals(4, b.get(16));
        assertEquals(24, b.get(17));
        assertEquals(40123, b.getShort(18) & 0xFFFF);
        assertEquals(200, b.getShort(20));
        assertEquals((byte) 192, b.get(22));
    }

    @Test
    void trailingBytesOfNcclsBufferAreIgnored() {
        ListenHandle h = triangleNodeA();
        byte[] ncclHandle = new byte[ListenHandle.MAX_BYTES];
        Arrays.fill(ncclHandle, (byte) 0x5A); // garbage after the encoding must not matter
        System.arraycopy(h.encode(), 0, ncclHandle, 0, h.encodedLength());
        assertEquals(h, ListenHandle.decode(ncclHandle));
        byte[] padded = Arrays.copyOf(h.encode(), 300);
        assertEquals(h, ListenHandle.decode(padded));
    }

    @Test
    void maxAddressCountFitsIn128Bytes() {
        assertEquals(11, ListenHandle.MAX_IPV4_ADDRESSES);
        assertEquals(5, ListenHandle.MAX_IPV6_ADDRESSES);
        ListenHandle v4 = new ListenHandle(0, SECRET, ipv4(ListenHandle.MAX_IPV4_ADDRESSES));
        assertTrue(v4.encode().length <= ListenHandle.MAX_BYTES);
        assertEquals(v4, ListenHandle.decode(v4.encode()));
        ListenHandle v6 = new ListenHandle(0, SECRET, ipv6(ListenHandle.MAX_IPV6_ADDRESSES));
        assertTrue(v6.encode().length <= ListenHandle.MAX_BYTES);
        assertEquals(v6, ListenHandle.decode(v6.encode()));
    }

    @Test
    void tooManyAddressesFailsSayingHowManyFit() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new ListenHandle(0, SECRET, ipv4(12)));
        assertTrue(e.getMessage().contains("at most 11 IPv4 or 5 IPv6"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new ListenHandle(0, SECRET, ipv6(6)));
        assertTrue(e.getMessage().contains("at most 11 IPv4 or 5 IPv6"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new ListenHandle(0, SECRET, List.of()));
        assertThrows(IllegalArgumentException.class, () -> new ListenHandle(0x80, SECRET, ipv4(1)));
    }

    @Test
    void rejectsTruncated() {
        byte[] wire = triangleNodeA().encode();
        assertBad(new byte[0], "shorter than the 16-byte header");
        assertBad(Arrays.copyOf(wire, 15), "shorter than the 16-byte header");
        assertBad(Arrays.copyOf(wire, 16), "address 1 of 3 starts at byte 16");
        assertBad(Arrays.copyOf(wire, 30), "address 2 of 3 starts at byte 26");
        assertBad(Arrays.copyOf(wire, 33), "address 2 of 3 ends at byte 36");
        assertBad(Arrays.copyOf(wire, wire.length - 1), "address 3 of 3 ends at byte 58");
    }

    @Test
    void rejectsWrongMagicVersionFlagsAndGarbage() {
        byte[] wire = triangleNodeA().encode();
        assertBad(mutate(wire, b -> b.putInt(0, 0x4D455348)), "magic 0x4D455348 is not 0x4A4D5348");
        assertBad(mutate(wire, b -> b.put(4, (byte) 2)), "version 2, this node speaks version 1");
        assertBad(mutate(wire, b -> b.put(5, (byte) 0x40)), "unknown flags 0x40");
        assertBad(mutate(wire, b -> b.put(7, (byte) 1)), "reserved byte 7");
        assertBad(mutate(wire, b -> b.put(6, (byte) 0)), "no addresses");
        assertBad(mutate(wire, b -> b.put(6, (byte) 200)), "200 addresses");
        assertBad(mutate(wire, b -> b.put(16, (byte) 5)), "address 1 of 3 has family 5");
        assertBad(mutate(wire, b -> b.put(17, (byte) 33)), "prefix length 33");
        assertBad(mutate(wire, b -> b.putShort(18, (short) 0)), "port 0");
        assertBad(mutate(wire, b -> b.putInt(22, 0)), "is 0.0.0.0");
        assertBad(mutate(wire, b -> b.putInt(22, 0xE0000001)), "not a unicast address");
        // IPv6 entry (the third) carrying ::ffff:10.0.0.1
        assertBad(mutate(wire, b -> b.put(42, new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, 10, 0, 0, 1})),
                "IPv4-mapped");
        byte[] garbage = new byte[128];
        new java.util.Random(42).nextBytes(garbage);
        assertBad(garbage, "magic");
    }

    @Test
    void printableFormRoundTrips() {
        ListenHandle h = triangleNodeA();
        String text = h.toString();
        assertEquals("jmesh1:0123456789abcdef@192.168.101.2/24:40123#200,192.168.100.2/24:40124,"
                + "[fd00:101:0:0:0:0:0:2]/64:40125#100", text);
        assertEquals(h, ListenHandle.parse(text));
        ListenHandle tcp = new ListenHandle(ListenHandle.FLAG_TCP_PROVIDER, -1L, ipv4(2));
        assertTrue(tcp.toString().startsWith("jmesh1/01:ffffffffffffffff@"), tcp.toString());
        assertEquals(tcp, ListenHandle.parse(tcp.toString()));
        assertTrue(ListenHandle.parse(tcp.toString()).isTcpProvider());
        assertEquals(h, ListenHandle.parse("jmesh1:0123456789ABCDEF@192.168.101.2/24:40123#200, 192.168.100.2/24:40124,"
                + "[fd00:101::2]/64:40125#100"));
    }

    @Test
    void printableFormRejectsBadText() {
        for (String bad : List.of("", "jmesh1", "mesh1:0123456789abcdef@10.0.0.1/24:1", "jmesh2:0123456789abcdef@10.0.0.1/24:1",
                "jmesh1:0123@10.0.0.1/24:1", "jmesh1:0123456789abcdeg@10.0.0.1/24:1", "jmesh1:0123456789abcdef@",
                "jmesh1:0123456789abcdef@10.0.0.1/24", "jmesh1:0123456789abcdef@10.0.0.1:1",
                "jmesh1:0123456789abcdef@10.0.0.1/24:0", "jmesh1:0123456789abcdef@10.0.0.1/24:70000",
                "jmesh1:0123456789abcdef@host/24:1", "jmesh1/80:0123456789abcdef@10.0.0.1/24:1",
                "jmesh1:0123456789abcdef@[fd00::1/64:1")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ListenHandle.parse(bad),
                    bad);
            assertTrue(e.getMessage().startsWith("bad jmesh handle: "), e.getMessage());
        }
        // the example in the message has the form a TCP listener really prints (its flag), not only verbs'
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ListenHandle.parse("x"));
        String tcp = new ListenHandle(ListenHandle.FLAG_TCP_PROVIDER, 1, List.of(new ListenAddress(
                IpPrefix.parse("192.168.101.2/24"), 40123, 0))).toString();
        assertTrue(tcp.startsWith("jmesh1/01:") && e.getMessage().contains("e.g. jmesh1/01:0123456789abcdef@"
                + "192.168.101.2/24:40123 from the TCP provider"), tcp + " / " + e.getMessage());
    }

    /** The forms a bad handle's message shows are handles as listeners print them, the TCP provider's first. */
    @Test
    void aBadHandlesMessageShowsTheFormsListenersPrint() {
        String message = assertThrows(IllegalArgumentException.class,
                () -> ListenHandle.parse("jmesh1:0123@127.0.0.1/8:1")).getMessage();
        List<ListenHandle> shown = java.util.regex.Pattern.compile("jmesh1[^ ;)]*").matcher(message).results()
                .map(m -> ListenHandle.parse(m.group())).toList();
        assertEquals(2, shown.size(), message);
        assertTrue(shown.get(0).isTcpProvider() && !shown.get(1).isTcpProvider(), message);
        ListenHandle tcp = new ListenHandle(ListenHandle.FLAG_TCP_PROVIDER, 0x0123456789abcdefL,
                List.of(new ListenAddress(IpPrefix.parse("192.168.101.2/24"), 40123, 0)));
        assertTrue(message.contains(tcp.toString() + " "), "a TCP handle prints as " + tcp + ": " + message);
    }

    /** parse accepts exactly what decode accepts: addresses no peer can reach, C's short IPv4 forms, digits of other
     *  scripts and control characters are refused, and a huge handle is not echoed whole. */
    @Test
    void printableFormAcceptsOnlyWhatDecodeAccepts() {
        String secret = "jmesh1:0123456789abcdef@";
        for (String bad : List.of(secret + "0.0.0.0/24:1", secret + "224.0.0.1/24:1", secret + "[::]/64:1",
                secret + "1.2.3/24:1", secret + "10.0.0.1/24:4\uFF10", secret + "10.0.0.1/\uFF12\uFF14:1",
                "jmesh1:0123456789abcde\uFF10@10.0.0.1/24:1", secret + "10.0.0.1/24:1\u0000",
                secret + "10.0.0.1/24:+1", secret + "10.0.0.1/24:99999999999", secret + "10.0.0.1/+24:1")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ListenHandle.parse(bad),
                    bad);
            assertTrue(e.getMessage().startsWith("bad jmesh handle: "), e.getMessage());
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ListenHandle.parse(secret + "10.0.0.1/24:"
                + "9".repeat(20))).getMessage().contains("port"), "the field is named");
        String huge = secret + "10.0.0.1/24:1,".repeat(800);
        String message = assertThrows(IllegalArgumentException.class, () -> ListenHandle.parse(huge)).getMessage();
        assertTrue(message.length() < 300, message);
        assertEquals(ListenHandle.parse(secret + "10.0.0.1/24:1"), ListenHandle.parse(" " + secret + "10.0.0.1/24:1\n"),
                "surrounding whitespace is ignored");
    }
}
