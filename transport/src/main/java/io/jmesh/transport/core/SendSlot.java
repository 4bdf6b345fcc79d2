package io.jmesh.transport.core;

import io.jmesh.api.Registration;

/**
 * One slot of the send ring: the sends matched to one grouped receive of the peer, from the first match until
 * {@code test} has reported every one of them. Request id of buffer i: {@code index * MAX_RECVS + i}. The core
 * fills what the application gave; the wire reads it to put the data on the wire and marks what completed.
 */
public final class SendSlot {
    /** This slot's place in the ring. */
    public final int index;
    /** What {@code isend} was given for buffer i. */
    public final Registration[] registration = new Registration[Cts.MAX_RECVS];
    public final long[] offset = new long[Cts.MAX_RECVS];
    public final long[] length = new long[Cts.MAX_RECVS];
    /** Buffers of the peer's grouped receive: every one needs a send before the slot is full. */
    public int nreqs;
    /** Ring position of the slot's first clear-to-send entry; set once full (the entries stay until it is reused). */
    public long entry;
    /** Request sequence number (1, 2, ...) of the grouped receive this slot matches. */
    public long seq;
    int matched;
    /** Buffers whose message went eagerly ({@link Eager}): matched, with no data for the wire to post. */
    int eager;
    /** Buffers whose length belongs to this slot's latest use: what size() may answer for. */
    int sized;
    int reported;
    int done;
    boolean full;

    SendSlot(int index) {
        this.index = index;
    }

    /** Whether buffer i's message went eagerly: the wire posts no data for it (its length is in the slot). */
    public boolean eager(int i) {
        return (eager & (1 << i)) != 0;
    }

    /** True once every buffer of the grouped receive has its send. */
    public boolean full() {
        return full;
    }

    /** Buffer i's send completed locally: test may report it. */
    public void complete(int i) {
        done |= 1 << i;
    }

    /** Every send of a full slot completed. */
    public void completeAll() {
        done = mask();
    }

    int mask() {
        return (1 << nreqs) - 1;
    }

    void reset() {
        full = false;
        matched = 0;
        eager = 0;
        reported = 0;
        done = 0;
        for (int i = 0; i < Cts.MAX_RECVS; i++) {
            registration[i] = null;
        }
    }

    static SendSlot[] ring() {
        SendSlot[] slots = new SendSlot[Cts.MAX_REQUESTS];
        for (int i = 0; i < slots.length; i++) {
            slots[i] = new SendSlot(i);
        }
        return slots;
    }
}
