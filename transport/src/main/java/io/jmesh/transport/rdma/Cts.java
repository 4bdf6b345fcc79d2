package io.jmesh.transport.rdma;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The clear-to-send FIFO, a flyweight over off-heap memory: a ring of 64-byte entries that the receiver RDMA-writes
 * into the sender's copy, one entry per buffer, a grouped receive's entries next to each other. Both sides count
 * entry positions the same way (a request of n buffers takes the next n), so receives posted in a row occupy one
 * contiguous range and can leave in one write. The sender reads an entry only after its sequence number shows the
 * current request, with acquire semantics, because the NIC writes it. Each entry carries the buffer's rkey for
 * every rail of the connection, since the rails may run on different devices (twin links), each with its own
 * memory region.
 *
 * <p>The ring never overwrites an entry the sender still needs: a request's slot is reused only after it completed
 * (so the sender had read its entries), and the other MAX_REQUESTS - 1 requests in flight hold at most
 * (MAX_REQUESTS - 1) * MAX_RECVS entries, which leaves room for the new one in a ring of MAX_REQUESTS * MAX_RECVS.
 *
 * <pre>
 * entry (64 B):  0 u64 addr   8 u64 size   16 u32 tag   20 u32 nreqs   24 u64 seq   32 u32 rkey[MAX_RAILS]
 * FIFO: ENTRIES entries, addressed by position modulo ENTRIES
 * </pre>
 */
final class Cts {
    static final int MAX_REQUESTS = 32;
    static final int MAX_RECVS = 8;
    /** Queue pairs one connection may split its messages across. */
    static final int MAX_RAILS = 8;
    static final int ENTRY_BYTES = 64;
    static final int ENTRIES = MAX_REQUESTS * MAX_RECVS;
    static final int FIFO_BYTES = ENTRIES * ENTRY_BYTES;

    static final long ADDR = 0;
    static final long SIZE = 8;
    static final long TAG = 16;
    static final long NREQS = 20;
    static final long SEQ = 24;
    static final long RKEYS = 32;

    private static final VarHandle LONG = JAVA_LONG.varHandle();

    private Cts() {
    }

    /** Byte offset of the entry at ring position {@code position}. */
    static long at(long position) {
        return (position & (ENTRIES - 1)) * ENTRY_BYTES;
    }

    /**
     * Fills an entry; the sequence number goes last (release), so a reader that sees it sees the rest. The entry
     * leaves by RDMA write, whose ordering the NIC keeps; the release orders the CPU's stores before the post.
     */
    static void write(MemorySegment fifo, long entry, long addr, long size, int[] rkeys, int rkeyOffset, int rails,
                      int tag, int nreqs, long seq) {
        fifo.set(JAVA_LONG, entry + ADDR, addr);
        fifo.set(JAVA_LONG, entry + SIZE, size);
        fifo.set(JAVA_INT, entry + TAG, tag);
        fifo.set(JAVA_INT, entry + NREQS, nreqs);
        for (int r = 0; r < MAX_RAILS; r++) {
            fifo.set(JAVA_INT, entry + RKEYS + 4L * r, r < rails ? rkeys[rkeyOffset + r] : 0);
        }
        LONG.setRelease(fifo, entry + SEQ, seq);
    }

    /** The entry's sequence number, read with acquire: the fields read after it are at least as new. */
    static long seq(MemorySegment fifo, long entry) {
        return (long) LONG.getAcquire(fifo, entry + SEQ);
    }

    static long addr(MemorySegment fifo, long entry) {
        return fifo.get(JAVA_LONG, entry + ADDR);
    }

    static long size(MemorySegment fifo, long entry) {
        return fifo.get(JAVA_LONG, entry + SIZE);
    }

    static int rkey(MemorySegment fifo, long entry, int rail) {
        return fifo.get(JAVA_INT, entry + RKEYS + 4L * rail);
    }

    static int tag(MemorySegment fifo, long entry) {
        return fifo.get(JAVA_INT, entry + TAG);
    }

    static int nreqs(MemorySegment fifo, long entry) {
        return fifo.get(JAVA_INT, entry + NREQS);
    }
}
