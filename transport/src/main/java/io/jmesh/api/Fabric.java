package io.jmesh.api;

import io.jmesh.api.spi.Provider;
import io.jmesh.api.spi.ProviderFactory;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * jmesh's entry point: opens the transport (verbs where a usable RDMA link exists, otherwise TCP, or as
 * {@code JMESH_PROVIDER} says) with the settings of a {@link Context}, and makes listeners, connections and memory
 * registrations on it. The providers are found through {@link ProviderFactory}; the API knows none of them by class.
 * Close it last: it closes what its provider still holds (connections, listeners, its handshake thread).
 *
 * <pre>{@code
 * try (Fabric fabric = Fabric.open();
 *      Registration reg = fabric.register(Arena.ofShared().allocate(1 << 20, 4096))) {
 *     // node A                                   // node B, given A's handle (fabric.listen().handle())
 *     Listener listener = fabric.listen();        Connector c = fabric.connect(handleFromA);
 *     Receiver r; while ((r = listener.accept()) == null) { }        Sender s; while ((s = c.poll()) == null) { }
 *     int req = r.irecv(1, new Registration[] {reg}, new long[] {0}, new long[] {reg.length()}, new int[] {0});
 *                                                 int q; while ((q = s.isend(reg, 0, 4096, 0)) == Status.NOT_READY) { }
 *     while (r.test(req) == 0) { }                while (s.test(q) == 0) { }
 * }
 * }</pre>
 */
public final class Fabric implements AutoCloseable {
    private static final Logger LOG = JmeshLog.logger(Fabric.class);

    private final Provider provider;

    private Fabric(Provider provider) {
        this.provider = provider;
    }

    /** Opens with the settings of the system properties and the environment: {@code Fabric.open(new Context())}. */
    public static Fabric open() {
        return open(new Context());
    }

    /**
     * Opens the provider {@code context} names, with its settings: the fabric takes their values now (its own
     * handshake thread with the context's timeout and limit, its queue-pair options ...). {@code auto} takes the first
     * provider that can run here (verbs when this machine has a usable RDMA link) and says in the log why it passed
     * over the others.
     *
     * @throws IllegalArgumentException     naming every setting of {@code context} that is not valid
     *                                      ({@link Context#conclude()}), or a bad {@code JMESH_LOG_LEVEL}
     * @throws ProviderUnavailableException when the provider named cannot run here, or none can for {@code auto};
     *                                      the message names the cause and the fix
     */
    public static Fabric open(Context context) {
        context.conclude();
        JmeshLog.level(); // process-wide, so not in the context; refused here all the same, with the same words
        if (Providers.all().isEmpty()) {
            throw new IllegalStateException(Providers.noneFound());
        }
        String name = context.provider();
        if (!name.equals(Providers.AUTO)) {
            return new Fabric(Providers.find(name).open(context));
        }
        List<String> passedOver = new ArrayList<>();
        ProviderUnavailableException last = null;
        for (ProviderFactory f : Providers.autoCandidates()) {
            try {
                Provider p = f.open(context);
                if (!passedOver.isEmpty()) {
                    LOG.info("using the {} provider: {}", p.name(), String.join("; ", passedOver));
                }
                return new Fabric(p);
            } catch (ProviderUnavailableException e) {
                passedOver.add(e.getMessage());
                last = e;
            }
        }
        throw new ProviderUnavailableException(Providers.AUTO, "no jmesh provider can run here: "
                + String.join("; ", passedOver), last);
    }

    /** "rdma" or "tcp". */
    public String provider() {
        return provider.name();
    }

    /** The local links this fabric can use. */
    public List<LocalLink> links() {
        return provider.links();
    }

    /** Listens on every link; give {@link Listener#handle()} to the nodes that connect. */
    public Listener listen() throws IOException {
        return provider.listen();
    }

    /**
     * Starts connecting to a listener.
     *
     * @param handle a listener's {@link Listener#handle()}
     * @throws NoRouteException when no local link shares a subnet with the listener (the message lists both sides)
     * @throws IllegalArgumentException when the handle is malformed
     */
    public Connector connect(byte[] handle) throws NoRouteException {
        return provider.connect(ListenHandle.decode(handle));
    }

    /**
     * Starts connecting to a listener, over {@code preferredLink} when it can reach the listener: a device name
     * ("rocep1s0f0"), or a local address ("192.168.101.2"). When it cannot (no shared subnet), the mesh routing picks
     * the link and the log says so at INFO; {@link Connector#route()} tells which was taken. This is how the NCCL
     * plugin honours NCCL's choice of NIC where that choice works.
     *
     * @throws NoRouteException when no local link at all shares a subnet with the listener
     */
    public Connector connect(byte[] handle, String preferredLink) throws NoRouteException {
        return provider.connect(ListenHandle.decode(handle), preferredLink);
    }

    /**
     * The local links a direct connection to the listener can take, the one {@link #connect(byte[])} takes first;
     * empty when no link of this node shares a subnet with it (a connect then goes through a relay node). The NCCL
     * plugin uses it to keep NCCL's choice of device where that device reaches the peer.
     *
     * @throws IllegalArgumentException when the handle is malformed
     */
    public List<LocalLink> directLinks(byte[] handle) {
        return provider.directLinks(ListenHandle.decode(handle));
    }

    /** {@link #directLinks(byte[])} for a decoded handle. */
    public List<LocalLink> directLinks(ListenHandle peer) {
        return provider.directLinks(peer);
    }

    /** Starts connecting to a listener given its printable handle ({@link Listener#handleText()}). */
    public Connector connect(String handle) throws NoRouteException {
        return provider.connect(ListenHandle.parse(handle));
    }

    /** Registers memory for sending, receiving and one-sided access; close it after the connections using it. */
    public Registration register(MemorySegment memory) {
        return provider.register(memory);
    }

    /**
     * Whether {@code device} (an RDMA device name) can register GPU memory by dma-buf: the NIC reads and writes GPU
     * memory directly (GPUDirect RDMA). Always false for the TCP provider.
     */
    public boolean supportsDmaBuf(String device) {
        return provider.supportsDmaBuf(device);
    }

    /**
     * Registers GPU memory exported as a dma-buf (e.g. {@code cuMemGetHandleForAddressRange}) on every device, for
     * sending from and receiving into; the CPU must not touch {@link Registration#memory()}. Flush received data
     * with {@link Receiver#iflush} before a GPU kernel reads it.
     *
     * @throws UnsupportedOperationException naming the device when one cannot ({@link #supportsDmaBuf})
     */
    public Registration registerDmaBuf(int fd, long offset, long length, long address) {
        return provider.registerDmaBuf(fd, offset, length, address);
    }

    @Override
    public void close() {
        provider.close();
    }
}
