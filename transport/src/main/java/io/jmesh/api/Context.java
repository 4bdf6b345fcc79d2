package io.jmesh.api;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.StringJoiner;
import java.util.function.Function;

/**
 * The settings of one {@link Fabric}, in the manner of Aeron's {@code MediaDriver.Context}: every setting is a field
 * with its default, read once when the context is made from the system property ({@code -Djmesh.ib.timeout}), else
 * the environment variable ({@code JMESH_IB_TIMEOUT}), else the seed's name ({@code NCCL_MESH_...}) where there is
 * one (the names: {@link Setting}); fluent setters override them; {@link #conclude()} checks them all at once and
 * fails naming each bad setting, where its value came from and what it accepts. {@link Fabric#open(Context)}
 * concludes the context and the fabric takes its values then: a fabric owns its settings (its handshake timeout, its
 * queue-pair options ...), so two fabrics of one process may differ, and changing a context later changes no fabric
 * opened with it.
 *
 * <pre>{@code
 * Context ctx = new Context()                     // defaults, then -Djmesh.x, JMESH_X, NCCL_MESH_X
 *         .provider("tcp")
 *         .handshakeTimeoutMs(2_000);
 * try (Fabric fabric = Fabric.open(ctx)) {        // ctx.conclude(): IllegalArgumentException naming a bad setting
 *     // ...
 * }
 * }</pre>
 */
public final class Context {
    private String provider = Providers.AUTO;
    private boolean disableRdma = false;
    private List<IpPrefix> addresses = List.of();
    private OptionalInt gidIndex = OptionalInt.empty();
    private int ibTimeout = 20;
    private int ibRetryCount = 7;
    private int ibRnrRetry = 7;
    private int ibServiceLevel = 0;
    private int ibTrafficClass = 0;
    private int qpsPerConnection = 1;
    private boolean multiLink = true;
    private int tcpSockets = 4;
    /** -1: chosen by the CPUs and the ranks that share them ({@link #tcpThreads()}); likewise the spin and ranks. */
    private int tcpThreads = -1;
    private boolean tcpRelaySplice = true;
    private int tcpSpinUs = -1;
    private int localRanks = -1;
    private final int launcherLocalRanks;
    private int tcpEagerThreshold = 64 << 10;
    private int tcpSocket0Max = 64 << 10;
    private long handshakeTimeoutMs = 10_000;
    private int handshakeMaxPending = 32;
    private int routePort = 18515;
    private long livenessTimeoutMs = 30_000;
    private int relayChunkKib = 512;
    private int relayChunks = 8;
    private int eagerThreshold = 0;
    private List<StaticRoute> routes = List.of();
    private String meshKey;

    private final SettingSources sources = new SettingSources();

    /** The defaults, overridden by this JVM's system properties and this process's environment. */
    public Context() {
        this(System::getProperty, System::getenv);
    }

    /** For tests and embedding: the defaults overridden by these maps instead of the process's. */
    public static Context from(Map<String, String> properties, Map<String, String> environment) {
        Objects.requireNonNull(properties, "properties");
        Objects.requireNonNull(environment, "environment");
        return new Context(properties::get, environment::get);
    }

    private Context(Function<String, String> properties, Function<String, String> environment) {
        sources.readAll(properties, environment, this::storeText, this::store);
        launcherLocalRanks = HostShare.detect(environment);
    }

    /** Stores a text setting's value; throws IllegalArgumentException, naming why, when it does not parse. */
    private void storeText(Setting s, String value) {
        switch (s) {
            case MESH_KEY -> meshKey = value;
            case PROVIDER -> provider = value.toLowerCase(Locale.ROOT);
            case ADDRESSES -> addresses = parseAddresses(value);
            case ROUTES -> routes = StaticRoute.parseList(value);
            default -> throw new IllegalArgumentException(s + " is numeric");
        }
    }

