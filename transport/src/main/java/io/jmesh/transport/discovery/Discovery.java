package io.jmesh.transport.discovery;

import io.jmesh.api.IpPrefix;
import io.jmesh.posix.Errno;
import io.jmesh.verbs.Verbs;
import io.jmesh.verbs.VerbsException;
import io.jmesh.verbs.VerbsUnavailableException;
import io.jmesh.verbs.ffi.ibv_device_attr;
import io.jmesh.verbs.ffi.ibv_gid_entry;
import io.jmesh.verbs.ffi.ibv_port_attr;
import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

/**
 * Finds every RDMA device and port of this machine with its netdev, addresses (with their real prefixes), port state,
 * MTU, link layer, rate and the RoCE v2 GID index of each address. A device or port that cannot be used is reported
 * once, with the reason, and the scan goes on.
 *
 * <pre>{@code
 * DiscoveryResult found = Discovery.scan(OptionalInt.empty());       // or the GID index JMESH_GID_INDEX forces
 * found.devices().forEach(d -> System.out.println(d.name()));
 * }</pre>
 */
public final class Discovery {
    private static final Logger LOG = JmeshLog.logger(Discovery.class);

    private Discovery() {
    }

    /**
     * Scans the machine. Never throws for a missing library, kernel support or device: the result says why.
     *
     * @param forcedGid the GID index to use on every port ({@code Context.gidIndex()}), or empty to find for each
     *                  address the RoCE v2 GID that maps it
     */
    public static DiscoveryResult scan(OptionalInt forcedGid) {
        Verbs verbs;
        try {
            verbs = Verbs.load();
        } catch (VerbsUnavailableException e) {
            return DiscoveryResult.unavailable(e.getMessage());
        }
        List<RdmaDevice> devices = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        try (Verbs.DeviceList list = verbs.deviceList()) {
            if (list.count() == 0) {
                return DiscoveryResult.unavailable("no RDMA devices: the kernel supports RDMA but has no device; load "
                        + "your NIC's RDMA driver (mlx5_ib for ConnectX), or for Soft-RoCE 'modprobe rdma_rxe' and "
                        + "'rdma link add rxe0 type rxe netdev eth0'; or use jmesh's TCP provider (JMESH_PROVIDER=tcp)");
            }
            for (int i = 0; i < list.count(); i++) {
                String name = list.name(i);
                try {
                    devices.add(scanDevice(verbs, list.device(i), name, list.guid(i), forcedGid, problems));
                } catch (VerbsException e) {
                    problems.add(name + ": skipped: " + e.getMessage());
                }
            }
        } catch (VerbsUnavailableException e) {
            return DiscoveryResult.unavailable(e.getMessage());
        }
        problems.forEach(p -> LOG.warn("{}", p));
        return new DiscoveryResult(devices, problems, null);
    }

