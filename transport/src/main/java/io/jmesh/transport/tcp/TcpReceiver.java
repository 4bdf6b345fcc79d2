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
 * <p>This end also owns the memory the peer's one-sided {@link io.jmesh.api.Sender#write writes} and {@link
 * io.jmesh.api.Sender#read reads} name ({@link OpFrame}, on data socket 0 only): it looks the registration id up in
 * the provider's {@link TcpRegistry}, checks the range, applies a write straight into the registration, and sends a
 * read's data back on socket 0, then a completion per operation, in operation order. A request naming no open
 * registration, or a range outside it, is refused (its payload is read and dropped) and the connection stays up;
 * malformed frames fail it. Unlike verbs, where the NIC does this on its own, it happens only while this receiver is
 * polled: {@link #irecv}, {@link #test}, {@link #iflush} or {@link #poll()}. A write waits for the reads issued
 * before it to be served, so each read sees exactly the writes issued before it; and a receive completes only once
 * the operations issued before its message are applied.
 *
 * <p>{@link #iflush} completes at once: over TCP the CPU wrote the data, so it is visible once the receive completed.
 *
 * <p>One thread calls {@link #irecv}, {@link #test}, {@link #iflush} and {@link #poll()}. Nothing here allocates
 * in steady state, locks, or throws.
 */
public final class TcpReceiver implements Receiver {
    static final int MAX_REQUESTS = TcpSender.MAX_REQUESTS;
    static final int MAX_RECVS = CtsFrame.MAX_RECVS;
    static final int MESSAGES = MAX_REQUESTS * MAX_RECVS;
    private static final int SLOT_MASK = MAX_REQUESTS - 1;
    static final int READS_PER_SOCKET = 8;
    static final long EOF_GRACE_MS = 2_000;
    static final int MAX_OPS = TcpSender.MAX_OPS;
    private static final int OP_MASK = MAX_OPS - 1;
    /** Flush request ids follow the receive slots. */
    static final int FLUSH_IDS = MAX_REQUESTS;
    static final int MAX_FLUSHES = 32;
    private static final int WRITES_BACK = 8;
    /** Socket 0's state while it reads a write piece's payload into a registration, or drops a refused one. */
    private static final int OP_PAYLOAD = -2;
    private static final int DISCARD = -3;
    private static final int BEGUN = 0;
    private static final int STALLED = 1;
    private static final int BROKEN = 2;
    private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0);

    private final DataConnection conn;
    private final SocketChannel[] sockets;
    private final int socketCount;
    private final TcpProvider owner;
    private final TcpRegistry registry;
    /**
     * Clear-to-sends and completions not yet written on socket 0, in write mode: at most one clear-to-send per slot
     * and one completion (it is queued only once this buffer is empty).
     */
    private final ByteBuffer ctrl = ByteBuffer.allocateDirect(MAX_REQUESTS * CtsFrame.BYTES + 4 * OpFrame.BYTES);

    // per slot
    private long head;
    private final long[] slotSeq = new long[MAX_REQUESTS];
    private final int[] nreqs = new int[MAX_REQUESTS];
    private final int[] doneMask = new int[MAX_REQUESTS];
    private final boolean[] busy = new boolean[MAX_REQUESTS];
    /** Every buffer of the slot has its message (the receive completes once {@link #slotOps} are applied too). */
    private final boolean[] complete = new boolean[MAX_REQUESTS];
    /** One-sided operations that must be applied before the slot completes (the latest of its messages' counts). */
    private final int[] slotOps = new int[MAX_REQUESTS];

    // per buffer (slot * 8 + i)
    private final TcpRegistration[] registration = new TcpRegistration[MESSAGES];
    private final long[] bufferOffset = new long[MESSAGES];
    private final long[] maxSize = new long[MESSAGES];
    private final long[] expected = new long[MESSAGES];
    private final long[] received = new long[MESSAGES];
    private final int[] messageOps = new int[MESSAGES];

    // one-sided operations as they arrive on socket 0, in order
    /** Operations applied (writes) or taken (reads) so far; the next must be number opsApplied + 1 (mod 2^32). */
    private int opsApplied;
    /** A write whose last piece has not arrived; its status so far, and whether the piece being read is the last. */
    private boolean opOpen;
    private int opStatus;
    private long opDetail;
    private boolean opLast;
    private TcpRegistration opRegistration;
    private final ByteBuffer discard = ByteBuffer.allocateDirect(64 << 10);
    private int discardRemaining;

    // replies owed, in operation order: a completion per operation, after the answer pieces of a read
    private final boolean[] replyRead = new boolean[MAX_OPS];
    private final int[] replyOp = new int[MAX_OPS];
    private final int[] replyStatus = new int[MAX_OPS];
    private final long[] replyDetail = new long[MAX_OPS];
    private final TcpRegistration[] replyRegistration = new TcpRegistration[MAX_OPS];
    private final long[] replyOffset = new long[MAX_OPS];
    private final long[] replyLength = new long[MAX_OPS];
    private final long[] replyServed = new long[MAX_OPS];
    private long replyHead;
    private long replyTail;
    /** Reads owed a completion: a write waits for them, so it cannot change what an earlier read returns. */
    private int pendingReads;
    /** The answer piece being written: header, then payload straight from the registration. */
    private final ByteBuffer answerHeader = ByteBuffer.allocateDirect(OpFrame.BYTES).limit(0);
    private ByteBuffer answerPayload = EMPTY;
    private final ViewCache answerViews = new ViewCache();

    // flushes: complete when issued, reported once
    private final boolean[] flushPending = new boolean[MAX_FLUSHES];
    private int nextFlush;

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
        this(conn, owner, owner == null ? null : owner.registry());
    }

    /** @param registry where one-sided requests look their registration up; null refuses them all */
    TcpReceiver(DataConnection conn, TcpProvider owner, TcpRegistry registry) {
        this.conn = conn;
        this.owner = owner;
        this.registry = registry;
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
        slotOps[slot] = opsApplied;
        busy[slot] = true;
        int at = ctrl.position();
        CtsFrame.write(ctrl, at, (int) seq, n, maxSizes, tags);
        ctrl.position(at + CtsFrame.BYTES);
        head++;
        progress();
        return slot;
    }

    /**
     * Over TCP the CPU wrote the received data, so it is visible to every reader of that memory once the receive
     * completed: the flush completes at once. The arguments are still checked as for {@link #irecv}.
     *
     * @return a request id ({@value #FLUSH_IDS} and up) that {@link #test} reports as 1 once, or {@link
     *         Status#NOT_READY} ({@value #MAX_FLUSHES} flushes unreported), {@link Status#BAD_ARGUMENT}, {@link
     *         Status#FAILED}, {@link Status#CLOSED}
     */
    @Override
    public int iflush(int n, Registration[] registrations, long[] offsets, long[] sizes) {
        if (n < 1 || n > MAX_RECVS || registrations == null || offsets == null || sizes == null
                || registrations.length < n || offsets.length < n || sizes.length < n) {
            return Status.BAD_ARGUMENT;
        }
        for (int i = 0; i < n; i++) {
            if (!(registrations[i] instanceof TcpRegistration r) || !r.contains(offsets[i], sizes[i])) {
                return Status.BAD_ARGUMENT;
            }
        }
        if (conn.failed()) {
            return Status.FAILED;
        }
        if (conn.closed()) {
            return Status.CLOSED;
        }
        progress();
        for (int i = 0; i < MAX_FLUSHES; i++) {
            int f = (nextFlush + i) % MAX_FLUSHES;
            if (!flushPending[f]) {
                flushPending[f] = true;
                nextFlush = (f + 1) % MAX_FLUSHES;
                return FLUSH_IDS + f;
            }
        }
        return Status.NOT_READY;
    }

    /**
     * Makes progress and reports on one request.
     *
     * @return 1 when complete (sizes from {@link #size(int, int)}), 0 while in flight, or {@link Status#FAILED} (see
     *         {@link #error()}), {@link Status#CLOSED}, {@link Status#BAD_ARGUMENT} (no such request in flight)
     */
    @Override
    public int test(int request) {
        if (request >= FLUSH_IDS && request < FLUSH_IDS + MAX_FLUSHES) {
            if (!flushPending[request - FLUSH_IDS]) {
                return Status.BAD_ARGUMENT;
            }
            flushPending[request - FLUSH_IDS] = false;
            return 1;
        }
        if (request < 0 || request >= MAX_REQUESTS || !busy[request]) {
            return Status.BAD_ARGUMENT;
        }
        if (!done(request)) {
            if (conn.failed()) {
                return Status.FAILED;
            }
            if (conn.closed()) {
                return Status.CLOSED;
            }
            progress();
            if (!done(request)) {
                return conn.failed() ? Status.FAILED : 0;
            }
        }
        complete[request] = false;
        busy[request] = false;
        return 1;
    }

    private boolean done(int slot) {
        return complete[slot] && opsApplied - slotOps[slot] >= 0;
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

    /**
     * Writes what is owed on socket 0 (clear-to-sends, answers, completions), reads every data socket, and writes
     * again; bounded work. Call it when holding a receiver that has no request of its own to test, so the peer's
     * one-sided operations complete.
     */
    @Override
    public void poll() {
        progress();
    }

    void progress() {
        if (conn.failed() || conn.closed()) {
            return;
        }
        if (!writeBack()) {
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
            return;
        }
        if (replyHead != replyTail || ctrl.position() > 0) {
            writeBack();
        }
    }

    /**
     * Writes socket 0's reverse direction: the answer piece in progress, then queued control frames, then the next
     * answer piece or completion of the oldest operation owed a reply. False when the connection failed.
     */
    private boolean writeBack() {
        SocketChannel ch = sockets[0];
        for (int w = 0; w < WRITES_BACK; w++) {
            try {
                if (answerHeader.hasRemaining() || answerPayload.hasRemaining()) {
                    if (answerHeader.hasRemaining()) {
                        ch.write(answerHeader);
                        if (answerHeader.hasRemaining()) {
                            return true;
                        }
                    }
                    if (answerPayload.hasRemaining()) {
                        ch.write(answerPayload);
                        if (answerPayload.hasRemaining()) {
                            return true;
                        }
                    }
                    answerPayload = EMPTY;
                    continue;
                }
                if (ctrl.position() > 0) {
                    ctrl.flip();
                    ch.write(ctrl);
                    ctrl.compact();
                    if (ctrl.position() > 0) {
                        return true;
                    }
                }
            } catch (IOException e) {
                ctrl.clear();
                conn.lost(e);
                return false;
            } catch (IllegalStateException e) {
                conn.memoryGone(e);
                return false;
            }
            if (replyHead == replyTail) {
                return true;
            }
            int slot = (int) (replyHead & OP_MASK);
            if (replyRead[slot] && replyStatus[slot] == OpFrame.OK && replyServed[slot] < replyLength[slot]) {
                TcpRegistration r = replyRegistration[slot];
                if (r.closed()) {
                    replyStatus[slot] = OpFrame.NO_REGISTRATION; // closed while being read: the rest is refused
                    continue;
                }
                long served = replyServed[slot];
                int n = (int) Math.min(ChunkHeader.SEND_MAX, replyLength[slot] - served);
                answerHeader.clear();
                OpFrame.answer(answerHeader, 0, replyOp[slot], served, n);
                answerPayload = answerViews.view(r, replyOffset[slot] + served, n);
                replyServed[slot] = served + n;
                continue;
            }
            int at = ctrl.position();
            OpFrame.done(ctrl, at, replyOp[slot], replyStatus[slot], replyDetail[slot]);
            ctrl.position(at + OpFrame.BYTES);
            if (replyRead[slot]) {
                pendingReads--;
            }
            replyRegistration[slot] = null;
            replyHead++;
        }
        return true;
    }

    /** Reads socket j: headers, then payload straight into the posted buffer. False when the connection failed. */
    private boolean read(int j) {
        SocketChannel ch = sockets[j];
        for (int r = 0; r < READS_PER_SOCKET; r++) {
            int state = socketMessage[j];
            boolean inHeader = state == -1;
            if (inHeader && !headers[j].hasRemaining()) {
                int begun = beginFrame(j); // a write that waited for earlier reads to be served
                if (begun != BEGUN) {
                    return begun == STALLED;
                }
                continue;
            }
            ByteBuffer b = inHeader ? headers[j] : state == DISCARD ? discard : payload[j];
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
                int begun = beginFrame(j);
                if (begun != BEGUN) {
                    return begun == STALLED;
                }
            } else if (state >= 0) {
                socketMessage[j] = -1;
                payload[j] = null;
                chunkReceived(state, socketLength[j]);
            } else if (state == OP_PAYLOAD) {
                socketMessage[j] = -1;
                payload[j] = null;
                pieceDone();
            } else {
                discardRemaining -= discard.limit();
                if (discardRemaining > 0) {
                    discard.clear().limit(Math.min(discard.capacity(), discardRemaining));
                } else {
                    socketMessage[j] = -1;
                    pieceDone();
                }
            }
        }
        return true;
    }

    /** Starts on a complete header of socket j: a data chunk, or (on socket 0) a one-sided request. */
    private int beginFrame(int j) {
        byte type = headers[j].get(0);
        if (type == OpFrame.WRITE || type == OpFrame.READ) {
            if (j != 0) {
                conn.violation("a one-sided request on data socket " + j + " (only socket 0 carries them)");
                return BROKEN;
            }
            return beginOperation();
        }
        return beginChunk(j) ? BEGUN : BROKEN;
    }

    /**
     * Checks a write piece or read request, looks its registration up and checks the range; a write piece's payload
     * then goes into the registration (or is dropped when the operation is refused), a read is queued for serving.
     */
    private int beginOperation() {
        ByteBuffer h = headers[0];
        String bad = OpFrame.checkRequest(h, 0);
        if (bad != null) {
            conn.violation(bad);
            return BROKEN;
        }
        int op = OpFrame.op(h, 0);
        if (op != opsApplied + 1) {
            conn.violation("one-sided operation " + Integer.toUnsignedString(op) + " out of order (expected "
                    + Integer.toUnsignedString(opsApplied + 1) + ")");
            return BROKEN;
        }
        boolean read = OpFrame.type(h, 0) == OpFrame.READ;
        if (!opOpen) {
            if (!read && pendingReads > 0) {
                return STALLED; // this write would change what an earlier read returns
            }
            if (replyTail - replyHead >= MAX_OPS) {
                conn.violation("more than " + MAX_OPS + " one-sided operations outstanding");
                return BROKEN;
            }
            opStatus = OpFrame.OK;
            opDetail = 0;
        } else if (read) {
            conn.violation("a read request inside write " + Integer.toUnsignedString(op));
            return BROKEN;
        }
        long key = OpFrame.key(h, 0);
        long offset = OpFrame.offset(h, 0);
        long length = read ? OpFrame.readLength(h, 0) : OpFrame.pieceLength(h, 0);
        boolean last = OpFrame.last(h, 0);
        TcpRegistration r = null;
        if (opStatus == OpFrame.OK) {
            r = registry == null ? null : registry.lookup(key);
            if (r == null || r.closed()) {
                opStatus = OpFrame.NO_REGISTRATION;
                r = null;
            } else if (!r.contains(offset, length)) {
                opStatus = OpFrame.OUT_OF_RANGE;
                opDetail = r.length;
                r = null;
            }
        }
        h.clear();
        if (read) {
            queueReply(true, op, r, offset, length);
            opsApplied++;
            return BEGUN;
        }
        opOpen = true;
        opLast = last;
        opRegistration = r;
        if (length == 0) {
            pieceDone();
        } else if (opStatus == OpFrame.OK) {
            socketMessage[0] = OP_PAYLOAD;
            payload[0] = views[0].view(r, offset, (int) length);
        } else {
            socketMessage[0] = DISCARD;
            discardRemaining = (int) length;
            discard.clear().limit(Math.min(discard.capacity(), discardRemaining));
        }
        return BEGUN;
    }

    /** A write piece is in (or dropped); after the last one, the write is applied and owes its completion. */
    private void pieceDone() {
        opRegistration = null;
        if (opLast) {
            opOpen = false;
            queueReply(false, opsApplied + 1, null, 0, 0);
            opsApplied++;
        }
    }

    private void queueReply(boolean read, int op, TcpRegistration r, long offset, long length) {
        int slot = (int) (replyTail & OP_MASK);
        replyRead[slot] = read;
        replyOp[slot] = op;
        replyStatus[slot] = opStatus;
        replyDetail[slot] = opDetail;
        replyRegistration[slot] = r;
        replyOffset[slot] = offset;
        replyLength[slot] = length;
        replyServed[slot] = 0;
        replyTail++;
        if (read) {
            pendingReads++;
        }
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
        int ops = ChunkHeader.ops(h);
        if (ops - opsApplied > MAX_OPS || (expected[k] >= 0 && messageOps[k] != ops)) {
            conn.violation("a data chunk after " + Integer.toUnsignedString(ops) + " one-sided operations, with "
                    + Integer.toUnsignedString(opsApplied) + " applied and at most " + MAX_OPS + " in flight");
            return false;
        }
        messageOps[k] = ops;
        if (ops - slotOps[slot] > 0) {
            slotOps[slot] = ops;
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
