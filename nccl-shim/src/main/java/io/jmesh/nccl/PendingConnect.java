package io.jmesh.nccl;

import io.jmesh.api.Connector;
import io.jmesh.api.Fabric;
import io.jmesh.api.ListenHandle;
import io.jmesh.api.LocalLink;
import io.jmesh.api.NoRouteException;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.util.List;

/** A p2p connect NCCL started and polls ({@link NcclPlugin#connect}), and why its link was chosen, for the log. */
record PendingConnect(Connector connector, int dev, String why) {
    private static final Logger LOG = LogManager.getLogger(NcclPlugin.class);

    /**
     * Starts a connect. NCCL's device choice is kept when one of its links shares a subnet with the peer (that link is
     * passed to the transport as the preferred one); otherwise the mesh's choice (a link that does reach the peer) is
     * taken, and the log says so. A peer that no link reaches goes through a relay node (the fabric's connect finds
     * it, or throws naming what the routing table knows).
     */
    static PendingConnect start(Fabric f, List<NcclDevice> devices, int dev, byte[] handle) throws NoRouteException {
        ListenHandle peer = ListenHandle.decode(handle);
        List<LocalLink> direct = f.directLinks(peer);
        if (direct.isEmpty()) {
            return new PendingConnect(f.connect(handle, null), dev, " (no link of this node reaches the peer "
                    + peer.prefixes() + ": through a relay node)");
        }
        NcclDevice chosen = dev >= 0 && dev < devices.size() ? devices.get(dev) : null;
        for (LocalLink l : direct) {
            if (chosen != null && chosen.has(l)) {
                return new PendingConnect(f.connect(handle, l.prefix().address().getHostAddress()), dev, "");
            }
        }
        LocalLink mesh = direct.getFirst();
        LOG.info("connect: NCCL's dev {} {} cannot reach the peer {}: overriding with {}", dev,
                chosen == null ? "(unknown)" : chosen.name() + " " + chosen.links(), peer.prefixes(), mesh);
        String why = " (NCCL chose dev " + dev + (chosen == null ? "" : " " + chosen.name()) + ", which has no link to "
                + "the peer " + peer.prefixes() + "; the mesh's link " + mesh + " was used instead)";
        return new PendingConnect(f.connect(handle, null), dev, why);
    }
}
