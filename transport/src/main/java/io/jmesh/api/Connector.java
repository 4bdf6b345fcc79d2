package io.jmesh.api;

/**
 * A connect in progress: {@link #poll()} returns null until the handshake is complete, then the sender; it throws,
 * naming the cause, when the connect failed. Once it returned the sender, the sender owns the connection.
 *
 * <pre>{@code
 * Connector c = fabric.connect(handleFromPeer);
 * Sender s;
 * while ((s = c.poll()) == null) { }     // throws IllegalStateException naming the cause if the connect fails
 * System.out.println("connected over " + c.route());
 * }</pre>
 */
public interface Connector extends AutoCloseable {
    /**
     * The sender once connected, null while in progress.
     *
     * @throws IllegalStateException naming the cause when the connect failed or was closed, on this and every later
     *                               call (a poll loop ends)
     */
    Sender poll();

    /** A description of the link this connection uses, e.g. "rxe0 192.168.101.2/24 -> 192.168.101.3/24". */
    String route();

    /** Abandons the connect if it has not completed. */
    @Override
    void close();
}
