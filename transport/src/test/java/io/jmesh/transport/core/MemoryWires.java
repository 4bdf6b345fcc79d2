package io.jmesh.transport.core;

import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;
import io.jmesh.api.Status;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * A connection whose wire is this process's memory: the receiving wire writes each posted buffer's clear-to-send
 * entry straight into the sender's FIFO (at once, or at {@code announce} when held by MORE), and the sending wire
 * copies a matched message into the buffer its receive named when the sender's {@code progress} runs, then marks
 * both sides. So the core's whole protocol (ids, ordering, tags, grouped receives, TRUNCATED, MORE, close and failure)
 * runs with no socket and no device; one thread drives both ends. With an eager ring, a small send writes its record
 * straight into the receiver's ring (as a verbs peer's RDMA write), bounded by the credits the receiver's core hands
 * back; each message completes its buffer on its own ({@link ReceiveSlot#land}), as on TCP. No one-sided operations.
 */
final class MemoryWires implements AutoCloseable {
    /** Memory either end may use: an arena's segment, no keys. */
    record Memory(MemorySegment memory) implements Registration {
        @Override
        public RemoteRegion remote() {
            throw new UnsupportedOperationException("the in-memory wire has no one-sided operations");
        }

        @Override
        public void close() {
        }
    }

    private record Delivery(SendSlot slot, int buffer) {
    }

    /** Memory in process has no keys: entries carry none (0 rails). */
    private static final int[] NO_KEYS = new int[0];

    final Fate senderFate = new Fate();
    final Fate receiverFate = new Fate();
    final CoreSender sender;
    final CoreReceiver receiver;
    /** Entry writes the receive wire made, and deliveries the send wire made: what moved on the "wire". */
    int entriesWritten;
    int deliveries;

    private final Arena arena = Arena.ofShared();
    private final MemorySegment fifo = arena.allocate(Cts.FIFO_BYTES, 64);
    private final ReceiveSlot[] receiveRing = CoreReceiver.ring();
    private final ArrayDeque<Delivery> queued = new ArrayDeque<>();
    private final List<ReceiveSlot> held = new ArrayList<>();
    /** The receiver's eager ring (null: none), records written into it, and the consumed count handed back. */
    private final Eager eager;
    private final MemorySegment ring;
    private long records;
    private long credited;
    /** Clear-to-send ring positions used so far: a receive of n buffers takes the next n, as both cores count. */
    private long positions;

    MemoryWires() {
        this(null);
    }

    /** With {@code eager} (null: none) the sender writes messages up to its payload into the receiver's ring. */
    MemoryWires(Eager eager) {
        this.eager = eager;
        this.ring = eager == null ? null : arena.allocate(eager.ringBytes, 64);
        sender = new CoreSender(senderFate, fifo, CoreSender.ring(), new Send(), c -> { });
        receiver = new CoreReceiver(receiverFate, receiveRing, new Receive(), c -> { });
    }

    /** Registers {@code bytes} of fresh memory. */
    Memory allocate(long bytes) {
        return new Memory(arena.allocate(Math.max(1, bytes), 4096));
    }

    private static boolean inside(Registration r, long offset, long length) {
        return r instanceof Memory m && offset >= 0 && length >= 0 && offset + length <= m.memory().byteSize();
    }

    private final class Send implements SendWire {
        @Override
        public void matched(SendSlot slot, int i) {
            if (!slot.eager(i)) {                  // an eager record filled it: nothing to deliver
                queued.add(new Delivery(slot, i));
            }
        }

        @Override
        public boolean sendsEagerly(Registration registration, long length) {
            return eager != null && length <= eager.maxPayload;
        }

        @Override
        public int eager(long position, int tag, Registration registration, long offset, int length, int buffer) {
            if (records - credited >= eager.slots) {
                return Status.NOT_READY;
            }
            long seq = ++records;
            long at = eager.at(seq);
            MemorySegment.copy(registration.memory(), offset, ring, Eager.payload(at), length);
            Eager.write(ring, at, seq, position, tag, length, buffer);
            deliveries++;
            return 0;
        }

        @Override
        public int start(Op op) {
            return Status.BAD_ARGUMENT;
        }

        @Override
        public void progress() {
            Delivery d;
            while (!senderFate.failed() && (d = queued.poll()) != null) {
                SendSlot s = d.slot();
                int i = d.buffer();
                ReceiveSlot r = receiveRing[Slots.ofRequest(s.seq)];
                if (r.seq != s.seq) {
                    senderFate.fail("in-memory wire: request " + s.seq + " is not posted at the receiver");
                    return;
                }
                MemorySegment.copy(s.registration[i].memory(), s.offset[i], r.registration[i].memory(),
                        r.offset[i], s.length[i]);
                r.received[i] = s.length[i];
                s.complete(i);
                deliveries++;
                r.land(1 << i);
            }
        }

        @Override
        public boolean owns(Registration registration, long offset, long length) {
            return inside(registration, offset, length);
        }

        @Override
        public void close() {
            queued.clear();
        }
    }

    private final class Receive implements ReceiveWire {
        @Override
        public int post(ReceiveSlot slot, boolean hold) {
            held.add(slot);
            return hold ? 0 : announce();
        }

        @Override
        public int announce() {
            for (ReceiveSlot slot : held) {
                for (int i = 0; i < slot.nreqs; i++) {
                    long addr = slot.registration[i].memory().address() + slot.offset[i];
                    Cts.write(fifo, Cts.at(positions++), addr, slot.maxSize[i], NO_KEYS, 0, 0, slot.tag[i],
                            slot.nreqs, slot.seq);
                    entriesWritten++;
                }
            }
            held.clear();
            return 0;
        }

        @Override
        public MemorySegment eagerRing() {
            return ring;
        }

        @Override
        public Eager eagerGeometry() {
            return eager == null ? Eager.VERBS : eager;
        }

        @Override
        public int eagerConsumed(long consumed) {
            credited = consumed;
            return 0;
        }

        @Override
        public int flush(Op op, int n, Registration[] registrations, long[] offsets, long[] sizes) {
            return 1;
        }

        @Override
        public void progress() {
        }

        @Override
        public boolean owns(Registration registration, long offset, long length) {
            return inside(registration, offset, length);
        }

        @Override
        public void close() {
            held.clear();
        }
    }

    @Override
    public void close() {
        sender.close();
        receiver.close();
        arena.close();
    }
}
