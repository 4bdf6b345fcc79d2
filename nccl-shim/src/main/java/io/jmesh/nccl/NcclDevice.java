package io.jmesh.nccl;

import io.jmesh.transport.discovery.Discovery;
import io.jmesh.transport.discovery.DiscoveryResult;
import io.jmesh.transport.discovery.RdmaDevice;
import io.jmesh.api.LocalLink;

import java.io.IOException;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * One device as NCCL sees it. With verbs it is an RDMA port (device:port) with all its addresses; with TCP it is one
 * interface with its addresses. NCCL picks a device per channel; the links say which peers it can reach.
 *
 * @param name      "mlx5_0", "mlx5_0:2" (for ports after the first), "eth0"
 * @param pciPath   the sysfs device path NCCL uses for topology, or null (virtual devices)
 * @param guid      unique per device (NCCL merges devices with equal GUIDs)
 * @param port      the port number (0 for TCP)
 * @param speedMbps the link speed, 0 when unknown
 * @param links     the transport's links on this device
 */
record NcclDevice(String name, String pciPath, long guid, int port, long speedMbps, List<LocalLink> links) {
    NcclDevice {
        links = List.copyOf(links);
    }

    boolean has(LocalLink link) {
        return links.contains(link);
    }

    /** The devices of an open fabric, in a stable order (device name, then port, then address). */
    static List<NcclDevice> of(String provider, List<LocalLink> links, OptionalInt gidIndex) {
        Map<String, List<LocalLink>> groups = new LinkedHashMap<>();
        boolean tcp = provider.equals("tcp");
        for (LocalLink l : links) {
            String key = tcp ? interfaceName(l) : l.device() + (l.port() > 1 ? ":" + l.port() : "");
            groups.computeIfAbsent(key, k -> new ArrayList<>()).add(l);
        }
        Map<String, RdmaDevice> rdma = new LinkedHashMap<>();
        if (!tcp) {
            DiscoveryResult found = Discovery.scan(gidIndex);
            for (RdmaDevice d : found.devices()) {
                rdma.put(d.name(), d);
            }
        }
        List<NcclDevice> out = new ArrayList<>();
        List<String> names = new ArrayList<>(groups.keySet());
        names.sort(null);
        for (String name : names) {
            List<LocalLink> ls = groups.get(name);
            LocalLink first = ls.getFirst();
            long speed = ls.stream().mapToLong(LocalLink::speedMbps).max().orElse(0);
            if (tcp) {
                String ifName = interfaceName(first);
                out.add(new NcclDevice(name, sysfsDevice(Path.of("/sys/class/net", ifName, "device")),
                        tcpGuid(ifName, out.size()), 0, speed, ls));
            } else {
                RdmaDevice d = rdma.get(first.device());
                String pci = d != null && !d.pciPath().isEmpty() ? d.pciPath()
                        : sysfsDevice(Path.of("/sys/class/infiniband", first.device(), "device"));
                long guid = d != null && d.guid() != 0 ? d.guid() : out.size() + 1L;
                // ports of one device share the node GUID; NCCL would merge them, so set the port in the top bits
                out.add(new NcclDevice(name, pci, guid ^ ((long) first.port() << 56), first.port(), speed, ls));
            }
        }
        return List.copyOf(out);
    }

    /** The interface that carries a TCP link's address, or the address itself when Java cannot tell. */
    private static String interfaceName(LocalLink l) {
        try {
            NetworkInterface ni = NetworkInterface.getByInetAddress(l.prefix().address());
            if (ni != null) {
                return ni.getName();
            }
        } catch (SocketException e) {
            // fall through: name it by its address
        }
        return l.prefix().address().getHostAddress();
    }

    /** The resolved sysfs device directory, or null for virtual interfaces (no such link). */
    private static String sysfsDevice(Path p) {
        try {
            return Files.exists(p) ? p.toRealPath().toString() : null;
        } catch (IOException e) {
            return null;
        }
    }

    /** A per-interface id: the MAC address when there is one, else the index. */
    private static long tcpGuid(String ifName, int index) {
        try {
            String mac = Files.readString(Path.of("/sys/class/net", ifName, "address")).trim().replace(":", "");
            if (!mac.isEmpty() && !mac.equals("000000000000")) {
                return Long.parseLong(mac, 16);
            }
        } catch (IOException | RuntimeException e) {
            // fall through
        }
        return index + 1L;
    }

    @Override
    public String toString() {
        return name + " " + links;
    }
}
