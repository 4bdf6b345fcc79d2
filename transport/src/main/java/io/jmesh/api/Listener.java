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

    @Override
    void close();
}
