package io.jmesh.transport.core;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The clear-to-send FIFO, a descriptor of off-heap memory (static accessors at an entry's offset, as Aeron's
 * descriptor classes: no object wraps the memory, so reading one costs no allocation and no indirection): a ring of
 * 64-byte entries, one per posted buffer, a grouped receive's entries next to each other. On verbs the receiver
 * RDMA-writes them into the sender's copy; on TCP the sender files each checked clear-to-send frame into a local copy;
 * either way {@link CoreSender} matches sends against this one layout. Both sides count entry positions the same way (a
 * request of n buffers takes the next n), so receives posted in a row occupy one contiguous range and can leave in one
 * write. The sender reads an entry only after its sequence number shows the current request, with acquire semantics,
 * because the NIC writes it. The sequence number is the entry's last field and is stored last: a NIC places a write,
 * and serves a read, in address order (the last-byte polling of perftest's ib_write_lat assumes the same), so an entry
 * whose sequence number is new is whole, whether the receiver pushed it or the sender pulled it with an RDMA READ while
 * the receiver was still filling the ring. Each entry carries the buffer's rkey for every rail of the connection, since
 * the rails may run on different devices (twin links), each with its own memory region.
 *
 * <p>The ring never overwrites an entry the sender still needs: a request's slot is reused only after it completed
 * (so the sender had read its entries), and the other MAX_REQUESTS - 1 requests in flight hold at most
 * (MAX_REQUESTS - 1) * MAX_RECVS entries, which leaves room for the new one in a ring of MAX_REQUESTS * MAX_RECVS.
 *
 * <pre>
 * entry (64 B):  0 u64 addr   8 u64 size   16 u32 tag   20 u32 nreqs   24 u32 rkey[MAX_RAILS]   56 u64 seq
 * FIFO: ENTRIES entries, addressed by position modulo ENTRIES
 * </pre>
 */
public final class Cts {
    public static final int MAX_REQUESTS = 32;
    public static final int MAX_RECVS = io.jmesh.api.Receiver.MAX_RECVS;
    /** Queue pairs one connection may split its messages across. */
    public static final int MAX_RAILS = 8;
    public static final int ENTRY_BYTES = 64;
    public static final int ENTRIES = MAX_REQUESTS * MAX_RECVS;
    public static final int FIFO_BYTES = ENTRIES * ENTRY_BYTES;

    private static final long ADDR = 0;
    private static final long SIZE = 8;
    private static final long TAG = 16;
    private static final long NREQS = 20;
    private static final long RKEYS = 24;
    private static final long SEQ = 56;

    private static final VarHandle LONG = JAVA_LONG.varHandle();

    private Cts() {
    }

    /** Byte offset of the entry at ring position {@code position}. */
    public static long at(long position) {
        return (position & (ENTRIES - 1)) * ENTRY_BYTES;
    }

    /**
     * Fills an entry; the sequence number goes last (release), so a reader that sees it sees the rest. The entry
     * leaves by RDMA write, whose ordering the NIC keeps; the release orders the CPU's stores before the post.
     */
    public static void write(MemorySegment fifo, long entry, long addr, long size, int[] rkeys, int rkeyOffset,
                             int rails, int tag, int nreqs, long seq) {
        fifo.set(JAVA_LONG, entry + ADDR, addr);
        fifo.set(JAVA_LONG, entry + SIZE, size);
        fifo.set(JAVA_INT, entry + TAG, tag);
        fifo.set(JAVA_INT, entry + NREQS, nreqs);
        for (int r = 0; r < MAX_RAILS; r++) {
            fifo.set(JAVA_INT, entry + RKEYS + 4L * r, r < rails ? rkeys[rkeyOffset + r] : 0);
        }
        LONG.setRelease(fifo, entry + SEQ, seq);
    }

    /**
     * Copies the entry at {@code from} of {@code source} over the one at {@code to} of {@code fifo}, the sequence
     * number last (release), as {@link #write} fills one.
     */
    public static void copy(MemorySegment source, long from, MemorySegment fifo, long to) {
        MemorySegment.copy(source, from, fifo, to, SEQ);
        LONG.setRelease(fifo, to + SEQ, (long) LONG.getAcquire(source, from + SEQ));
    }

    /** The entry's sequence number, read with acquire: the fields read after it are at least as new. */
    public static long seq(MemorySegment fifo, long entry) {
        return (long) LONG.getAcquire(fifo, entry + SEQ);
    }

    public static long addr(MemorySegment fifo, long entry) {
        return fifo.get(JAVA_LONG, entry + ADDR);
    }

    public static long size(MemorySegment fifo, long entry) {
        return fifo.get(JAVA_LONG, entry + SIZE);
    }

    public static int rkey(MemorySegment fifo, long entry, int rail) {
        return fifo.get(JAVA_INT, entry + RKEYS + 4L * rail);
    }

    public static int tag(MemorySegment fifo, long entry) {
        return fifo.get(JAVA_INT, entry + TAG);
    }

    public static int nreqs(MemorySegment fifo, long entry) {
        return fifo.get(JAVA_INT, entry + NREQS);
    }
}
