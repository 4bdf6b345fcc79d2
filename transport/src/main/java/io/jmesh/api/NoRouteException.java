package io.jmesh.api;

import java.util.List;

/**
 * No local link shares a subnet with any of the peer's addresses. The message lists both sides' addresses, says why
 * near misses did not count, and names the fix; NCCL shows it to the user as the reason a connect failed.
 */
public final class NoRouteException extends Exception {
    private final List<IpPrefix> localAddresses;
    private final List<IpPrefix> peerAddresses;

    public NoRouteException(String message, List<IpPrefix> localAddresses, List<IpPrefix> peerAddresses) {
        super(message);
        this.localAddresses = List.copyOf(localAddresses);
        this.peerAddresses = List.copyOf(peerAddresses);
    }

    public List<IpPrefix> localAddresses() {
        return localAddresses;
    }

    public List<IpPrefix> peerAddresses() {
        return peerAddresses;
    }
}
