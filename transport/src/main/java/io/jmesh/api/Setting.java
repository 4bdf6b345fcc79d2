package io.jmesh.api;

/**
 * The names of one jmesh setting and what it accepts. Each setting has a system property ({@code jmesh.gid.index}),
 * an environment variable ({@code JMESH_GID_INDEX}) and, where the reference plugin had one that means the same, its
 * seed name ({@code NCCL_MESH_GID_INDEX}); a {@link Context} reads the first one set, in that order. The values live
 * in the {@link Context}; this enum lists the settings (for docs/configuration.md, 'jmesh doctor' and error messages).
 *
 * <pre>{@code
 * for (Setting s : Setting.values()) {
 *     System.out.println(s.env() + " = " + new Context().valueText(s));
 * }
 * }</pre>
 */
public enum Setting {
    PROVIDER("jmesh.provider", "JMESH_PROVIDER", null, "auto, rdma or tcp",
            "which transport to use: auto (verbs where a usable RDMA link exists, else TCP), rdma, or tcp"),
    DISABLE_RDMA("jmesh.disable.rdma", "JMESH_DISABLE_RDMA", "NCCL_MESH_DISABLE_RDMA", 0, 1,
            "1 forces the TCP provider (the seed's switch; JMESH_PROVIDER=tcp says the same)"),
    ADDRESSES("jmesh.addresses", "JMESH_ADDRESSES", null, "comma-separated local addresses with prefixes",
            "comma-separated local addresses with prefixes (e.g. 192.168.101.2/24,192.168.100.2/24) that jmesh may "
                    + "use; unset: every non-link-local address of the RDMA ports (verbs) or of the interfaces (TCP)"),
    GID_INDEX("jmesh.gid.index", "JMESH_GID_INDEX", "NCCL_MESH_GID_INDEX", 0, 65535,
            "force this GID index on every port instead of the RoCE v2 GID that maps each address"),
    IB_TIMEOUT("jmesh.ib.timeout", "JMESH_IB_TIMEOUT", null, 1, 31,
            "RC local ACK timeout exponent: 4.096 us * 2^value (NCCL's default 20 is about 4.3 s)"),
    IB_RETRY_COUNT("jmesh.ib.retry.count", "JMESH_IB_RETRY_CNT", null, 0, 7,
            "RC transport retries before a send fails with RETRY_EXC_ERR"),
    IB_RNR_RETRY("jmesh.ib.rnr.retry", "JMESH_IB_RNR_RETRY", null, 0, 7,
            "receiver-not-ready retries; 7 means retry forever"),
    IB_SERVICE_LEVEL("jmesh.ib.sl", "JMESH_IB_SL", null, 0, 15, "service level of the QPs' address vector"),
    IB_TRAFFIC_CLASS("jmesh.ib.tc", "JMESH_IB_TC", null, 0, 255, "traffic class (DSCP << 2) of the QPs' GRH"),
    QPS_PER_CONNECTION("jmesh.qps.per.connection", "JMESH_QPS_PER_CONNECTION", null, 1, 4,
            "queue pairs per link of a verbs connection; each message is split across all of them (NCCL's "
                    + "NCCL_IB_QPS_PER_CONNECTION)"),
    MULTI_LINK("jmesh.multi.link", "JMESH_MULTI_LINK", null, 0, 1,
            "1: a verbs connection uses every equally fast link that joins the two nodes (DGX Spark twins) and "
                    + "splits each message across them; 0: only the best link"),
    TCP_SOCKETS("jmesh.tcp.sockets", "JMESH_TCP_SOCKETS", null, 1, 16,
            "data sockets per TCP connection: socket 0 carries control, one-sided operations and messages up to 64 "
                    + "KiB; larger messages are striped across the others"),
    TCP_THREADS("jmesh.tcp.threads", "JMESH_TCP_THREADS", null, 0, 64,
            "helper threads per fabric that move the bytes of the TCP bulk sockets (each socket belongs to one), at "
                    + "most one per CPU; 0: the application's thread does it inside isend/irecv/test"),
    TCP_RELAY_SPLICE("jmesh.tcp.relay.splice", "JMESH_TCP_RELAY_SPLICE", null, 0, 1,
            "1: a TCP relay moves the bytes of relayed data sockets with Linux's splice(2), through kernel pipes, "
                    + "never into the JVM (where the JVM exports sun.nio.ch to jmesh: jmesh's launchers and the NCCL "
                    + "plugin do; elsewhere it copies and says why at start); 0: it copies them through its buffers"),
    TCP_SOCKET0_MAX("jmesh.tcp.socket0.max", "JMESH_TCP_SOCKET0_MAX", null, 0, 1 << 20,
            "largest message, in bytes, that a TCP connection with bulk sockets writes on socket 0 from the "
                    + "application's thread; larger ones go to the bulk sockets, which the helper threads move "
                    + "(eager messages always take socket 0)"),
    TCP_EAGER_THRESHOLD("jmesh.tcp.eager.threshold", "JMESH_TCP_EAGER_THRESHOLD", null, 0, 1 << 20,
            "largest message, in bytes, a TCP connection sends eagerly: at once on socket 0, with no clear-to-send "
                    + "round, into a ring of 16 slots the receiver keeps per connection (credits bound it: a slow "
                    + "receiver slows the sender); larger ones wait for the receive's clear-to-send; 0 turns the "
                    + "eager path off"),
    TCP_SPIN_US("jmesh.tcp.spin.us", "JMESH_TCP_SPIN_US", null, 0, 1_000_000,
            "how long a TCP helper thread with nothing to move keeps polling its sockets before it sleeps, in "
                    + "microseconds; longer answers sooner between the steps of a collective, at the price of a busy "
                    + "CPU per helper for that long after each burst"),
    LOCAL_RANKS("jmesh.local.ranks", "JMESH_LOCAL_RANKS", null, 1, 4096,
            "how many processes that use jmesh share this host's CPUs (the ranks of a node); with several, each "
                    + "fabric's TCP helpers take together at most half the CPUs and poll less; unset: the launcher's "
                    + "LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE or MPI_LOCALNRANKS, else 1"),
    HANDSHAKE_TIMEOUT_MS("jmesh.handshake.timeout.ms", "JMESH_HANDSHAKE_TIMEOUT_MS", "NCCL_MESH_TIMEOUT_MS", 100,
            3_600_000, "how long one connection handshake may take, in milliseconds"),
    HANDSHAKE_MAX_PENDING("jmesh.handshake.max.pending", "JMESH_HANDSHAKE_MAX_PENDING", null, 1, 4096,
            "half-done inbound handshakes a listener holds before evicting"),
    LIVENESS_TIMEOUT_MS("jmesh.liveness.timeout.ms", "JMESH_LIVENESS_TIMEOUT_MS", null, 0, 3_600_000,
            "how long a direct connection waits for a sign of life from the peer's process (UDP pings, answered even "
                    + "when the peer does not poll) before it fails, in milliseconds; 0 turns liveness off"),
    EAGER_THRESHOLD("jmesh.eager.threshold", "JMESH_EAGER_THRESHOLD", null, 0, 4096,
            "largest message, in bytes, a verbs connection sends eagerly: written with its header straight into a "
                    + "ring the receiver announced at connect time, with no clear-to-send round and no completion per "
                    + "message; larger ones wait for the receive's clear-to-send; 0 (the default: on Soft-RoCE it was "
                    + "not faster) turns the eager path off"),
    ROUTE_PORT("jmesh.route.port", "JMESH_ROUTE_PORT", null, 0, 65535,
            "UDP port of route discovery on every mesh link address, the same on every node; 0 turns discovery off "
                    + "(then only direct links are used)"),
    RELAY_CHUNK_KIB("jmesh.relay.chunk.kib", "JMESH_RELAY_CHUNK_KIB", null, 16, 65536,
            "size of one chunk a verbs relay node reads from the sender and writes on to the receiver, in KiB"),
    RELAY_CHUNKS("jmesh.relay.chunks", "JMESH_RELAY_CHUNKS", null, 2, 256,
            "chunks in flight per relayed verbs connection on a relay node (its memory per connection: chunks times "
                    + "the chunk size)"),
    ROUTES("jmesh.routes", "JMESH_ROUTES", null, "comma-separated SUBNET=NEIGHBOUR entries",
            "static routes that override discovery, e.g. 10.0.3.0/24=10.0.1.2 (peers in 10.0.3.0/24 are reached "
                    + "through the neighbour 10.0.1.2); unset: discovery alone"),
    MESH_KEY("jmesh.mesh.key", "JMESH_MESH_KEY", null, "any text, the same on every node",
            "a key every node of the mesh shares: route adverts and relay requests are signed with it, and "
                    + "unsigned or forged ones are dropped and logged; unset: none (a host on a link subnet can then "
                    + "claim routes and use relays, docs/architecture.md)");

