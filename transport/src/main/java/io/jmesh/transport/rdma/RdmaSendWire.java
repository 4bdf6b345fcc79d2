package io.jmesh.transport.rdma;

import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.Eager;
import io.jmesh.transport.core.Fate;
import io.jmesh.transport.core.Op;
import io.jmesh.transport.core.OpWindow;
import io.jmesh.transport.core.SendSlot;
import io.jmesh.transport.core.SendWire;
import io.jmesh.transport.verbs.Wr;
import io.jmesh.posix.Errno;
import io.jmesh.transport.core.Slots;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The verbs wire of a sender: the receiver RDMA-writes clear-to-send entries into this side's FIFO (rail 0's control
 * region), so matching needs no progress at all. A full slot goes out as unsignalled RDMA WRITEs straight from the
 * registered memory into the posted buffers; the last write on each rail carries an immediate (the size, or a marker
 * when the sizes go into the receiver's size array for grouped receives and very large messages) and is the rail's
 * only signalled request for the slot.
 *
 * <p>With the listener's eager ring ({@link Eager}) a small message from host memory is copied into the matching
 * slot of a local staging ring (rail 0's control region, after the credit word) and RDMA-written from there into the
 * peer's ring in one write: the send is complete at once, and only every {@value #SIGNAL_EVERY}th write is
 * signalled, to free the send queue. The receiver hands the consumed count back into the credit word; a slot is
 * written again only once consumed, so the NIC has long read it. There the receiver keeps the entries of small
 * one-buffer receives back ({@link RdmaReceiveWire}); when a send needs entries it does not have, {@link #fetch}
 * reads them from the receiver's staging ring.
 *
 * <p>A connection has one or more rails (queue pairs), on one link or on several links joining the same two nodes:
 * each message is cut into one contiguous slice per rail, so all rails carry data at once. Rail 0 also carries the
 * one-sided operations and the liveness probe.
 */
final class RdmaSendWire extends VerbsWire implements SendWire {
    /**
     * Immediate of a slot's last write: bit 31 "read the sizes from the size array", bits 26-30 the slot, bits 0-25
     * the size of a single message below 64 MiB, or the number of buffers.
     */
    static final int IMM_SIZES = 0x80000000;
    static final int IMM_SLOT_SHIFT = 26;
    static final int IMM_SIZE_MASK = (1 << IMM_SLOT_SHIFT) - 1;
    /** Immediate of the goodbye ({@link Goodbye}): a grouped receive of 2^26 - 1 buffers, which no slot has. */
    static final int IMM_BYE = IMM_SIZES | IMM_SIZE_MASK;
    private static final int SIGNAL_EVERY = 16;
    /** wr_id bit of eager writes; the low bits count the writes a signalled one completes. */
    private static final long EAGER_WR = 1L << 33;
    /** Slices are cut at this alignment, so a small message stays on rail 0. */
    static final long SLICE_ALIGN = 4096;
    /** wr_id bit of one-sided operations; a slot's writes carry the slot index. */
    private static final long ONE_SIDED_WR = 1L << 32;
    /** wr_id of a fetch's read. */
    private static final long PULL_WR = 1L << 34;
    /** A fetch that found nothing new waits before the next one: from MIN_BACKOFF, doubling up to MAX_BACKOFF. */
    private static final long MIN_BACKOFF_NANOS = 16_000;
    private static final long MAX_BACKOFF_NANOS = 1_000_000;
    private static final VarHandle CREDIT = JAVA_LONG.varHandle();

    private final SendSlot[] slots;
    private final Endpoint[] rails;
    private final int nrails;
    private final long peerSizesAddress;
    private final int peerSizesRkey;
    /** The peer's device index of rail 0: which key of a peer's RemoteRegion this connection uses. */
    private final int peerKeyIndex;
    private final MemorySegment fifo;
    private final MemorySegment sizesStaging;
    /** Eager: the largest message, the staging ring, the credit word, the peer's ring; records written so far. */
    private final int eagerMax;
    private final MemorySegment eagerStaging;
    private final MemorySegment credit;
    private final long peerRingAddress;
    private long records;
    private int unsignalledEager;
    /** Fetches: where reads land, the peer's staged entries; the read in flight (its ring position and entries). */
    private final MemorySegment pulled;
    private final long peerEntriesAddress;
    private boolean pulling;
    private long pullFrom;
    private int pullCount;
    private long backoffNanos;
    private long nextPullNanos;
    private long pulls;
    /** Full slots in the order the core filled them: the order they must go out in. */
    private final int[] fullQueue = new int[Cts.MAX_REQUESTS];

    /** per slot * MAX_RAILS + rail: work requests the slot holds in that rail's send queue */
    private final int[] wrCount = new int[Cts.MAX_REQUESTS * Cts.MAX_RAILS];
    /** per slot: rails whose signalled write has not completed yet */
    private final int[] pendingRails = new int[Cts.MAX_REQUESTS];
    /** per one-sided op: its work requests on rail 0 */
    private final int[] opWrs = new int[OpWindow.SIZE];
    private final Op[] opsInFlight = new Op[OpWindow.SIZE];
    /** per rail: work requests posted and not yet known complete; scratch count of the slot being posted */
    private final int[] outstanding;
    private final int[] railWrs;
    /** Full slots posted so far (slots are posted strictly in ring order, see drainPosts). */
    private long posted;
    private long full;

    /**
     * @param eagerMax the largest message sent eagerly (the listener has a ring), or 0
     */
    RdmaSendWire(Fate fate, SendSlot[] slots, Endpoint[] rails, long peerSizesAddress, int peerSizesRkey,
                 int peerKeyIndex, int eagerMax) {
        super(fate, rails[0]);
        this.slots = slots;
        this.rails = rails.clone();
        this.nrails = rails.length;
        this.peerSizesAddress = peerSizesAddress;
        this.peerSizesRkey = peerSizesRkey;
        this.peerKeyIndex = peerKeyIndex;
        this.fifo = ControlRegion.fifo(ep.control);
        this.sizesStaging = ControlRegion.sizes(ep.control);
        this.outstanding = new int[nrails];
        this.railWrs = new int[nrails];
        this.eagerMax = Math.min(eagerMax, Eager.MAX_PAYLOAD);
        this.eagerStaging = eagerMax > 0 ? ControlRegion.ring(ep.control) : null;
        this.credit = eagerMax > 0 ? ControlRegion.credit(ep.control) : null;
        long peerBase = ControlRegion.baseOfSizes(peerSizesAddress);
        this.peerRingAddress = peerBase + ControlRegion.RING_AT;
        this.pulled = eagerMax > 0 ? ControlRegion.pulled(ep.control) : null;
        this.peerEntriesAddress = peerBase + ControlRegion.FIFO_AT;
    }

    /** The slot index an immediate names. */
    static int immSlot(int imm) {
        return Slots.ofCount(imm >>> IMM_SLOT_SHIFT);
    }

    /**
     * Up to the threshold, from host memory, whatever the packets: a 4 KiB record is five packets at MTU 1024 where
     * its data alone would be four, and still cost less than the receiver-driven way on the same connection on
     * Soft-RoCE (docs/benchmarks-eager.md).
     */
    @Override
    public boolean sendsEagerly(Registration registration, long length) {
        return eagerMax > 0 && length <= eagerMax && registration instanceof RdmaRegistration r && r.host;
    }

    /**
     * RDMA-reads the receiver's staged entries from ring position {@code from} on (up to ControlRegion.PULL_ENTRIES, to the end of
     * the ring) into the landing area; {@link #merge} files them when the read completes. The peer's NIC answers, so
     * a sender whose receive is posted never waits on the peer's application. A read that brought nothing new (the
     * receive is not posted yet) holds the next one for the same position back, 16 us doubling to 1 ms, so a sender
     * spinning on a receive the peer's application has not posted does not keep the link and the peer's CPU busy.
     */
    @Override
    public void fetch(long from) {
        if (from != pullFrom) {
            backoffNanos = 0;                      // a new need: what the last reads found does not hold for it
        }
        if (pulled == null || pulling || fate.failed() || outstanding[0] + 1 > ep.sendDepth
                || backoffNanos > 0 && System.nanoTime() - nextPullNanos < 0) {
            return;
        }
        long at = Cts.at(from);
        int count = (int) Math.min(ControlRegion.PULL_ENTRIES, (Cts.FIFO_BYTES - at) / Cts.ENTRY_BYTES);
        Wr.sge(ep.sge[0], pulled.address(), count * Cts.ENTRY_BYTES, ep.controlMr.lkey());
        Wr.send(ep.wr[0], PULL_WR, MemorySegment.NULL, ep.sge[0], 1, OP_READ, SIGNALED, 0,
                peerEntriesAddress + at, peerSizesRkey);
        if (!postChain(ep, 1)) {
            return;
        }
        pulling = true;
        pullFrom = from;
        pullCount = count;
        outstanding[0]++;
        pulls++;
    }

    /** Files the fetched entries that are newer than the FIFO's (a push may have brought them meanwhile). */
    private void merge() {
        boolean news = false;
        for (int k = 0; k < pullCount; k++) {
            long mine = Cts.at(pullFrom + k);
            long theirs = (long) k * Cts.ENTRY_BYTES;
            if (Cts.seq(pulled, theirs) > Cts.seq(fifo, mine)) {
                Cts.copy(pulled, theirs, fifo, mine);
                news = true;
            }
        }
        if (news) {
            backoffNanos = 0;
        } else {
            backoffNanos = Math.min(MAX_BACKOFF_NANOS, Math.max(MIN_BACKOFF_NANOS, backoffNanos * 2));
            nextPullNanos = System.nanoTime() + backoffNanos;
        }
        pulling = false;
    }

    /** Fetches made so far (for tests). */
    long pulls() {
        return pulls;
    }

    /**
     * Copies the message with its header into the next slot of the staging ring and writes it into the same slot of
     * the peer's ring: one RDMA WRITE, signalled every SIGNAL_EVERY-th time.
     */
    @Override
    public int eager(long position, int tag, Registration registration, long offset, int length, int buffer) {
        if (records - (long) CREDIT.getAcquire(credit, 0L) >= Eager.SLOTS) {
            return Status.NOT_READY;              // the receiver has not consumed the oldest slot yet
        }
        if (outstanding[0] + 1 > ep.sendDepth) {
            progress();
            if (outstanding[0] + 1 > ep.sendDepth) {
                return fate.failed() ? Status.FAILED : Status.NOT_READY;
            }
        }
        long seq = records + 1;
        long at = Eager.VERBS.at(seq);
        MemorySegment.copy(registration.memory(), offset, eagerStaging, Eager.payload(at), length);
        Eager.write(eagerStaging, at, seq, position, tag, length, buffer);
        boolean signal = ++unsignalledEager >= SIGNAL_EVERY;
        int bytes = Eager.recordBytes(length);
        Wr.sge(ep.sge[0], eagerStaging.address() + at, bytes, ep.controlMr.lkey());
        Wr.send(ep.wr[0], EAGER_WR | unsignalledEager, MemorySegment.NULL, ep.sge[0], 1, OP_WRITE,
                (signal ? SIGNALED : 0) | (bytes <= ep.maxInline ? INLINE : 0), 0, peerRingAddress + at,
                peerSizesRkey);
        if (signal) {
            unsignalledEager = 0;
        }
        if (!postChain(ep, 1)) {
            return Status.FAILED;
        }
        records = seq;
        outstanding[0]++;
        return 0;
    }

    /** Where the receiver writes its clear-to-send entries. */
    MemorySegment fifo() {
        return fifo;
    }

    /** Queue pairs this connection splits its messages across. */
    int rails() {
        return nrails;
    }

    @Override
    public void matched(SendSlot slot, int i) {
        if (slot.full()) {
            fullQueue[Slots.ofCount(full++)] = slot.index;
            drainPosts();
        }
    }

    /**
     * Posts full slots in order while the send queues have room. Order matters: the receiver's posted receives take
     * the immediates in arrival order, so slot s+1 must never overtake slot s on any rail.
     */
    private void drainPosts() {
        while (posted < full && !fate.failed()) {
            if (!post(slots[fullQueue[Slots.ofCount(posted)]])) {
                return;
            }
            posted++;
        }
    }

    /** Posts every write of a full slot, or returns false when a send queue has no room for them yet. */
    private boolean post(SendSlot s) {
        int n = s.nreqs;
        boolean inlineSize = n == 1 && s.length[0] <= IMM_SIZE_MASK;
        for (int rail = 0; rail < nrails; rail++) {
            long max = rails[rail].maxMessage;
            int data = 0;
            for (int i = 0; i < n; i++) {
                if (s.eager(i)) {
                    continue;                      // its record went into the peer's ring already
                }
                long slice = sliceBytes(s.length[i]);
                long from = Math.min(s.length[i], slice * rail);
                data += chunks(Math.min(s.length[i], from + slice) - from, max);
            }
            // the immediate rides on the last data write of a single message; otherwise it is a request of its own
            int total = inlineSize ? Math.max(1, data) : data + 1;
            if (total > rails[rail].sendDepth) {
                fate.fail("a message needs " + total + " work requests, more than the send queue's "
                        + rails[rail].sendDepth + " (messages are cut into " + max + "-byte writes): send it in "
                        + "smaller parts");
                return false;
            }
            if (outstanding[rail] + total > rails[rail].sendDepth) {
                return false;
            }
            railWrs[rail] = total;
        }
        int base = Slots.key(s.index, 0);
        if (!inlineSize) {
            for (int i = 0; i < n; i++) {
                sizesStaging.setAtIndex(JAVA_LONG, base + i, s.length[i]);
            }
        }
        for (int rail = 0; rail < nrails && !fate.failed(); rail++) {
            postRail(s, rail, inlineSize);
        }
        for (int rail = 0; rail < nrails; rail++) {
            wrCount[s.index * Cts.MAX_RAILS + rail] = railWrs[rail];
            outstanding[rail] += railWrs[rail];
        }
        pendingRails[s.index] = nrails;
        return true;
    }

    /**
     * Posts one rail's share of a slot: unsignalled writes of its slice of each buffer, and one signalled write with
     * the immediate: the slice's last write for a single message, else a write of its own (on rail 0 of a grouped
     * message, the size array; elsewhere zero bytes). Addresses and keys come from the slot's clear-to-send entries,
     * which stay in the FIFO until the slot is reused.
     */
    private void postRail(SendSlot s, int rail, boolean inlineSize) {
        Endpoint r = rails[rail];
        long max = r.maxMessage;
        int n = s.nreqs;
        int imm = (s.index << IMM_SLOT_SHIFT) | (inlineSize ? (int) s.length[0] : IMM_SIZES | n);
        boolean immSent = false;
        int w = 0;
        for (int i = 0; i < n; i++) {
            if (s.eager(i)) {
                continue;
            }
            long len = s.length[i];
            long slice = sliceBytes(len);
            long from = Math.min(len, slice * rail);
            long to = Math.min(len, from + slice);
            long entry = Cts.at(s.entry + i);
            long remote = Cts.addr(fifo, entry);
            int key = Cts.rkey(fifo, entry, rail);
            RdmaRegistration reg = (RdmaRegistration) s.registration[i];
            long local = reg.address + s.offset[i];
            int lkey = reg.lkey(r.deviceIndex);
            for (long done = from; done < to; done += max) {
                long chunk = Math.min(max, to - done);
                boolean last = inlineSize && done + chunk == to;
                Wr.sge(r.sge[w], local + done, (int) chunk, lkey);
                Wr.send(r.wr[w], s.index, MemorySegment.NULL, r.sge[w], 1, last ? OP_WRITE_IMM : OP_WRITE,
                        last ? SIGNALED : 0, last ? imm : 0, remote + done, key);
                immSent |= last;
                if ((w = next(r, w)) < 0) {
                    return;
                }
            }
        }
        if (!immSent) {
            long entry = Cts.at(s.entry);
            if (!inlineSize && rail == 0) {
                long at = Slots.key(s.index, 0) * 8L;
                Wr.sge(r.sge[w], sizesStaging.address() + at, n * 8, ep.controlMr.lkey());
                Wr.send(r.wr[w], s.index, MemorySegment.NULL, r.sge[w], 1, OP_WRITE_IMM, SIGNALED, imm,
                        peerSizesAddress + at, peerSizesRkey);
            } else {
                Wr.send(r.wr[w], s.index, MemorySegment.NULL, MemorySegment.NULL, 0, OP_WRITE_IMM, SIGNALED, imm,
                        Cts.addr(fifo, entry), Cts.rkey(fifo, entry, rail));
            }
            w = next(r, w);
        }
        if (w > 0) {
            postChain(r, w);
        }
    }

    private static int chunks(long bytes, long maxMessage) {
        return bytes == 0 ? 0 : (int) ((bytes + maxMessage - 1) / maxMessage);
    }

    /** Bytes of each rail's slice of a {@code len}-byte buffer: whole multiples of SLICE_ALIGN, the rest last. */
    private long sliceBytes(long len) {
        if (nrails == 1) {
            return len;
        }
        long per = (len + nrails - 1) / nrails;
        return (per + SLICE_ALIGN - 1) & -SLICE_ALIGN;
    }

    /** Links WR w to the chain; posts the chain when the scratch is full. Returns the next index, or -1 on failure. */
    private int next(Endpoint r, int w) {
        if (w > 0) {
            Wr.link(r.wr[w - 1], r.wr[w]);
        }
        w++;
        if (w == Endpoint.SCRATCH_WRS) {
            return postChain(r, w) ? 0 : -1;
        }
        return w;
    }

    private boolean postChain(Endpoint r, int count) {
        return post(r, count, "data");
    }

    /** A one-sided RDMA WRITE or READ on rail 0: unsignalled pieces, the last one signalled. */
    @Override
    public int start(Op op) {
        if (!op.remote.provider().equals("rdma") || peerKeyIndex >= op.remote.keyCount()) {
            return Status.BAD_ARGUMENT;
        }
        long length = op.length;
        int pieces = Math.max(1, chunks(length, ep.maxMessage));
        if (pieces > ep.sendDepth) {
            return Status.BAD_ARGUMENT;
        }
        if (outstanding[0] + pieces > ep.sendDepth) {
            progress();
            return fate.failed() ? Status.FAILED : Status.NOT_READY;
        }
        RdmaRegistration r = (RdmaRegistration) op.local;
        int lk = r.lkey(ep.deviceIndex);
        int rk = op.remote.key(peerKeyIndex);
        long from = r.address + op.localOffset;
        long to = op.remote.address() + op.remoteOffset;
        int opcode = op.read ? OP_READ : OP_WRITE;
        int w = 0;
        long done = 0;
        do {
            long chunk = Math.min(ep.maxMessage, length - done);
            boolean last = done + chunk == length;
            Wr.sge(ep.sge[w], from + done, (int) chunk, lk);
            Wr.send(ep.wr[w], ONE_SIDED_WR | op.index, MemorySegment.NULL, ep.sge[w], chunk == 0 ? 0 : 1, opcode,
                    last ? SIGNALED : 0, 0, to + done, rk);
            done += chunk;
            if (w > 0) {
                Wr.link(ep.wr[w - 1], ep.wr[w]);
            }
            w++;
            if ((w == Endpoint.SCRATCH_WRS || last) && !postChain(ep, w)) {
                return Status.FAILED;
            }
            if (w == Endpoint.SCRATCH_WRS) {
                w = 0;
            }
        } while (done < length);
        opWrs[op.index] = pieces;
        opsInFlight[op.index] = op;
        outstanding[0] += pieces;
        return 0;
    }

    /** Reads completions on every rail; retries a slot that waited for send-queue room. */
    @Override
    public void progress() {
        if (fate.state() != 0) {
            return;
        }
        for (int rail = 0; rail < nrails; rail++) {
            Endpoint r = rails[rail];
            int n = completions(r);
            if (n < 0) {
                return;
            }
            if (n == 0 && rail == 0) {
                probeIfIdle();
            }
            for (int i = 0; i < n; i++) {
                if (!completed(r, rail, Wr.wcStatus(r.wcs, i), Wr.wcWrId(r.wcs, i))) {
                    return;
                }
            }
        }
        drainPosts();
    }

    /** Takes one completion; false once the connection failed. */
    private boolean completed(Endpoint r, int rail, int status, long wrId) {
        if (status != WC_SUCCESS) {
            fate.fail((wrId == Endpoint.PROBE_WR ? "the peer stopped answering: a liveness probe on "
                    : wrId == PULL_WR ? "a read of the receiver's clear-to-send entries on "
                    : (wrId & ONE_SIDED_WR) != 0 ? "a one-sided operation on " : "a send on ")
                    + r.device.name() + " failed: " + r.device.verbs().wcStatusString(status)
                    + ((wrId & ONE_SIDED_WR) != 0 ? " (a remote region that is closed or was never "
                    + "registered there gives REM_ACCESS_ERR; otherwise " : " (")
                    + "the peer died, closed, or is unreachable)");
            return false;
        }
        if (wrId == Endpoint.PROBE_WR) {
            r.probeDone();
            outstanding[0]--;
        } else if (wrId == PULL_WR) {
            outstanding[0]--;
            merge();
        } else if ((wrId & EAGER_WR) != 0) {
            outstanding[0] -= (int) (wrId & 0xffff);   // this write and the unsignalled ones before it
        } else if ((wrId & ONE_SIDED_WR) != 0) {
            int k = (int) wrId & (OpWindow.SIZE - 1);
            outstanding[0] -= opWrs[k];
            opsInFlight[k].finish(1, null);
            opsInFlight[k] = null;
        } else {
            int slot = Slots.ofCount(wrId);
            outstanding[rail] -= wrCount[slot * Cts.MAX_RAILS + rail];
            if (--pendingRails[slot] == 0) {
                slots[slot].completeAll();
            }
        }
        return true;
    }

    /** Lets rail 0 probe the peer while nothing completes; the probe holds a send-queue entry meanwhile. */
    private void probeIfIdle() {
        if (outstanding[0] >= ep.sendDepth) {
            return;      // the queue is full of writes: their completions (or failures) will come
        }
        if (probe(peerSizesAddress, peerSizesRkey) > 0) {
            outstanding[0]++;
        }
    }

    /** Ends the connection in order where it can ({@link Goodbye}), then destroys the queue pairs. */
    @Override
    public void close() {
        try {
            if (!fate.failed()) {
                Goodbye.sendAndWait(this, rails, outstanding, peerSizesAddress, peerSizesRkey);
            }
        } finally {
            Endpoint.closeAll(rails);
        }
    }

    @Override
    public String toString() {
        return "rdma sender on " + ep.device.name() + (nrails > 1 ? " (" + nrails + " rails)" : "");
    }
}
