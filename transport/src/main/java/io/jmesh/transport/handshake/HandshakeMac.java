package io.jmesh.transport.handshake;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The two MACs of handshake version 2 ({@link Frame}): each side proves it knows the listener's secret for this
 * socket's two nonces, without sending the secret. The labels differ, so one side's MAC is never valid as the other's
 * (a listener cannot be made to answer its own challenge). Control plane only: it allocates freely.
 */
final class HandshakeMac {
    private static final byte[] PROOF_LABEL = "jmesh-hs2 proof".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ACCEPT_LABEL = "jmesh-hs2 accept".getBytes(StandardCharsets.US_ASCII);

    private HandshakeMac() {
    }

    /** The connector's answer to the challenge: HMAC(secret, "jmesh-hs2 proof" | nonce_l | nonce_c). */
    static byte[] proof(byte[] secret, byte[] listenerNonce, byte[] connectorNonce) {
        return mac(secret, PROOF_LABEL, listenerNonce, connectorNonce);
    }

    /** The listener's proof in its ACCEPT: HMAC(secret, "jmesh-hs2 accept" | nonce_c | nonce_l). */
    static byte[] acceptProof(byte[] secret, byte[] connectorNonce, byte[] listenerNonce) {
        return mac(secret, ACCEPT_LABEL, connectorNonce, listenerNonce);
    }

    /** Compares in constant time, so the time taken says nothing about how much of a guess was right. */
    static boolean matches(byte[] expected, byte[] seen) {
        return MessageDigest.isEqual(expected, seen);
    }

    private static byte[] mac(byte[] secret, byte[] label, byte[] first, byte[] second) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            mac.update(label);
            mac.update(first);
            mac.update(second);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            // every JDK has HmacSHA256 (a required algorithm): only a broken runtime gets here
            throw new IllegalStateException("HmacSHA256 is not available in this Java runtime: " + e, e);
        }
    }
}
