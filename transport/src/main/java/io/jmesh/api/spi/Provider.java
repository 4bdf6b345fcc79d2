package io.jmesh.api.spi;

import io.jmesh.api.Connector;
import io.jmesh.api.Listener;
import io.jmesh.api.Registration;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.api.NoRouteException;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * A transport behind the API: verbs ({@code rdma}) or sockets ({@code tcp}). A {@link ProviderFactory} opens it and
 * {@link io.jmesh.api.Fabric} wraps it (named in full: the API imports the SPI, never the other way round);
 * applications use the fabric, and only code that adds a transport implements this. A provider owns what it creates
 * (listeners, connects, connections, its handshake agent) and closes it in {@link #close()}.
 *
 * <pre>{@code
 * try (Fabric fabric = Fabric.open()) {               // JMESH_PROVIDER=auto|rdma|tcp
 *     System.out.println(fabric.provider() + " over " + fabric.links());
 * }
 * }</pre>
 */
public interface Provider extends AutoCloseable {
    /** "rdma" or "tcp". */
    String name();

    /** The local links this provider can use, each an address with its prefix (and device for verbs). */
    List<LocalLink> links();

    Listener listen() throws IOException;

    /** Starts a connect over the local link that shares a subnet with one of the peer's addresses. */
    default Connector connect(ListenHandle peer) throws NoRouteException {
        return connect(peer, null);
    }

    /**
     * Starts a connect, over {@code preferredLink} (a device name or a local address) when that link shares a subnet
     * with the peer, otherwise over the link the mesh routing chooses (and the log says why).
     */
    Connector connect(ListenHandle peer, String preferredLink) throws NoRouteException;

    /**
     * The local links that share a subnet with one of {@code peer}'s addresses, the one a connect takes first; empty
     * when none does (a connect then goes through a relay node).
     */
    List<LocalLink> directLinks(ListenHandle peer);

    Registration register(MemorySegment memory);

    /** Whether {@code device} can register device memory by dma-buf ({@link #registerDmaBuf}); false on TCP. */
    default boolean supportsDmaBuf(String device) {
        return false;
    }

    /**
     * Registers device memory (a GPU buffer) exported as a dma-buf: bytes [offset, offset + length) of {@code fd},
     * at virtual address {@code address} in the process. Its {@link Registration#memory()} spans that address but
     * must not be read by the CPU.
     *
     * @throws UnsupportedOperationException when this provider or a device cannot ({@link #supportsDmaBuf})
     */
    default Registration registerDmaBuf(int fd, long offset, long length, long address) {
        throw new UnsupportedOperationException("the " + name() + " provider cannot register GPU memory (dma-buf); "
                + "stage GPU data through host memory");
    }

    @Override
    void close();
}