    private void store(Setting s, long v) {
        switch (s) {
            case DISABLE_RDMA -> disableRdma = v == 1;
            case GID_INDEX -> gidIndex = OptionalInt.of((int) v);
            case IB_TIMEOUT -> ibTimeout = (int) v;
            case IB_RETRY_COUNT -> ibRetryCount = (int) v;
            case IB_RNR_RETRY -> ibRnrRetry = (int) v;
            case IB_SERVICE_LEVEL -> ibServiceLevel = (int) v;
            case IB_TRAFFIC_CLASS -> ibTrafficClass = (int) v;
            case QPS_PER_CONNECTION -> qpsPerConnection = (int) v;
            case MULTI_LINK -> multiLink = v == 1;
            case TCP_SOCKETS -> tcpSockets = (int) v;
            case TCP_THREADS -> tcpThreads = (int) v;
            case TCP_RELAY_SPLICE -> tcpRelaySplice = v == 1;
            case TCP_SPIN_US -> tcpSpinUs = (int) v;
            case LOCAL_RANKS -> localRanks = (int) v;
            case TCP_EAGER_THRESHOLD -> tcpEagerThreshold = (int) v;
            case TCP_SOCKET0_MAX -> tcpSocket0Max = (int) v;
            case HANDSHAKE_TIMEOUT_MS -> handshakeTimeoutMs = v;
            case HANDSHAKE_MAX_PENDING -> handshakeMaxPending = (int) v;
            case ROUTE_PORT -> routePort = (int) v;
            case LIVENESS_TIMEOUT_MS -> livenessTimeoutMs = v;
            case RELAY_CHUNK_KIB -> relayChunkKib = (int) v;
            case RELAY_CHUNKS -> relayChunks = (int) v;
            case EAGER_THRESHOLD -> eagerThreshold = (int) v;
            default -> throw new IllegalArgumentException(s + " is not numeric");
        }
    }

    private static List<IpPrefix> parseAddresses(String list) {
        List<IpPrefix> out = new ArrayList<>();
        for (String part : list.split(",")) {
            if (!part.isBlank()) {
                out.add(IpPrefix.parse(part));
            }
        }
        return List.copyOf(out);
    }

    /** Records that a setter chose the value: it replaces whatever was read, bad or not. */
    private Context set(Setting s, String call) {
        sources.set(s, call);
        return this;
    }

    /**
     * Checks every setting and fails with one message naming each bad one: where its value came from, all its names
     * and what it accepts, e.g. "JMESH_IB_TIMEOUT='40' is not valid: JMESH_IB_TIMEOUT (-Djmesh.ib.timeout) takes an
     * integer from 1 to 31 (RC local ACK timeout exponent ...)". {@link Fabric#open(Context)} calls it.
     *
     * @return this context
     * @throws IllegalArgumentException naming every setting that is not valid
     */
    public Context conclude() {
        sources.check(provider, gidIndex.isPresent(), this::numeric);
        return this;
    }

    private long numeric(Setting s) {
        return switch (s) {
            case DISABLE_RDMA -> disableRdma ? 1 : 0;
            case GID_INDEX -> gidIndex.orElse(-1);
            case IB_TIMEOUT -> ibTimeout;
            case IB_RETRY_COUNT -> ibRetryCount;
            case IB_RNR_RETRY -> ibRnrRetry;
            case IB_SERVICE_LEVEL -> ibServiceLevel;
            case IB_TRAFFIC_CLASS -> ibTrafficClass;
            case QPS_PER_CONNECTION -> qpsPerConnection;
            case MULTI_LINK -> multiLink ? 1 : 0;
            case TCP_SOCKETS -> tcpSockets;
            case TCP_THREADS -> tcpThreads();
            case TCP_RELAY_SPLICE -> tcpRelaySplice ? 1 : 0;
            case TCP_SPIN_US -> tcpSpinUs();
            case LOCAL_RANKS -> localRanks();
            case TCP_EAGER_THRESHOLD -> tcpEagerThreshold;
            case TCP_SOCKET0_MAX -> tcpSocket0Max;
            case HANDSHAKE_TIMEOUT_MS -> handshakeTimeoutMs;
            case HANDSHAKE_MAX_PENDING -> handshakeMaxPending;
            case ROUTE_PORT -> routePort;
            case LIVENESS_TIMEOUT_MS -> livenessTimeoutMs;
            case RELAY_CHUNK_KIB -> relayChunkKib;
            case RELAY_CHUNKS -> relayChunks;
            case EAGER_THRESHOLD -> eagerThreshold;
            default -> throw new IllegalArgumentException(s + " is not numeric");
        };
    }

