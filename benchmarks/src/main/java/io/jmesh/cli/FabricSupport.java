package io.jmesh.cli;

import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.transport.discovery.Discovery;
import io.jmesh.transport.discovery.DiscoveryResult;
import io.jmesh.transport.discovery.PortAddress;
import io.jmesh.transport.discovery.RdmaDevice;
import io.jmesh.transport.discovery.RdmaPort;
import io.jmesh.api.ListenAddress;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;

import java.util.List;

/** What the commands share: the configuration with command-line overrides, device choice, discovery. */
public final class FabricSupport {
    private FabricSupport() {
    }

    /**
     * The handle restricted to the addresses that {@code device} can reach, so that the route selection of the
     * connector can only pick that device (what 'jmesh bw -d' means). Null device: the handle unchanged.
     *
     * @throws IllegalArgumentException naming the device's links and the peer's addresses when they share no subnet
     */
    public static ListenHandle restrictPeer(ListenHandle peer, List<LocalLink> links, String device) {
        if (device == null) {
            return peer;
        }
        List<LocalLink> mine = devicesLinks(links, device);
        List<ListenAddress> keep = peer.addresses().stream()
                .filter(a -> mine.stream().anyMatch(l -> l.prefix().sharesSubnetWith(a.prefix()))).toList();
        if (keep.isEmpty()) {
            throw new IllegalArgumentException("device " + device + " " + mine.stream().map(l -> l.prefix()
                    .toString()).toList() + " shares no subnet with the peer " + peer.prefixes() + ": pick the "
                    + "device cabled to that peer (see 'jmesh devices'), or leave -d out");
        }
        return new ListenHandle(peer.flags(), peer.secret(), keep);
    }

    /**
     * The local link a direct connection to {@code peer} takes, or null where no link shares a subnet with it (the
     * connection goes through a relay node).
     */
    public static LocalLink directLink(Fabric fabric, ListenHandle peer) {
        List<LocalLink> direct = fabric.directLinks(peer);
        return direct.isEmpty() ? null : direct.getFirst();
    }

    /** A listener's own handle restricted to {@code device}'s addresses (the server side of -d). */
    public static ListenHandle restrictOwn(ListenHandle own, List<LocalLink> links, String device) {
        if (device == null) {
            return own;
        }
        List<LocalLink> mine = devicesLinks(links, device);
        List<ListenAddress> keep = own.addresses().stream()
                .filter(a -> mine.stream().anyMatch(l -> l.prefix().address().equals(a.prefix().address()))).toList();
        if (keep.isEmpty()) {
            throw new IllegalArgumentException("device " + device + " has no address this listener uses");
        }
        return new ListenHandle(own.flags(), own.secret(), keep);
    }

    private static List<LocalLink> devicesLinks(List<LocalLink> links, String device) {
        List<LocalLink> mine = links.stream().filter(l -> l.device().equals(device)).toList();
        if (mine.isEmpty()) {
            throw new IllegalArgumentException("device '" + device + "' has no usable link; usable: "
                    + links.stream().map(LocalLink::toString).toList() + " (see 'jmesh devices'; with the TCP "
                    + "provider every link is device 'tcp')");
        }
        return mine;
    }

    /** The port behind a local address (for MTU and rate), or null (TCP, or not found). */
    public static RdmaPort portOf(DiscoveryResult found, String device, java.net.InetAddress address) {
        for (RdmaDevice d : found.devices()) {
            if (!d.name().equals(device)) {
                continue;
            }
            for (RdmaPort p : d.ports()) {
                for (PortAddress a : p.addresses()) {
                    if (a.prefix().address().equals(address)) {
                        return p;
                    }
                }
            }
        }
        return null;
    }

    /** Discovery with the context's GID index, for headers; a bad setting fails here, naming it. */
    public static DiscoveryResult discover(Context context) {
        return Discovery.scan(context.conclude().gidIndex());
    }

    /** Opens a fabric; a bad setting becomes an IllegalArgumentException naming it ({@link Context#conclude()}). */
    public static Fabric open(Context context) {
        return Fabric.open(context);
    }
}