    private static RdmaDevice scanDevice(Verbs verbs, MemorySegment device, String name, long guid,
                                         OptionalInt forcedGid, List<String> problems) {
        MemorySegment ctx = verbs.openDevice(device, name);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment devAttr = ibv_device_attr.allocate(arena);
            int rc = io.jmesh.verbs.ffi.verbs_h.ibv_query_device(ctx, devAttr);
            if (rc != 0) {
                throw new VerbsException("ibv_query_device on " + name + " failed: " + Errno.describe(rc), rc);
            }
            int portCount = Byte.toUnsignedInt(ibv_device_attr.phys_port_cnt(devAttr));
            List<GidEntry> gids = gidTable(verbs, ctx, name, portCount, arena);
            List<RdmaPort> ports = new ArrayList<>();
            for (int port = 1; port <= portCount; port++) {
                MemorySegment attr = ibv_port_attr.allocate(arena);
                rc = verbs.queryPort(ctx, port, attr);
                if (rc != 0) {
                    problems.add(name + " port " + port + ": skipped: ibv_query_port failed: " + Errno.describe(rc));
                    continue;
                }
                ports.add(port(verbs, name, port, attr, gids, forcedGid, problems));
            }
            return new RdmaDevice(name, guid, Sysfs.devicePath(name), ports);
        } finally {
            verbs.closeDevice(ctx);
        }
    }

    private static List<GidEntry> gidTable(Verbs verbs, MemorySegment ctx, String name, int portCount, Arena arena) {
        long max = 0;
        for (int port = 1; port <= portCount; port++) {
            MemorySegment attr = ibv_port_attr.allocate(arena);
            if (verbs.queryPort(ctx, port, attr) == 0) {
                max += ibv_port_attr.gid_tbl_len(attr);
            }
        }
        List<GidEntry> gids = new ArrayList<>();
        if (max == 0) {
            return gids;
        }
        MemorySegment entries = ibv_gid_entry.allocateArray(max, arena);
        long n = verbs.queryGidTable(ctx, entries, max, name);
        for (long i = 0; i < n; i++) {
            MemorySegment e = ibv_gid_entry.asSlice(entries, i);
            gids.add(new GidEntry(ibv_gid_entry.gid_index(e), ibv_gid_entry.port_num(e),
                    GidType.of(ibv_gid_entry.gid_type(e)), ibv_gid_entry.gid(e).asSlice(0, 16).toArray(
                    java.lang.foreign.ValueLayout.JAVA_BYTE), ibv_gid_entry.ndev_ifindex(e)));
        }
        return gids;
    }

    private static RdmaPort port(Verbs verbs, String device, int port, MemorySegment attr, List<GidEntry> allGids,
                                 OptionalInt forcedGid, List<String> problems) {
        int state = ibv_port_attr.state(attr);
        boolean active = state == io.jmesh.verbs.ffi.verbs_h.IBV_PORT_ACTIVE();
        int mtu = mtuBytes(ibv_port_attr.active_mtu(attr));
        int linkLayer = Byte.toUnsignedInt(ibv_port_attr.link_layer(attr));
        String layer = linkLayer == io.jmesh.verbs.ffi.verbs_h.IBV_LINK_LAYER_INFINIBAND() ? "InfiniBand" : "Ethernet";
        List<GidEntry> gids = allGids.stream().filter(g -> g.port() == port).toList();
        String netdev = gids.stream().filter(g -> g.ifindex() > 0).map(g -> ifName(g.ifindex()))
                .filter(s -> !s.isEmpty()).findFirst().orElseGet(() -> Sysfs.netdev(device, port));
        List<IpPrefix> prefixes = new ArrayList<>();
        int netdevMtu = 0;
        if (!netdev.isEmpty()) {
            try {
                NetworkInterface nif = NetworkInterface.getByName(netdev);
                if (nif != null) {
                    netdevMtu = nif.getMTU();
                    for (InterfaceAddress a : nif.getInterfaceAddresses()) {
                        prefixes.add(new IpPrefix(a.getAddress(), a.getNetworkPrefixLength()));
                    }
                }
            } catch (SocketException e) {
                problems.add(device + " port " + port + ": cannot read the addresses of " + netdev + ": " + e.getMessage());
            }
        }
        if (!active) {
            problems.add(device + " port " + port + ": " + verbs.portStateString(state) + ", not ACTIVE: check the cable "
                    + "and 'ip link set " + (netdev.isEmpty() ? "<netdev>" : netdev) + " up'");
        }
        List<PortAddress> addresses = mapAddresses(device, port, netdev, prefixes, gids, forcedGid);
        String rate = Sysfs.rate(device, port);
        return new RdmaPort(port, verbs.portStateString(state), active, mtu, layer, rate, Sysfs.rateMbps(rate),
                netdev, netdevMtu, addresses, gids);
    }

    /**
     * Pairs each address of a port's netdev with its GID index: the forced index when one is configured, otherwise
     * the RoCE v2 entry that maps the address, otherwise none with the reason.
     */
    public static List<PortAddress> mapAddresses(String device, int port, String netdev, List<IpPrefix> prefixes,
                                                 List<GidEntry> gids, OptionalInt forcedGid) {
        List<PortAddress> out = new ArrayList<>();
        for (IpPrefix p : prefixes) {
            if (forcedGid.isPresent()) {
                out.add(new PortAddress(p, forcedGid.getAsInt(), null));
                continue;
            }
            int index = GidSelector.roceV2Index(gids, port, p.address());
            out.add(index >= 0 ? new PortAddress(p, index, null)
                    : new PortAddress(p, -1, GidSelector.missingReason(gids, port, p.address(), device, netdev)));
        }
        return out;
    }

    private static String ifName(int ifindex) {
        try {
            NetworkInterface nif = NetworkInterface.getByIndex(ifindex);
            return nif == null ? "" : nif.getName();
        } catch (SocketException e) {
            return "";
        }
    }

    /** {@code enum ibv_mtu} (1..5) to bytes. */
    public static int mtuBytes(int ibvMtu) {
        return ibvMtu >= 1 && ibvMtu <= 5 ? 128 << ibvMtu : 0;
    }
}
