/**
 * The jmesh transport: discovery of RDMA devices and their addresses, the multi-address handle, subnet-aware routing,
 * the handshake, verbs connections, the data path, and the public Java API.
 */
module io.jmesh.transport {
    requires transitive io.jmesh.verbs;
    requires org.apache.logging.log4j;

    exports io.jmesh.api;
    exports io.jmesh.transport.config;
    exports io.jmesh.transport.discovery;
    exports io.jmesh.transport.handshake;
    exports io.jmesh.transport.net;
    exports io.jmesh.transport.rdma;
    exports io.jmesh.transport.tcp;
    exports io.jmesh.transport.verbs;
}
