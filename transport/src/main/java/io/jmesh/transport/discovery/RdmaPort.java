package io.jmesh.transport.discovery;

import java.util.List;

/**
 * One port of an RDMA device as discovery saw it.
 *
 * @param number    1-based port number
 * @param state     {@code ibv_port_state} text, e.g. "PORT_ACTIVE"
 * @param active    true when the port is ACTIVE
 * @param activeMtu the active path MTU in bytes (256..4096)
 * @param linkLayer "Ethernet" (RoCE) or "InfiniBand"
 * @param rate      the port's rate as sysfs reports it, e.g. "100 Gb/sec (4X EDR)", or "" when unknown
 * @param speedMbps the rate in Mb/s for comparing links, 0 when unknown
 * @param netdev    the Ethernet netdev behind a RoCE port, or "" when none
 * @param netdevMtu the netdev's MTU in bytes, 0 when unknown
 * @param addresses the netdev's IP addresses with their GID indexes
 * @param gids      the port's valid GID table entries
 */
public record RdmaPort(int number, String state, boolean active, int activeMtu, String linkLayer, String rate,
                       long speedMbps, String netdev, int netdevMtu, List<PortAddress> addresses, List<GidEntry> gids) {
    public RdmaPort {
        addresses = List.copyOf(addresses);
        gids = List.copyOf(gids);
    }
}
