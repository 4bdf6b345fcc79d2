package io.jmesh.transport.rdma;

import io.jmesh.transport.lifecycle.Closer;
import io.jmesh.api.Context;
import io.jmesh.transport.discovery.Discovery;
import io.jmesh.transport.discovery.DiscoveryResult;
import io.jmesh.transport.discovery.PortAddress;
import io.jmesh.transport.discovery.RdmaDevice;
import io.jmesh.transport.discovery.RdmaPort;
import io.jmesh.transport.control.ControlPlane;
import io.jmesh.transport.control.RoutePlan;
import io.jmesh.transport.handshake.HandshakeAgent;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.transport.net.RouteSelector;
import io.jmesh.transport.core.Fate;
import io.jmesh.transport.verbs.DeviceContext;
import io.jmesh.transport.verbs.ProtectionDomain;
import io.jmesh.transport.verbs.MemoryRegion;
import io.jmesh.transport.verbs.QpOptions;
import io.jmesh.transport.verbs.RegistrationCache;
import io.jmesh.verbs.Verbs;
import io.jmesh.verbs.VerbsException;
import io.jmesh.verbs.VerbsUnavailableException;
import io.jmesh.verbs.ffi.ibv_gid_entry;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * jmesh over verbs: the usable local links (an ACTIVE port's address with its RoCE v2 GID), one device context and
 * protection domain per device used (opened on first use, closed last), listeners and connectors, and the handshake
 * agent (a thread) that runs this provider's connects and accepts with the context's timeout and limit.
 *
 * <pre>{@code
 * try (RdmaProvider rdma = RdmaProvider.open(new Context())) {
 *     RdmaListener listener = rdma.listen();          // publish listener.handle().encode()
 *     RdmaConnect c = rdma.connect(peerHandle);       // then c.poll() until it returns the sender
 * }
 * }</pre>
 */
public final class RdmaProvider implements io.jmesh.api.spi.Provider {
    private static final Logger LOG = JmeshLog.logger(RdmaProvider.class);
    /** Registrations cover whole pages of this size. */
    private static final long PAGE = 4096;

    private final Verbs verbs;
    private final List<LocalLink> links;
    private final List<String> devices;
    private final QpOptions options;
    /** Handshakes, liveness, route discovery and the relay ({@link VerbsRelay}); its relay closes first, the rest last. */
    private final ControlPlane control;
    /** The devices' asynchronous events; stopped first on close. */
    private final DeviceEvents events = new DeviceEvents();
    private final Map<String, ProtectionDomain> domains = new LinkedHashMap<>();
    private final List<AutoCloseable> owned = new ArrayList<>();
    /** Open connections (senders and receivers), closed before the listeners, PDs and devices. */
    private final java.util.Set<AutoCloseable> connections = new java.util.LinkedHashSet<>();
    /** Open registrations, deregistered after the connections and before the protection domains. */
    private final java.util.Set<AutoCloseable> registrations = new java.util.LinkedHashSet<>();
    private final RegistrationCache<MemoryRegion[]> cache = new RegistrationCache<>(PAGE,
            new RegistrationCache.Registrar<>() {
                @Override
                public MemoryRegion[] register(long pageStart, long pageLength) {
                    return registerPages(pageStart, pageLength);
                }

                @Override
                public void deregister(MemoryRegion[] regions) {
                    deregisterPages(regions);
                }
            });
    private boolean cacheClosed;
    private final Map<String, Boolean> dmaBufSupport = new java.util.HashMap<>();
    private final int qpsPerConnection;
    private final boolean multiLink;
    private final int eagerThreshold;
    private boolean closed;

    private RdmaProvider(Verbs verbs, List<LocalLink> links, QpOptions options, ControlPlane control,
                         int qpsPerConnection, boolean multiLink, int eagerThreshold) {
        this.verbs = verbs;
        this.eagerThreshold = eagerThreshold;
        this.qpsPerConnection = qpsPerConnection;
        this.multiLink = multiLink;
        this.links = List.copyOf(links);
        this.devices = links.stream().map(LocalLink::device).distinct().toList();
        this.options = options;
        this.control = control;
    }

    /**
     * Discovers the usable links and opens the provider.
     *
     * @throws VerbsUnavailableException when verbs cannot run here, or no port has a usable address; the message says
     *                                   why and what to do
     */
    public static RdmaProvider open(Context context) {
        context.conclude();
        DiscoveryResult found = Discovery.scan(context.gidIndex());
        if (found.unavailable() != null) {
            throw new VerbsUnavailableException(found.unavailable(), 0);
        }
        List<LocalLink> links = usableLinks(found);
        if (links.isEmpty()) {
            throw new VerbsUnavailableException("no usable RDMA link: no ACTIVE port has an address with a RoCE v2 "
                    + "GID" + (found.problems().isEmpty() ? "" : " (" + String.join("; ", found.problems()) + ")")
                    + "; run 'jmesh devices' to see each port and address", 0);
        }
        Verbs verbs = Verbs.load();
        QpOptions options = QpOptions.of(context.ibTimeout(), context.ibRetryCount(), context.ibRnrRetry(),
                context.ibServiceLevel(), context.ibTrafficClass());
        ControlPlane control = ControlPlane.open(context, links);
        RdmaProvider provider = new RdmaProvider(verbs, links, options, control, context.qpsPerConnection(),
                context.multiLink(), context.eagerThreshold());
        try {
            // no route port, no relay: a node that takes no part in discovery cannot be asked to relay
            control.startRouting(context.routePort() == 0 ? null : settings -> VerbsRelay.bind(provider, links,
                    settings.timeout().toNanos(), settings.maxPendingPerListener(), context.relayChunkBytes(),
                    context.relayChunks()));
        } catch (RuntimeException e) {
            provider.close();
            throw e;
        }
        return provider;
    }

    /** Every (device, port, address) that can carry a connection, from a discovery result. */
    public static List<LocalLink> usableLinks(DiscoveryResult found) {
        List<LocalLink> links = new ArrayList<>();
        for (RdmaDevice d : found.devices()) {
            for (RdmaPort p : d.ports()) {
                if (!p.active()) {
                    continue;
                }
                for (PortAddress a : p.addresses()) {
                    if (a.usable() && !a.prefix().address().isLinkLocalAddress()) {
                        links.add(new LocalLink(d.name(), p.number(), a.gidIndex(), a.prefix(), p.speedMbps()));
                    }
                }
            }
        }
        return links;
    }

    @Override
    public String name() {
        return "rdma";
    }

    /** The index of a device among this provider's devices. */
    int deviceIndex(String device) {
        int i = devices.indexOf(device);
        if (i < 0) {
            throw new IllegalArgumentException("device " + device + " has no usable link");
        }
        return i;
    }

    @Override
    public List<LocalLink> links() {
        return links;
    }

    @Override
    public List<LocalLink> directLinks(ListenHandle peer) {
        return RouteSelector.directLinks(links, peer);
    }

    HandshakeAgent agent() {
        return control.agent();
    }

    ControlPlane control() {
        return control;
    }

    int qpsPerConnection() {
        return qpsPerConnection;
    }

    boolean multiLink() {
        return multiLink;
    }

    /** The largest message a direct connection sends eagerly ({@code JMESH_EAGER_THRESHOLD}); 0: none. */
    int eagerThreshold() {
        return eagerThreshold;
    }

    /** A queue pair in INIT on {@code link}, with its CQ and a registered control region of {@code controlBytes}. */
    Endpoint endpoint(LocalLink link, long controlBytes) {
        ProtectionDomain pd = domain(link.device());
        byte[] gid = gid(pd.device(), link.port(), link.gidIndex());
        return new Endpoint(pd, deviceIndex(link.device()), link.port(), link.gidIndex(), gid, controlBytes, options);
    }

    /** A queue pair on {@code link} connected to itself (RTS), for flush reads of local memory. */
    Endpoint loopback(LocalLink link, long controlBytes) {
        Endpoint ep = endpoint(link, controlBytes);
        try {
            ep.connect(ep.local());
            return ep;
        } catch (RuntimeException e) {
            ep.close();
            throw e;
        }
    }

    /** Fails {@code fate} when the device reports an event that ends a connection over one of {@code rails}. */
    void watchEvents(Endpoint[] rails, Fate fate) {
        for (Endpoint rail : rails) {
            events.watch(rail, fate);
        }
    }

    /** Adopts an open connection ({@link #close()} closes it first); false, taking nothing, once closed. */
    synchronized boolean track(AutoCloseable connection) {
        if (closed) {
            return false;
        }
        connections.add(connection);
        return true;
    }

    /** Forgets a connection that closed itself. */
    synchronized void forget(AutoCloseable connection) {
        if (!connections.remove(connection)) {
            registrations.remove(connection);
        }
    }

    /** The protection domain of a device, opening the device on first use. */
    synchronized ProtectionDomain domain(String device) {
        if (closed) {
            throw new IllegalStateException("the RDMA provider is closed");
        }
        ProtectionDomain pd = domains.get(device);
        if (pd == null) {
            DeviceContext ctx = DeviceContext.open(verbs, device);
            try {
                events.add(ctx);
                pd = new ProtectionDomain(ctx);
            } catch (RuntimeException e) {
                events.remove(ctx);
                ctx.close();
                throw e;
            }
            domains.put(device, pd);
        }
        return pd;
    }

    /** The 16 GID bytes at {@code index} of a port, as the peer must address them. */
    static byte[] gid(DeviceContext device, int port, int index) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment entry = ibv_gid_entry.allocate(arena);
            int rc = device.verbs().queryGidEx(device.handle(), port, index, entry);
            if (rc != 0) {
                throw new VerbsException("GID " + index + " of " + device.name() + " port " + port
                        + " cannot be read (" + io.jmesh.posix.Errno.describe(rc) + "); check JMESH_GID_INDEX and "
                        + "'jmesh devices'", rc);
            }
            return ibv_gid_entry.gid(entry).toArray(JAVA_BYTE);
        }
    }

    /** The local link whose address is {@code local}, or null. */
    LocalLink linkFor(InetAddress local) {
        return RouteSelector.linkAt(links, local);
    }

    /**
     * Registers memory on every device for sending from, receiving into, and one-sided access. Registrations go
     * through a cache keyed by page range: memory inside pages already registered (NCCL registers the same buffers
     * again and again) shares their memory regions, reference-counted. The caller owns the registration and closes
     * it after the connections that use it.
     *
     * @throws IllegalArgumentException for memory that is not native (verbs can only register native memory)
     */
    @Override
    public io.jmesh.api.Registration register(MemorySegment memory) {
        if (!memory.isNative()) {
            throw new IllegalArgumentException("verbs can only register native memory, not " + memory
                    + ": allocate it with an Arena (e.g. Arena.ofShared().allocate(size, 4096))");
        }
        RegistrationCache.Registration<MemoryRegion[]> entry;
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("the RDMA provider is closed");
            }
            entry = cache.acquire(memory.address(), memory.byteSize());
            RdmaRegistration registration = new RdmaRegistration(memory, true, entry.region(),
                    r -> release(r, entry));
            registrations.add(registration);
            return registration;
        }
    }

    private synchronized void release(AutoCloseable registration, RegistrationCache.Registration<MemoryRegion[]> e) {
        registrations.remove(registration);
        if (!cacheClosed) {
            cache.release(e);
        }
    }

    /** Registers [start, start + length) on every device: one memory region each, all or none. */
    private MemoryRegion[] registerPages(long start, long length) {
        MemorySegment pages = MemorySegment.ofAddress(start).reinterpret(length);
        MemoryRegion[] regions = new MemoryRegion[devices.size()];
        try {
            for (int i = 0; i < regions.length; i++) {
                regions[i] = new MemoryRegion(domain(devices.get(i)), pages, MemoryRegion.defaultAccess());
            }
            return regions;
        } catch (RuntimeException e) {
            deregisterPages(regions);
            throw e;
        }
    }

    /**
     * Probes, once per device, as NCCL does: {@code ibv_reg_dmabuf_mr} with no dma-buf fails with EOPNOTSUPP or
     * EPROTONOSUPPORT where the device (or kernel) has no dma-buf support, and with another error where it has.
     */
    @Override
    public synchronized boolean supportsDmaBuf(String device) {
        if (!devices.contains(device)) {
            return false; // not one of this provider's devices (NCCL's names carry a ":port", TCP has none)
        }
        Boolean known = dmaBufSupport.get(device);
        if (known == null) {
            ProtectionDomain pd = domain(device);
            try {
                MemoryRegion.dmaBuf(pd, -1, 0, 0, 0, MemoryRegion.defaultAccess()).close();
                known = true;
            } catch (VerbsException e) {
                known = e.errno() != io.jmesh.posix.Errno.EOPNOTSUPP
                        && e.errno() != io.jmesh.posix.Errno.EPROTONOSUPPORT;
            }
            dmaBufSupport.put(device, known);
            LOG.info("{} {} register GPU memory by dma-buf", device, known ? "can" : "cannot");
        }
        return known;
    }

    @Override
    public io.jmesh.api.Registration registerDmaBuf(int fd, long offset, long length, long address) {
        for (String d : devices) {
            if (!supportsDmaBuf(d)) {
                throw new UnsupportedOperationException(d + " cannot register GPU memory by dma-buf (its driver or "
                        + "the kernel lacks it: Soft-RoCE never can; a ConnectX NIC needs kernel 5.12+ and the "
                        + "GPU's dma-buf export): stage GPU data through host memory");
            }
        }
        if (length <= 0 || fd < 0) {
            throw new IllegalArgumentException("bad dma-buf range: fd " + fd + ", " + length + " bytes");
        }
        MemoryRegion[] regions = new MemoryRegion[devices.size()];
        try {
            for (int i = 0; i < regions.length; i++) {
                regions[i] = MemoryRegion.dmaBuf(domain(devices.get(i)), fd, offset, length, address,
                        MemoryRegion.defaultAccess());
            }
        } catch (RuntimeException e) {
            deregisterPages(regions);
            throw e;
        }
        MemorySegment memory = MemorySegment.ofAddress(address).reinterpret(length);
        synchronized (this) {
            if (closed) {
                deregisterPages(regions);
                throw new IllegalStateException("the RDMA provider is closed");
            }
            RdmaRegistration registration = new RdmaRegistration(memory, false, regions, r -> {
                synchronized (this) {
                    registrations.remove(r);
                    if (!cacheClosed) {
                        deregisterPages(regions);
                    }
                }
            });
            registrations.add(registration);
            return registration;
        }
    }

    private static void deregisterPages(MemoryRegion[] regions) {
        Closer.closeAll(regions);
    }

    /** Listens on every usable link; the handle carries all their addresses. */
    @Override
    public RdmaListener listen() throws IOException {
        RdmaListener l = new RdmaListener(this, control.agent().listenOn(links, 0));
        synchronized (this) {
            owned.add(l);
        }
        return l;
    }

    /** Starts connecting to a listener's handle; poll the result until it yields the sender. */
    @Override
    public RdmaConnect connect(io.jmesh.api.ListenHandle peer)
            throws io.jmesh.api.NoRouteException {
        return connect(peer, null);
    }

    @Override
    public RdmaConnect connect(io.jmesh.api.ListenHandle peer, String preferredLink)
            throws io.jmesh.api.NoRouteException {
        if (peer.isTcpProvider()) {
            throw new IllegalArgumentException("the peer listens with the tcp provider, this node uses rdma: set "
                    + "JMESH_PROVIDER the same on both nodes");
        }
        RoutePlan plan = control.plan(peer, preferredLink);
        // through a relay, or with none known yet while one may come, waiting for it: one queue pair, to the relay
        return plan.isDirect() ? new RdmaConnect(this, peer, plan.direct())
                : new RdmaConnect(this, peer, plan.relayed());
    }

    /** What route discovery knows, for error messages. */
    String describeRoutes() {
        return control.describeRoutes();
    }

    /**
     * Closes the relay (every connection it relays for others), then open connections, then listeners, then
     * registrations still open, then every protection domain and device, then the handshake agent, in that order;
     * reports the first failure. Connections must not be in use by
     * other threads meanwhile.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        control.closeRelay();   // first and outside this lock: its handshake threads and chunk rings take it to end
        closeRest();
    }

    private synchronized void closeRest() {
        List<AutoCloseable> order = new ArrayList<>();
        order.add(events);                  // first: it reads the devices the rest closes
        order.addAll(connections);
        order.addAll(owned);
        order.addAll(registrations);
        order.add(cache);
        for (ProtectionDomain pd : domains.values()) {
            order.add(pd);
            order.add(pd.device());
        }
        // last: discovery, then the agent, which the listeners and connects closed above handed their sockets back to
        order.add(control);
        connections.clear();
        try {
            Closer.closeAll(order);    // the first failure, the others suppressed in it
        } finally {
            registrations.clear();
            cacheClosed = true;
            domains.clear();
        }
    }
}
