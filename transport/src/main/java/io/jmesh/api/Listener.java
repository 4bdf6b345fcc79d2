package io.jmesh.api;

/**
 * Accepts connections. {@link #handle()} is what a connector needs (at most 128 bytes: every address of this
 * listener with its prefix, the ports, a version and a random secret); {@link #accept()} never blocks.
 *
 * <pre>{@code
 * try (Listener listener = fabric.listen()) {
 *     publish(listener.handle());                    // e.g. through your job launcher
 *     Receiver r;
 *     while ((r = listener.accept()) == null) { }
 * }
 * }</pre>
 */
public interface Listener extends AutoCloseable {
    /** The binary handle, at most 128 bytes. */
    byte[] handle();

    /** The handle in printable form, accepted by {@link Fabric#connect(String)}. */
    String handleText();

    /** A connected receiver, or null while none is ready. */
    Receiver accept();

    /**
     * Why the last connection that reached this listener failed before {@link #accept()} could return it (its
     * handshake failed, or it was not ready in time), in the words of the listener's WARN; null when none has. A wait
     * for a connection that times out can then say what arrived, not that nothing did.
     */
    default String lastFailure() {
        return null;
    }

    @Override
    void close();
}
