package io.jmesh.transport.config;

import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.function.Function;

/**
 * jmesh's configuration, read in one place. Each setting has a system property ({@code jmesh.gid.index}), an
 * environment variable ({@code JMESH_GID_INDEX}) and, where the reference plugin had one that means the same, its
 * seed name ({@code NCCL_MESH_GID_INDEX}); the first one set wins, in that order. Bad values fail with a message that
 * names the variable and what it accepts.
 *
 * <pre>{@code
 * JmeshConfig config = JmeshConfig.fromEnvironment();
 * OptionalInt gid = config.gidIndex();
 * }</pre>
 */
public final class JmeshConfig {
    /** A setting's names. */
    public record Key(String property, String env, String seedEnv, String description) {
    }

    public static final Key GID_INDEX = new Key("jmesh.gid.index", "JMESH_GID_INDEX", "NCCL_MESH_GID_INDEX",
            "force this GID index on every port instead of the RoCE v2 GID that maps each address");

    public static final Key IB_TIMEOUT = new Key("jmesh.ib.timeout", "JMESH_IB_TIMEOUT", null,
            "RC local ACK timeout exponent: 4.096 us * 2^value (NCCL's default 20 is about 4.3 s)");
    public static final Key IB_RETRY_COUNT = new Key("jmesh.ib.retry.count", "JMESH_IB_RETRY_CNT", null,
            "RC transport retries before a send fails with RETRY_EXC_ERR");
    public static final Key IB_RNR_RETRY = new Key("jmesh.ib.rnr.retry", "JMESH_IB_RNR_RETRY", null,
            "receiver-not-ready retries; 7 means retry forever");
    public static final Key IB_SERVICE_LEVEL = new Key("jmesh.ib.sl", "JMESH_IB_SL", null,
            "service level of the QPs' address vector");
    public static final Key IB_TRAFFIC_CLASS = new Key("jmesh.ib.tc", "JMESH_IB_TC", null,
            "traffic class (DSCP << 2) of the QPs' GRH");

    public static final Key QPS_PER_CONNECTION = new Key("jmesh.qps.per.connection", "JMESH_QPS_PER_CONNECTION", null,
            "queue pairs per link of a verbs connection; each message is split across all of them (NCCL's "
                    + "NCCL_IB_QPS_PER_CONNECTION)");
    public static final Key MULTI_LINK = new Key("jmesh.multi.link", "JMESH_MULTI_LINK", null,
            "1: a verbs connection uses every equally fast link that joins the two nodes (DGX Spark twins) and "
                    + "splits each message across them; 0: only the best link");

    public static final Key PROVIDER = new Key("jmesh.provider", "JMESH_PROVIDER", null,
            "which transport to use: auto (verbs where a usable RDMA link exists, else TCP), rdma, or tcp");
    public static final Key DISABLE_RDMA = new Key("jmesh.disable.rdma", "JMESH_DISABLE_RDMA", "NCCL_MESH_DISABLE_RDMA",
            "1 forces the TCP provider (the seed's switch; JMESH_PROVIDER=tcp says the same)");
    public static final Key ADDRESSES = new Key("jmesh.addresses", "JMESH_ADDRESSES", null,
            "comma-separated local addresses with prefixes (e.g. 192.168.101.2/24,192.168.100.2/24) that jmesh may "
                    + "use; unset: every non-link-local address of the RDMA ports (verbs) or of the interfaces (TCP)");
    public static final Key TCP_SOCKETS = new Key("jmesh.tcp.sockets", "JMESH_TCP_SOCKETS", null,
            "data sockets per TCP connection (messages are striped across them)");
    public static final Key HANDSHAKE_TIMEOUT_MS = new Key("jmesh.handshake.timeout.ms", "JMESH_HANDSHAKE_TIMEOUT_MS",
            "NCCL_MESH_TIMEOUT_MS", "how long one connection handshake may take, in milliseconds");
    public static final Key HANDSHAKE_MAX_PENDING = new Key("jmesh.handshake.max.pending",
            "JMESH_HANDSHAKE_MAX_PENDING", null, "half-done inbound handshakes a listener holds before evicting");

    /** All settings, for documentation and 'jmesh doctor'. */
    public static java.util.List<Key> keys() {
        return java.util.List.of(PROVIDER, DISABLE_RDMA, ADDRESSES, GID_INDEX, IB_TIMEOUT, IB_RETRY_COUNT,
                IB_RNR_RETRY, IB_SERVICE_LEVEL, IB_TRAFFIC_CLASS, QPS_PER_CONNECTION, MULTI_LINK, TCP_SOCKETS, HANDSHAKE_TIMEOUT_MS,
                HANDSHAKE_MAX_PENDING);
    }

    /** The transports {@link #provider()} chooses between. */
    public enum Provider { AUTO, RDMA, TCP }

    private final Function<String, String> properties;
    private final Function<String, String> environment;

    private JmeshConfig(Function<String, String> properties, Function<String, String> environment) {
        this.properties = properties;
        this.environment = environment;
    }

    /** Reads the JVM's system properties and the process environment. */
    public static JmeshConfig fromEnvironment() {
        return new JmeshConfig(System::getProperty, System::getenv);
    }

