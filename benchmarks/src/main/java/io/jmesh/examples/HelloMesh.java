package io.jmesh.examples;

import io.jmesh.api.Connections;
import io.jmesh.api.Context;
import io.jmesh.api.Fabric;
import io.jmesh.api.IdleStrategy;
import io.jmesh.api.Listener;
import io.jmesh.api.PeerConnections;
import io.jmesh.api.Progress;
import io.jmesh.api.ProviderUnavailableException;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * A tour of the jmesh API in one process: two nodes, A and B, each with its own {@link Fabric}. B listens, A
 * connects (a connection carries data one way, A to B; a second one carries B to A); both register memory; A sends
 * tagged messages to B; B sends A the descriptor of its memory ({@link RemoteRegion}) as a message; A writes into
 * B's memory and reads it back one-sided; then the same through {@link Progress} futures; every byte is checked, and
 * everything is closed in order: agent, connections, listeners, registrations, fabrics, memory.
 *
 * <p>Without settings it runs on verbs when this machine has a usable RDMA link, and otherwise on TCP over loopback
 * (A on 127.0.0.1/8, B on 127.0.0.2/8). {@code JMESH_PROVIDER} and {@code JMESH_ADDRESSES} choose otherwise. Run:
 * <pre>
 *   java --enable-native-access=ALL-UNNAMED -cp 'benchmarks/target/jmesh-benchmarks.jar:benchmarks/target/lib/*' \
 *       io.jmesh.examples.HelloMesh
 * </pre>
 * It prints one line per step and ends with "HelloMesh: OK" (exit 0); a check that fails prints what differed and
 * exits 1; a setup error (no route, no address) exits 2 with the reason.
 */
public final class HelloMesh {
    /** Bounds every wait; only turns a hang into a clear failure. */
    private static final Duration PATIENCE = Duration.ofSeconds(30);
    private static final long PATIENCE_NANOS = PATIENCE.toNanos();
    private static final int SIZE = 4 << 20;

    private final PrintStream out;

    private HelloMesh(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) {
        Map<String, String> properties = new HashMap<>();
        System.getProperties().forEach((k, v) -> properties.put(String.valueOf(k), String.valueOf(v)));
        System.exit(run(args, System.out, System.err, properties, System.getenv()));
    }

    /** Runs the tour; returns the exit code. {@code properties} and {@code environment} configure jmesh. */
    public static int run(String[] args, PrintStream out, PrintStream err, Map<String, String> properties,
                          Map<String, String> environment) {
        if (args.length > 0) {
            err.println("usage: HelloMesh (no arguments; JMESH_PROVIDER and JMESH_ADDRESSES choose the transport)");
            return 2;
        }
        try {
            new HelloMesh(out).tour(properties, environment);
            out.println("HelloMesh: OK");
            return 0;
        } catch (CheckFailed e) {
            err.println("HelloMesh: FAILED: " + e.getMessage());
            return 1;
        } catch (Exception e) {
            err.println("HelloMesh: cannot run: " + e.getMessage());
            return 2;
        }
    }

    /** A check of the data that did not hold. */
    private static final class CheckFailed extends RuntimeException {
        CheckFailed(String message) {
            super(message);
        }
    }

    /** Opens node A and node B: as configured, or verbs when usable, or TCP over loopback. */
    private static Fabric[] open(Map<String, String> properties, Map<String, String> environment) {
        Context config = Context.from(properties, environment).conclude();
        String provider = config.provider();
        if (!config.addresses().isEmpty() || !(provider.equals("auto") || provider.equals("tcp"))) {
            return new Fabric[] {Fabric.open(config), Fabric.open(config)};
        }
        if (provider.equals("auto")) {
            try {
                Fabric a = Fabric.open(Context.from(properties, environment).provider("rdma"));
                try {
                    return new Fabric[] {a, Fabric.open(Context.from(properties, environment).provider("rdma"))};
                } catch (RuntimeException e) {
                    a.close();
                    throw e;
                }
            } catch (ProviderUnavailableException e) {
                // no RDMA here: TCP over loopback below
            }
        }
        Fabric a = Fabric.open(loopback(properties, environment, "127.0.0.1/8"));
        try {
            return new Fabric[] {a, Fabric.open(loopback(properties, environment, "127.0.0.2/8"))};
        } catch (RuntimeException e) {
            a.close();
            throw e;
        }
    }

    private static Context loopback(Map<String, String> properties, Map<String, String> environment,
                                    String address) {
        return Context.from(properties, environment).provider("tcp").addresses(address);
    }

