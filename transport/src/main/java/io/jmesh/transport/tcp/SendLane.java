package io.jmesh.transport.tcp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

/**
 * A bulk data socket of a sender: the sender's thread {@link #offer}s chunks (header and where the payload lies in
 * registered memory) into a ring of {@value #DEPTH}; the lane's thread writes each, header then payload straight from
 * the registration, and counts it {@link #written()} once every byte is in the kernel's send buffer. The ring:
 * <pre>
 *   entries [head, tail): offered, not yet fully written
 *   tail    the sender's thread writes it (release) after filling the entry
 *   head    the lane's thread writes it (release) after the entry's last byte went out
 * </pre>
 * Each side reads the other's counter with acquire, so an entry is never read half-filled nor reused half-written.
 */
final class SendLane extends Lane {
    static final int DEPTH = 4;
    private static final int WRITES = 8;
    private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0);

    private final ByteBuffer[] headers = new ByteBuffer[DEPTH];
    private final TcpRegistration[] registrations = new TcpRegistration[DEPTH];
    private final long[] offsets = new long[DEPTH];
    private final int[] lengths = new int[DEPTH];
    private volatile long tail;
    private volatile long head;

    // the lane's thread only
    private final ViewCache views = new ViewCache();
    private long at;
    private ByteBuffer header;
    private ByteBuffer payload;
    private boolean blocked;

    SendLane(SocketChannel channel, DataConnection conn) {
        super(channel, conn);
        for (int e = 0; e < DEPTH; e++) {
            headers[e] = ByteBuffer.allocateDirect(ChunkHeader.BYTES);
        }
    }

    /** Chunks offered so far (the sender's own count). */
    long offered() {
        return tail;
    }

    /** Chunks whose every byte is in the kernel's send buffer. */
    long written() {
        return head;
    }

    /** Whether another chunk fits the ring. */
    boolean hasRoom() {
        return tail - head < DEPTH;
    }

    /**
     * Queues a chunk of a message: bytes [regOffset, regOffset + length) of {@code r}, with its header fields;
     * call only when {@link #hasRoom()}. The sender's thread only.
     */
    void offer(int index, int seq, long total, long offset, int length, int ops, TcpRegistration r, long regOffset) {
        long t = tail;
        int e = (int) (t & (DEPTH - 1));
        ChunkHeader.write(headers[e], index, seq, total, offset, length, ops);
        registrations[e] = r;
        offsets[e] = regOffset;
        lengths[e] = length;
        tail = t + 1;
        wake();
    }

    @Override
    boolean pump() {
        boolean worked = false;
        for (int w = 0; w < WRITES; w++) {
            if (header == null) {
                if (at == tail) {
                    return worked;
                }
                int e = (int) (at & (DEPTH - 1));
                header = headers[e];
                payload = lengths[e] == 0 ? EMPTY : views.view(registrations[e], offsets[e], lengths[e]);
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
            } catch (IOException | IllegalStateException | WrongThreadException e) {
                return failed(e);
            }
            blocked = false;
            header = null;
            payload = null;
            registrations[(int) (at & (DEPTH - 1))] = null;
            head = ++at;
            worked = true;
        }
        return worked;
    }

    @Override
    boolean ready() {
        return !blocked && at != tail;
    }

    @Override
    int interestOps() {
        return blocked ? SelectionKey.OP_WRITE : 0;
    }
}
