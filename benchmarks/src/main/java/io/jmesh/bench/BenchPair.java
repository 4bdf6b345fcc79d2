package io.jmesh.bench;

import io.jmesh.api.CloseHelper;
import io.jmesh.api.Connections;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.IdleStrategy;
import io.jmesh.api.Listener;
import io.jmesh.api.PeerConnections;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;
import io.jmesh.api.NoRouteException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Two jmesh nodes in one JVM, driven by one thread: the pair holds a connection A to B and one B to A, with a
 * registered buffer on each side. For "tcp" the nodes are two fabrics on 127.0.77.1/24 and 127.0.77.2/24 (loopback);
 * for "rdma" one fabric on this machine's RDMA links connects to itself (in the testbed's 'single' topology, rxe0
 * talking to itself), because opening a second verbs fabric runs device discovery again while the first one's
 * connections are open, which was followed by EBADF at close in the testbed (reported to the transport).
 */
final class BenchPair implements AutoCloseable {
    /** A bound on every wait in the benchmarks: it only turns a hang into a failure. */
    static final long PATIENCE_NS = 60_000_000_000L;

    final Fabric a;
    final Fabric b;
    final Sender ab;
    final Receiver abIn;
    final Sender ba;
    final Receiver baIn;
    final Registration regA;
    final Registration regB;
    private final Arena arena = Arena.ofShared();
    private final List<AutoCloseable> open = new ArrayList<>();

    BenchPair(String provider, long bytes) throws Exception {
        try {
            a = Fabric.open(config(provider, "127.0.77.1/24"));
            open.add(a);
            if (provider.equals("rdma")) {
                b = a;
            } else {
                b = Fabric.open(config(provider, "127.0.77.2/24"));
                open.add(b);
            }
            MemorySegment ma = arena.allocate(Math.max(1, bytes), 4096);
            MemorySegment mb = arena.allocate(Math.max(1, bytes), 4096);
            regA = a.register(ma);
            open.add(regA);
            regB = b.register(mb);
            open.add(regB);
            Listener la = a.listen();
            open.add(la);
            Listener lb = b.listen();
            open.add(lb);
            PeerConnections<String> nodeA = PeerConnections.start(a, la, Map.of("B", lb.handle()));
            open.add(nodeA);
            PeerConnections<String> nodeB = PeerConnections.start(b, lb, Map.of("A", la.handle()));
            open.add(nodeB);
            Connections.awaitAll(Duration.ofNanos(PATIENCE_NS), IdleStrategy.controlPlane(), List.of(nodeA, nodeB));
            ab = nodeA.sender("B");
            abIn = nodeB.receiver("A");
            ba = nodeB.sender("A");
            baIn = nodeA.receiver("B");
        } catch (Exception | Error e) {
            Throwable t = CloseHelper.closeAllCatching(closing());
            if (t != null) {
                e.addSuppressed(t);
            }
            throw e;
        }
    }

    private static Context config(String provider, String loopbackAddress) throws NoRouteException {
        return switch (provider) {
            case "tcp" -> new Context().provider("tcp").addresses(loopbackAddress);
            case "rdma" -> new Context().provider("rdma");
            default -> throw new IllegalArgumentException("provider '" + provider + "': expected tcp or rdma");
        };
    }

    /** Fails a benchmark with the status and the connection's own explanation (the failure path only). */
    static IllegalStateException failure(String what, int status, String error) {
        return new IllegalStateException(what + ": " + Status.describe(status) + (error == null ? "" : ": " + error));
    }

    static IllegalStateException hang(String what) {
        return new IllegalStateException(what + " made no progress for 60 s (a hang)");
    }

    /** What the pair holds, connections first, the memory last. */
    private List<AutoCloseable> closing() {
        List<AutoCloseable> all = new ArrayList<>(open.reversed());
        all.add(arena);
        return all;
    }

    @Override
    public void close() {
        CloseHelper.closeAll(closing());
    }
}