    private void tour(Map<String, String> properties, Map<String, String> environment) throws Exception {
        try (Arena arena = Arena.ofShared()) {                 // closed last: the memory outlives its users
            Fabric[] nodes = open(properties, environment);
            try (Fabric a = nodes[0];
                 Fabric b = nodes[1]) {
                out.println("1. opened two nodes on " + a.provider() + ": A on " + a.links() + ", B on "
                        + b.links());
                MemorySegment aMem = arena.allocate(SIZE, 4096);
                MemorySegment bMem = arena.allocate(SIZE, 4096);
                try (Registration aReg = a.register(aMem);
                     Registration bReg = b.register(bMem)) {
                    out.println("2. registered " + SIZE + " bytes on each node");
                    connected(a, b, aMem, bMem, aReg, bReg);
                }
            }
        }
        out.println("8. closed the registrations, then the fabrics, then the memory");
    }

    /** Connects A to B and B to A, runs the steps, closes the connections and listeners. */
    private void connected(Fabric a, Fabric b, MemorySegment aMem, MemorySegment bMem, Registration aReg,
                           Registration bReg) throws Exception {
        try (Listener bListens = b.listen();
             Listener aListens = a.listen()) {
            out.println("3. B listens: its handle is " + bListens.handle().length + " bytes ("
                    + bListens.handleText().substring(0, 12) + "...); A listens too");
            // each node connects to the other and accepts its connection; both wait together (one thread)
            try (PeerConnections<String> aNode = PeerConnections.start(a, aListens, Map.of("B", bListens.handle()));
                 PeerConnections<String> bNode = PeerConnections.start(b, bListens, Map.of("A", aListens.handle()))) {
                Connections.awaitAll(PATIENCE, IdleStrategy.controlPlane(), List.of(aNode, bNode));
                out.println("   A -> B over " + aNode.route("B") + "; B -> A over " + bNode.route("A"));
                steps(aMem, bMem, aReg, bReg, aNode.sender("B"), bNode.receiver("A"), bNode.sender("A"),
                        aNode.receiver("B"));
            }                                                  // closes the connections of both nodes
        }
        out.println("7. closed the connections, then the listeners");
    }

    private void steps(MemorySegment aMem, MemorySegment bMem, Registration aReg, Registration bReg, Sender aToB,
                       Receiver bFromA, Sender bToA, Receiver aFromB) throws Exception {
        // 4. tagged messages: B posts one grouped receive of three buffers, A sends in another order
        fill(aMem, 0, SIZE, 42);
        long[] sizes = {4096, 65536, 1 << 20};
        long[] at = {0, 4096, 4096 + 65536};
        int recv = bFromA.irecv(3, new Registration[] {bReg, bReg, bReg}, at, sizes, new int[] {1, 2, 3});
        check(recv >= 0, "irecv: " + Status.describe(recv));
        int[] sends = new int[3];
        for (int tag : new int[] {3, 1, 2}) {
            sends[tag - 1] = retry(aToB, aReg, at[tag - 1], sizes[tag - 1], tag);
        }
        long end = System.nanoTime() + PATIENCE_NANOS;
        boolean[] done = new boolean[4];
        while (!(done[0] && done[1] && done[2] && done[3])) {
            for (int i = 0; i < 3; i++) {
                done[i] = done[i] || ok(aToB.test(sends[i]), aToB, sends[i]);
            }
            done[3] = done[3] || okRecv(bFromA.test(recv), bFromA);
            patience(end, "the tagged messages");
        }
        for (int i = 0; i < 3; i++) {
            check(bFromA.size(recv, i) == sizes[i], "buffer " + i + " got " + bFromA.size(recv, i) + " bytes");
        }
        same(aMem, 0, bMem, 0, at[2] + sizes[2], "the tagged messages");
        out.println("4. A sent three messages with tags 3, 1, 2; B's grouped receive matched them by tag: "
                + sizes[0] + " + " + sizes[1] + " + " + sizes[2] + " bytes verified");

        // 5. B tells A where its memory is (over the B -> A connection), A writes into it one-sided
        byte[] descriptor = bReg.remote().encode();
        MemorySegment wire = aMem.asSlice(SIZE - 4096, 4096);
        MemorySegment bOut = bMem.asSlice(SIZE - 4096, 4096);
        bOut.copyFrom(MemorySegment.ofArray(descriptor));
        int rq = aFromB.irecv(1, new Registration[] {aReg}, new long[] {SIZE - 4096}, new long[] {4096},
                new int[] {99});
        int sq = retry(bToA, bReg, SIZE - 4096, descriptor.length, 99);
        end = System.nanoTime() + PATIENCE_NANOS;
        boolean sent = false;
        boolean got = false;
        while (!sent || !got) {
            sent = sent || ok(bToA.test(sq), bToA, sq);
            got = got || okRecv(aFromB.test(rq), aFromB);
            patience(end, "the region descriptor");
        }
        RemoteRegion bRegion = RemoteRegion.decode(wire.asSlice(0, aFromB.size(rq, 0)).toArray(JAVA_BYTE));
        long half = SIZE / 2;
        fill(aMem, 0, half, 7);
        int w = aToB.write(aReg, 0, half, bRegion, half);
        check(w >= 0, "write: " + Status.describe(w));
        // over TCP, B's receiver applies the write while B polls it; on verbs the NIC does
        await(aToB, w, bFromA, "the one-sided write");
        same(aMem, 0, bMem, half, half, "the one-sided write");
        out.println("5. B sent A its region (" + descriptor.length + " bytes); A wrote " + half
                + " bytes into it one-sided: verified on B");

        // 6. A reads it back one-sided into fresh memory, then the same through futures
        aMem.asSlice(half, half).fill((byte) 0);
        int r = aToB.read(aReg, half, half, bRegion, half);
        check(r >= 0, "read: " + Status.describe(r));
        await(aToB, r, bFromA, "the one-sided read");
        same(bMem, half, aMem, half, half, "the one-sided read");
        out.println("6. A read " + half + " bytes back one-sided: verified");
        futures(aMem, bMem, aReg, bReg, aToB, bFromA, bRegion);
    }

