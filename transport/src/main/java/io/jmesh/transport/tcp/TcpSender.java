package io.jmesh.transport.tcp;

import io.jmesh.api.Registration;
import io.jmesh.api.Sender;
import io.jmesh.api.Status;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * The sending half of a TCP connection, receiver-driven like {@link io.jmesh.transport.rdma.RdmaSender}: the
 * receiver sends a clear-to-send frame ({@link CtsFrame}) per grouped receive on data socket 0, and {@link #isend}
 * answers {@link Status#NOT_READY} until the frame for its message (same request, same tag) is there, and {@link
 * Status#TRUNCATED} when the message is larger than the posted buffer. A matched message is cut into chunks
 * ({@link ChunkHeader}) that go out on whichever data socket is free, straight from the registered memory. Up to
 * {@value #MAX_REQUESTS} grouped receives are in flight.
 *
 * <p>Progress happens inside {@link #isend} and {@link #test}: a non-blocking read of socket 0 for clear-to-sends
 * (when the one needed is not here yet), then non-blocking writes of at most {@value #WRITES_PER_SOCKET} chunks per
 * data socket. Request ids are {@code slot * 8 + buffer}, as on verbs. A request is complete when all its bytes are in
 * the kernel's send buffers (the verbs sender's local completion); a request that completed reports 1 even after the
 * connection failed.
 *
 * <p>One thread calls {@link #isend} and {@link #test}. Nothing here allocates in steady state, locks, or throws:
 * results are request ids (>= 0) or {@link Status} codes.
 */
public final class TcpSender implements Sender {
    static final int MAX_REQUESTS = 32;
    static final int MAX_RECVS = CtsFrame.MAX_RECVS;
    static final int MESSAGES = MAX_REQUESTS * MAX_RECVS;
    private static final int SLOT_MASK = MAX_REQUESTS - 1;
    private static final int QUEUE_MASK = MESSAGES - 1;
    static final int WRITES_PER_SOCKET = 8;
    private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0);

    private final DataConnection conn;
    private final SocketChannel[] sockets;
    private final int socketCount;
    private final TcpProvider owner;

    // clear-to-sends as received, per slot (like the verbs CTS FIFO)
    private final ByteBuffer ctsIn = ByteBuffer.allocateDirect(MAX_REQUESTS * CtsFrame.BYTES);
    private final int[] ctsCount = new int[MAX_REQUESTS];
    private final long[] ctsSize = new long[MESSAGES];
    private final int[] ctsTag = new int[MESSAGES];
    /** Clear-to-sends received so far; the next one must carry ctsReceived + 1. */
    private long ctsReceived;

    // matching, per slot: the grouped receive at head is being matched; earlier ones wait for test to report them
    private long head;
    private final int[] matched = new int[MAX_REQUESTS];
    private final int[] reported = new int[MAX_REQUESTS];
    private final int[] nreqs = new int[MAX_REQUESTS];
    private final boolean[] busy = new boolean[MAX_REQUESTS];

    // per message (slot * 8 + buffer): what isend was given and how far it got
    private final TcpRegistration[] msgRegistration = new TcpRegistration[MESSAGES];
    private final long[] msgOffset = new long[MESSAGES];
    private final long[] msgLength = new long[MESSAGES];
    private final long[] msgAssigned = new long[MESSAGES];
    private final int[] msgChunk = new int[MESSAGES];
    private final int[] msgSeq = new int[MESSAGES];
    private final int[] msgOutstanding = new int[MESSAGES];
    private final boolean[] msgQueued = new boolean[MESSAGES];
    private final boolean[] msgDone = new boolean[MESSAGES];
    /** Matched messages with chunks still to hand out, in matching order. */
    private final int[] queue = new int[MESSAGES];
    private int queueHead;
    private int queueTail;

    // per data socket: the chunk it is writing
    private final ByteBuffer[] headers;
    private final ByteBuffer[] payload;
    private final int[] socketMessage;
    private final ViewCache[] views;

    TcpSender(DataConnection conn, TcpProvider owner) {
        this.conn = conn;
        this.owner = owner;
        this.sockets = conn.sockets;
        this.socketCount = sockets.length;
        this.headers = new ByteBuffer[socketCount];
        this.payload = new ByteBuffer[socketCount];
        this.socketMessage = new int[socketCount];
        this.views = new ViewCache[socketCount];
        for (int j = 0; j < socketCount; j++) {
            headers[j] = ByteBuffer.allocateDirect(ChunkHeader.BYTES);
            payload[j] = EMPTY;
            socketMessage[j] = -1;
            views[j] = new ViewCache();
        }
    }

    /**
     * Sends bytes [offset, offset + length) of {@code registration} to the receive buffer the peer posted with
     * {@code tag}.
     *
     * @return a request id for {@link #test}, or {@link Status#NOT_READY} (no matching clear-to-send yet: call again),
     *         {@link Status#TRUNCATED}, {@link Status#FAILED}, {@link Status#BAD_ARGUMENT}, {@link Status#CLOSED}
     */
    @Override
    public int isend(Registration registration, long offset, long length, int tag) {
        if (!(registration instanceof TcpRegistration r) || !r.contains(offset, length)) {
            return Status.BAD_ARGUMENT;
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
            return conn.failed() ? Status.FAILED : Status.NOT_READY; // this slot's previous request is unreported
        }
        long seq = head + 1;
        if (ctsReceived < seq) {
            progress(); // reads clear-to-sends only when the one needed is not here yet
            if (conn.failed()) {
                return Status.FAILED;
            }
            if (ctsReceived < seq) {
                return Status.NOT_READY;
            }
        }
        int n = ctsCount[slot];
        int base = slot * MAX_RECVS;
        int match = -1;
        for (int i = 0; i < n; i++) {
            if ((matched[slot] & (1 << i)) == 0 && ctsTag[base + i] == tag) {
                match = i;
                break;
            }
        }
        if (match < 0) {
            progress();
            return conn.failed() ? Status.FAILED : Status.NOT_READY;
        }
        int k = base + match;
        if (length > ctsSize[k]) {
            return Status.TRUNCATED;
        }
        msgRegistration[k] = r;
        msgOffset[k] = offset;
        msgLength[k] = length;
        msgAssigned[k] = 0;
        msgChunk[k] = chunkFor(length);
        msgSeq[k] = (int) seq;
        msgOutstanding[k] = 0;
        msgDone[k] = false;
        msgQueued[k] = true;
        queue[queueTail++ & QUEUE_MASK] = k;
        matched[slot] |= 1 << match;
        nreqs[slot] = n;
        if (Integer.bitCount(matched[slot]) == n) {
            busy[slot] = true;
            head++;
        }
        transmit();
        return k;
    }

    /** Chunks of about a socket's share of the message, 64 KiB to 512 KiB, in whole pages. */
    private int chunkFor(long length) {
        long share = (length + socketCount - 1) / socketCount;
        long chunk = Math.min(ChunkHeader.SEND_MAX, Math.max(ChunkHeader.SEND_MIN, share));
        return (int) ((chunk + 4095) & ~4095L);
    }

    /**
     * Makes progress and reports on one request.
     *
     * @return 1 when the request is complete (its size is {@link #size(int)}), 0 while in flight, or {@link
     *         Status#FAILED} (see {@link #error()}), {@link Status#CLOSED}, {@link Status#BAD_ARGUMENT} (no such
     *         request in flight)
     */
    @Override
    public int write(Registration local, long localOffset, long length, io.jmesh.api.RemoteRegion remote,
                     long remoteOffset) {
        return io.jmesh.api.Status.BAD_ARGUMENT; // not implemented yet over TCP
    }

    @Override
    public int read(Registration local, long localOffset, long length, io.jmesh.api.RemoteRegion remote,
                    long remoteOffset) {
        return io.jmesh.api.Status.BAD_ARGUMENT; // not implemented yet over TCP
    }

    @Override
    public int test(int request) {
        if (request < 0 || request >= MESSAGES) {
            return Status.BAD_ARGUMENT;
        }
        int slot = request / MAX_RECVS;
        int bit = 1 << (request % MAX_RECVS);
        if ((matched[slot] & bit) == 0 || (reported[slot] & bit) != 0) {
            return Status.BAD_ARGUMENT;
        }
        if (!msgDone[request]) {
            if (conn.failed()) {
                return Status.FAILED;
            }
            if (conn.closed()) {
                return Status.CLOSED;
            }
            progress();
            if (!msgDone[request]) {
                return conn.failed() ? Status.FAILED : 0;
            }
        }
        reported[slot] |= bit;
        if (busy[slot] && reported[slot] == (1 << nreqs[slot]) - 1) {
            busy[slot] = false;
            matched[slot] = 0;
            reported[slot] = 0;
        }
        return 1;
    }

    /** Bytes sent by a completed request, or -1 for a request id out of range. */
    @Override
    public long size(int request) {
        return request >= 0 && request < MESSAGES ? msgLength[request] : -1;
    }

    /** Reads clear-to-sends, then writes chunks; bounded work. */
    void progress() {
        if (conn.failed() || conn.closed()) {
            return;
        }
        readCts();
        if (!conn.failed()) {
            transmit();
        }
    }

    private void readCts() {
        int got;
        try {
            got = sockets[0].read(ctsIn);
        } catch (IOException e) {
            conn.lost(e);
            return;
        }
        if (got < 0) {
            conn.lostEndOfStream("");
            return;
        }
        if (ctsIn.position() < CtsFrame.BYTES) {
            return;
        }
        ctsIn.flip();
        while (ctsIn.remaining() >= CtsFrame.BYTES) {
            int at = ctsIn.position();
            if (!acceptCts(at)) {
                return;
            }
            ctsIn.position(at + CtsFrame.BYTES);
        }
        ctsIn.compact();
    }

    /** Checks one clear-to-send and files it under its slot. */
    private boolean acceptCts(int at) {
        String bad = CtsFrame.check(ctsIn, at);
        if (bad != null) {
            conn.violation(bad);
            return false;
        }
        long seq = ctsReceived + 1;
        if (CtsFrame.seq(ctsIn, at) != (int) seq) {
            conn.violation("clear-to-send number " + Integer.toUnsignedString(CtsFrame.seq(ctsIn, at))
                    + " out of order (expected " + seq + ")");
            return false;
        }
        if (seq > head + MAX_REQUESTS) {
            conn.violation("clear-to-send number " + seq + " while " + MAX_REQUESTS + " receives are outstanding");
            return false;
        }
        int slot = (int) ((seq - 1) & SLOT_MASK);
        int n = CtsFrame.count(ctsIn, at);
        for (int i = 0; i < n; i++) {
            ctsSize[slot * MAX_RECVS + i] = CtsFrame.size(ctsIn, at, i);
            ctsTag[slot * MAX_RECVS + i] = CtsFrame.tag(ctsIn, at, i);
        }
        ctsCount[slot] = n;
        ctsReceived = seq;
        return true;
    }

    /**
     * Writes chunks on every data socket, handing each free socket the next chunk. Header and payload go out as two
     * single-buffer writes: the JDK's gathering write allocates per call for buffers over memory segments.
     */
    private void transmit() {
        for (int j = 0; j < socketCount; j++) {
            SocketChannel ch = sockets[j];
            ByteBuffer header = headers[j];
            for (int w = 0; w < WRITES_PER_SOCKET; w++) {
                if (socketMessage[j] < 0 && !assign(j)) {
                    break;
                }
                ByteBuffer data = payload[j];
                try {
                    if (header.hasRemaining()) {
                        ch.write(header);
                        if (header.hasRemaining()) {
                            break; // the socket's send buffer is full
                        }
                    }
                    if (data.hasRemaining() && ch.write(data) == 0) {
                        break;
                    }
                } catch (IOException e) {
                    conn.lost(e);
                    return;
                } catch (IllegalStateException e) {
                    conn.memoryGone(e);
                    return;
                }
                if (!data.hasRemaining()) {
                    chunkWritten(j);
                }
            }
        }
    }

    /** Gives socket j the next chunk to write; false when there is none. */
    private boolean assign(int j) {
        if (queueHead == queueTail) {
            return false;
        }
        int k = queue[queueHead & QUEUE_MASK];
        long offset = msgAssigned[k];
        int length = (int) Math.min(msgChunk[k], msgLength[k] - offset);
        ChunkHeader.write(headers[j], k % MAX_RECVS, msgSeq[k], msgLength[k], offset, length);
        payload[j] = length == 0 ? EMPTY : views[j].view(msgRegistration[k], msgOffset[k] + offset, length);
        msgAssigned[k] = offset + length;
        msgOutstanding[k]++;
        if (msgAssigned[k] == msgLength[k]) {
            msgQueued[k] = false;
            queueHead++;
        }
        socketMessage[j] = k;
        return true;
    }

    private void chunkWritten(int j) {
        int k = socketMessage[j];
        socketMessage[j] = -1;
        payload[j] = EMPTY;
        if (--msgOutstanding[k] == 0 && !msgQueued[k]) {
            msgDone[k] = true;
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
        return "TcpSender[" + conn + "]";
    }
}
