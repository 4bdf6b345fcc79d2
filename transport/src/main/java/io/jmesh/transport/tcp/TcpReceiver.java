package io.jmesh.transport.tcp;

import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;
import io.jmesh.api.Status;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

/**
 * The receiving half of a TCP connection, like {@link io.jmesh.transport.rdma.RdmaReceiver}: {@link #irecv} posts up
 * to {@value CtsFrame#MAX_RECVS} buffers as one grouped receive and sends one clear-to-send frame ({@link CtsFrame})
 * naming each buffer's size and tag on data socket 0. Chunks ({@link ChunkHeader}) arrive on any data socket and are
 * read straight into the posted buffer at their offset, after every field of the header has been checked against
 * the posted receive; anything else fails the connection. {@link #test} reports the real received sizes.
 *
 * <p>Progress happens inside {@link #irecv} and {@link #test}: flush pending clear-to-sends, then at most {@value
 * #READS_PER_SOCKET} non-blocking reads per data socket. When the peer closes, data already on the way is still
 * taken: the connection fails once every socket has reached end of stream (or {@value #EOF_GRACE_MS} ms after the
 * first did); a reset fails it at once. A request that completed reports 1 even after the connection failed.
 *
 * <p>One thread calls {@link #irecv} and {@link #test}. Nothing here allocates in steady state, locks, or throws.
 */
public final class TcpReceiver implements Receiver {
    static final int MAX_REQUESTS = TcpSender.MAX_REQUESTS;
    static final int MAX_RECVS = CtsFrame.MAX_RECVS;
    static final int MESSAGES = MAX_REQUESTS * MAX_RECVS;
    private static final int SLOT_MASK = MAX_REQUESTS - 1;
    static final int READS_PER_SOCKET = 8;
    static final long EOF_GRACE_MS = 2_000;

    private final DataConnection conn;
    private final SocketChannel[] sockets;
    private final int socketCount;
    private final TcpProvider owner;
    /** Clear-to-sends not yet written, in write mode; at most one per slot. */
    private final ByteBuffer ctsOut = ByteBuffer.allocateDirect(MAX_REQUESTS * CtsFrame.BYTES);

    // per slot
    private long head;
    private final long[] slotSeq = new long[MAX_REQUESTS];
    private final int[] nreqs = new int[MAX_REQUESTS];
    private final int[] doneMask = new int[MAX_REQUESTS];
    private final boolean[] busy = new boolean[MAX_REQUESTS];
    private final boolean[] complete = new boolean[MAX_REQUESTS];

    // per buffer (slot * 8 + i)
    private final TcpRegistration[] registration = new TcpRegistration[MESSAGES];
    private final long[] bufferOffset = new long[MESSAGES];
    private final long[] maxSize = new long[MESSAGES];
    private final long[] expected = new long[MESSAGES];
    private final long[] received = new long[MESSAGES];

    // per data socket: the header or chunk being read
    private final ByteBuffer[] headers;
    private final ByteBuffer[] payload;
    private final int[] socketMessage;
    private final int[] socketLength;
    private final boolean[] endOfStream;
    private final ViewCache[] views;
    private int endOfStreamCount;
    private long firstEndOfStreamNanos;

    TcpReceiver(DataConnection conn, TcpProvider owner) {
        this.conn = conn;
        this.owner = owner;
        this.sockets = conn.sockets;
        this.socketCount = sockets.length;
        this.headers = new ByteBuffer[socketCount];
        this.payload = new ByteBuffer[socketCount];
        this.socketMessage = new int[socketCount];
        this.socketLength = new int[socketCount];
        this.endOfStream = new boolean[socketCount];
        this.views = new ViewCache[socketCount];
        for (int j = 0; j < socketCount; j++) {
            headers[j] = ByteBuffer.allocateDirect(ChunkHeader.BYTES);
            socketMessage[j] = -1;
            views[j] = new ViewCache();
        }
    }

