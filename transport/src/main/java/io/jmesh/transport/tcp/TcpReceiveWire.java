package io.jmesh.transport.tcp;

import io.jmesh.api.Registration;
import io.jmesh.transport.core.CoreReceiver;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.core.Eager;
import io.jmesh.transport.core.Op;
import io.jmesh.transport.core.OpWindow;
import io.jmesh.transport.core.ReceiveSlot;
import io.jmesh.transport.core.ReceiveWire;
import io.jmesh.transport.core.Slots;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The TCP wire of a receiver: posting a grouped receive queues one clear-to-send frame ({@link CtsFrame}, each
 * buffer's size and tag) for data socket 0. Chunks ({@link ChunkHeader}) arrive on any data socket and are read
 * straight into the posted buffer at their offset, after every field of the header has been checked against the
 * posted receive; anything else fails the connection. Socket 0 (small messages) is read here, on this end's thread;
 * the bulk sockets by their {@link ReceiveLane}s, on the fabric's helper threads, which check each header against the
 * {@link PostedTable} and file each chunk in place as an event that this thread then accounts for exactly as a chunk
 * of socket 0. Socket 0 also carries the peer's one-sided requests, which {@link TcpOpServer} serves; a receive
 * completes only once the operations its sender issued before it are applied.
 *
 * <p>With an eager ring (agreed in the handshake), socket 0 also brings {@link EagerFrame} records: each payload is
 * read into the record's slot of the ring, its header written last, and the core takes it from there as it takes a
 * record a verbs peer wrote; the core's consumed count goes back as credit frames. A buffer completes on its own
 * ({@link ReceiveSlot#land}): the chunks of one receive may overtake the records of the same receive. The
 * clear-to-send of a receive that a record can fill with the credits the sender holds (one buffer within the
 * ring's payload, not in a batch) is not written at once: it goes with the next write this end makes anyway (the
 * next credit frame, a larger receive's, {@link TcpOpServer#LATER_LIMIT} of them), or when the sender fetches it
 * ({@link EagerFrame#FETCH}: a message it cannot send eagerly), as a verbs receiver keeps such entries back. So a
 * stream of small messages costs this end one write per credit frame, not one per receive.
 *
 * <p>Progress: write what is owed on socket 0, then at most {@value #READS_PER_SOCKET} non-blocking reads of it, then
 * the lanes' events. When the peer closes, data already on the way is still taken: the connection fails once every
 * socket has reached end of stream (or {@value #EOF_GRACE_MS} ms after the first did); a reset fails it at once. A
 * flush completes at once: over TCP the CPU wrote the data, so it is visible once the receive completed.
 */
final class TcpReceiveWire implements ReceiveWire {
    static final int READS_PER_SOCKET = 8;
    static final long EOF_GRACE_MS = 2_000;
    /** What a data socket is reading: a header, a chunk's payload (else the message id), or a one-sided payload. */
    private static final int HEADER = -1;
    private static final int OP_PAYLOAD = -2;
    private static final int RECORD = -3;

    private final DataConnection conn;
    private final ReceiveSlot[] slots;
    private final TcpOpServer server;
    private final SocketChannel[] sockets;
    private final int socketCount;
    /** The bulk sockets (1 and up) and what they check chunks against; no table without them. */
    private final ReceiveLane[] lanes;
    private final PostedTable posted;

    /** per slot: one-sided operations that must be applied before it completes; buffers whose data is all in */
    private final int[] slotOps = new int[Cts.MAX_REQUESTS];
    private final int[] doneMask = new int[Cts.MAX_REQUESTS];
    /** per slot: buffers whose data is in but which wait for one-sided operations to be applied */
    private final int[] deferred = new int[Cts.MAX_REQUESTS];
    /** per buffer (slot * 8 + i): the message's total as the first chunk said, and its operation count */
    private final long[] expected = new long[Slots.BUFFERS];
    private final int[] messageOps = new int[Slots.BUFFERS];
    /** Slots with deferred buffers. */
    private int waiting;

    // the eager ring (null: none agreed): its memory, one view per slot over the payload, the record being read
    private final Eager eager;
    private final Arena eagerArena;
    private final MemorySegment ring;
    private final ByteBuffer[] ringPayload;
    private long records;
    /** Clear-to-send entries queued so far (one per buffer), and the first the sender fetched: none from it on waits. */
    private long entries;
    private long fetchedFrom = -1;
    private long recordPosition;
    private int recordTag;
    private int recordBuffer;

    // socket 0, which this thread reads itself (the bulk sockets are the lanes'): the header or chunk being read
    private final ByteBuffer header = ByteBuffer.allocateDirect(ChunkHeader.BYTES);
    private final ViewCache views = new ViewCache();
    private ByteBuffer payload;
    /** HEADER, OP_PAYLOAD, or the key of the buffer whose chunk is being read. */
    private int reading = HEADER;
    private int length;
    private boolean endOfStream;
    /** The peer's goodbye came on socket 0: it closed in order, so its end of stream (or a reset) ends, not fails. */
    private boolean bye;
    private int endOfStreamCount;
    private long firstEndOfStreamNanos;
    private final TcpRegistry registry;

    private TcpReceiveWire(DataConnection conn, ReceiveSlot[] slots, TcpRegistry registry, TcpPumps pumps,
                           Eager eager) {
        this.eager = eager;
        this.eagerArena = eager == null ? null : Arena.ofShared();
        this.ring = eager == null ? null : eagerArena.allocate(eager.ringBytes, 64);
        this.ringPayload = eager == null ? null : new ByteBuffer[eager.slots];
        for (int k = 0; ringPayload != null && k < ringPayload.length; k++) {
            ringPayload[k] = ring.asSlice(Eager.payload((long) k * eager.slotBytes), eager.maxPayload).asByteBuffer();
        }
        this.registry = registry;
        this.conn = conn;
        this.slots = slots;
        this.server = new TcpOpServer(conn, registry);
        this.sockets = conn.sockets;
        this.socketCount = sockets.length;
        lanes = new ReceiveLane[socketCount - 1];
        posted = lanes.length > 0 ? new PostedTable() : null;
        for (int l = 0; l < lanes.length; l++) {
            lanes[l] = new ReceiveLane(sockets[l + 1], conn, posted);
            if (pumps != null) {
                pumps.attach(lanes[l]);
            }
        }
    }

    /**
     * The receiving end over {@code conn}'s sockets; {@code registry} is where the peer's one-sided requests look
     * their registration up (null refuses them all); {@code pumps} read the bulk sockets (null: this end's own
     * thread, in progress()); {@code eager} is the ring this end keeps for the connector's eager records (null:
     * none); {@code onClose} runs once when it closes.
     */
    static CoreReceiver receiver(DataConnection conn, TcpRegistry registry, TcpPumps pumps, Eager eager,
                                 Consumer<AutoCloseable> onClose) {
        ReceiveSlot[] ring = CoreReceiver.ring();
        return new CoreReceiver(conn, ring, new TcpReceiveWire(conn, ring, registry, pumps, eager), onClose);
    }

    @Override
    public MemorySegment eagerRing() {
        return ring;
    }

    @Override
    public Eager eagerGeometry() {
        return eager == null ? Eager.VERBS : eager;
    }

    /** The credit leaves with the next write-back, which this end's progress does first. */
    @Override
    public int eagerConsumed(long consumed) {
        server.credit(consumed);
        return 0;
    }

    @Override
    public boolean owns(Registration registration, long offset, long length) {
        return registration instanceof TcpRegistration r && r.contains(offset, length) && r.usableWith(registry);
    }

    @Override
    public int post(ReceiveSlot slot, boolean hold) {
        int base = Slots.key(slot.index, 0);
        for (int i = 0; i < slot.nreqs; i++) {
            expected[base + i] = -1;
        }
        slotOps[slot.index] = server.applied();
        doneMask[slot.index] = 0;
        deferred[slot.index] = 0;
        boolean local = false;
        if (posted != null) {
            posted.publish(slot);                  // before the clear-to-send can reach the peer
            for (int i = 0; i < slot.nreqs; i++) {
                local |= !((TcpRegistration) slot.registration[i]).shared;
            }
        }
        // kept back only where the sender can fill the receive eagerly with the credits it already holds: then a
        // sender whose peer stops polling after posting never needs the clear-to-send (it needs it only to report
        // a larger message TRUNCATED, which it fetches)
        boolean mayWait = eager != null && !hold && slot.nreqs == 1 && slot.maxSize[0] <= eager.maxPayload
                && entries > fetchedFrom && entries + 1 <= server.credited() + eager.slots;
        entries += slot.nreqs;
        if (bye) {
            return 0;                              // the peer closed: what it sent is in the ring or nowhere
        }
        if (!server.queueCts((int) slot.seq, slot.nreqs, slot.maxSize, slot.tag, local, mayWait)) {
            conn.fail("no room for another clear-to-send to " + conn.peer + ": the peer reads nothing back from "
                    + "this connection; check that its application still polls it");
        }
        progress();                                // a failure shows in test, as for a receive posted earlier
        return 0;
    }

    /** Clear-to-sends leave with the next progress; nothing is held on TCP. */
    @Override
    public int announce() {
        return 0;
    }

    @Override
    public int flush(Op op, int n, Registration[] registrations, long[] offsets, long[] sizes) {
        progress();
        return 1;
    }

    @Override
    public void progress() {
        // once the peer ended socket 0 it reads nothing more: a write would only turn its orderly close into a reset
        boolean quiet = endOfStream || bye;
        if (conn.state() != 0 || conn.ended() || (!quiet && !server.writeBack(sockets[0]))) {
            return;
        }
        if (!endOfStream && !read()) {
            return;
        }
        for (ReceiveLane lane : lanes) {
            if (!lane.pumped()) {
                lane.pump();
            }
            if (!takeEvents(lane)) {
                return;
            }
            if (lane.endOfStream() && lane.filed() == lane.taken() && !lane.counted) {
                lane.counted = true;
                endOfStreamSeen();
            }
        }
        if (endOfStreamCount > 0 && (endOfStreamCount == socketCount
                || System.nanoTime() - firstEndOfStreamNanos > TimeUnit.MILLISECONDS.toNanos(EOF_GRACE_MS))) {
            if (bye && endOfStreamCount == socketCount) {
                conn.peerClosed();
            } else {
                conn.lostEndOfStream("");
            }
            return;
        }
        if (server.owed() && !endOfStream && !bye) {
            server.writeBack(sockets[0]);
        }
    }

    /** Reads socket 0: headers, then payload straight into the posted buffer. False when the connection failed. */
    private boolean read() {
        SocketChannel ch = sockets[0];
        for (int r = 0; r < READS_PER_SOCKET; r++) {
            int state = reading;
            if (state == HEADER && !header.hasRemaining()) {
                if (!begin()) {                   // a write that waited for earlier reads to be served
                    return !conn.failed();
                }
                continue;
            }
            ByteBuffer b = state == HEADER ? header : state == OP_PAYLOAD ? server.buffer() : state == RECORD
                    ? ringPayload[(int) (records & (eager.slots - 1))] : payload;
            int got;
            try {
                got = ch.read(b);
            } catch (IOException e) {
                if (bye && state == HEADER && header.position() == 0) {
                    got = -1;                      // a reset after the goodbye: all of it was read, as at the end
                } else {
                    conn.lost(e);
                    return false;
                }
            } catch (IllegalStateException e) {
                conn.memoryGone(e);
                return false;
            }
            if (got < 0) {
                if (state != HEADER || header.position() > 0) {
                    conn.lostEndOfStream(" in the middle of a message");
                    return false;
                }
                endOfStream = true;
                endOfStreamSeen();
                return true;
            }
            if (b.hasRemaining()) {
                return true; // nothing more for now
            }
            if (state == HEADER) {
                if (!begin()) {
                    return !conn.failed();
                }
            } else if (state == RECORD) {
                recordIn();
            } else if (state == OP_PAYLOAD) {
                server.filled();
                if (!server.reading()) {
                    reading = HEADER;
                    completeWaiting();
                }
            } else {
                reading = HEADER;
                payload = null;
                chunkReceived(state, length);
            }
        }
        return true;
    }

    private void endOfStreamSeen() {
        if (endOfStreamCount++ == 0) {
            firstEndOfStreamNanos = System.nanoTime();
        }
    }

    /** Accounts for the chunks a lane has put in place; false when one broke the protocol (then it failed). */
    private boolean takeEvents(ReceiveLane lane) {
        long filed = lane.filed();
        long e = lane.taken();
        for (; e < filed; e++) {
            int length = lane.length(e);
            int k = accept(lane.seq(e), lane.index(e), lane.total(e), length, lane.ops(e));
            if (k < 0) {
                return false;
            }
            chunkReceived(k, length);
        }
        lane.take(e);
        return true;
    }

    /** Starts on a complete header of socket 0: a data chunk or a one-sided request. */
    private boolean begin() {
        byte type = header.get(0);
        if (type == EagerFrame.RECORD && eager != null) {
            return beginRecord();
        }
        if (type == EagerFrame.FETCH && eager != null) {
            String bad = EagerFrame.checkFetch(header, 0);
            if (bad != null) {
                conn.violation(bad);
                return false;
            }
            fetchedFrom = Math.max(fetchedFrom, EagerFrame.from(header, 0));
            server.fetched();
            header.clear();
            return true;
        }
        if (type == ByeFrame.TYPE) {
            String bad = ByeFrame.check(header, 0, records);
            if (bad != null) {
                conn.violation(bad);
                return false;
            }
            bye = true;
            header.clear();
            return true;
        }
        if (type != OpFrame.WRITE && type != OpFrame.READ) {
            return beginChunk();
        }
        int begun = server.begin(header);
        if (begun != TcpOpServer.BEGUN) {
            return false;
        }
        reading = server.reading() ? OP_PAYLOAD : HEADER;
        completeWaiting();
        return true;
    }

    /** Checks a record's header and points socket 0 at its slot's payload; the header is written once it is all in. */
    private boolean beginRecord() {
        ByteBuffer h = header;
        String bad = EagerFrame.checkRecord(h, 0, records + 1, server.allowed(eager.slots), eager.maxPayload);
        if (bad != null) {
            conn.violation(bad);
            return false;
        }
        recordPosition = EagerFrame.position(h, 0);
        recordTag = EagerFrame.tag(h, 0);
        recordBuffer = EagerFrame.buffer(h, 0);
        length = EagerFrame.length(h, 0);
        h.clear();
        ringPayload[(int) (records & (eager.slots - 1))].clear().limit(length);
        if (length == 0) {
            recordIn();
        } else {
            reading = RECORD;
        }
        return true;
    }

    /** The record being read is all in its slot: its header and trailer make it visible to the core. */
    private void recordIn() {
        long seq = ++records;
        Eager.write(ring, eager.at(seq), seq, recordPosition, recordTag, length, recordBuffer);
        reading = HEADER;
    }

    /** Checks a chunk header against the posted receive and points socket 0 at the chunk's place in the buffer. */
    private boolean beginChunk() {
        ByteBuffer h = header;
        String bad = ChunkHeader.check(h);
        if (bad != null) {
            conn.violation(bad);
            return false;
        }
        int chunk = ChunkHeader.length(h);
        int k = accept(ChunkHeader.seq(h), ChunkHeader.index(h), ChunkHeader.total(h), chunk, ChunkHeader.ops(h));
        if (k < 0) {
            return false;
        }
        h.clear();
        if (chunk == 0) {
            chunkReceived(k, 0);
            return true;
        }
        ReceiveSlot slot = slots[Slots.slotOf(k)];
        int index = Slots.bufferOf(k);
        reading = k;
        length = chunk;
        payload = views.view((TcpRegistration) slot.registration[index],
                slot.offset[index] + ChunkHeader.offset(h), chunk);
        return true;
    }

    /**
     * Checks a well-formed chunk against the posted receive and what arrived of its message so far, and records its
     * total and operation count; returns the buffer's id (slot * 8 + index), or -1 when it failed the connection.
     */
    private int accept(int seq, int index, long total, int chunk, int ops) {
        ReceiveSlot slot = slots[Slots.ofRequest(seq)];
        if (!slot.busy() || (int) slot.seq != seq || slot.completed()) {
            conn.violation("data for receive number " + Integer.toUnsignedString(seq) + ", which is not posted");
            return -1;
        }
        if (index >= slot.nreqs) {
            conn.violation("data for buffer " + index + " of a receive of " + slot.nreqs + " buffers");
            return -1;
        }
        int k = Slots.key(slot.index, index);
        if (total > slot.maxSize[index]) {
            conn.violation("a message of " + total + " bytes for a buffer of " + slot.maxSize[index]
                    + " (the sender must answer TRUNCATED instead)");
            return -1;
        }
        if ((doneMask[slot.index] & (1 << index)) != 0 || slot.has(index) || (expected[k] >= 0 && expected[k] != total)
                || slot.received[index] + chunk > total) {
            conn.violation("a chunk that does not fit the message of " + total + " bytes it belongs to");
            return -1;
        }
        int applied = server.applied();
        if (ops - applied > OpWindow.SIZE || (expected[k] >= 0 && messageOps[k] != ops)) {
            conn.violation("a data chunk after " + Integer.toUnsignedString(ops) + " one-sided operations, with "
                    + Integer.toUnsignedString(applied) + " applied and at most " + OpWindow.SIZE + " in flight");
            return -1;
        }
        messageOps[k] = ops;
        if (ops - slotOps[slot.index] > 0) {
            slotOps[slot.index] = ops;
        }
        expected[k] = total;
        return k;
    }

    private void chunkReceived(int k, int bytes) {
        ReceiveSlot slot = slots[Slots.slotOf(k)];
        int i = Slots.bufferOf(k);
        slot.received[i] += bytes;
        if (slot.received[i] == expected[k]) {
            doneMask[slot.index] |= 1 << i;
            if (server.applied() - slotOps[slot.index] >= 0) {
                land(slot, 1 << i);
            } else {
                if (deferred[slot.index] == 0) {
                    waiting++;                     // one-sided operations issued before it are still on the way
                }
                deferred[slot.index] |= 1 << i;
            }
        }
    }

    /** Lands the deferred buffers once the operations issued before their messages are applied. Rare. */
    private void completeWaiting() {
        if (waiting == 0) {
            return;
        }
        int applied = server.applied();
        for (ReceiveSlot slot : slots) {
            int d = deferred[slot.index];
            if (d != 0 && slot.busy() && applied - slotOps[slot.index] >= 0) {
                deferred[slot.index] = 0;
                waiting--;
                land(slot, d);
            }
        }
    }

    /** Buffers are in place; the slot completes once every buffer is, eager ones included, and the lanes stop then. */
    private void land(ReceiveSlot slot, int buffers) {
        slot.land(buffers);
        if (slot.completed() && posted != null) {
            posted.retire(slot.index);
        }
    }

    @Override
    public void eagerFilled(ReceiveSlot slot) {
        if (posted != null) {
            posted.retire(slot.index);
        }
    }

    /** The sockets this end reads from, and their fate. */
    DataConnection connection() {
        return conn;
    }

    /** Stops the lanes' helpers from touching the sockets and memory, then closes the sockets; the peer sees it. */
    @Override
    public void close() {
        for (ReceiveLane lane : lanes) {
            lane.retire();
        }
        try {
            conn.close();
        } finally {
            if (eagerArena != null) {
                eagerArena.close();
            }
        }
    }

    @Override
    public String toString() {
        return "TcpReceiver[" + conn + "]";
    }
}
