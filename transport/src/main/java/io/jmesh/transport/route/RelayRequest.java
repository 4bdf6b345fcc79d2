package io.jmesh.transport.route;

import io.jmesh.transport.security.MeshKey;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;

/**
 * The first bytes of a socket opened to a relay endpoint: where the relay should take it. A fixed layout (big-endian),
 * so a relay reads exactly {@value #BYTES} bytes before it decides anything; what follows belongs to the end-to-end
 * protocol and is forwarded untouched. The relay passes the request on with one hop fewer when it goes through the
 * next relay, so a path is at most {@value RouteFrame#MAX_HOPS} relays long.
 *
 * <pre>
 *  0 u32 magic 'JMRL'   4 u8 version   5 u8 hops left (1..MAX_HOPS)   6 u8 family (4 or 6)   7 u8 zero
 *  8 u16 port (1..65535)   10 u16 zero   12 16 bytes address (IPv4 in the first 4, the rest zero)
 * </pre>
 */
public final class RelayRequest {
    public static final int BYTES = 28;
    /** The most relays a path may have: a connector's request starts with this many hops left. */
    public static final int MAX_HOPS = RouteFrame.MAX_HOPS;
    static final int MAGIC = 0x4A4D524C;
    static final int VERSION = 1;

    private RelayRequest() {
    }

    /** Writes a request for {@code target} at {@code out}'s position, advancing it. */
    public static void encode(ByteBuffer out, InetSocketAddress target, int hopsLeft) {
        byte[] a = target.getAddress().getAddress();
        out.putInt(MAGIC).put((byte) VERSION).put((byte) hopsLeft).put((byte) (a.length == 4 ? 4 : 6)).put((byte) 0)
                .putShort((short) target.getPort()).putShort((short) 0).put(a);
        for (int i = a.length; i < 16; i++) {
            out.put((byte) 0);
        }
    }

    /** A request as a buffer ready to write. */
    public static ByteBuffer of(InetSocketAddress target, int hopsLeft) {
        return of(target, hopsLeft, MeshKey.NONE);
    }

    /** A request and, with a mesh key, its MAC ({@link MeshKey#requestTrailer()} bytes), ready to write. */
    public static ByteBuffer of(InetSocketAddress target, int hopsLeft, MeshKey key) {
        ByteBuffer b = ByteBuffer.allocate(BYTES + key.requestTrailer());
        encode(b, target, hopsLeft, key);
        return b.flip();
    }

    /** Writes a request for {@code target} and, with a key, its MAC at {@code out}'s position, advancing it. */
    public static void encode(ByteBuffer out, InetSocketAddress target, int hopsLeft, MeshKey key) {
        int start = out.position();
        encode(out, target, hopsLeft);
        if (key.isSet()) {
            out.put(key.requestMac(out.duplicate().limit(out.position()).position(start)));
        }
    }

    /**
     * Why the request at {@code at} is not signed by {@code key}, or null when it is (or there is no key). The caller
     * read {@link #BYTES} plus {@link MeshKey#requestTrailer()} bytes there.
     */
    public static String unsigned(ByteBuffer in, int at, MeshKey key) {
        if (!key.isSet()) {
            return null;
        }
        byte[] mac = new byte[MeshKey.MAC_BYTES];
        in.get(at + BYTES, mac);
        return MeshKey.matches(key.requestMac(in.slice(at, BYTES)), mac) ? null
                : "its relay request is not signed with this node's mesh key (a node without JMESH_MESH_KEY or "
                + "with another, or a host that is no mesh node; set the same key on every node)";
    }

    /** The request's target, from {@value #BYTES} bytes at {@code at}; null when malformed (see {@link #problem}). */
    public static InetSocketAddress target(ByteBuffer in, int at) {
        if (problem(in, at) != null) {
            return null;
        }
        byte[] a = new byte[(in.get(at + 6) & 0xff) == 4 ? 4 : 16];
        in.get(at + 12, a);
        try {
            return new InetSocketAddress(InetAddress.getByAddress(a), in.getShort(at + 8) & 0xffff);
        } catch (UnknownHostException e) {
            return null;
        }
    }

    public static int hopsLeft(ByteBuffer in, int at) {
        return in.get(at + 5) & 0xff;
    }

    /** Why the request at {@code at} is malformed, or null when it is well formed. Never throws. */
    public static String problem(ByteBuffer in, int at) {
        if (in.limit() - at < BYTES) {
            return "a relay request of " + (in.limit() - at) + " bytes, shorter than " + BYTES;
        }
        if (in.getInt(at) != MAGIC) {
            return "bad magic 0x" + Integer.toHexString(in.getInt(at)) + " (not a jmesh relay request)";
        }
        if ((in.get(at + 4) & 0xff) != VERSION) {
            return "relay protocol version " + (in.get(at + 4) & 0xff) + ", this node speaks " + VERSION
                    + " (run the same jmesh version on every node)";
        }
        int hops = hopsLeft(in, at);
        if (hops < 1 || hops > RouteFrame.MAX_HOPS) {
            return "hop count " + hops + " (1 to " + RouteFrame.MAX_HOPS + ")";
        }
        int family = in.get(at + 6) & 0xff;
        if ((family != 4 && family != 6) || in.get(at + 7) != 0 || in.getShort(at + 10) != 0) {
            return "bad address family " + family + " or reserved bytes";
        }
        for (int i = family == 4 ? 4 : 16; i < 16; i++) {
            if (in.get(at + 12 + i) != 0) {
                return "an IPv4 address with trailing bytes";
            }
        }
        if ((in.getShort(at + 8) & 0xffff) == 0) {
            return "port 0";
        }
        return null;
    }
}