    /**
     * A setting's value as docs/configuration.md writes it: "auto", "20", "all" (every address), "per address" (no
     * forced GID index).
     */
    public String valueText(Setting s) {
        return switch (s) {
            case PROVIDER -> provider();
            case ADDRESSES -> addresses.isEmpty() ? "all"
                    : String.join(",", addresses.stream().map(IpPrefix::toString).toList());
            case GID_INDEX -> gidIndex.isEmpty() ? "per address" : Integer.toString(gidIndex.getAsInt());
            case ROUTES -> routes.isEmpty() ? "none"
                    : String.join(",", routes.stream().map(StaticRoute::toString).toList());
            case MESH_KEY -> meshKey == null ? "none" : "set";
            case TCP_SPIN_US -> tcpSpinUs >= 0 ? Integer.toString(tcpSpinUs) : "auto";
            case TCP_THREADS -> tcpThreads >= 0 ? Integer.toString(tcpThreads) : "auto";
            case LOCAL_RANKS -> localRanks > 0 ? Integer.toString(localRanks) : "auto";
            default -> Long.toString(numeric(s));
        };
    }

    /** Where a setting's value came from ("JMESH_IB_TIMEOUT='18'", "Context.ibTimeout(18)"), or null: the default. */
    public String origin(Setting s) {
        return sources.origin(s);
    }

    /** Every setting with its value, and where it came from when that is not the default. */
    @Override
    public String toString() {
        StringJoiner j = new StringJoiner(", ", "Context{", "}");
        for (Setting s : Setting.values()) {
            j.add(s.env() + "=" + valueText(s) + (origin(s) != null ? " from " + origin(s) : ""));
        }
        return j.toString();
    }

    // ---- the settings ----------------------------------------------------------------------------------------

    /**
     * The transport {@link Fabric#open} takes (default "auto": verbs where a usable RDMA link exists, otherwise TCP);
     * the seed's {@code NCCL_MESH_DISABLE_RDMA=1} means "tcp" unless a provider was named.
     */
    public String provider() {
        return disableRdma && origin(Setting.PROVIDER) == null ? "tcp" : provider;
    }

    /** "auto", or a provider's name or alias: "rdma" (also verbs, ib, roce), "tcp" (also socket). */
    public Context provider(String name) {
        provider = Objects.requireNonNull(name, "name").trim().toLowerCase(Locale.ROOT);
        return set(Setting.PROVIDER, "provider(\"" + name + "\")");
    }

    /** The seed's switch: true forces the TCP provider unless {@link #provider(String)} names one (default false). */
    public boolean disableRdma() {
        return disableRdma;
    }

    public Context disableRdma(boolean disable) {
        disableRdma = disable;
        return set(Setting.DISABLE_RDMA, "disableRdma(" + disable + ")");
    }

    /** The local addresses jmesh may use, or an empty list (the default) for every usable one. */
    public List<IpPrefix> addresses() {
        return addresses;
    }

    public Context addresses(List<IpPrefix> list) {
        addresses = List.copyOf(list);
        return set(Setting.ADDRESSES, "addresses(" + list + ")");
    }

    /** Comma-separated addresses with prefixes, e.g. "192.168.101.2/24,192.168.100.2/24"; checked by conclude. */
    public Context addresses(String list) {
        set(Setting.ADDRESSES, "addresses(\"" + list + "\")");
        try {
            addresses = parseAddresses(list);
        } catch (IllegalArgumentException e) {
            sources.unreadable(Setting.ADDRESSES, e.getMessage());
        }
        return this;
    }

    /** The GID index forced on every port, or empty (the default) to take each address's RoCE v2 GID. */
    public OptionalInt gidIndex() {
        return gidIndex;
    }

    public Context gidIndex(OptionalInt index) {
        gidIndex = Objects.requireNonNull(index, "index");
        return set(Setting.GID_INDEX, "gidIndex(" + index + ")");
    }

    public Context gidIndex(int index) {
        gidIndex = OptionalInt.of(index);
        return set(Setting.GID_INDEX, "gidIndex(" + index + ")");
    }

    /** RC local ACK timeout exponent, 4.096 us * 2^value (default 20, as NCCL). */
    public int ibTimeout() {
        return ibTimeout;
    }

    public Context ibTimeout(int exponent) {
        ibTimeout = exponent;
        return set(Setting.IB_TIMEOUT, "ibTimeout(" + exponent + ")");
    }

    /** RC transport retries (default 7, as NCCL). */
    public int ibRetryCount() {
        return ibRetryCount;
    }

    public Context ibRetryCount(int retries) {
        ibRetryCount = retries;
        return set(Setting.IB_RETRY_COUNT, "ibRetryCount(" + retries + ")");
    }