    /** The same kinds of operation through a {@link Progress} agent, which owns A's sender and B's receiver now. */
    private void futures(MemorySegment aMem, MemorySegment bMem, Registration aReg, Registration bReg, Sender aToB,
                         Receiver bFromA, RemoteRegion bRegion) throws Exception {
        fill(aMem, 0, SIZE, 2024);
        try (Progress progress = Progress.start()) {
            progress.serve(bFromA);                               // B's side of one-sided operations (TCP)
            CompletableFuture<long[]> received = progress.recv(bFromA, 1, new Registration[] {bReg},
                    new long[] {0}, new long[] {1 << 20}, new int[] {5});
            CompletableFuture<Long> sent = progress.send(aToB, aReg, 0, 1 << 20, 5);
            CompletableFuture<Long> written = progress.write(aToB, aReg, 1 << 20, 1 << 20, bRegion, 1 << 20);
            CompletableFuture<Long> read = written.thenCompose(n ->
                    progress.read(aToB, aReg, 2 << 20, 1 << 20, bRegion, 1 << 20));
            CompletableFuture.allOf(received, sent, read).get(PATIENCE_NANOS, TimeUnit.NANOSECONDS);
            check(received.join()[0] == 1 << 20 && sent.join() == 1 << 20 && read.join() == 1 << 20,
                    "futures reported " + received.join()[0] + ", " + sent.join() + ", " + read.join() + " bytes");
        }
        same(aMem, 0, bMem, 0, 2 << 20, "the send and the write through futures");
        same(aMem, 1 << 20, aMem, 2 << 20, 1 << 20, "the read through futures");
        out.println("   futures: a receive, a send, a write and a read chained on it, through one Progress agent: "
                + "verified; the agent is closed");
    }

    private static int retry(Sender s, Registration reg, long offset, long length, int tag) {
        long end = System.nanoTime() + PATIENCE_NANOS;
        int req;
        while ((req = s.isend(reg, offset, length, tag)) == Status.NOT_READY) {   // until the receiver has posted
            patience(end, "a send with tag " + tag);
        }
        check(req >= 0, "isend: " + Status.describe(req) + " " + s.failure(req));
        return req;
    }

    /** Tests a sender's request until it completes, polling the receiving side meanwhile (same process). */
    private static void await(Sender s, int req, Receiver owner, String what) {
        long end = System.nanoTime() + PATIENCE_NANOS;
        while (!ok(s.test(req), s, req)) {
            owner.poll();
            patience(end, what);
        }
    }

    private static boolean ok(int t, Sender s, int req) {
        if (t < 0) {
            throw new IllegalStateException(Status.describe(t) + ": " + s.failure(req));
        }
        return t == 1;
    }

    private static boolean okRecv(int t, Receiver r) {
        if (t < 0) {
            throw new IllegalStateException(Status.describe(t) + ": " + r.error());
        }
        return t == 1;
    }

    private static void patience(long end, String what) {
        if (System.nanoTime() - end > 0) {
            throw new IllegalStateException(what + " did not complete within "
                    + TimeUnit.NANOSECONDS.toSeconds(PATIENCE_NANOS) + " s");
        }
        Thread.onSpinWait();
    }

    private static void fill(MemorySegment m, long offset, long length, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i < length; i++) {
            m.set(JAVA_BYTE, offset + i, (byte) r.nextInt());
        }
    }

    private static void same(MemorySegment x, long xo, MemorySegment y, long yo, long n, String what) {
        long at = x.asSlice(xo, n).mismatch(y.asSlice(yo, n));
        check(at < 0, what + ": byte " + at + " differs");
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new CheckFailed(what);
        }
    }
}