    /**
     * Posts a grouped receive: buffer i is bytes [offsets[i], offsets[i] + maxSizes[i]) of registrations[i] and takes
     * the message sent with tags[i].
     *
     * @return a request id, or {@link Status#NOT_READY} (all {@value #MAX_REQUESTS} request slots busy), {@link
     *         Status#BAD_ARGUMENT}, {@link Status#FAILED}, {@link Status#CLOSED}
     */
    @Override
    public int irecv(int n, Registration[] registrations, long[] offsets, long[] maxSizes, int[] tags) {
        if (n < 1 || n > MAX_RECVS || registrations == null || offsets == null || maxSizes == null || tags == null
                || registrations.length < n || offsets.length < n || maxSizes.length < n || tags.length < n) {
            return Status.BAD_ARGUMENT;
        }
        for (int i = 0; i < n; i++) {
            if (!(registrations[i] instanceof TcpRegistration r) || !r.contains(offsets[i], maxSizes[i])) {
                return Status.BAD_ARGUMENT;
            }
        }
        if (conn.failed()) {
            return Status.FAILED;
        }
        if (conn.closed()) {
            return Status.CLOSED;
        }
        int slot = (int) (head & SLOT_MASK);
        if (busy[slot]) {
            progress();
            return conn.failed() ? Status.FAILED : Status.NOT_READY;
        }
        int base = slot * MAX_RECVS;
        for (int i = 0; i < n; i++) {
            registration[base + i] = (TcpRegistration) registrations[i];
            bufferOffset[base + i] = offsets[i];
            maxSize[base + i] = maxSizes[i];
            expected[base + i] = -1;
            received[base + i] = 0;
        }
        long seq = head + 1;
        slotSeq[slot] = seq;
        nreqs[slot] = n;
        doneMask[slot] = 0;
        complete[slot] = false;
        busy[slot] = true;
        int at = ctsOut.position();
        CtsFrame.write(ctsOut, at, (int) seq, n, maxSizes, tags);
        ctsOut.position(at + CtsFrame.BYTES);
        head++;
        progress();
        return slot;
    }

    /**
     * Makes progress and reports on one request.
     *
     * @return 1 when complete (sizes from {@link #size(int, int)}), 0 while in flight, or {@link Status#FAILED} (see
     *         {@link #error()}), {@link Status#CLOSED}, {@link Status#BAD_ARGUMENT} (no such request in flight)
     */
    @Override
    public int iflush(int n, Registration[] registrations, long[] offsets, long[] sizes) {
        return io.jmesh.api.Status.BAD_ARGUMENT; // not implemented yet over TCP
    }

    @Override
    public int test(int request) {
        if (request < 0 || request >= MAX_REQUESTS || !busy[request]) {
            return Status.BAD_ARGUMENT;
        }
        if (!complete[request]) {
            if (conn.failed()) {
                return Status.FAILED;
            }
            if (conn.closed()) {
                return Status.CLOSED;
            }
            progress();
            if (!complete[request]) {
                return conn.failed() ? Status.FAILED : 0;
            }
        }
        complete[request] = false;
        busy[request] = false;
        return 1;
    }

    /** Bytes received into buffer i of a completed request (-1 for ids out of range). */
    @Override
    public long size(int request, int i) {
        return request >= 0 && request < MAX_REQUESTS && i >= 0 && i < MAX_RECVS
                ? received[request * MAX_RECVS + i] : -1;
    }

    /** The number of buffers of a request. */
    public int buffers(int request) {
        return nreqs[request];
    }

    /** Flushes clear-to-sends, then reads every data socket; bounded work. */
    void progress() {
        if (conn.failed() || conn.closed()) {
            return;
        }
        if (ctsOut.position() > 0 && !flushCts()) {
            return;
        }
        for (int j = 0; j < socketCount; j++) {
            if (!endOfStream[j] && !read(j)) {
                return;
            }
        }
        if (endOfStreamCount > 0 && (endOfStreamCount == socketCount
                || System.nanoTime() - firstEndOfStreamNanos > TimeUnit.MILLISECONDS.toNanos(EOF_GRACE_MS))) {
            conn.lostEndOfStream("");
        }
    }

    private boolean flushCts() {
        ctsOut.flip();
        try {
            sockets[0].write(ctsOut);
        } catch (IOException e) {
            ctsOut.clear();
            conn.lost(e);
            return false;
        }
        ctsOut.compact();
        return true;
    }