    /** Receiver-not-ready retries (default 7: forever, as NCCL). */
    public int ibRnrRetry() {
        return ibRnrRetry;
    }

    public Context ibRnrRetry(int retries) {
        ibRnrRetry = retries;
        return set(Setting.IB_RNR_RETRY, "ibRnrRetry(" + retries + ")");
    }

    /** Service level of the queue pairs' address vector (default 0). */
    public int ibServiceLevel() {
        return ibServiceLevel;
    }

    public Context ibServiceLevel(int level) {
        ibServiceLevel = level;
        return set(Setting.IB_SERVICE_LEVEL, "ibServiceLevel(" + level + ")");
    }

    /** GRH traffic class, DSCP << 2 (default 0). */
    public int ibTrafficClass() {
        return ibTrafficClass;
    }

    public Context ibTrafficClass(int trafficClass) {
        ibTrafficClass = trafficClass;
        return set(Setting.IB_TRAFFIC_CLASS, "ibTrafficClass(" + trafficClass + ")");
    }

    /** Queue pairs per link of a verbs connection (default 1). */
    public int qpsPerConnection() {
        return qpsPerConnection;
    }

    public Context qpsPerConnection(int qps) {
        qpsPerConnection = qps;
        return set(Setting.QPS_PER_CONNECTION, "qpsPerConnection(" + qps + ")");
    }

    /** Whether a verbs connection spreads over every equally fast link to its peer (default true). */
    public boolean multiLink() {
        return multiLink;
    }

    public Context multiLink(boolean spread) {
        multiLink = spread;
        return set(Setting.MULTI_LINK, "multiLink(" + spread + ")");
    }

    /** The largest message a TCP connection sends eagerly ({@link Setting#TCP_EAGER_THRESHOLD}, default 64 KiB). */
    public int tcpEagerThreshold() {
        return tcpEagerThreshold;
    }

    public Context tcpEagerThreshold(int bytes) {
        tcpEagerThreshold = bytes;
        return set(Setting.TCP_EAGER_THRESHOLD, "tcpEagerThreshold(" + bytes + ")");
    }

    /** The largest message written on socket 0 by the application's thread ({@link Setting#TCP_SOCKET0_MAX}). */
    public int tcpSocket0Max() {
        return tcpSocket0Max;
    }

    public Context tcpSocket0Max(int bytes) {
        tcpSocket0Max = bytes;
        return set(Setting.TCP_SOCKET0_MAX, "tcpSocket0Max(" + bytes + ")");
    }

    /** Data sockets per TCP connection (default 4). */
    public int tcpSockets() {
        return tcpSockets;
    }

    public Context tcpSockets(int sockets) {
        tcpSockets = sockets;
        return set(Setting.TCP_SOCKETS, "tcpSockets(" + sockets + ")");
    }

    /**
     * Helper threads per fabric that move the bytes of the TCP connections' bulk sockets (at most the CPUs are
     * started); 0: the application's thread moves them inside {@code isend}/{@code irecv}/{@code test}. Unset: 8 for
     * one rank on the host; with several ({@link #localRanks()}) together at most half the CPUs.
     */
    public int tcpThreads() {
        return tcpThreads >= 0 ? tcpThreads
                : HostShare.helperThreads(Runtime.getRuntime().availableProcessors(), localRanks());
    }

    public Context tcpThreads(int threads) {
        tcpThreads = threads;
        return set(Setting.TCP_THREADS, "tcpThreads(" + threads + ")");
    }

    /**
     * Whether a TCP relay splices relayed data sockets in the kernel (default true; it copies where the JVM keeps
     * NIO's descriptors to itself).
     */
    public boolean tcpRelaySplice() {
        return tcpRelaySplice;
    }

    public Context tcpRelaySplice(boolean splice) {
        tcpRelaySplice = splice;
        return set(Setting.TCP_RELAY_SPLICE, "tcpRelaySplice(" + splice + ")");
    }

    /**
     * How long a TCP helper thread with nothing to move keeps polling before it sleeps in its selector, in
     * microseconds. Unset: 1000 on a machine of 16 CPUs or more with 8 of them per rank, where the helpers have cores
     * to poll on and a sleeping one costs a wake-up per step of a collective; 200 otherwise, where polling helpers
     * would take the CPU from the threads they serve.
     */
    public int tcpSpinUs() {
        return tcpSpinUs >= 0 ? tcpSpinUs : HostShare.spinUs(Runtime.getRuntime().availableProcessors(), localRanks());
    }

