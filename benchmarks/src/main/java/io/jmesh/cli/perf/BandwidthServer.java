package io.jmesh.cli.perf;

import io.jmesh.api.IdleStrategy;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;

import java.io.IOException;
import java.util.Arrays;

import static io.jmesh.cli.perf.Requests.RING;

/** The bw server's loop: a sink. */
final class BandwidthServer {
    private final PerfOptions o;
    private final ServerLines lines;

    BandwidthServer(PerfOptions o, ServerLines lines) {
        this.o = o;
        this.lines = lines;
    }

    /** bw server: keeps {@code depth} receives posted on every connection, counts completions, obeys the client. */
    void sink(Oob oob, Receiver[] rs, Registration reg, long maxSize) throws IOException {
        int q = rs.length;
        int[][] ring = new int[q][RING];
        long[] posted = new long[q];
        long[] done = new long[q];
        long[] target = new long[q];
        boolean waiting = false;
        Registration[] regs = {reg};
        long[] offsets = {0};
        long[] max = {maxSize};
        int[] tags = {0};
        long lastProgress = System.nanoTime();
        long timeoutNs = o.timeout().toNanos();
        IdleStrategy idler = o.poll().idleStrategy();
        int refill = Math.max(1, o.depth() / 4);
        for (long spin = 0; ; spin++) {
            boolean progress = false;
            for (int c = 0; c < q; c++) {
                Receiver r = rs[c];
                // refill a quarter window at a time, announced with one write (MORE on all but the last):
                // fewer passes through irecv and fewer clear-to-send writes while data streams in
                if (o.depth() - (posted[c] - done[c]) >= refill) {
                    while (posted[c] - done[c] < o.depth()) {
                        int flags = posted[c] + 1 - done[c] < o.depth() ? Receiver.MORE : 0;
                        int req = r.irecv(1, regs, offsets, max, tags, flags);
                        if (req == Status.NOT_READY) {
                            break;
                        } else if (req < 0) {
                            throw new IOException("irecv failed: " + Status.describe(req) + " " + r.error());
                        }
                        ring[c][(int) (posted[c] & (RING - 1))] = req;
                        posted[c]++;
                    }
                }
                if (done[c] < posted[c]) {
                    int t = r.test(ring[c][(int) (done[c] & (RING - 1))]);
                    if (t == 1) {
                        done[c]++;
                        progress = true;
                    } else if (t < 0) {
                        throw new IOException("receive failed: " + Status.describe(t) + " " + r.error());
                    }
                }
            }
            if (waiting) {
                boolean all = true;
                for (int c = 0; c < q; c++) {
                    if (done[c] > target[c]) {
                        throw new IOException("received more messages on connection " + c + " (" + done[c]
                                + ") than the client sent (" + target[c] + ")");
                    }
                    all &= done[c] == target[c];
                }
                if (all) {
                    oob.send("done");
                    waiting = false;
                }
            }
            if (progress) {
                idler.reset();
            } else {
                idler.idle();
            }
            long now = progress || (spin & 255) == 0 ? System.nanoTime() : 0;
            if (progress) {
                lastProgress = now;
            } else if ((spin & 255) == 0) {
                if (lines.pending(oob, now, lastProgress)) {
                    String line = lines.control(oob);
                    if (line == null) {
                        // answered
                    } else if (line.equals("bye")) {
                        oob.send("bye");
                        return;
                    } else {
                        long[] t = PerfProtocol.totals(Oob.fields(line, "end"), q);
                        System.arraycopy(t, 0, target, 0, q);
                        waiting = true;
                    }
                    lastProgress = now;
                } else if (now - lastProgress > timeoutNs) {
                    // not only while the client waits for "done": a client that vanished mid-stream says nothing
                    if (!waiting) {
                        throw lines.silent("received " + Arrays.toString(done) + " messages");
                    }
                    throw new IOException("no message arrived for " + o.timeout().toSeconds() + " s although the "
                            + "client sent " + Arrays.toString(target) + " (received " + Arrays.toString(done)
                            + "): the link stalled");
                }
            }
        }
    }
}
