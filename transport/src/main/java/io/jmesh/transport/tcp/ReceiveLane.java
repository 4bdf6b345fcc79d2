package io.jmesh.transport.tcp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

/**
 * A bulk data socket of a receiver: the lane's thread reads each chunk header, checks it and looks its destination up
 * in the {@link PostedTable}, reads the payload straight into the posted buffer, and then files the chunk as an event
 * in a ring of {@value #EVENTS} for the receiver's thread, which accounts for it ({@code TcpReceiveWire}). The ring:
 * <pre>
 *   events [head, tail): chunks in place, not yet taken by the receiver's thread
 *   tail   the lane's thread writes it (release) after the chunk's bytes and the event's fields
 *   head   the receiver's thread writes it (release) once it took the event
 * </pre>
 * A lane starts reading a header only when an event slot is free, so a receiver that stops polling stops its lanes
 * (TCP flow control then slows the sender) instead of growing a queue. A header that does not fit a posted receive
 * fails the connection before any payload byte is read.
 */
final class ReceiveLane extends Lane {
    static final int EVENTS = 16;
    private static final int READS = 8;

    private final PostedTable posted;
    private final int[] seqs = new int[EVENTS];
    private final int[] indexes = new int[EVENTS];
    private final int[] lengths = new int[EVENTS];
    private final int[] ops = new int[EVENTS];
    private final long[] totals = new long[EVENTS];
    private volatile long tail;
    private volatile long head;
    /** The peer ended this socket at a chunk boundary. */
    private volatile boolean endOfStream;
    /** The lane waits for the receiver's thread to take events; it then wakes the lane. */
    private volatile boolean stalled;

    /** The receiver counted this lane's end of stream (the receiver's thread only). */
    boolean counted;

    // the lane's thread only
    private final ByteBuffer header = ByteBuffer.allocateDirect(ChunkHeader.BYTES);
    private final ViewCache views = new ViewCache();
    private final PostedTable.Destination destination = new PostedTable.Destination();
    private ByteBuffer payload;

    ReceiveLane(SocketChannel channel, DataConnection conn, PostedTable posted) {
        super(channel, conn);
        this.posted = posted;
    }

    @Override
    boolean pump() {
        boolean worked = false;
        for (int r = 0; r < READS && !endOfStream; r++) {
            try {
                if (payload == null) {
                    if (tail - head >= EVENTS) {
                        stalled = true;
                        return worked;
                    }
                    int got = channel.read(header);
                    if (got < 0) {
                        if (header.position() > 0) {
                            conn.lostEndOfStream(" in the middle of a message");
                        } else {
                            endOfStream = true;
                        }
                        return worked;
                    }
                    worked |= got > 0;
                    if (header.hasRemaining() || !begin()) {
                        return worked;
                    }
                }
                if (payload.hasRemaining()) {
                    int got = channel.read(payload);
                    if (got < 0) {
                        conn.lostEndOfStream(" in the middle of a message");
                        return worked;
                    }
                    worked |= got > 0;
                    if (payload.hasRemaining()) {
                        return worked;
                    }
                }
            } catch (IOException | IllegalStateException | WrongThreadException e) {
                return failed(e);
            }
            payload = null;
            header.clear();
            tail = tail + 1;                    // the event's fields and the chunk's bytes are in place
        }
        return worked;
    }

    /** Checks a whole header, points the payload at its place and fills the next event; false when it failed. */
    private boolean begin() {
        String bad = ChunkHeader.check(header);
        int seq = ChunkHeader.seq(header);
        int index = ChunkHeader.index(header);
        long total = ChunkHeader.total(header);
        int length = ChunkHeader.length(header);
        if (bad == null) {
            bad = posted.resolve(seq, index, total, ChunkHeader.offset(header), length, destination);
        }
        if (bad != null) {
            conn.violation(bad);
            return false;
        }
        int e = (int) (tail & (EVENTS - 1));
        seqs[e] = seq;
        indexes[e] = index;
        lengths[e] = length;
        totals[e] = total;
        ops[e] = ChunkHeader.ops(header);
        payload = views.view(destination.registration, destination.offset, length);
        return true;
    }

    /** Events filed and not yet taken: [taken(), filed()). The receiver's thread. */
    long filed() {
        return tail;
    }

    long taken() {
        return head;
    }

    int seq(long event) {
        return seqs[(int) (event & (EVENTS - 1))];
    }

    int index(long event) {
        return indexes[(int) (event & (EVENTS - 1))];
    }

    int length(long event) {
        return lengths[(int) (event & (EVENTS - 1))];
    }

    long total(long event) {
        return totals[(int) (event & (EVENTS - 1))];
    }

    int ops(long event) {
        return ops[(int) (event & (EVENTS - 1))];
    }

    /** The receiver's thread took every event up to {@code through}; wakes the lane if it waited for room. */
    void take(long through) {
        head = through;
        if (stalled) {
            stalled = false;
            wake();
        }
    }

    boolean endOfStream() {
        return endOfStream;
    }

    @Override
    boolean ready() {
        return payload == null && tail - head < EVENTS && stalled;
    }

    @Override
    int interestOps() {
        return endOfStream || tail - head >= EVENTS ? 0 : SelectionKey.OP_READ;
    }
}
