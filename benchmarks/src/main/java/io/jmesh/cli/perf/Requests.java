package io.jmesh.cli.perf;

import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;

import java.io.IOException;

/**
 * What the measurement loops of both ends share: post a receive, a send or a one-sided write and wait for it while it
 * is NOT_READY, complete a send, keep {@link #LAT_AHEAD} receives posted; each with the run's timeout, and an
 * IOException that names what failed. They allocate nothing.
 */
final class Requests {
    /** Request ids kept per connection by the bandwidth loops: a power of two, at least PerfOptions.MAX_DEPTH. */
    static final int RING = 32;
    static final long[] ZERO_OFFSET = {0};
    static final int[] ZERO_TAG = {0};

    /**
     * Receives the latency test keeps posted at each end, by default reposted LAT_AHEAD / 2 at a time after an echo
     * with {@link Receiver#MORE}: the clear-to-send write that announces them leaves between round trips, not inside
     * one (where a receiver-driven transport would otherwise pay one more RDMA write than ib_write_lat per message on
     * the measured path), and one write announces the whole batch. With --repost each, every receive is reposted and
     * announced on its own, as NCCL posts them through a net plugin.
     */
    static final int LAT_AHEAD = 32;

    /** Why a request can stay unfinished for --timeout, and what to do: for both ends. */
    private static final String STUCK = ": the peer is stopped, hung or gone, or the link stalled; see the other "
            + "end's output (raise --timeout for slow links)";

    private final PerfOptions o;

    Requests(PerfOptions o) {
        this.o = o;
    }

    /** The mark of round trip {@code round} in the last byte of a --op write message: 1..255, never the cleared 0. */
    static byte mark(long round) {
        return (byte) (1 + round % 255);
    }

    /**
     * Tops the posted receives up to LAT_AHEAD once half of them are used, or with --repost each at once, each receive
     * announced on its own; returns the new posted count.
     */
    long refillAhead(Receiver r, Registration[] regs, long[] max, int[] ring, long posted, long received)
            throws IOException {
        boolean each = o.repostEach();
        if (!each && posted - received > LAT_AHEAD / 2) {
            return posted;
        }
        while (posted - received < LAT_AHEAD) {
            // all but the last with MORE: the batch is announced with one RDMA write
            int flags = !each && posted + 1 - received < LAT_AHEAD ? Receiver.MORE : 0;
            ring[(int) (posted % LAT_AHEAD)] = postOrFail(r, regs, ZERO_OFFSET, max, ZERO_TAG, flags);
            posted++;
        }
        return posted;
    }

    int postOrFail(Receiver r, Registration[] regs, long[] offsets, long[] max, int[] tags)
            throws IOException {
        return postOrFail(r, regs, offsets, max, tags, 0);
    }

    int postOrFail(Receiver r, Registration[] regs, long[] offsets, long[] max, int[] tags, int flags)
            throws IOException {
        int req;
        long start = System.nanoTime();
        while ((req = r.irecv(1, regs, offsets, max, tags, flags)) == Status.NOT_READY) {
            if (System.nanoTime() - start > o.timeout().toNanos()) {
                throw new IOException("irecv stayed NOT_READY for " + o.timeout().toSeconds() + " s");
            }
        }
        if (req < 0) {
            throw new IOException("irecv failed: " + Status.describe(req) + " " + r.error());
        }
        return req;
    }

    int sendOrFail(Sender s, Registration reg, long size) throws IOException {
        int req;
        long spins = 0;
        long start = 0;
        while ((req = s.isend(reg, 0, size, 0)) == Status.NOT_READY) {
            if ((++spins & 1023) == 0) {
                long now = System.nanoTime();
                if (start == 0) {
                    start = now;
                } else if (now - start > o.timeout().toNanos()) {
                    throw new IOException("the peer posted no receive for " + o.timeout().toSeconds() + " s" + STUCK);
                }
            }
        }
        if (req < 0) {
            throw new IOException("isend failed: " + Status.describe(req) + " " + s.error());
        }
        return req;
    }

    void completeSend(Sender s, int req) throws IOException {
        int t;
        long spins = 0;
        long start = 0;
        while ((t = s.test(req)) == 0) {
            if ((++spins & 1023) == 0) {
                long now = System.nanoTime();
                if (start == 0) {
                    start = now;
                } else if (now - start > o.timeout().toNanos()) {
                    throw new IOException("a send did not complete for " + o.timeout().toSeconds() + " s" + STUCK);
                }
            }
        }
        if (t < 0) {
            throw new IOException("send failed: " + Status.describe(t) + " " + s.error());
        }
    }

    int writeOrFail(Sender s, Registration reg, long size, RemoteRegion remote, long remoteOffset)
            throws IOException {
        int req;
        long start = System.nanoTime();
        while ((req = s.write(reg, 0, size, remote, remoteOffset)) == Status.NOT_READY) {
            if (System.nanoTime() - start > o.timeout().toNanos()) {
                throw new IOException("write stayed NOT_READY for " + o.timeout().toSeconds() + " s" + STUCK);
            }
        }
        if (req == Status.BAD_ARGUMENT) {
            throw new IOException("write failed: the peer's memory region " + remote + " does not take " + size
                    + " bytes at " + remoteOffset + " over this connection (another provider, or too small)");
        }
        if (req < 0) {
            throw new IOException("write failed: " + Status.describe(req) + " " + s.error());
        }
        return req;
    }
}
