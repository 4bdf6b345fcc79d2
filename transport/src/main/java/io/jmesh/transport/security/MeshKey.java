package io.jmesh.transport.security;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The optional mesh key ({@code JMESH_MESH_KEY}, the same on every node): with it, route adverts and relay requests
 * carry a MAC that only nodes with the key can make, so a host on a link subnet that is no mesh node cannot forge an
 * advert ("I reach 10.1.2.0/24", which would draw relayed connections to it) nor use a relay. An advert answers a
 * probe and its MAC covers the probe's nonce, so a recorded advert cannot be replayed later. A relay request's MAC
 * covers the request alone: replaying one only asks again for the same listener, whose own secret the asker still
 * has to prove. Control plane only: it allocates freely.
 *
 * <p>The MAC is HMAC-SHA256 with the key's bytes, over a label that says what it is for and then the bytes it
 * covers, cut to {@value #MAC_BYTES} bytes.
 */
public final class MeshKey {
    public static final int MAC_BYTES = 16;
    public static final int NONCE_BYTES = 16;
    /** No key: nothing is signed and nothing is checked, as before the key existed. */
    public static final MeshKey NONE = new MeshKey(null);
    private static final byte[] ADVERT = "jmesh-route advert".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] REQUEST = "jmesh-relay request".getBytes(StandardCharsets.US_ASCII);

    private final byte[] key;

    private MeshKey(byte[] key) {
        this.key = key;
    }

    /** The key from its setting's text; null or empty means none. */
    public static MeshKey of(String text) {
        if (text == null || text.isEmpty()) {
            return NONE;
        }
        return new MeshKey(text.getBytes(StandardCharsets.UTF_8));
    }

    public boolean isSet() {
        return key != null;
    }

    /** Bytes a relay request carries after its fixed part: {@value #MAC_BYTES} with a key, else none. */
    public int requestTrailer() {
        return key == null ? 0 : MAC_BYTES;
    }

    /** The MAC of an advert: over {@code frame}'s bytes between position and limit (the nonce included). */
    public byte[] advertMac(ByteBuffer frame) {
        return mac(ADVERT, frame);
    }

    /** The MAC of the relay request between {@code frame}'s position and limit. */
    public byte[] requestMac(ByteBuffer request) {
        return mac(REQUEST, request);
    }

    /** Whether {@code seen} (its first {@value #MAC_BYTES} bytes) is this key's MAC; in constant time. */
    public static boolean matches(byte[] expected, byte[] seen) {
        return MessageDigest.isEqual(expected, seen);
    }

    private byte[] mac(byte[] label, ByteBuffer covered) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update(label);
            mac.update(covered.duplicate());
            byte[] full = mac.doFinal();
            byte[] cut = new byte[MAC_BYTES];
            System.arraycopy(full, 0, cut, 0, MAC_BYTES);
            return cut;
        } catch (GeneralSecurityException e) {
            // every JDK has HmacSHA256 (a required algorithm): only a broken runtime gets here
            throw new IllegalStateException("HmacSHA256 is not available in this Java runtime: " + e, e);
        }
    }

    @Override
    public String toString() {
        return key == null ? "no mesh key" : "a mesh key";
    }
}
