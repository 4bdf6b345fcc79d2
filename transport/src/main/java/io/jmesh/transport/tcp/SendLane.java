package io.jmesh.transport.tcp;

import io.jmesh.transport.core.CoreSender;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

/**
 * A bulk data socket of a sender. The sender's thread {@link #offer}s each large message's stripe for this socket:
 * the chunks at message offsets {@code first, first + stride, ...} below the message's end, each at most {@code
 * chunk} bytes. The lane's thread writes those chunks, each as a header and then its payload straight from the
 * registration, and counts the stripe {@link #written()} once its last byte is in the kernel's send buffer. The ring
 * holds {@value #DEPTH} stripes, one per message the sender can have in flight, so every message the sender matched
 * is handed over at once and reaches the peer with no further call on the sender's side, as on NCCL's own
 * transports. The ring:
 * <pre>
 *   stripes [head, tail): offered, not yet fully written
 *   tail    the sender's thread writes it (release) after filling the entry
 *   head    the lane's thread writes it (release) after the stripe's last byte went out
 * </pre>
 * Each side reads the other's counter with acquire, so an entry is never read half-filled nor reused half-written.
 */
final class SendLane extends Lane {
    static final int DEPTH = CoreSender.MESSAGES;
    private static final int WRITES = 8;

    // the stripes, filled by the sender's thread
    private final int[] indexes = new int[DEPTH];
    private final int[] seqs = new int[DEPTH];
    private final long[] totals = new long[DEPTH];
    private final int[] ops = new int[DEPTH];
    private final TcpRegistration[] registrations = new TcpRegistration[DEPTH];
    private final long[] bases = new long[DEPTH];
    private final long[] firsts = new long[DEPTH];
    private final int[] chunks = new int[DEPTH];
    private final long[] strides = new long[DEPTH];
    private volatile long tail;
    private volatile long head;
    /** Chunks written so far (tests: which messages went over the bulk sockets). */
    private volatile long chunksWritten;

    // the lane's thread only: the stripe it writes, and where in it
    private final ViewCache views = new ViewCache();
    private final ByteBuffer header = ByteBuffer.allocateDirect(ChunkHeader.BYTES);
    private long at;
    private long position = -1;
    private ByteBuffer payload;
    private boolean blocked;

    SendLane(SocketChannel channel, DataConnection conn) {
        super(channel, conn);
    }

    /** Stripes offered so far (the sender's own count). */
    long offered() {
        return tail;
    }

    /** Stripes whose every byte is in the kernel's send buffer. */
    long written() {
        return head;
    }

    long chunksWritten() {
        return chunksWritten;
    }

    /** Whether another stripe fits the ring. */
    boolean hasRoom() {
        return tail - head < DEPTH;
    }

    /**
     * Queues the stripe of message buffer {@code index} (receive number {@code seq}, {@code total} bytes, placed
     * at {@code base} in {@code r}) that starts at message offset {@code first}: chunks of at most {@code chunk}
     * bytes every {@code stride} bytes; call only when {@link #hasRoom()}. The sender's thread only.
     */
    void offer(int index, int seq, long total, int ops, TcpRegistration r, long base, long first, int chunk,
               long stride) {
        long t = tail;
        int e = (int) (t & (DEPTH - 1));
        indexes[e] = index;
        seqs[e] = seq;
        totals[e] = total;
        this.ops[e] = ops;
        registrations[e] = r;
        bases[e] = base;
        firsts[e] = first;
        chunks[e] = chunk;
        strides[e] = stride;
        tail = t + 1;
        wake();
    }

    @Override
    boolean pump() {
        boolean worked = false;
        for (int w = 0; w < WRITES; w++) {
            int e = (int) (at & (DEPTH - 1));
            if (position < 0) {
                if (at == tail) {
                    return worked;
                }
                position = firsts[e];
                begin(e);
            }
            try {
                if (header.hasRemaining()) {
                    worked |= channel.write(header) > 0;
                    if (header.hasRemaining()) {
                        blocked = true;              // the socket's send buffer is full
                        return worked;
                    }
                }
                if (payload.hasRemaining()) {
                    worked |= channel.write(payload) > 0;
                    if (payload.hasRemaining()) {
                        blocked = true;
                        return worked;
                    }
                }
            } catch (IOException | IllegalStateException | WrongThreadException e2) {
                return failed(e2);
            }
            blocked = false;
            worked = true;
            chunksWritten = chunksWritten + 1;
            position += strides[e];
            if (position < totals[e]) {
                begin(e);
            } else {
                position = -1;
                payload = null;
                registrations[e] = null;
                head = ++at;
            }
        }
        return worked;
    }

    /** Points the header and the payload at stripe e's chunk that starts at {@link #position}. */
    private void begin(int e) {
        int length = (int) Math.min(chunks[e], totals[e] - position);
        ChunkHeader.write(header, indexes[e], seqs[e], totals[e], position, length, ops[e]);
        payload = views.view(registrations[e], bases[e] + position, length);
    }

    @Override
    boolean ready() {
        return !blocked && (position >= 0 || at != tail);
    }

    @Override
    int interestOps() {
        return blocked ? SelectionKey.OP_WRITE : 0;
    }
}
