package io.jmesh.transport.handshake;

/** Where a handshake stands, read without blocking by {@code poll()}. */
public enum HandshakeStatus {
    /** Still working; call {@code poll()} again later. */
    IN_PROGRESS,
    /**
     * The peer's payload has arrived and this side must act: an inbound handshake waits for {@code accept} or
     * {@code reject}, an outbound one for {@code confirm} (after applying the reply) or {@code abort}.
     */
    ACTION_REQUIRED,
    /** Both sides have applied each other's payload; the connection can be used. */
    COMPLETE,
    /** Failed for good; {@code failure()} says why and what to do. */
    FAILED
}
