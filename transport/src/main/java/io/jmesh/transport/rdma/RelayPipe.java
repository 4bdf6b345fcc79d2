package io.jmesh.transport.rdma;

import io.jmesh.transport.lifecycle.Closer;
import io.jmesh.transport.core.Cts;
import io.jmesh.transport.verbs.Wr;
import io.jmesh.posix.Errno;
import io.jmesh.verbs.ffi.verbs_h;
import io.jmesh.transport.core.Slots;

import java.lang.foreign.MemorySegment;
import java.util.function.Function;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * One relayed connection on a relay node: the queue pair towards the node before ({@code up}: the sender, or the
 * relay before on a route through several) and the one towards the node after ({@code down}: the receiver, or the
 * next relay), each on the device of its own link, and memory registered on both. Between them a FIFO of
 * {@link RelayPiece}s: the {@link RelayIntake} adds the pieces of each message in order (pulled from a sender by
 * RDMA READ, or pushed by the relay before as records), the {@link RelayOutlet} passes them on in the same order
 * (RDMA WRITEs into the receiver's buffers and the end of each message, or records to the next relay), and a piece's
 * memory is free again once what the outlet posted from it has completed. So the relay holds a bounded number of
 * pieces whatever the message sizes, and a slow receiver slows the sender.
 *
 * <p>The receiver's clear-to-send entries travel up unchanged, hop by hop, to the sender's FIFO. The node before
 * learns what it may reuse (and that the connection failed: bit 63) through one status word the intake keeps: the
 * sender's done word, or the relay before's credit word. Everything that came from the network is checked against
 * the receiver's entries before it is used. Any failure closes both queue pairs, after telling the node before why:
 * both ends see their connection fail. Runs on the relay's thread only.
 */
final class RelayPipe implements AutoCloseable {
    static final long READ = 1L << 40;
    static final long WRITE = 2L << 40;
    static final long END = 3L << 40;
    static final long CONTROL = 4L << 40;
    static final long BYE = 5L << 40;
    private static final long KIND = 0xffL << 40;
    private static final long FAIL_GRACE_NANOS = 200_000_000L;

    final String name;
    final Endpoint up;
    final Endpoint down;
    final long upControl;
    final int upRkey;
    /** the receiver's size array, or the next relay's record ring */
    final long downAddress;
    final int downRkey;
    /** what the pieces live in, registered on both devices; {@code memoryOwner} frees it after the queue pairs */
    final RdmaRegistration memory;
    private final AutoCloseable memoryOwner;
    /** the receiver's clear-to-send entries, written into {@code down}'s control region */
    final MemorySegment fifo;
    private final MemorySegment ctsStaging;
    private final MemorySegment statusStaging;
    final int opWrite = verbs_h.IBV_WR_RDMA_WRITE();
    final int opWriteImm = verbs_h.IBV_WR_RDMA_WRITE_WITH_IMM();
    final int opRead = verbs_h.IBV_WR_RDMA_READ();
    final int flagSignaled = verbs_h.IBV_SEND_SIGNALED();
    private final int wcSuccess = verbs_h.IBV_WC_SUCCESS();
    private final RelayIntake intake;
    private final RelayOutlet outlet;
    final RelayPiece[] pieces;

    /** per message slot (request - 1 mod MAX_REQUESTS): its first entry's position, buffers, pieces added after it */
    final long[] entryOf = new long[Cts.MAX_REQUESTS];
    final int[] buffersOf = new int[Cts.MAX_REQUESTS];
    final long[] pieceEnd = new long[Cts.MAX_REQUESTS];
    /** per message slot and buffer: the sender's length of the buffer (the size the receiver is told) */
    final long[] sizes = new long[Slots.BUFFERS];

    /** the next message whose clear-to-send is forwarded, and its first entry's position */
    long ctsRequest = 1;
    private long ctsPosition;
    /** the next message the intake takes: all pieces of the ones before are added */
    long taken = 1;
    /** pieces: added by the intake, ready in order, posted by the outlet, completed and free again */
    long added;
    long arrived;
    long posted;
    long freed;
    int upOut;
    int downOut;
    private long statusSent;
    /** The messages the node before sent in all, once its goodbye came (it closed); -1 before. */
    long byeAfter = -1;
    private boolean byeSent;
    private String failure;
    private long failDeadline;
    private boolean closed;

    RelayPipe(String name, Endpoint up, long upControl, int upRkey, Endpoint down, long downAddress, int downRkey,
              RdmaRegistration memory, AutoCloseable memoryOwner, Function<RelayPipe, RelayIntake> intake,
              Function<RelayPipe, RelayOutlet> outlet) {
        this.name = name;
        this.up = up;
        this.down = down;
        this.upControl = upControl;
        this.upRkey = upRkey;
        this.downAddress = downAddress;
        this.downRkey = downRkey;
        this.memory = memory;
        this.memoryOwner = memoryOwner;
        this.fifo = down.control.asSlice(0, Cts.FIFO_BYTES);
        this.ctsStaging = up.control.asSlice(0, Cts.FIFO_BYTES);
        this.statusStaging = up.control.asSlice(Cts.FIFO_BYTES, 64);
        this.intake = intake.apply(this);
        this.pieces = new RelayPiece[this.intake.capacity()];
        for (int i = 0; i < pieces.length; i++) {
            pieces[i] = new RelayPiece();
        }
        this.outlet = outlet.apply(this);
    }

    /** Bounded work; returns how much was done (0: idle). Once it returns -1 the pipe is closed. */
    int poll() {
        if (closed) {
            return -1;
        }
        if (failure != null) {
            drainAfterFailure();
            return closed ? -1 : 0;
        }
        int work = forwardClearToSends() + pollUp() + intake.poll();
        while (arrived < added && piece(arrived).ready) {
            arrived++;
        }
        work += outlet.poll() + pollDown();
        while (freed < posted && piece(freed).pending == 0) {
            intake.freed(piece(freed));
            freed++;
        }
        work += publishStatus();
        if (byeAfter >= 0 && !byeSent && taken - 1 == byeAfter && failure == null && outlet.goodbye(byeAfter)) {
            byeSent = true;
            work++;
        }
        if (work == 0 && failure == null) {
            probe();
        }
        return closed ? -1 : work;
    }

    /**
     * The node before closed after {@code messages} messages: once every one of them has gone on, the goodbye goes
     * on too and the pipe ends when the node after has it. From here on the node before is gone: its queue pair's
     * errors are expected and it is no longer probed or told anything.
     */
    void goodbyeFrom(long messages) {
        if (messages < taken - 1) {
            fail("the node before said goodbye after " + messages + " messages, but " + (taken - 1) + " came (run "
                    + "the same jmesh version on every node)");
            return;
        }
        byeAfter = messages;
    }

    RelayPiece piece(long n) {
        return pieces[index(n)];
    }

    int index(long n) {
        return (int) (n % pieces.length);
    }

    /** Adds the next piece (the caller checked there is room: {@code added - freed < pieces.length}). */
    RelayPiece add(int slot, int buffer, long offset, long length, long address, boolean chunk, boolean ready) {
        RelayPiece p = piece(added++);
        p.set(slot, buffer, offset, length, address, chunk, ready);
        return p;
    }

    boolean full() {
        return added - freed >= pieces.length;
    }

    /** The intake added every piece of message {@link #taken}. */
    void messageAdded() {
        piece(added - 1).last = true;
        pieceEnd[slot(taken)] = added;
        taken++;
    }

    /** The receiver's new clear-to-send entries, copied to the node before's FIFO at the same positions. */
    private int forwardClearToSends() {
        int work = 0;
        while (failure == null) {
            long first = Cts.at(ctsPosition);
            if (Cts.seq(fifo, first) != ctsRequest) {
                return work;
            }
            int n = Cts.nreqs(fifo, first);
            if (n < 1 || n > Cts.MAX_RECVS) {
                fail("the receiver sent a clear-to-send for " + n + " buffers (1.." + Cts.MAX_RECVS + ")");
                return work;
            }
            for (int i = 1; i < n; i++) {
                if (Cts.seq(fifo, Cts.at(ctsPosition + i)) != ctsRequest) {
                    return work;                   // the rest of the group is on its way
                }
            }
            if (upOut + 2 >= up.sendDepth) {
                return work;
            }
            for (int i = 0; i < n; i++) {
                long e = Cts.at(ctsPosition + i);
                MemorySegment.copy(fifo, e, ctsStaging, e, Cts.ENTRY_BYTES);
            }
            long from = ctsPosition & (Cts.ENTRIES - 1);
            int run = (int) Math.min(n, Cts.ENTRIES - from);
            postUpWrite(0, ctsStaging.address() + from * Cts.ENTRY_BYTES, run * Cts.ENTRY_BYTES,
                    upControl + from * Cts.ENTRY_BYTES);
            if (run < n) {
                postUpWrite(1, ctsStaging.address(), (n - run) * Cts.ENTRY_BYTES, upControl);
                Wr.link(up.wr[0], up.wr[1]);
            }
            if (!postUp(run < n ? 2 : 1, "clear-to-send")) {
                return work;
            }
            int slot = slot(ctsRequest);
            entryOf[slot] = ctsPosition;
            buffersOf[slot] = n;
            ctsRequest++;
            ctsPosition += n;
            work++;
        }
        return work;
    }

    /** Tells the node before what it may reuse (the intake's status word), when that changed. */
    private int publishStatus() {
        long status = intake.status();
        if (status == statusSent || upOut + 1 >= up.sendDepth || failure != null || byeAfter >= 0) {
            return 0;
        }
        statusStaging.set(JAVA_LONG, 0, status);
        postUpWrite(0, statusStaging.address(), 8, upControl + intake.statusAt());
        if (!postUp(1, "status word")) {
            return 0;
        }
        statusSent = status;
        return 1;
    }

    private int pollUp() {
        int n = up.cq.poll(up.wcs, Endpoint.WC_BATCH);
        if (n < 0) {
            fail("ibv_poll_cq on " + up.device.name() + " failed: " + n);
            return 0;
        }
        for (int i = 0; i < n && failure == null; i++) {
            long wrId = Wr.wcWrId(up.wcs, i);
            upOut--;
            if (Wr.wcStatus(up.wcs, i) != wcSuccess && byeAfter >= 0 && taken - 1 == byeAfter) {
                continue;                          // every message is in: the closed node before's queue pair went
            }
            if (Wr.wcStatus(up.wcs, i) != wcSuccess) {
                failUpstream("towards " + intake.describe() + " on " + up.device.name() + " failed: "
                        + up.device.verbs().wcStatusString(Wr.wcStatus(up.wcs, i)));
            } else if ((wrId & KIND) == READ) {
                pieces[(int) wrId].ready = true;
            } else if (wrId == Endpoint.PROBE_WR) {
                up.probeDone();
            }
        }
        return n;
    }

    private int pollDown() {
        int n = down.cq.poll(down.wcs, Endpoint.WC_BATCH);
        if (n < 0) {
            fail("ibv_poll_cq on " + down.device.name() + " failed: " + n);
            return 0;
        }
        for (int i = 0; i < n && failure == null; i++) {
            long wrId = Wr.wcWrId(down.wcs, i);
            downOut--;
            if (Wr.wcStatus(down.wcs, i) != wcSuccess) {
                fail("a write towards " + outlet.describe() + " on " + down.device.name() + " failed: "
                        + down.device.verbs().wcStatusString(Wr.wcStatus(down.wcs, i))
                        + " (it closed or died)");
            } else if ((wrId & KIND) == WRITE) {
                pieces[(int) wrId].pending--;
            } else if (wrId == Endpoint.PROBE_WR) {
                down.probeDone();
            } else if (wrId == BYE) {
                VerbsRelay.LOG.debug("jmesh relay: {} ended: {} closed after {} messages, all passed on", name,
                        intake.describe(), byeAfter);
                close();                           // the node after has everything and the goodbye: nothing is owed
                return n;
            }
        }
        return n;
    }

    /** Both sides are probed while idle, so a peer that went away fails the pipe (see {@link Endpoint#idle}). */
    private void probe() {
        if (upOut + 1 < up.sendDepth && byeAfter < 0) {
            int p = up.idle(upControl, upRkey);
            if (p > 0) {
                upOut++;
            } else if (p < 0) {
                fail("ibv_post_send (probe) on " + up.device.name() + " failed: " + Errno.describe(-p));
                return;
            }
        }
        if (downOut + 1 < down.sendDepth) {
            int p = down.idle(downAddress, downRkey);
            if (p > 0) {
                downOut++;
            } else if (p < 0) {
                fail("ibv_post_send (probe) on " + down.device.name() + " failed: " + Errno.describe(-p));
            }
        }
    }

    void postUpWrite(int w, long local, int bytes, long remote) {
        Wr.sge(up.sge[w], local, bytes, up.controlMr.lkey());
        Wr.send(up.wr[w], CONTROL, MemorySegment.NULL, up.sge[w], 1, opWrite, flagSignaled, 0, remote, upRkey);
        Wr.link(up.wr[w], MemorySegment.NULL);
    }

    /** Posts {@code up.wr[0]} (and what is linked to it): {@code wrs} work requests. */
    boolean postUp(int wrs, String what) {
        int rc = up.ops.postSend(up.qp.handle(), up.wr[0], up.badWr);
        if (rc != 0) {
            fail("ibv_post_send (" + what + ") on " + up.device.name() + " failed: " + Errno.describe(rc));
            return false;
        }
        upOut += wrs;
        return true;
    }

    /** Posts {@code down.wr[0]} alone. */
    boolean postDown(String what) {
        Wr.link(down.wr[0], MemorySegment.NULL);
        int rc = down.ops.postSend(down.qp.handle(), down.wr[0], down.badWr);
        if (rc != 0) {
            fail("ibv_post_send (" + what + ") on " + down.device.name() + " failed: " + Errno.describe(rc));
            return false;
        }
        downOut++;
        return true;
    }

    static int slot(long request) {
        return Slots.ofRequest(request);
    }

    boolean failed() {
        return failure != null;
    }

    /**
     * Fails the pipe from the far side (or a local error): the node before learns it through its status word, given
     * a moment to arrive, then both queue pairs close.
     */
    void fail(String why) {
        if (failure != null) {
            return;
        }
        failure = why;
        VerbsRelay.LOG.warn("jmesh relay: {} failed: {}", name, why);
        failDeadline = System.nanoTime() + FAIL_GRACE_NANOS;
        statusStaging.set(JAVA_LONG, 0, RelayLayout.FAILED | intake.status());
        postUpWrite(0, statusStaging.address(), 8, upControl + intake.statusAt());
        if (up.ops.postSend(up.qp.handle(), up.wr[0], up.badWr) != 0) {
            close();
        } else {
            upOut++;                               // the failure word: closing waits for its completion
        }
    }

    /** The node before failed: nothing can reach it, so both queue pairs close at once. */
    private void failUpstream(String why) {
        if (failure == null) {
            failure = why;
            VerbsRelay.LOG.warn("jmesh relay: {}: a request {}", name, why);
        }
        close();
    }

    /** After a failure, waits for the failure word's write to complete (or the grace to pass), then closes. */
    private void drainAfterFailure() {
        int n = up.cq.poll(up.wcs, Endpoint.WC_BATCH);
        for (int i = 0; i < n; i++) {
            upOut--;
            if (Wr.wcStatus(up.wcs, i) != wcSuccess) {
                close();
                return;
            }
        }
        if (n < 0 || upOut <= 0 || System.nanoTime() - failDeadline > 0) {
            close();
        }
    }

    String failure() {
        return failure;
    }

    /** Synchronized: a relay closing down and its forwarder may both get here. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        Closer.closeAll(e -> VerbsRelay.LOG.warn("jmesh relay: closing {}: {}", name, e.toString()), up, down,
                memoryOwner);
    }

    @Override
    public String toString() {
        return name;
    }
}
