package io.jmesh.cli.doctor;

/**
 * What 'jmesh doctor PEER' learned about one peer.
 *
 * @param peer          the peer as given on the command line
 * @param report        the peer's links (null when its doctor could not be reached)
 * @param provider      the provider the handshake used ("rdma" or "tcp"), null when none ran
 * @param route         the route the connection took, null when none
 * @param handshakeNanos how long the connect (queue-pair handshake) took, 0 when none
 * @param verifiedBytes bytes sent over the new connection and verified by the peer, 0 when none
 * @param error         null, or what failed
 * @param fix           null, or what to do about it
 */
public record PeerResult(String peer, NodeReport report, String provider, String route, long handshakeNanos,
                         long verifiedBytes, String error, String fix) {
    public static PeerResult failed(String peer, NodeReport report, String error, String fix) {
        return new PeerResult(peer, report, null, null, 0, 0, error, fix);
    }
}
