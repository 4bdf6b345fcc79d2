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

import static io.jmesh.cli.perf.Requests.LAT_AHEAD;
import static io.jmesh.cli.perf.Requests.mark;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/** The lat server's loops: echo every message back (isend/irecv), or every one-sided write (--op write). */
final class LatencyServer {
    private static final VarHandle BYTE = JAVA_BYTE.varHandle();
    /**
     * How often an idle loop looks at the control channel. By time, not by loop count: a count sized for spinning
     * (thousands of polls a millisecond) made a parking loop (up to 2 ms a poll) notice the client's 'bye' ~16 s late.
     */
    static final long CONTROL_CHECK_NS = 1_000_000;

    private final PerfOptions o;
    private final ServerLines lines;
    private final Requests requests;

    LatencyServer(PerfOptions o, ServerLines lines) {
        this.o = o;
        this.lines = lines;
        this.requests = new Requests(o);
    }

    /**
     * lat server: sends every message it receives straight back, with its size. Like the client, it keeps {@link
     * #LAT_AHEAD} receives posted and reposts them in batches.
     */
    void echo(Oob oob, Receiver r, Sender s, Registration reg, long maxSize) throws IOException {
        Registration[] regs = {reg};
        long[] max = {maxSize};
        int[] ring = new int[LAT_AHEAD];
        long posted = 0;
        long received = 0;
        posted = requests.refillAhead(r, regs, max, ring, posted, received);
        int send = -1;
        IdleStrategy idler = o.poll().idleStrategy();
        long echoed = 0;
        long target = -1;
        long lastProgress = System.nanoTime();
        long timeoutNs = o.timeout().toNanos();
        for (long nextCheck = System.nanoTime(); ; ) {
            int recv = ring[(int) (received % LAT_AHEAD)];
            int t = r.test(recv);
            if (t == 1) {
                long n = r.size(recv, 0);
                received++;
                int previous = send;
                send = requests.sendOrFail(s, reg, n);      // the echo first: it is what the client waits for
                if (previous >= 0) {
                    requests.completeSend(s, previous);
                }
                posted = requests.refillAhead(r, regs, max, ring, posted, received);
                echoed++;
                lastProgress = System.nanoTime();
                idler.reset();
            } else if (t < 0) {
                throw new IOException("receive failed: " + Status.describe(t) + " " + r.error());
            } else {
                idler.idle();
            }
            if (target >= 0 && echoed == target) {
                if (send >= 0) {
                    requests.completeSend(s, send);
                    send = -1;
                }
                oob.send("done");
                target = -1;
            }
            long now = t == 1 ? 0 : System.nanoTime(); // the check is a syscall: only between echoes
            if (t != 1 && now - nextCheck >= 0) {
                nextCheck = now + CONTROL_CHECK_NS;
                if (lines.pending(oob, now, lastProgress)) {
                    String line = lines.control(oob);
                    if (line == null) {
                        // answered
                    } else if (line.equals("bye")) {
                        if (send >= 0) {
                            requests.completeSend(s, send);
                        }
                        oob.send("bye");
                        return;
                    } else {
                        target = ServerLines.echoTarget(line, echoed);
                    }
                    lastProgress = now;
                } else if (now - lastProgress > timeoutNs) {
                    // not only while the client waits for "done": a client that vanished mid-run says nothing
                    throw target >= 0 ? lines.stalled(echoed, target) : lines.silent("echoed " + echoed);
                }
            }
        }
    }

    /**
     * lat server with --op write: polls the last byte of its landing zone for the client's next mark, writes the
     * same number of bytes back with that mark into the client's landing zone, and reaps the write's completion, as
     * ib_write_lat's server does. The client names each size over the out-of-band channel first.
     */
    void echoWrites(Oob oob, Receiver r, Sender s, Registration reg, long maxSize, RemoteRegion peer)
            throws IOException {
        MemorySegment mem = reg.memory();
        IdleStrategy idler = o.poll().idleStrategy();
        long size = -1;
        long echoed = 0;
        long target = -1;
        long lastProgress = System.nanoTime();
        long timeoutNs = o.timeout().toNanos();
        for (long nextCheck = System.nanoTime(); ; ) {
            boolean got = size > 0 && (byte) BYTE.getAcquire(mem, maxSize + size - 1) == mark(echoed);
            if (got) {
                mem.set(JAVA_BYTE, size - 1, mark(echoed));
                int w = requests.writeOrFail(s, reg, size, peer, maxSize);
                requests.completeSend(s, w);
                echoed++;
                lastProgress = System.nanoTime();
                idler.reset();
            } else {
                r.poll();
                idler.idle();
            }
            if (target >= 0 && echoed == target) {
                oob.send("done");
                target = -1;
            }
            long now = got ? 0 : System.nanoTime(); // the check is a syscall: only between echoes
            if (!got && now - nextCheck >= 0) {
                nextCheck = now + CONTROL_CHECK_NS;
                if (lines.pending(oob, now, lastProgress)) {
                    String line = lines.control(oob);
                    if (line == null) {
                        // answered
                    } else if (line.equals("bye")) {
                        oob.send("bye");
                        return;
                    } else if (line.startsWith("size ")) {
                        size = Oob.number(Oob.fields(line, "size"), "bytes", 1, maxSize);
                        mem.set(JAVA_BYTE, maxSize + size - 1, (byte) 0);
                        oob.send("ok");
                    } else {
                        target = ServerLines.echoTarget(line, echoed);
                    }
                    lastProgress = now;
                } else if (now - lastProgress > timeoutNs) {
                    // not only while the client waits for "done": a client that vanished mid-run says nothing
                    throw target >= 0 ? lines.stalled(echoed, target) : lines.silent("echoed " + echoed);
                }
            }
        }
    }
}