    /** For tests and embedding: explicit maps instead of the process's. */
    public static JmeshConfig of(Map<String, String> properties, Map<String, String> environment) {
        Objects.requireNonNull(properties);
        Objects.requireNonNull(environment);
        return new JmeshConfig(properties::get, environment::get);
    }

    /** The raw value and the name it came from, or null when unset. */
    private String[] lookup(Key key) {
        String v = properties.apply(key.property());
        if (v != null && !v.isBlank()) {
            return new String[] {v.trim(), "-D" + key.property()};
        }
        v = environment.apply(key.env());
        if (v != null && !v.isBlank()) {
            return new String[] {v.trim(), key.env()};
        }
        if (key.seedEnv() != null) {
            v = environment.apply(key.seedEnv());
            if (v != null && !v.isBlank()) {
                return new String[] {v.trim(), key.seedEnv()};
            }
        }
        return null;
    }

    private OptionalInt intValue(Key key, int min, int max) {
        String[] v = lookup(key);
        if (v == null) {
            return OptionalInt.empty();
        }
        try {
            int i = Integer.parseInt(v[0]);
            if (i < min || i > max) {
                throw new NumberFormatException();
            }
            return OptionalInt.of(i);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(v[1] + "='" + v[0] + "' is not valid: expected an integer from "
                    + min + " to " + max + " (" + key.description() + ")");
        }
    }

    private int intValue(Key key, int min, int max, int defaultValue) {
        OptionalInt v = intValue(key, min, max);
        return v.isPresent() ? v.getAsInt() : defaultValue;
    }

    /** RC local ACK timeout exponent (default 20, as NCCL). */
    public int ibTimeout() {
        return intValue(IB_TIMEOUT, 1, 31, 20);
    }

    /** RC retry count (default 7, as NCCL). */
    public int ibRetryCount() {
        return intValue(IB_RETRY_COUNT, 0, 7, 7);
    }

    /** RNR retry count (default 7 = infinite, as NCCL). */
    public int ibRnrRetry() {
        return intValue(IB_RNR_RETRY, 0, 7, 7);
    }

    /** Service level (default 0). */
    public int ibServiceLevel() {
        return intValue(IB_SERVICE_LEVEL, 0, 15, 0);
    }

    /** GRH traffic class (default 0). */
    public int ibTrafficClass() {
        return intValue(IB_TRAFFIC_CLASS, 0, 255, 0);
    }

    /** auto (default), rdma or tcp; the seed's NCCL_MESH_DISABLE_RDMA=1 means tcp. */
    public Provider provider() {
        String[] v = lookup(PROVIDER);
        if (v == null) {
            return intValue(DISABLE_RDMA, 0, 1, 0) == 1 ? Provider.TCP : Provider.AUTO;
        }
        return switch (v[0].toLowerCase(java.util.Locale.ROOT)) {
            case "auto" -> Provider.AUTO;
            case "rdma", "verbs", "ib", "roce" -> Provider.RDMA;
            case "tcp", "socket" -> Provider.TCP;
            default -> throw new IllegalArgumentException(v[1] + "='" + v[0] + "' is not valid: expected auto, rdma "
                    + "or tcp (" + PROVIDER.description() + ")");
        };
    }

    /** The configured local addresses, or an empty list for "all". */
    public java.util.List<io.jmesh.transport.net.IpPrefix> addresses() {
        String[] v = lookup(ADDRESSES);
        if (v == null) {
            return java.util.List.of();
        }
        java.util.List<io.jmesh.transport.net.IpPrefix> out = new java.util.ArrayList<>();
        for (String part : v[0].split(",")) {
            if (part.isBlank()) {
                continue;
            }
            try {
                out.add(io.jmesh.transport.net.IpPrefix.parse(part));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(v[1] + ": " + e.getMessage() + " (" + ADDRESSES.description() + ")");
            }
        }
        return java.util.List.copyOf(out);
    }

    /** Queue pairs per link of a verbs connection (default 1, at most 4). */
    public int qpsPerConnection() {
        return intValue(QPS_PER_CONNECTION, 1, 4, 1);
    }

    /** Whether a verbs connection spreads over every equally fast link to its peer (default yes). */
    public boolean multiLink() {
        return intValue(MULTI_LINK, 0, 1, 1) == 1;
    }

    /** Data sockets per TCP connection (default 4). */
    public int tcpSockets() {
        return intValue(TCP_SOCKETS, 1, 16, 4);
    }

    /** Handshake timeout (default 10 s). */
    public java.time.Duration handshakeTimeout() {
        return java.time.Duration.ofMillis(intValue(HANDSHAKE_TIMEOUT_MS, 100, 3_600_000, 10_000));
    }

    /** Half-done inbound handshakes per listener (default 32). */
    public int handshakeMaxPending() {
        return intValue(HANDSHAKE_MAX_PENDING, 1, 4096, 32);
    }

    /** The forced GID index, or empty to choose per address. */
    public OptionalInt gidIndex() {
        return intValue(GID_INDEX, 0, 65535);
    }
}