    private final String property;
    private final String env;
    private final String seedEnv;
    private final long min;
    private final long max;
    private final String accepts;
    private final String description;

    Setting(String property, String env, String seedEnv, long min, long max, String description) {
        this(property, env, seedEnv, min, max, min == 0 && max == 1 ? "0 or 1"
                : "an integer from " + min + " to " + max, description);
    }

    Setting(String property, String env, String seedEnv, String accepts, String description) {
        this(property, env, seedEnv, 0, -1, accepts, description);
    }

    Setting(String property, String env, String seedEnv, long min, long max, String accepts, String description) {
        this.property = property;
        this.env = env;
        this.seedEnv = seedEnv;
        this.min = min;
        this.max = max;
        this.accepts = accepts;
        this.description = description;
    }

    /** The system property, e.g. {@code jmesh.gid.index} (set as {@code -Djmesh.gid.index=3}). */
    public String property() {
        return property;
    }

    /** The environment variable, e.g. {@code JMESH_GID_INDEX}. */
    public String env() {
        return env;
    }

    /** The seed plugin's variable of the same meaning, e.g. {@code NCCL_MESH_GID_INDEX}, or null. */
    public String seedEnv() {
        return seedEnv;
    }

    /** What the setting accepts, e.g. "an integer from 1 to 31". */
    public String accepts() {
        return accepts;
    }

    public String description() {
        return description;
    }

    /** Whether this setting is a number (checked against {@link #min()} and {@link #max()}). */
    public boolean isNumeric() {
        return max >= min;
    }

    public long min() {
        return min;
    }

    public long max() {
        return max;
    }

    /** All names, as an error message gives them: "JMESH_GID_INDEX (-Djmesh.gid.index, NCCL_MESH_GID_INDEX)". */
    public String names() {
        return env + " (-D" + property + (seedEnv == null ? "" : ", " + seedEnv) + ")";
    }
}
