package io.jmesh.transport.tcp;

import io.jmesh.api.Registration;
import io.jmesh.api.Status;
import io.jmesh.transport.core.CoreSender;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.Eager;
import io.jmesh.transport.core.Op;
import io.jmesh.transport.core.SendSlot;
import io.jmesh.transport.core.SendWire;
import io.jmesh.transport.core.Slots;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.function.Consumer;

/**
 * The TCP wire of a sender. The receiver sends a clear-to-send frame ({@link CtsFrame}) per grouped receive on data
 * socket 0; each is checked and filed as {@link Cts} entries into a local FIFO ({@link CtsIntake}), where the core
 * matches sends exactly as on verbs. A matched message of up to {@value #SMALL} bytes ({@code JMESH_TCP_SOCKET0_MAX})
 * goes out on socket 0 from this thread, at once; a
 * larger one is cut into chunks ({@link ChunkHeader}), striped over the bulk sockets' {@link SendLane}s as soon as
 * it is matched, which the fabric's helper threads write straight from the registered memory, in parallel ({@link
 * TcpPumps}), with no further call on this thread. One-sided writes and reads ({@link OpFrame}, kept by an {@link
 * OpOutbox}) go on socket 0 ahead of small messages. The peer's receiver applies them and answers on socket 0 (read
 * data, then a completion per operation). A connection of one socket, or memory only this thread may touch (a
 * confined arena), sends everything on socket 0.
 *
 * <p>Where the listener keeps an eager ring, a message within its size goes at once, before any clear-to-send, as
 * one {@link EagerFrame} record on socket 0 ({@link EagerOutbox}); the receiver's credits on socket 0 free its slots.
 *
 * <p>Requests complete in issue order: a message once all its bytes are in the kernel's send buffers (the verbs
 * sender's local completion), an operation once the owner answered, and neither before every earlier one. Every
 * chunk carries how many operations were issued before its message, so the receiver completes that receive only once
 * they are applied.
 */
