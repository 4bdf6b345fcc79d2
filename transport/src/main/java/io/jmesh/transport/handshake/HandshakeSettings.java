package io.jmesh.transport.handshake;

import io.jmesh.transport.security.MeshKey;

import java.time.Duration;
import java.util.Objects;

/**
 * The handshake's limits.
 *
 * <pre>{@code
 * HandshakeAgent agent = HandshakeAgent.start(new HandshakeSettings(Duration.ofSeconds(10), 32));
 * }</pre>
 *
 * @param timeout               the deadline of one whole handshake (connect, HELLO, reply, READY), per socket
 * @param maxPendingPerListener how many inbound connections one listener holds at once before it evicts the oldest
 *                              one that has not yet proven the secret (or refuses the new one when all have)
 * @param meshKey               signs the relay request in front of a relayed handshake ({@link MeshKey#NONE}: none)
 */
public record HandshakeSettings(Duration timeout, int maxPendingPerListener, MeshKey meshKey) {
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
    public static final int DEFAULT_MAX_PENDING_PER_LISTENER = 32;

    public HandshakeSettings(Duration timeout, int maxPendingPerListener) {
        this(timeout, maxPendingPerListener, MeshKey.NONE);
    }

    public HandshakeSettings {
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(meshKey, "meshKey");
        if (timeout.toMillis() < 1 || timeout.compareTo(Duration.ofHours(1)) > 0) {
            throw new IllegalArgumentException("handshake timeout " + timeout.toMillis()
                    + " ms out of range 1 ms .. 1 h");
        }
        if (maxPendingPerListener < 1 || maxPendingPerListener > 4096) {
            throw new IllegalArgumentException("max pending handshakes per listener " + maxPendingPerListener
                    + " out of range 1..4096");
        }
    }

    public static HandshakeSettings defaults() {
        return new HandshakeSettings(DEFAULT_TIMEOUT, DEFAULT_MAX_PENDING_PER_LISTENER);
    }
}
