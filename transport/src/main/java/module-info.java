/**
 * The jmesh transport: the public Java API ({@code io.jmesh.api}: fabrics, connections, handles, links, prefixes,
 * static routes), its provider interface ({@code io.jmesh.api.spi}) and device discovery
 * ({@code io.jmesh.transport.discovery}), which tools such as the {@code jmesh} command use; and, not exported, the
 * providers behind the API (verbs, TCP), routing, the handshake and the verbs objects. {@code Fabric} finds the providers
 * through {@link io.jmesh.api.spi.ProviderFactory}; on the class path the same two are listed in
 * {@code META-INF/services}.
 */
module io.jmesh.transport {
    requires transitive io.jmesh.verbs;
    // transitive: io.jmesh.api.JmeshLog hands out Log4j API types (Logger, Level)
    requires transitive org.apache.logging.log4j;

    // jmesh asks, as LogManager would, whether the application has a Log4j provider (io.jmesh.api.JmeshLog)
    uses org.apache.logging.log4j.spi.Provider;

    exports io.jmesh.api;
    exports io.jmesh.api.spi;
    exports io.jmesh.transport.discovery;

    uses io.jmesh.api.spi.ProviderFactory;
    provides io.jmesh.api.spi.ProviderFactory with io.jmesh.transport.rdma.RdmaProviderFactory,
            io.jmesh.transport.tcp.TcpProviderFactory;
}