final class TcpSendWire implements SendWire {
    static final int WRITES_PER_SOCKET = 8;
    /** The largest message that goes on socket 0 when the connection has bulk sockets, unless told otherwise. */
    static final int SMALL = ChunkHeader.SEND_MIN;
    /** More than the requests that can be in flight at once (messages + operations + eager sends). */
    private static final int ORDER = 1024;
    /** The completion order's mark of an eager record (they complete in record order). */
    private static final int EAGER_MARK = -1;
    private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0);

    /** A matched message on its way out: how far its chunks got. */
    private static final class Outgoing {
        long assigned;
        int chunk;
        int outstanding;
        boolean queued;
        long issue;
        int ops;
    }

    private final DataConnection conn;
    private final int small;
    private final SendSlot[] slots;
    private final SocketChannel[] sockets;
    private final CtsIntake cts;

    /** Socket 0's reverse direction: clear-to-sends, answers to reads, completions of operations, eager credits. */
    private final ReverseReader reverse;

    private final Outgoing[] out = new Outgoing[CoreSender.MESSAGES];
    /** Message ids with chunks still to hand out on socket 0, in matching order. */
    private final int[] queue = new int[CoreSender.MESSAGES];
    private int queueHead;
    private int queueTail;
    /** Message ids with chunks still to hand to the bulk lanes, in matching order. */
    private final int[] bulk = new int[CoreSender.MESSAGES];
    private int bulkHead;
    private int bulkTail;

    // the bulk sockets (1 and up): per lane, the message of each chunk offered, and how many chunks were accounted
    private final SendLane[] lanes;
    private final int[][] laneMessage;
    private final long[] laneDone;
    private int nextLane;

    private final OpOutbox ops;
    /** The small messages that go eagerly, or null (the listener keeps no ring for this connection). */
    private final EagerOutbox eager;
    /** Whether socket 0 is writing an operation's or a fetch frame, or an eager record. */
    private boolean socketOp;
    private boolean socketEager;
    /** The clear-to-send entry last fetched ({@link EagerFrame#FETCH}), and whether that fetch is still to go. */
    private long fetchedFrom = -1;
    private boolean fetchDue;

    // completion order: issue numbers 1, 2, ...; every request up to completedThrough has finished
    private final boolean[] finished = new boolean[ORDER];
    private final int[] order = new int[ORDER];
    private long issued;
    private long completedThrough;
    /** Eager records through which every request completed; records are written in issue order among themselves. */
    private long eagerCompleted;
    /** Issue numbers of the records staged and not yet written, in record order. */
    private final long[] eagerIssue = new long[ORDER];
    private long eagerStaged;
    private long eagerWritten;

    // socket 0: the frame or chunk it is writing, and of which message (-1: none, or an operation's frame)
    private final ByteBuffer header0 = ByteBuffer.allocateDirect(ChunkHeader.BYTES);
    private ByteBuffer payload0 = EMPTY;
    private int socketMessage0 = -1;
    private final ViewCache views0 = new ViewCache();
    private final TcpRegistry registry;

    private TcpSendWire(DataConnection conn, SendSlot[] slots, TcpRegistry registry, TcpPumps pumps, Eager ring,
                        int small) {
        this.conn = conn;
        this.small = small;
        this.registry = registry;
        this.slots = slots;
        this.sockets = conn.sockets;
        this.ops = new OpOutbox(conn);
        this.cts = new CtsIntake(conn);
        this.eager = ring == null ? null : new EagerOutbox(ring);
        this.reverse = new ReverseReader(sockets[0], conn, cts, ops, eager, this::finish);
        for (int k = 0; k < out.length; k++) {
            out[k] = new Outgoing();
        }
        lanes = new SendLane[sockets.length - 1];
        laneMessage = new int[lanes.length][SendLane.DEPTH];
        laneDone = new long[lanes.length];
        for (int l = 0; l < lanes.length; l++) {
            lanes[l] = new SendLane(sockets[l + 1], conn);
            if (pumps != null) {
                pumps.attach(lanes[l]);
            }
        }
    }

    /**
     * The sending end over {@code conn}'s sockets, sending from registrations of {@code registry}'s fabric (null: any,
     * for tests); {@code pumps} move the bulk sockets (null: this end's own thread, in progress()); small messages go
     * eagerly into the listener's {@code eager} ring (null: none); {@code onClose} runs once when it closes.
     */
    static CoreSender sender(DataConnection conn, TcpRegistry registry, TcpPumps pumps, Eager eager,
                             Consumer<AutoCloseable> onClose) {
        return sender(conn, registry, pumps, eager, SMALL, onClose);
    }

    /** As above; messages above {@code small} bytes go to the bulk sockets. */
    static CoreSender sender(DataConnection conn, TcpRegistry registry, TcpPumps pumps, Eager eager, int small,
                             Consumer<AutoCloseable> onClose) {
        SendSlot[] ring = CoreSender.ring();
        TcpSendWire wire = new TcpSendWire(conn, ring, registry, pumps, eager, small);
        return new CoreSender(conn, wire.cts.fifo(), ring, wire, onClose);
    }

    @Override
    public boolean owns(Registration registration, long offset, long length) {
        return registration instanceof TcpRegistration r && r.contains(offset, length) && r.usableWith(registry);
    }

    @Override
    public void matched(SendSlot slot, int i) {
        if (slot.eager(i)) {                       // an eager record filled the slot: nothing to send for it
            if (slot.full()) {
                cts.learned(slot.nreqs);
            }
            return;
        }
        int k = Slots.key(slot.index, i);
        Outgoing m = out[k];
        long length = slot.length[i];
        boolean striped = lanes.length > 0 && length > small && ((TcpRegistration) slot.registration[i]).shared
                && !cts.peerLocal(slot.seq);
        long share = striped ? (length + lanes.length - 1) / lanes.length : length;
        long chunk = Math.min(ChunkHeader.SEND_MAX, Math.max(ChunkHeader.SEND_MIN, share));
        m.chunk = (int) ((chunk + 4095) & ~4095L);
        m.assigned = 0;
        m.outstanding = 0;
        m.ops = (int) ops.issued();
        m.issue = ++issued;
        order[(int) (m.issue & (ORDER - 1))] = k;
        m.queued = true;
        if (striped) {
            bulk[bulkTail++ & (CoreSender.MESSAGES - 1)] = k;
        } else {
            queue[queueTail++ & (CoreSender.MESSAGES - 1)] = k;
        }
        if (slot.full()) {
            cts.learned(slot.nreqs);
        }
        transmit();
    }

    @Override
    public int start(Op op) {
        if (!"tcp".equals(op.remote.provider()) || TcpRegistration.idOf(op.remote) == 0) {
            return Status.BAD_ARGUMENT;
        }
        ops.issue(op, ++issued);
        order[(int) (issued & (ORDER - 1))] = CoreSender.OP_BASE + op.index;
        transmit();
        return 0;
    }

    @Override
    public boolean sendsEagerly(Registration registration, long length) {
        return eager != null && length <= eager.maxPayload() && registration instanceof TcpRegistration;
    }

    /** Stages the record and writes what socket 0 takes now; the core keeps testing until it all went. */
    @Override
    public int eager(long position, int tag, Registration registration, long offset, int length, int buffer) {
        int rc;
        try {
            rc = eager.stage(position, tag, registration.memory(), offset, length, buffer);
        } catch (IllegalStateException e) {
            return conn.memoryGone(e);
        }
        if (rc == 0) {
            order[(int) (++issued & (ORDER - 1))] = EAGER_MARK;
            eagerIssue[(int) (eagerStaged++ & (ORDER - 1))] = issued;
            transmitSmall();
        }
        return rc;
    }

    /** Once its bytes are in the kernel and every request issued before it completed, as any request here. */
    @Override
    public boolean eagerSent(long record) {
        return eagerCompleted >= record;
    }

    @Override
    public void eagerOnly(SendSlot slot) {
        cts.learned(slot.nreqs);
    }

    /** Request {@code issue} finished: moves the in-order completion point and hands the core what it passed. */
    private void finish(long issue) {
        finished[(int) (issue & (ORDER - 1))] = true;
        while (completedThrough < issued && finished[(int) ((completedThrough + 1) & (ORDER - 1))]) {
            int at = (int) (++completedThrough & (ORDER - 1));
            finished[at] = false;
            int id = order[at];
            if (id == EAGER_MARK) {
                eagerCompleted++;
            } else if (id >= CoreSender.OP_BASE) {
                ops.finish(id - CoreSender.OP_BASE);
            } else {
                slots[Slots.slotOf(id)].complete(Slots.bufferOf(id));
            }
        }
    }

    /** Reads what the receiver sent back (clear-to-sends, answers, completions), then writes; bounded work. */
    @Override
    public void progress() {
        if (conn.state() != 0) {
            return;
        }
        reverse.read();
        if (!conn.failed()) {
            transmit();
        }
    }

    /** Writes on socket 0, hands chunks to the bulk lanes and collects the chunks they wrote. */
    private void transmit() {
        transmitSmall();
        if (lanes.length > 0 && !conn.failed()) {
            collect();
            feed();
            boolean inline = false;
            for (SendLane lane : lanes) {
                if (!lane.pumped()) {
                    lane.pump();
                    inline = true;
                }
            }
            if (inline) {
                collect();
            }
        }
    }

    /** Accounts for the stripes the lanes finished writing, in each lane's order. */
    private void collect() {
        for (int l = 0; l < lanes.length; l++) {
            long written = lanes[l].written();
            for (long c = laneDone[l]; c < written; c++) {
                chunkDone(laneMessage[l][(int) (c & (SendLane.DEPTH - 1))]);
            }
            laneDone[l] = written;
        }
    }

    /**
     * Hands each queued large message to the lanes, one stripe per lane (chunk j goes to the j-th lane from a
     * rotating start), all of it at once: a lane's ring has room for every message the sender can have in flight,
     * so nothing waits for another call on this thread.
     */
    private void feed() {
        while (bulkHead != bulkTail) {
            int k = bulk[bulkHead & (CoreSender.MESSAGES - 1)];
            SendSlot slot = slots[Slots.slotOf(k)];
            int i = Slots.bufferOf(k);
            Outgoing m = out[k];
            long length = slot.length[i];
            int stripes = (int) Math.min(lanes.length, (length + m.chunk - 1) / m.chunk);
            for (int j = 0; j < stripes; j++) {
                int l = (nextLane + j) % lanes.length;
                if (lanes[l].offered() - laneDone[l] >= SendLane.DEPTH) {
                    return;                        // cannot happen while DEPTH covers the messages in flight
                }
            }
            for (int j = 0; j < stripes; j++) {
                int l = (nextLane + j) % lanes.length;
                SendLane lane = lanes[l];
                laneMessage[l][(int) (lane.offered() & (SendLane.DEPTH - 1))] = k;
                lane.offer(i, (int) slot.seq, length, m.ops, (TcpRegistration) slot.registration[i], slot.offset[i],
                        (long) j * m.chunk, m.chunk, (long) stripes * m.chunk);
            }
            nextLane = (nextLane + stripes) % lanes.length;
            m.assigned = length;
            m.outstanding += stripes;
            m.queued = false;
            bulkHead++;
        }
    }

    /**
     * Writes socket 0: one-sided frames first (a message after them must find them applied), then eager records,
     * then the small messages' chunks. Header and payload go out as two single-buffer writes: the JDK's gathering
     * write allocates per call for buffers over memory segments. An eager record is one buffer, header included.
     */
    private void transmitSmall() {
        SocketChannel ch = sockets[0];
        for (int w = 0; w < WRITES_PER_SOCKET; w++) {
            if (socketMessage0 < 0 && !socketOp && !socketEager && !assignOp() && !assignFetch() && !assignEager()
                    && !assign()) {
                break;
            }
            ByteBuffer data = payload0;
            try {
                if (header0.hasRemaining()) {
                    ch.write(header0);
                    if (header0.hasRemaining()) {
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
                if (socketOp || socketEager) {
                    boolean record = socketEager;
                    socketOp = false;
                    socketEager = false;
                    payload0 = EMPTY;
                    if (record) {
                        eager.wrote();
                        finish(eagerIssue[(int) (eagerWritten++ & (ORDER - 1))]);
                    }
                } else {
                    chunkWritten();
                }
            }
        }
    }

    /** Gives socket 0 the next small-message chunk to write; false when there is none. */
    private boolean assign() {
        if (queueHead == queueTail) {
            return false;
        }
        int k = queue[queueHead & (CoreSender.MESSAGES - 1)];
        SendSlot slot = slots[Slots.slotOf(k)];
        int i = Slots.bufferOf(k);
        long offset = out[k].assigned;
        int length = nextChunk(k);
        ChunkHeader.write(header0, i, (int) slot.seq, slot.length[i], offset, length, out[k].ops);
        payload0 = length == 0 ? EMPTY
                : views0.view((TcpRegistration) slot.registration[i], slot.offset[i] + offset, length);
        if (handedOut(k, length)) {
            queueHead++;
        }
        socketMessage0 = k;
        return true;
    }

    /** The length of message k's next chunk (it starts at {@code out[k].assigned}). */
    private int nextChunk(int k) {
        return (int) Math.min(out[k].chunk, slots[Slots.slotOf(k)].length[Slots.bufferOf(k)] - out[k].assigned);
    }

    /** Message k's next chunk, of {@code length} bytes, is handed out; true when it was the last. */
    private boolean handedOut(int k, int length) {
        Outgoing m = out[k];
        m.assigned += length;
        m.outstanding++;
        if (m.assigned < slots[Slots.slotOf(k)].length[Slots.bufferOf(k)]) {
            return false;
        }
        m.queued = false;
        return true;
    }

    /** Gives socket 0 the next frame of the oldest operation not yet on the wire; false when there is none. */
    private boolean assignOp() {
        ByteBuffer payload = ops.next(header0, views0);
        if (payload == null) {
            return false;
        }
        payload0 = payload;
        socketOp = true;
        return true;
    }

    /**
     * The core needs the clear-to-sends from entry {@code from} on: the receiver keeps those of small receives back
     * until it writes anyway, so a message that cannot go eagerly asks for them, once per entry it waits for.
     */
    @Override
    public void fetch(long from) {
        if (eager != null && from > fetchedFrom) {
            fetchedFrom = from;
            fetchDue = true;
            transmitSmall();
        }
    }

    /** Gives socket 0 the fetch frame that is due; false when there is none. */
    private boolean assignFetch() {
        if (!fetchDue) {
            return false;
        }
        fetchDue = false;
        header0.clear();
        EagerFrame.fetch(header0, 0, fetchedFrom);
        payload0 = EMPTY;
        socketOp = true;                           // a frame with nothing to complete, as an operation's last
        return true;
    }

    /** Gives socket 0 the next eager record (header and payload in one buffer); false when there is none. */
    private boolean assignEager() {
        ByteBuffer record = eager == null ? null : eager.next();
        if (record == null) {
            return false;
        }
        header0.position(header0.capacity());      // nothing of it to write; absolute puts still fit
        payload0 = record;
        socketEager = true;
        return true;
    }

    private void chunkWritten() {
        int k = socketMessage0;
        socketMessage0 = -1;
        payload0 = EMPTY;
        chunkDone(k);
    }

    private void chunkDone(int k) {
        Outgoing m = out[k];
        if (--m.outstanding == 0 && !m.queued) {
            finish(m.issue);
        }
    }

    /** Whether no socket is inside a frame or chunk: a goodbye written now starts on a frame boundary everywhere. */
    private boolean betweenFrames() {
        if (socketMessage0 >= 0 || socketOp || socketEager) {
            return false;
        }
        for (SendLane lane : lanes) {
            if (lane.offered() != lane.written()) {
                return false;
            }
        }
        return true;
    }

    /** Chunks the bulk sockets have written so far (tests: which messages were striped). */
    long bulkChunks() {
        long n = 0;
        for (SendLane lane : lanes) {
            n += lane.chunksWritten();
        }
        return n;
    }

    /** The sockets this end writes to, and their fate. */
    DataConnection connection() {
        return conn;
    }

    /**
     * Stops the lanes' helpers from touching the sockets and memory, then ends the sockets: in order (a goodbye, so
     * the peer delivers everything this end reported done and then answers CLOSED) when every socket is between
     * frames, else at once (a message cut in the middle fails at the peer, as requests in flight do).
     */
    @Override
    public void close() {
        for (SendLane lane : lanes) {
            lane.retire();
        }
        try {
            if (!conn.failed() && betweenFrames()) {
                conn.closeInOrder(eagerWritten);
            } else {
                conn.close();
            }
        } finally {
            if (eager != null) {
                eager.close();
            }
        }
    }

    @Override
    public String toString() {
        return "TcpSender[" + conn + "]";
    }
}
