package io.jmesh.transport.tcp;

import io.jmesh.api.Setting;
import io.jmesh.api.IpPrefix;
import io.jmesh.api.LocalLink;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.ToLongFunction;

/**
 * Which local addresses the TCP provider uses: those of {@code JMESH_ADDRESSES} when set (each must be an address of
 * this host), otherwise every address of every interface that is up, except loopback and link-local ones, each with
 * its real prefix. The speed hint is the interface's {@code /sys/class/net/<if>/speed} (Mb/s), 0 when unknown.
 */
final class TcpLinks {
    /** One address of one interface, as the OS reports it. */
    record InterfaceAddressInfo(String device, IpPrefix prefix, boolean up, boolean loopback) {
    }

    private TcpLinks() {
    }

    static List<LocalLink> discover(List<IpPrefix> wanted) {
        return select(wanted, interfaces(), TcpLinks::speedMbps);
    }

    /**
     * The links to use.
     *
     * @param wanted     the configured addresses, empty for "every usable address"
     * @param interfaces this host's interface addresses
     * @throws IllegalArgumentException when a configured address is not on this host or its interface is down
     * @throws IllegalStateException    when nothing is configured and no interface has a usable address
     */
    static List<LocalLink> select(List<IpPrefix> wanted, List<InterfaceAddressInfo> interfaces,
                                  ToLongFunction<String> speed) {
        List<LocalLink> links = new ArrayList<>();
        if (!wanted.isEmpty()) {
            for (IpPrefix w : wanted) {
                InterfaceAddressInfo match = find(w.address(), interfaces);
                if (match == null) {
                    throw new IllegalArgumentException(Setting.ADDRESSES.env() + " lists " + w + ", which is not "
                            + "an address of this host (its addresses: " + describe(interfaces) + "); correct the "
                            + "list or assign the address (check 'ip addr')");
                }
                if (!match.up()) {
                    throw new IllegalArgumentException(Setting.ADDRESSES.env() + " lists " + w + ", but its "
                            + "interface " + match.device() + " is down; bring it up ('ip link set " + match.device()
                            + " up') or remove the address");
                }
                links.add(LocalLink.tcp(w, match.loopback() ? 0 : Math.max(0, speed.applyAsLong(match.device()))));
            }
            return List.copyOf(links);
        }
        for (InterfaceAddressInfo i : interfaces) {
            InetAddress a = i.prefix().address();
            if (i.up() && !i.loopback() && !a.isLoopbackAddress() && !a.isLinkLocalAddress()
                    && !a.isAnyLocalAddress() && !a.isMulticastAddress()) {
                links.add(LocalLink.tcp(i.prefix(), Math.max(0, speed.applyAsLong(i.device()))));
            }
        }
        if (links.isEmpty()) {
            throw new IllegalStateException("no usable address for the TCP provider: no interface that is up has an "
                    + "address other than loopback and link-local (" + describe(interfaces) + "); assign one per "
                    + "mesh link (check 'ip addr') or list them in " + Setting.ADDRESSES.env());
        }
        return List.copyOf(links);
    }

    /**
     * The interface that has {@code address}: exactly, or for a loopback address inside a loopback interface's
     * prefix (Linux answers the whole of 127.0.0.0/8 on lo, so any 127.x address can be bound).
     */
    private static InterfaceAddressInfo find(InetAddress address, List<InterfaceAddressInfo> interfaces) {
        for (InterfaceAddressInfo i : interfaces) {
            if (i.prefix().address().equals(address)) {
                return i;
            }
        }
        if (address.isLoopbackAddress()) {
            for (InterfaceAddressInfo i : interfaces) {
                if (i.loopback() && i.prefix().contains(address)) {
                    return i;
                }
            }
        }
        return null;
    }

    private static String describe(List<InterfaceAddressInfo> interfaces) {
        if (interfaces.isEmpty()) {
            return "none";
        }
        List<String> parts = new ArrayList<>();
        for (InterfaceAddressInfo i : interfaces) {
            parts.add(i.device() + " " + i.prefix() + (i.up() ? "" : " (down)"));
        }
        return String.join(", ", parts);
    }

    /** Every address of every interface. */
    static List<InterfaceAddressInfo> interfaces() {
        List<InterfaceAddressInfo> out = new ArrayList<>();
        try {
            for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                boolean up = ni.isUp();
                boolean loopback = ni.isLoopback();
                for (InterfaceAddress ia : ni.getInterfaceAddresses()) {
                    InetAddress a = ia.getAddress();
                    int max = a.getAddress().length * 8;
                    int prefix = ia.getNetworkPrefixLength();
                    if (prefix < 0 || prefix > max) {
                        prefix = max;
                    }
                    out.add(new InterfaceAddressInfo(ni.getName(), new IpPrefix(a, prefix), up, loopback));
                }
            }
        } catch (SocketException e) {
            throw new UncheckedIOException("cannot list the network interfaces: " + e.getMessage(), e);
        }
        return out;
    }

    /** The interface's speed in Mb/s from sysfs, 0 when unknown (virtual interfaces report -1 or nothing). */
    static long speedMbps(String device) {
        if (device.isEmpty() || device.contains("/") || device.startsWith(".")) {
            return 0;
        }
        try {
            long v = Long.parseLong(Files.readString(Path.of("/sys/class/net", device, "speed")).trim());
            return Math.max(0, v);
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }
}
