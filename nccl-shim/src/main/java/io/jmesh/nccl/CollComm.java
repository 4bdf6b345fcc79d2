package io.jmesh.nccl;

import io.jmesh.api.CloseHelper;
import io.jmesh.api.Fabric;
import io.jmesh.api.PeerConnections;
import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * One CollNet communicator (NCCL's collComm): this node's connections to and from every other node of the group, and
 * the one-shot all-reduce over them. Every rank sends its whole buffer to every other rank and each reduces the n
 * buffers locally, in rank order ({@link Reducer}), so that every rank ends with the same bits; one exchange instead
 * of the 2(n-1) steps of NCCL's ring.
 *
 * <p>Operations are numbered in the order NCCL issues them, which is the same on every rank (NCCL orders its CollNet
 * operations across channels). A connection delivers its messages in order into the receives in the order they were
 * posted (the tag, the operation's number, is checked against it), so on every connection the sends and the receives
 * are posted in operation order: operation s's goes out only after s-1's did ({@code sendNext}, {@code recvNext}).
 * {@link #WINDOW} operations can be in flight at once; operation {@code s} uses slot {@code s % WINDOW}: its state,
 * and a staging buffer per peer for what that peer sends. A slot still busy makes {@link #start} answer "not now",
 * and NCCL calls again.
 *
 * <p>The data path ({@link #start}, {@link #test}) allocates nothing and takes no lock: NCCL's proxy thread is its only
 * caller. Everything is made in the constructor and freed by {@link #close}.
 */
final class CollComm {
    /** Operations in flight per communicator (NCCL keeps up to 8 per channel, its channels share the communicator). */
    static final int WINDOW = 16;
    private static final int FREE = 0;
    private static final int ACTIVE = 1;
    private static final int DONE = 2;
    private static final int FAILED = 3;
    private static final int NOT_POSTED = -1;
    private static final int COMPLETE = -2;

    /** The handle NCCL holds. */
    long handle;
    final int rank;
    final int nranks;
    final long maxBytes;
    private final PeerConnections<Integer> mesh;
    private final Sender[] to;        // by peer index: ranks without this one, in order
    private final Receiver[] from;
    private final Arena arena;
    private final Registration staging;
    private final long stagingBase;

    private final int[] state = new int[WINDOW];
    private final long[] seq = new long[WINDOW];
    private final long[] send = new long[WINDOW];
    private final long[] recv = new long[WINDOW];
    private final long[] count = new long[WINDOW];
    private final long[] bytes = new long[WINDOW];
    private final int[] type = new int[WINDOW];
    private final int[] op = new int[WINDOW];
    private final MemHandle[] sendMh = new MemHandle[WINDOW];
    private final int[] pending = new int[WINDOW];
    private final String[] failure = new String[WINDOW];
    private final int[] sendReq;      // [slot * peers + peer]
    private final int[] recvReq;
    private final long[] sources;     // the reducer's sources, rank order
    private final float[] accumulator = new float[Reducer.BLOCK];
    private final long[] sendNext;    // by peer: the operation whose send is the next to post on that connection
    private final long[] recvNext;
    private long nextSeq;

    /**
     * Takes over {@code mesh} (complete: every connection up both ways, keyed by the peers' ranks) and registers the
     * staging memory.
     */
    CollComm(Fabric fabric, PeerConnections<Integer> mesh, int rank, int nranks, long maxBytes) {
        this.rank = rank;
        this.nranks = nranks;
        this.maxBytes = maxBytes;
        this.mesh = mesh;
        int peers = nranks - 1;
        this.to = new Sender[peers];
        this.from = new Receiver[peers];
        for (int p = 0; p < peers; p++) {
            to[p] = mesh.sender(rankOf(p));
            from[p] = mesh.receiver(rankOf(p));
        }
        this.sendReq = new int[WINDOW * peers];
        this.recvReq = new int[WINDOW * peers];
        this.sources = new long[nranks];
        this.sendNext = new long[peers];
        this.recvNext = new long[peers];
        this.arena = Arena.ofShared();
        try {
            MemorySegment memory = arena.allocate(Math.max(1, (long) WINDOW * peers * maxBytes), 4096);
            this.stagingBase = memory.address();
            this.staging = fabric.register(memory);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    private int rankOf(int peer) {
        return peer < rank ? peer : peer + 1;
    }

    private long stagingAt(int slot, int peer) {
        return ((long) slot * (nranks - 1) + peer) * maxBytes;
    }

    /**
     * Starts an all-reduce (arguments checked by the caller): its sequence number, or -1 when its slot is still busy
     * (call again later).
     */
    long start(long sendAddress, long recvAddress, long elements, int dataType, int redOp, MemHandle sendHandle) {
        long s = nextSeq;
        int slot = (int) (s % WINDOW);
        if (state[slot] != FREE) {
            return -1;
        }
        nextSeq++;
        seq[slot] = s;
        send[slot] = sendAddress;
        recv[slot] = recvAddress;
        count[slot] = elements;
        bytes[slot] = elements * Reducer.size(dataType);
        type[slot] = dataType;
        op[slot] = redOp;
        sendMh[slot] = sendHandle;
        failure[slot] = null;
        int peers = nranks - 1;
        Arrays.fill(sendReq, slot * peers, slot * peers + peers, NOT_POSTED);
        Arrays.fill(recvReq, slot * peers, slot * peers + peers, NOT_POSTED);
        pending[slot] = 2 * peers;
        state[slot] = ACTIVE;
        advance(slot);
        return s;
    }

    /**
     * Advances every operation in flight, then reports on {@code s}: 1 done (result in place, slot freed), 0 in flight,
     * -1 failed ({@link #failure(long)} says why), -2 no such operation in flight.
     */
    int test(long s) {
        for (long o = Math.max(0, nextSeq - WINDOW); o < nextSeq; o++) { // oldest first: the connections' order
            int slot = (int) (o % WINDOW);
            if (state[slot] == ACTIVE && seq[slot] == o) {
                advance(slot);
            }
        }
        int slot = (int) (s % WINDOW);
        if (seq[slot] != s || state[slot] == FREE) {
            return -2;
        }
        return switch (state[slot]) {
            case DONE -> {
                state[slot] = FREE;
                sendMh[slot] = null;
                yield 1;
            }
            case FAILED -> -1;
            default -> 0;
        };
    }

    /** Bytes of operation {@code s} (its slot's), for test's size. */
    long bytes(long s) {
        return bytes[(int) (s % WINDOW)];
    }

    /** Why operation {@code s} failed. */
    String failure(long s) {
        return failure[(int) (s % WINDOW)];
    }

    /** The sequence number the lowest 32 bits of a request stand for: the one in flight with those bits. */
    long seqOf(int low) {
        long s = seq[Integer.remainderUnsigned(low, WINDOW)];
        return (int) s == low ? s : -1;
    }

    private void advance(int slot) {
        int peers = nranks - 1;
        int tag = (int) (seq[slot] & 0x0FFF_FFFF);
        for (int p = 0; p < peers && state[slot] == ACTIVE; p++) {
            int i = slot * peers + p;
            if (recvReq[i] == NOT_POSTED && recvNext[p] == seq[slot]) {
                int id = from[p].irecv(staging, stagingAt(slot, p), bytes[slot], tag);
                if (id >= 0) {
                    recvReq[i] = id;
                    recvNext[p]++;
                } else if (id != Status.NOT_READY) {
                    fail(slot, "posting the receive from rank " + rankOf(p), id, from[p].error());
                }
            }
            if (recvReq[i] >= 0) {
                int t = from[p].test(recvReq[i]);
                if (t == 1) {
                    long got = from[p].size(recvReq[i], 0);
                    recvReq[i] = COMPLETE;
                    pending[slot]--;
                    if (got != bytes[slot]) {
                        mismatch(slot, rankOf(p), got);
                    }
                } else if (t < 0) {
                    fail(slot, "receiving from rank " + rankOf(p), t, from[p].error());
                }
            }
            if (sendReq[i] == NOT_POSTED && sendNext[p] == seq[slot] && state[slot] == ACTIVE) {
                MemHandle m = sendMh[slot];
                int id = to[p].isend(m.registration, send[slot] - m.base, bytes[slot], tag);
                if (id >= 0) {
                    sendReq[i] = id;
                    sendNext[p]++;
                } else if (id == Status.TRUNCATED) {
                    mismatch(slot, rankOf(p), -1);
                } else if (id != Status.NOT_READY) {
                    fail(slot, "sending to rank " + rankOf(p), id, to[p].error());
                }
            }
            if (sendReq[i] >= 0) {
                int t = to[p].test(sendReq[i]);
                if (t == 1) {
                    sendReq[i] = COMPLETE;
                    pending[slot]--;
                } else if (t == Status.TRUNCATED) {
                    mismatch(slot, rankOf(p), -1);
                } else if (t < 0) {
                    fail(slot, "sending to rank " + rankOf(p), t, to[p].error());
                }
            }
        }
        // every send done too: the send buffer may be the receive buffer (in place), which the result overwrites
        if (state[slot] == ACTIVE && pending[slot] == 0) {
            for (int r = 0; r < nranks; r++) {
                sources[r] = r == rank ? send[slot]
                        : stagingBase + stagingAt(slot, r < rank ? r : r - 1);
            }
            Reducer.reduce(type[slot], op[slot], recv[slot], sources, nranks, count[slot], accumulator);
            state[slot] = DONE;
        }
    }

    private void fail(int slot, String what, int status, String error) {
        failure[slot] = "CollNet all-reduce " + seq[slot] + " (" + count[slot] + " x " + Reducer.typeName(type[slot])
                + " " + Reducer.opName(op[slot]) + ", rank " + rank + " of " + nranks + "): " + what + " failed: "
                + Status.describe(status) + (error == null ? "" : " (" + error + ")");
        state[slot] = FAILED;
    }

    private void mismatch(int slot, int peer, long got) {
        failure[slot] = "CollNet all-reduce " + seq[slot] + " of rank " + rank + " is " + bytes[slot] + " bytes, but "
                + "rank " + peer + "'s operation " + seq[slot] + (got >= 0 ? " sent " + got : " takes fewer")
                + " bytes: the ranks issued different operations in the same place; every rank must call iallreduce "
                + "with the same count and type, in the same order";
        state[slot] = FAILED;
    }

    /** Closes the connections (requests in flight fail), then the staging registration and its memory. */
    void close() {
        Throwable t = CloseHelper.closeAllCatching(Arrays.asList(mesh, staging, arena));
        if (t != null) {
            throw new IllegalStateException("closing CollNet communicator " + handle + " failed: " + t, t);
        }
    }

    @Override
    public String toString() {
        return "CollNet communicator " + handle + " (rank " + rank + " of " + nranks + ")";
    }
}
