package io.jmesh.transport.discovery;

import io.jmesh.api.IpPrefix;

/**
 * An IP address of a port's netdev with the GID index that carries it.
 *
 * @param prefix   the address and its real prefix length
 * @param gidIndex the RoCE v2 GID index for it, or -1 (then {@code problem} says why)
 * @param problem  null when usable, else the reason and the fix
 */
public record PortAddress(IpPrefix prefix, int gidIndex, String problem) {
    public boolean usable() {
        return gidIndex >= 0;
    }
}
