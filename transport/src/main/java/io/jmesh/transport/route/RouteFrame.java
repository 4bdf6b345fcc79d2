package io.jmesh.transport.route;

import io.jmesh.api.IpPrefix;
import io.jmesh.transport.security.MeshKey;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The datagrams of route discovery, a fixed layout (big-endian) read and written in place over a buffer. A PROBE asks
 * "who are you?"; the answer, an ADVERT, says who the sender is, its link prefixes with the TCP port of its relay
 * endpoint on each (0: no TCP relay there), and the subnets it reaches through others with their hop counts.
 *
 * <pre>
 *  0  u32 magic 'JMRT'     4  u8 version   5  u8 type (1 PROBE, 2 ADVERT)   6 u16 flags (bit 0 KEYED)
 *  8  u64 node id (random per process and fabric: tells a node's own answers and processes apart)
 * 16  u8 link count (at most MAX_LINKS)   17 u8 reach count (at most MAX_REACH)   18 u16 zero
 * 20  entries, ENTRY_BYTES each, links first:
 *       u8 family (4 or 6)  u8 prefix length  u16 relay port (links) | u8 hops, u8 zero (reach)  16 bytes address
 * </pre>
 *
 * With a {@link MeshKey}, flag bit 0 (KEYED) is set and a trailer follows the entries: a PROBE carries a fresh
 * 16-byte nonce, and the ADVERT that answers it echoes that nonce and ends with a 16-byte MAC over everything before
 * it, so only a node with the key can make an advert, and only for a probe of the last two rounds.
 *
 * The length must be exactly the header plus the counted entries and the trailer; anything else is malformed and
 * {@link #decode} says why (a reason, never an exception), so a hostile datagram costs one log line at most.
 */
final class RouteFrame {
    static final int MAGIC = 0x4A4D5254;
    static final int VERSION = 1;
    static final int PROBE = 1;
    static final int ADVERT = 2;
    static final int HEADER_BYTES = 20;
    static final int ENTRY_BYTES = 20;
    static final int MAX_LINKS = 16;
    /** Keeps an ADVERT within 1 300 bytes: one datagram on a 1 500-byte MTU link. */
    static final int MAX_REACH = 48;
    static final int KEYED = 1;
    static final int MAX_BYTES = HEADER_BYTES + (MAX_LINKS + MAX_REACH) * ENTRY_BYTES + MeshKey.NONCE_BYTES
            + MeshKey.MAC_BYTES;
    /** Hop counts beyond this are unreachable: it bounds counting to infinity and a relayed path's length. */
    static final int MAX_HOPS = io.jmesh.transport.net.RelayHop.MAX_HOPS;

    /** One of the sender's links: its address with prefix, and its relay endpoint's TCP port there (0: none). */
    record Link(IpPrefix prefix, int relayPort) {
    }

    /** A subnet the sender reaches through others, in {@code hops} relays (1: through one neighbour of it). */
    record Reach(IpPrefix subnet, int hops) {
    }

    /** A decoded frame, or the reason it was dropped; {@code nonce} is the keyed trailer's, else null. */
    record Decoded(int type, long nodeId, List<Link> links, List<Reach> reach, byte[] nonce, String problem) {
        static Decoded bad(String problem) {
            return new Decoded(0, 0, List.of(), List.of(), null, problem);
        }
    }

    private RouteFrame() {
    }

    static void probe(ByteBuffer out, long nodeId) {
        probe(out, nodeId, MeshKey.NONE, null);
    }

    /** A PROBE; with a key it carries {@code nonce}, which the answer must echo. */
    static void probe(ByteBuffer out, long nodeId, MeshKey key, byte[] nonce) {
        header(out, PROBE, nodeId, 0, 0, key);
        if (key.isSet()) {
            out.put(nonce);
        }
        out.flip();
    }

    static void advert(ByteBuffer out, long nodeId, List<Link> links, List<Reach> reach) {
        advert(out, nodeId, links, reach, MeshKey.NONE, null);
    }

    /** An ADVERT; with a key it echoes the probe's {@code nonce} and ends with the key's MAC. */
    static void advert(ByteBuffer out, long nodeId, List<Link> links, List<Reach> reach, MeshKey key, byte[] nonce) {
        int l = Math.min(links.size(), MAX_LINKS);
        int r = Math.min(reach.size(), MAX_REACH);
        header(out, ADVERT, nodeId, l, r, key);
        for (int i = 0; i < l; i++) {
            entry(out, links.get(i).prefix(), links.get(i).relayPort() >> 8, links.get(i).relayPort() & 0xff);
        }
        for (int i = 0; i < r; i++) {
            entry(out, reach.get(i).subnet(), reach.get(i).hops(), 0);
        }
        if (key.isSet()) {
            out.put(nonce);
            out.put(key.advertMac(out.duplicate().flip()));
        }
        out.flip();
    }

    private static void header(ByteBuffer out, int type, long nodeId, int links, int reach, MeshKey key) {
        out.clear();
        out.putInt(MAGIC).put((byte) VERSION).put((byte) type).putShort((short) (key.isSet() ? KEYED : 0))
                .putLong(nodeId).put((byte) links).put((byte) reach).putShort((short) 0);
    }

    private static void entry(ByteBuffer out, IpPrefix p, int b2, int b3) {
        byte[] a = p.address().getAddress();
        out.put((byte) (a.length == 4 ? 4 : 6)).put((byte) p.prefixLength()).put((byte) b2).put((byte) b3);
        out.put(a);
        for (int i = a.length; i < 16; i++) {
            out.put((byte) 0);
        }
    }

    static Decoded decode(ByteBuffer in) {
        return decode(in, MeshKey.NONE);
    }

    /** Reads the frame between position and limit, checking {@code key}'s MAC on an advert; never throws. */
    static Decoded decode(ByteBuffer in, MeshKey key) {
        int n = in.remaining();
        int base = in.position();
        if (n < HEADER_BYTES) {
            return Decoded.bad(n + " bytes, shorter than the " + HEADER_BYTES + "-byte header");
        }
        if (in.getInt(base) != MAGIC) {
            return Decoded.bad("bad magic 0x" + Integer.toHexString(in.getInt(base)) + " (not a jmesh route frame)");
        }
        int version = in.get(base + 4) & 0xff;
        if (version != VERSION) {
            return Decoded.bad("route protocol version " + version + ", this node speaks " + VERSION
                    + " (run the same jmesh version on every node)");
        }
        int type = in.get(base + 5) & 0xff;
        if (type != PROBE && type != ADVERT) {
            return Decoded.bad("unknown frame type " + type);
        }
        long nodeId = in.getLong(base + 8);
        int links = in.get(base + 16) & 0xff;
        int reach = in.get(base + 17) & 0xff;
        if (links > MAX_LINKS || reach > MAX_REACH || (type == PROBE && links + reach > 0)) {
            return Decoded.bad("bad entry counts: " + links + " links, " + reach + " subnets");
        }
        boolean keyed = (in.getShort(base + 6) & KEYED) != 0;
        if (keyed != key.isSet()) {
            return Decoded.bad(keyed ? "it is signed with a mesh key and this node has none (set JMESH_MESH_KEY "
                    + "the same on every node)" : "it carries no mesh key's MAC and this node has a key: a node "
                    + "without JMESH_MESH_KEY, or a forged frame (set the same key on every node)");
        }
        int trailer = !keyed ? 0 : type == PROBE ? MeshKey.NONCE_BYTES : MeshKey.NONCE_BYTES + MeshKey.MAC_BYTES;
        int entriesEnd = HEADER_BYTES + (links + reach) * ENTRY_BYTES;
        if (n != entriesEnd + trailer) {
            return Decoded.bad(n + " bytes for " + links + " links and " + reach + " subnets"
                    + (keyed ? " and the mesh key's trailer" : ""));
        }
        byte[] nonce = null;
        if (keyed) {
            nonce = new byte[MeshKey.NONCE_BYTES];
            in.get(base + entriesEnd, nonce);
            if (type == ADVERT) {
                byte[] mac = new byte[MeshKey.MAC_BYTES];
                in.get(base + entriesEnd + MeshKey.NONCE_BYTES, mac);
                if (!MeshKey.matches(key.advertMac(in.slice(base, entriesEnd + MeshKey.NONCE_BYTES)), mac)) {
                    return Decoded.bad("its MAC does not match this node's mesh key: a forged advert, or a node "
                            + "with another JMESH_MESH_KEY");
                }
            }
        }
        List<Link> linkList = new ArrayList<>(links);
        List<Reach> reachList = new ArrayList<>(reach);
        for (int i = 0; i < links + reach; i++) {
            int at = base + HEADER_BYTES + i * ENTRY_BYTES;
            IpPrefix p = prefix(in, at);
            if (p == null) {
                return Decoded.bad("entry " + i + " has a bad address family or prefix length");
            }
            int b2 = in.get(at + 2) & 0xff;
            int b3 = in.get(at + 3) & 0xff;
            if (i < links) {
                linkList.add(new Link(p, b2 << 8 | b3));
            } else if (b2 < 1 || b2 > MAX_HOPS || b3 != 0) {
                return Decoded.bad("entry " + i + " has hop count " + b2 + " (1 to " + MAX_HOPS + ")");
            } else {
                reachList.add(new Reach(p.network(), b2));
            }
        }
        return new Decoded(type, nodeId, List.copyOf(linkList), List.copyOf(reachList), nonce, null);
    }

    private static IpPrefix prefix(ByteBuffer in, int at) {
        int family = in.get(at) & 0xff;
        int length = in.get(at + 1) & 0xff;
        int bytes = family == 4 ? 4 : family == 6 ? 16 : 0;
        if (bytes == 0 || length > bytes * 8) {
            return null;
        }
        byte[] a = new byte[bytes];
        in.get(at + 4, a);
        for (int i = bytes; i < 16; i++) {
            if (in.get(at + 4 + i) != 0) {
                return null;
            }
        }
        try {
            InetAddress address = InetAddress.getByAddress(a);
            return address.isAnyLocalAddress() || address.isMulticastAddress() ? null : new IpPrefix(address, length);
        } catch (UnknownHostException e) {
            return null;
        }
    }
}