    /** Reads socket j: headers, then payload straight into the posted buffer. False when the connection failed. */
    private boolean read(int j) {
        SocketChannel ch = sockets[j];
        for (int r = 0; r < READS_PER_SOCKET; r++) {
            boolean inHeader = socketMessage[j] < 0;
            ByteBuffer b = inHeader ? headers[j] : payload[j];
            int got;
            try {
                got = ch.read(b);
            } catch (IOException e) {
                conn.lost(e);
                return false;
            } catch (IllegalStateException e) {
                conn.memoryGone(e);
                return false;
            }
            if (got < 0) {
                if (!inHeader || headers[j].position() > 0) {
                    conn.lostEndOfStream(" in the middle of a message");
                    return false;
                }
                endOfStream[j] = true;
                if (endOfStreamCount++ == 0) {
                    firstEndOfStreamNanos = System.nanoTime();
                }
                return true;
            }
            if (b.hasRemaining()) {
                return true; // nothing more for now
            }
            if (inHeader) {
                if (!beginChunk(j)) {
                    return false;
                }
            } else {
                int k = socketMessage[j];
                socketMessage[j] = -1;
                payload[j] = null;
                chunkReceived(k, socketLength[j]);
            }
        }
        return true;
    }

    /** Checks a chunk header against the posted receive and points socket j at the chunk's place in the buffer. */
    private boolean beginChunk(int j) {
        ByteBuffer h = headers[j];
        String bad = ChunkHeader.check(h);
        if (bad != null) {
            conn.violation(bad);
            return false;
        }
        int seq = ChunkHeader.seq(h);
        int slot = (seq - 1) & SLOT_MASK;
        if (!busy[slot] || (int) slotSeq[slot] != seq || complete[slot]) {
            conn.violation("data for receive number " + Integer.toUnsignedString(seq) + ", which is not posted");
            return false;
        }
        int index = ChunkHeader.index(h);
        if (index >= nreqs[slot]) {
            conn.violation("data for buffer " + index + " of a receive of " + nreqs[slot] + " buffers");
            return false;
        }
        int k = slot * MAX_RECVS + index;
        long total = ChunkHeader.total(h);
        int length = ChunkHeader.length(h);
        if (total > maxSize[k]) {
            conn.violation("a message of " + total + " bytes for a buffer of " + maxSize[k]
                    + " (the sender must answer TRUNCATED instead)");
            return false;
        }
        if ((doneMask[slot] & (1 << index)) != 0 || (expected[k] >= 0 && expected[k] != total)
                || received[k] + length > total) {
            conn.violation("a chunk that does not fit the message of " + total + " bytes it belongs to");
            return false;
        }
        expected[k] = total;
        h.clear();
        if (length == 0) {
            chunkReceived(k, 0);
            return true;
        }
        socketMessage[j] = k;
        socketLength[j] = length;
        payload[j] = views[j].view(registration[k], bufferOffset[k] + ChunkHeader.offset(h), length);
        return true;
    }

    private void chunkReceived(int k, int length) {
        received[k] += length;
        if (received[k] == expected[k]) {
            int slot = k / MAX_RECVS;
            doneMask[slot] |= 1 << (k % MAX_RECVS);
            if (doneMask[slot] == (1 << nreqs[slot]) - 1) {
                complete[slot] = true;
            }
        }
    }

    /** Why the connection failed, or null. */
    @Override
    public String error() {
        return conn.error();
    }

    /** The number of data sockets. */
    public int sockets() {
        return socketCount;
    }

    /** This side's address of data socket i (on the link the connection runs over). */
    public InetSocketAddress localAddress(int socket) {
        return DataSockets.localAddress(sockets[socket]);
    }

    /** The peer's address of data socket i. */
    public InetSocketAddress remoteAddress(int socket) {
        return DataSockets.remoteAddress(sockets[socket]);
    }

    /** Closes the data sockets; requests in flight fail here (CLOSED) and at the peer (FAILED). */
    @Override
    public void close() {
        if (!conn.closed()) {
            conn.close();
            if (owner != null) {
                owner.release(this);
            }
        }
    }

    @Override
    public String toString() {
        return "TcpReceiver[" + conn + "]";
    }
}