    /**
     * How many processes that use jmesh share this host's CPUs (the ranks of a node), which sizes the TCP helpers.
     * Unset: what the launcher says (LOCAL_WORLD_SIZE of torchrun, OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS), else 1.
     */
    public int localRanks() {
        return localRanks > 0 ? localRanks : launcherLocalRanks;
    }

    public Context localRanks(int ranks) {
        localRanks = ranks;
        return set(Setting.LOCAL_RANKS, "localRanks(" + ranks + ")");
    }

    public Context tcpSpinUs(int micros) {
        tcpSpinUs = micros;
        return set(Setting.TCP_SPIN_US, "tcpSpinUs(" + micros + ")");
    }

    /** How long one connection handshake may take, in milliseconds (default 10 000). */
    public long handshakeTimeoutMs() {
        return handshakeTimeoutMs;
    }

    public Duration handshakeTimeout() {
        return Duration.ofMillis(handshakeTimeoutMs);
    }

    public Context handshakeTimeoutMs(long millis) {
        handshakeTimeoutMs = millis;
        return set(Setting.HANDSHAKE_TIMEOUT_MS, "handshakeTimeoutMs(" + millis + ")");
    }

    /** Half-done inbound handshakes a listener holds before it evicts the oldest (default 32). */
    public int handshakeMaxPending() {
        return handshakeMaxPending;
    }

    public Context handshakeMaxPending(int max) {
        handshakeMaxPending = max;
        return set(Setting.HANDSHAKE_MAX_PENDING, "handshakeMaxPending(" + max + ")");
    }

    /** The UDP port of route discovery on every link address, the same on every node; 0: off (default 18515). */
    /**
     * How long a direct connection waits for a sign of life from the peer's process before it fails, in milliseconds
     * (default 30 000; 0: off). A peer that does not poll still answers; one that is stopped or hung does not.
     */
    public long livenessTimeoutMs() {
        return livenessTimeoutMs;
    }

    public Duration livenessTimeout() {
        return Duration.ofMillis(livenessTimeoutMs);
    }

    public Context livenessTimeoutMs(long millis) {
        livenessTimeoutMs = millis;
        return set(Setting.LIVENESS_TIMEOUT_MS, "livenessTimeoutMs(" + millis + ")");
    }

    public int routePort() {
        return routePort;
    }

    public Context routePort(int port) {
        routePort = port;
        return set(Setting.ROUTE_PORT, "routePort(" + port + ")");
    }

    /** Bytes of one chunk a verbs relay node forwards at a time. */
    public long relayChunkBytes() {
        return relayChunkKib * 1024L;
    }

    public Context relayChunkKib(int kib) {
        relayChunkKib = kib;
        return set(Setting.RELAY_CHUNK_KIB, "relayChunkKib(" + kib + ")");
    }

    /** The largest message a verbs connection sends eagerly ({@link Setting#EAGER_THRESHOLD}); 0: none. */
    public int eagerThreshold() {
        return eagerThreshold;
    }

    public Context eagerThreshold(int bytes) {
        eagerThreshold = bytes;
        return set(Setting.EAGER_THRESHOLD, "eagerThreshold(" + bytes + ")");
    }

    /** Chunks in flight per relayed verbs connection on a relay node. */
    public int relayChunks() {
        return relayChunks;
    }

    public Context relayChunks(int chunks) {
        relayChunks = chunks;
        return set(Setting.RELAY_CHUNKS, "relayChunks(" + chunks + ")");
    }

    /** The static routes that override discovery (default none). */
    public List<StaticRoute> routes() {
        return routes;
    }

    /** "SUBNET=NEIGHBOUR" entries separated by commas, e.g. "10.0.3.0/24=10.0.1.2"; checked by conclude. */
    public Context routes(String map) {
        set(Setting.ROUTES, "routes(\"" + map + "\")");
        try {
            routes = StaticRoute.parseList(map);
        } catch (IllegalArgumentException e) {
            sources.unreadable(Setting.ROUTES, e.getMessage());
        }
        return this;
    }

    /** The mesh key's text, or null when none is set (see {@link Setting#MESH_KEY}). */
    public String meshKey() {
        return meshKey;
    }

    /** Sets the mesh key, the same on every node; null or empty: none. */
    public Context meshKey(String key) {
        meshKey = key == null || key.isEmpty() ? null : key;
        return set(Setting.MESH_KEY, "meshKey(...)");
    }
}
