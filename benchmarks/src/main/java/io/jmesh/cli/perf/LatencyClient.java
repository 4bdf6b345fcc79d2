package io.jmesh.cli.perf;

import io.jmesh.api.IdleStrategy;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static io.jmesh.cli.perf.JitSettle.ROUND_NS;
import static io.jmesh.cli.perf.Requests.LAT_AHEAD;
import static io.jmesh.cli.perf.Requests.mark;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * The lat client: ping-pong round trips, size by size, over isend/irecv or, with --op write, as one-sided writes into
 * the peer's memory. The receives posted ahead for the echoes stay posted from one size to the next.
 */
final class LatencyClient {
    /** Latency samples kept per size in duration mode. */
    private static final int MAX_SAMPLES = 1 << 20;

    private final PerfOptions o;
    private final JitSettle jit;
    private final Requests requests;

    LatencyClient(PerfOptions o, JitSettle jit, RemoteRegion peerRegion) {
        this.o = o;
        this.jit = jit;
        this.requests = new Requests(o);
        this.peerRegion = peerRegion;
    }

    /** Ping-pong: warm-up, then measured round trips; returns the result line. */
    String latency(Oob oob, Sender s, Receiver back, Registration reg, long size, long[] totals)
            throws IOException {
        latRegs = new Registration[] {reg};
        idler = o.poll().idleStrategy();
        latMax = new long[] {o.maxSize()};
        long warm = o.warmupFor();
        int capacity = (int) (o.duration() > 0 ? MAX_SAMPLES : Math.min(o.iterations(), Integer.MAX_VALUE - 8));
        long[] rtt = new long[capacity];
        if (peerRegion == null) {
            latPosted = requests.refillAhead(back, latRegs, latMax, latRing, latPosted, latRounds);
        } else {
            // the peer polls the last byte of a size-dependent place: tell it the size; both clear that byte
            reg.memory().set(JAVA_BYTE, o.maxSize() + size - 1, (byte) 0);
            oob.send("size bytes=" + size);
            oob.expect("ok");
        }
        for (long i = 0; i < warm; i++) {
            trip(s, back, reg, size);
        }
        jit.settle(oob, size, () -> {
            long end = System.nanoTime() + ROUND_NS;
            do {
                trip(s, back, reg, size);
            } while (System.nanoTime() - end < 0);
        });
        int n = 0;
        if (o.duration() > 0) {
            long durationNs = o.duration() * 1_000_000_000L;
            long measureStart = System.nanoTime();
            while (n < capacity && System.nanoTime() - measureStart < durationNs) {
                rtt[n++] = trip(s, back, reg, size);
            }
        } else {
            while (n < o.iterations()) {
                rtt[n++] = trip(s, back, reg, size);
            }
        }
        // the receives posted ahead stay for the next size; the server's count is cumulative
        totals[0] = latRounds;
        oob.send("end totals=" + totals[0]);
        oob.expect("done");
        return PerfReport.latLine(size, rtt, n);
    }

    private long trip(Sender s, Receiver back, Registration reg, long size) throws IOException {
        return peerRegion == null ? roundTrip(s, back, reg, size) : writeTrip(s, back, reg, size);
    }

    /** --op write: the peer's memory, whose second half takes this side's writes; null for isend/irecv. */
    private final RemoteRegion peerRegion;
    private static final VarHandle BYTE = JAVA_BYTE.varHandle();

    /**
     * One round trip of --op write, ib_write_lat's algorithm through jmesh's one-sided API: write the message into
     * the peer's memory with the round's mark in its last byte, poll the last byte of this side's landing zone until
     * the peer's echo brings the same mark, then reap the write's completion.
     */
    private long writeTrip(Sender s, Receiver back, Registration reg, long size) throws IOException {
        MemorySegment mem = reg.memory();
        byte mark = mark(latRounds);
        long landing = o.maxSize() + size - 1;
        long t0 = System.nanoTime();
        mem.set(JAVA_BYTE, size - 1, mark);
        int w = requests.writeOrFail(s, reg, size, peerRegion, o.maxSize());
        long spins = 0;
        idler.reset();
        while ((byte) BYTE.getAcquire(mem, landing) != mark) {
            back.poll();            // TCP applies the peer's writes only while the receiver is polled
            idler.idle();
            if ((++spins & 1023) == 0 && System.nanoTime() - t0 > o.timeout().toNanos()) {
                throw new IOException("no echo for " + o.timeout().toSeconds() + " s after " + latRounds
                        + " round trips: the server or the link stalled");
            }
        }
        long t1 = System.nanoTime();
        latRounds++;
        requests.completeSend(s, w);
        return t1 - t0;
    }

    private Registration[] latRegs;
    private long[] latMax;
    private IdleStrategy idler;
    /** Round trips made so far, over all sizes: also the echoes received. */
    private long latRounds;
    /** Receives posted for echoes so far, and their request ids: they stay posted from one size to the next. */
    private long latPosted;
    private final int[] latRing = new int[LAT_AHEAD];

    /** One ping and its echo; returns the round-trip time in nanoseconds. Leaves a receive posted for the next. */
    private long roundTrip(Sender s, Receiver back, Registration reg, long size) throws IOException {
        long t0 = System.nanoTime();
        int send = requests.sendOrFail(s, reg, size);
        long spins = 0;
        int t;
        int recv = latRing[(int) (latRounds % LAT_AHEAD)];
        idler.reset();
        while ((t = back.test(recv)) == 0) {
            idler.idle();
            if ((++spins & 1023) == 0 && System.nanoTime() - t0 > o.timeout().toNanos()) {
                throw new IOException("no echo for " + o.timeout().toSeconds() + " s after " + latRounds
                        + " round trips: the server or the link stalled");
            }
        }
        long t1 = System.nanoTime();
        if (t < 0) {
            throw new IOException("receive failed: " + Status.describe(t) + " " + back.error());
        }
        if (back.size(recv, 0) != size) {
            throw new IOException("the echo has " + back.size(recv, 0) + " bytes, not " + size);
        }
        latRounds++;
        latPosted = requests.refillAhead(back, latRegs, latMax, latRing, latPosted, latRounds);
        requests.completeSend(s, send);
        return t1 - t0;
    }
}
