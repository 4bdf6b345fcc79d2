/** The jmesh command line (devices, and later doctor, demo, bw, lat) and the JMH benchmarks. */
module io.jmesh.benchmarks {
    requires io.jmesh.transport;
    requires org.apache.logging.log4j;
}
