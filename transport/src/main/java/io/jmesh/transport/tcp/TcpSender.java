package io.jmesh.transport.tcp;

import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
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
 * <p>One-sided {@link #write} and {@link #read} ({@link OpFrame}) go out on data socket 0, ahead of data chunks,
 * up to {@value #MAX_OPS} at a time; request ids {@value #OP_IDS} + slot. The owner of the remote memory is the
 * connection's {@link TcpReceiver}: it applies writes, serves reads and acknowledges each operation while its
 * application polls it (on verbs the NIC does this without the owner's help). A write completes here once the owner
 * has applied it, a read once its data is here; a refused operation (unknown or closed registration, range outside
 * it) reports {@link Status#REFUSED} with the reason in {@link #failure(int)}, and the connection stays up.
 *
 * <p>Order: requests complete in the order they were issued: {@link #test} reports 1 for a request only once every
 * earlier send, write and read has completed too. Every chunk carries how many operations were issued before its
 * message, so the receiver completes that receive only once those operations are applied.
 *
 * <p>One thread calls {@link #isend}, {@link #write}, {@link #read} and {@link #test}. Nothing here allocates in
 * steady state, locks, or throws: results are request ids (>= 0) or {@link Status} codes.
 */
public final class TcpSender implements Sender {
    static final int MAX_REQUESTS = 32;
    static final int MAX_RECVS = CtsFrame.MAX_RECVS;
    static final int MESSAGES = MAX_REQUESTS * MAX_RECVS;
    private static final int SLOT_MASK = MAX_REQUESTS - 1;
    private static final int QUEUE_MASK = MESSAGES - 1;
    static final int WRITES_PER_SOCKET = 8;
    private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0);
    /** One-sided operations in flight at most; their request ids follow the messages'. */
    static final int MAX_OPS = 32;
    static final int OP_IDS = MESSAGES;
    private static final int OP_MASK = MAX_OPS - 1;
    /** More than the requests that can be in flight at once (messages + operations). */
    private static final int ORDER = 512;
    private static final int ORDER_MASK = ORDER - 1;
    private static final int REVERSE_BYTES = 64 << 10;
    private static final int REVERSE_READS = 8;

    private final DataConnection conn;
    private final SocketChannel[] sockets;
    private final int socketCount;
    private final TcpProvider owner;

    // what the receiver sends back on socket 0: clear-to-sends, answers to reads, completions of operations
    private final ByteBuffer reverse = ByteBuffer.allocateDirect(REVERSE_BYTES);
    /** Payload bytes of the answer piece being read, and where they go. */
    private int answerRemaining;
    private int answerSlot = -1;
    private final ViewCache answerViews = new ViewCache();

    // clear-to-sends as received, per slot (like the verbs CTS FIFO)
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
    private final long[] msgIssue = new long[MESSAGES];
    private final int[] msgOps = new int[MESSAGES];
    /** Matched messages with chunks still to hand out, in matching order. */
    private final int[] queue = new int[MESSAGES];
    private int queueHead;
    private int queueTail;

    // one-sided operations, per slot ((op - 1) mod 32)
    private final boolean[] opBusy = new boolean[MAX_OPS];
    private final boolean[] opRead = new boolean[MAX_OPS];
    private final TcpRegistration[] opLocal = new TcpRegistration[MAX_OPS];
    private final long[] opLocalOffset = new long[MAX_OPS];
    private final long[] opLength = new long[MAX_OPS];
    private final long[] opKey = new long[MAX_OPS];
    private final long[] opRemoteOffset = new long[MAX_OPS];
    private final long[] opAssigned = new long[MAX_OPS];
    private final long[] opReceived = new long[MAX_OPS];
    private final long[] opIssue = new long[MAX_OPS];
    /** 0 in flight, 1 done, or a negative Status (REFUSED) once the owner's completion arrived. */
    private final int[] opResult = new int[MAX_OPS];
    private final String[] opFailure = new String[MAX_OPS];
    /** Operations issued, put on the wire (all pieces handed to socket 0), and completed by the owner. */
    private long opsIssued;
    private long opsSent;
    private long opsDone;
    /** The operation socket 0 is writing a frame of, or -1. */
    private int socketOp = -1;

    // completion order: request issue numbers 1, 2, ...; every request up to completedThrough has finished
    private final boolean[] finished = new boolean[ORDER];
    private long issued;
    private long completedThrough;

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
        msgIssue[k] = ++issued;
        msgOps[k] = (int) opsIssued;
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
     * One-sided write into the owner's registration; see {@link Sender#write}. The owner applies it while its
     * receiver is polled.
     *
     * @return a request id ({@value #OP_IDS} and up), or {@link Status#NOT_READY} ({@value #MAX_OPS} operations in
     *         flight), {@link Status#BAD_ARGUMENT} (a range outside either region, a closed local registration, a
     *         region of another provider), {@link Status#FAILED}, {@link Status#CLOSED}
     */
    @Override
    public int write(Registration local, long localOffset, long length, RemoteRegion remote, long remoteOffset) {
        return operation(false, local, localOffset, length, remote, remoteOffset);
    }

    /** One-sided read from the owner's registration; see {@link Sender#read}. Same results as {@link #write}. */
    @Override
    public int read(Registration local, long localOffset, long length, RemoteRegion remote, long remoteOffset) {
        return operation(true, local, localOffset, length, remote, remoteOffset);
    }

    private int operation(boolean read, Registration local, long localOffset, long length, RemoteRegion remote,
                          long remoteOffset) {
        if (!(local instanceof TcpRegistration r) || !r.contains(localOffset, length) || remote == null
                || !"tcp".equals(remote.provider()) || !remote.contains(remoteOffset, length)
                || TcpRegistration.idOf(remote) == 0) {
            return Status.BAD_ARGUMENT;
        }
        if (conn.failed()) {
            return Status.FAILED;
        }
        if (conn.closed()) {
            return Status.CLOSED;
        }
        int slot = (int) (opsIssued & OP_MASK);
        if (opBusy[slot]) {
            progress();
            return conn.failed() ? Status.FAILED : Status.NOT_READY; // that slot's operation is unreported
        }
        opBusy[slot] = true;
        opRead[slot] = read;
        opLocal[slot] = r;
        opLocalOffset[slot] = localOffset;
        opLength[slot] = length;
        opKey[slot] = TcpRegistration.idOf(remote);
        opRemoteOffset[slot] = remoteOffset;
        opAssigned[slot] = 0;
        opReceived[slot] = 0;
        opResult[slot] = 0;
        opFailure[slot] = null;
        opIssue[slot] = ++issued;
        opsIssued++;
        transmit();
        return OP_IDS + slot;
    }

    /**
     * Makes progress and reports on one request.
     *
     * @return 1 when the request is complete (its size is {@link #size(int)}), 0 while in flight, or {@link
     *         Status#REFUSED} (a one-sided operation the owner refused, see {@link #failure(int)}), {@link
     *         Status#FAILED} (see {@link #error()}), {@link Status#CLOSED}, {@link Status#BAD_ARGUMENT} (no such
     *         request in flight)
     */
    @Override
    public int test(int request) {
        if (request >= OP_IDS && request < OP_IDS + MAX_OPS) {
            return testOperation(request - OP_IDS);
        }
        if (request < 0 || request >= MESSAGES) {
            return Status.BAD_ARGUMENT;
        }
        int slot = request / MAX_RECVS;
        int bit = 1 << (request % MAX_RECVS);
        if ((matched[slot] & bit) == 0 || (reported[slot] & bit) != 0) {
            return Status.BAD_ARGUMENT;
        }
        if (msgIssue[request] > completedThrough) {
            if (conn.failed()) {
                return Status.FAILED;
            }
            if (conn.closed()) {
                return Status.CLOSED;
            }
            progress();
            if (msgIssue[request] > completedThrough) {
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

    private int testOperation(int slot) {
        if (!opBusy[slot]) {
            return Status.BAD_ARGUMENT;
        }
        if (opIssue[slot] > completedThrough) {
            if (conn.failed()) {
                return Status.FAILED;
            }
            if (conn.closed()) {
                return Status.CLOSED;
            }
            progress();
            if (opIssue[slot] > completedThrough) {
                return conn.failed() ? Status.FAILED : 0;
            }
        }
        opBusy[slot] = false;
        opLocal[slot] = null;
        return opResult[slot];
    }

    /** Bytes sent, written or read by a completed request, or -1 for a request id out of range. */
    @Override
    public long size(int request) {
        if (request >= OP_IDS && request < OP_IDS + MAX_OPS) {
            return opLength[request - OP_IDS];
        }
        return request >= 0 && request < MESSAGES ? msgLength[request] : -1;
    }

    /**
     * Why a request failed: for a one-sided operation the owner refused ({@link Status#REFUSED}) its reason, until
     * its slot is reused; otherwise {@link #error()}.
     */
    @Override
    public String failure(int request) {
        if (request >= OP_IDS && request < OP_IDS + MAX_OPS && opFailure[request - OP_IDS] != null) {
            return opFailure[request - OP_IDS];
        }
        return conn.error();
    }

    /** Records that request {@code issue} finished and moves the in-order completion point past finished ones. */
    private void finish(long issue) {
        finished[(int) (issue & ORDER_MASK)] = true;
        while (completedThrough < issued && finished[(int) ((completedThrough + 1) & ORDER_MASK)]) {
            finished[(int) ((completedThrough + 1) & ORDER_MASK)] = false;
            completedThrough++;
        }
    }

    /** Reads what the receiver sent back (clear-to-sends, answers, completions), then writes; bounded work. */
    void progress() {
        if (conn.failed() || conn.closed()) {
            return;
        }
        readReverse();
        if (!conn.failed()) {
            transmit();
        }
    }

    /**
     * Reads socket 0's reverse direction into a staging buffer and takes the frames in it; answer payloads are copied
     * into the reading operation's local memory.
     */
    private void readReverse() {
        for (int r = 0; r < REVERSE_READS; r++) {
            int got;
            try {
                got = sockets[0].read(reverse);
            } catch (IOException e) {
                conn.lost(e);
                return;
            }
            if (got < 0) {
                conn.lostEndOfStream(answerRemaining > 0 || reverse.position() > 0 ? " in the middle of a frame" : "");
                return;
            }
            boolean full = !reverse.hasRemaining();
            reverse.flip();
            boolean ok = takeFrames();
            reverse.compact();
            if (!ok || !full) {
                return;
            }
        }
    }

    /** Takes every whole frame (and answer payload) in the staging buffer; false when the connection failed. */
    private boolean takeFrames() {
        while (true) {
            if (answerRemaining > 0) {
                int n = Math.min(answerRemaining, reverse.remaining());
                if (n == 0) {
                    return true;
                }
                int slot = answerSlot;
                ByteBuffer dst = answerViews.view(opLocal[slot], opLocalOffset[slot] + opReceived[slot], n);
                int limit = reverse.limit();
                reverse.limit(reverse.position() + n);
                try {
                    dst.put(reverse);
                } catch (IllegalStateException e) {
                    conn.memoryGone(e);
                    return false;
                } finally {
                    reverse.limit(limit);
                }
                opReceived[slot] += n;
                answerRemaining -= n;
                continue;
            }
            if (!reverse.hasRemaining()) {
                return true;
            }
            int at = reverse.position();
            byte type = reverse.get(at);
            int need = type == CtsFrame.TYPE ? CtsFrame.BYTES : OpFrame.BYTES;
            if (type != CtsFrame.TYPE && type != OpFrame.ANSWER && type != OpFrame.DONE) {
                conn.violation("expected a clear-to-send or a one-sided reply, got type 0x"
                        + Integer.toHexString(type & 0xff));
                return false;
            }
            if (reverse.remaining() < need) {
                return true;
            }
            boolean ok = type == CtsFrame.TYPE ? acceptCts(at) : acceptReply(at);
            if (!ok) {
                return false;
            }
            reverse.position(at + need);
        }
    }

    /** Checks an answer or completion against the oldest operation not yet completed, the only one it may be for. */
    private boolean acceptReply(int at) {
        String bad = OpFrame.checkReply(reverse, at);
        if (bad != null) {
            conn.violation(bad);
            return false;
        }
        long next = opsDone + 1;
        int op = OpFrame.op(reverse, at);
        if (next > opsSent || op != (int) next) {
            conn.violation("a reply for one-sided operation " + Integer.toUnsignedString(op) + " (expected "
                    + (next > opsSent ? "none: " + (opsIssued - opsDone) + " unsent" : String.valueOf(next)) + ")");
            return false;
        }
        int slot = (int) ((next - 1) & OP_MASK);
        if (OpFrame.type(reverse, at) == OpFrame.ANSWER) {
            long offset = OpFrame.offset(reverse, at);
            int length = OpFrame.pieceLength(reverse, at);
            if (!opRead[slot] || offset != opReceived[slot] || length > opLength[slot] - offset) {
                conn.violation("an answer of " + length + " bytes at " + offset + " for " + (opRead[slot]
                        ? "a read of " + opLength[slot] + " bytes with " + opReceived[slot] + " received"
                        : "a write"));
                return false;
            }
            answerSlot = slot;
            answerRemaining = length;
            return true;
        }
        int status = OpFrame.status(reverse, at);
        if (status == OpFrame.OK) {
            if (opRead[slot] && opReceived[slot] != opLength[slot]) {
                conn.violation("a read completed with " + opReceived[slot] + " of " + opLength[slot] + " bytes");
                return false;
            }
            opResult[slot] = 1;
        } else {
            opResult[slot] = Status.REFUSED;
            opFailure[slot] = refusal(slot, status, OpFrame.detail(reverse, at));
        }
        opsDone = next;
        finish(opIssue[slot]);
        return true;
    }

    /** The error for a refused operation: what the owner said, and what to do. Failure path only. */
    private String refusal(int slot, int status, long detail) {
        String what = (opRead[slot] ? "read of " : "write of ") + opLength[slot] + " bytes at offset "
                + opRemoteOffset[slot];
        return "the peer " + conn.peer + " refused the one-sided " + what + ": " + (status == OpFrame.NO_REGISTRATION
                ? "it has no open registration with that region's id (the registration was closed, or the "
                + "RemoteRegion is not from this peer or was corrupted); use a RemoteRegion the peer sent for a "
                + "registration it keeps open"
                : "the range lies outside its registration of " + detail + " bytes (the RemoteRegion does not "
                + "match the peer's registration); use the RemoteRegion exactly as the peer sent it");
    }

    /** Checks one clear-to-send and files it under its slot. */
    private boolean acceptCts(int at) {
        String bad = CtsFrame.check(reverse, at);
        if (bad != null) {
            conn.violation(bad);
            return false;
        }
        long seq = ctsReceived + 1;
        if (CtsFrame.seq(reverse, at) != (int) seq) {
            conn.violation("clear-to-send number " + Integer.toUnsignedString(CtsFrame.seq(reverse, at))
                    + " out of order (expected " + seq + ")");
            return false;
        }
        if (seq > head + MAX_REQUESTS) {
            conn.violation("clear-to-send number " + seq + " while " + MAX_REQUESTS + " receives are outstanding");
            return false;
        }
        int slot = (int) ((seq - 1) & SLOT_MASK);
        int n = CtsFrame.count(reverse, at);
        for (int i = 0; i < n; i++) {
            ctsSize[slot * MAX_RECVS + i] = CtsFrame.size(reverse, at, i);
            ctsTag[slot * MAX_RECVS + i] = CtsFrame.tag(reverse, at, i);
        }
        ctsCount[slot] = n;
        ctsReceived = seq;
        return true;
    }

    /**
     * Writes chunks on every data socket, handing each free socket the next chunk; socket 0 takes one-sided frames
     * first. Header and payload go out as two single-buffer writes: the JDK's gathering write allocates per call for
     * buffers over memory segments.
     */
    private void transmit() {
        for (int j = 0; j < socketCount; j++) {
            SocketChannel ch = sockets[j];
            ByteBuffer header = headers[j];
            for (int w = 0; w < WRITES_PER_SOCKET; w++) {
                if (socketMessage[j] < 0 && (j != 0 || socketOp < 0) && !(j == 0 && assignOp()) && !assign(j)) {
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
                    if (j == 0 && socketOp >= 0) {
                        socketOp = -1;
                        payload[0] = EMPTY;
                    } else {
                        chunkWritten(j);
                    }
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
        ChunkHeader.write(headers[j], k % MAX_RECVS, msgSeq[k], msgLength[k], offset, length, msgOps[k]);
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

    /** Gives socket 0 the next frame of the oldest operation not yet on the wire; false when there is none. */
    private boolean assignOp() {
        if (opsSent == opsIssued) {
            return false;
        }
        int slot = (int) (opsSent & OP_MASK);
        int op = (int) (opsSent + 1);
        if (opRead[slot]) {
            OpFrame.request(headers[0], OpFrame.READ, true, op, opKey[slot], opRemoteOffset[slot], opLength[slot]);
            payload[0] = EMPTY;
            opsSent++;
        } else {
            long done = opAssigned[slot];
            int length = (int) Math.min(ChunkHeader.SEND_MAX, opLength[slot] - done);
            boolean last = done + length == opLength[slot];
            OpFrame.request(headers[0], OpFrame.WRITE, last, op, opKey[slot], opRemoteOffset[slot] + done, length);
            payload[0] = length == 0 ? EMPTY : views[0].view(opLocal[slot], opLocalOffset[slot] + done, length);
            opAssigned[slot] = done + length;
            if (last) {
                opsSent++;
            }
        }
        socketOp = slot;
        return true;
    }

    private void chunkWritten(int j) {
        int k = socketMessage[j];
        socketMessage[j] = -1;
        payload[j] = EMPTY;
        if (--msgOutstanding[k] == 0 && !msgQueued[k]) {
            msgDone[k] = true;
            finish(msgIssue[k]);
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
