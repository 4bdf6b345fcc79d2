package io.jmesh.transport.discovery;

import java.net.InetAddress;
import java.util.List;

/**
 * Chooses the GID index for an address the way a careful operator does with show_gids: the RoCE v2 entry whose GID is
 * that address (IPv4-mapped for IPv4). RoCE v1 entries carry the same GID bytes but cannot cross an IP router or be
 * told apart by subnet, so they are never chosen automatically. The index is not assumed (it is 3 on ConnectX with
 * IPv6 link-local present, 1 on rxe): it is looked up.
 */
public final class GidSelector {
    private GidSelector() {
    }

    /** The RoCE v2 GID index that maps {@code address} on {@code port}, or -1 when there is none. */
    public static int roceV2Index(List<GidEntry> table, int port, InetAddress address) {
        for (GidEntry e : table) {
            if (e.port() == port && e.type() == GidType.ROCE_V2 && e.maps(address)) {
                return e.index();
            }
        }
        return -1;
    }

    /** Why no RoCE v2 GID was found for {@code address}, phrased as the fix. */
    public static String missingReason(List<GidEntry> table, int port, InetAddress address, String device,
                                       String netdev) {
        String ip = address.getHostAddress();
        boolean v1Only = table.stream().anyMatch(e -> e.port() == port && e.maps(address));
        if (v1Only) {
            return "no RoCE v2 GID for " + ip + " on " + device + " (only RoCE v1): enable RoCE v2 for the port "
                    + "(cma_roce_mode / mlxconfig) or set JMESH_GID_INDEX";
        }
        return "no RoCE v2 GID for " + ip + " on " + device + "; check 'ip addr' on " + netdev
                + " (the address must be up on that netdev) and 'rdma link' (the port must be ACTIVE)";
    }
}
