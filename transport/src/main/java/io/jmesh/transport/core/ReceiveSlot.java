package io.jmesh.transport.core;

import io.jmesh.api.Registration;

/**
 * One slot of the receive ring: a grouped receive of up to {@link Cts#MAX_RECVS} buffers, from {@code irecv} until
 * {@code test} reports it. Its request id is {@link #index}. The core fills what the application posted; the wire
 * announces it, lands the data, records the sizes and marks it complete.
 */
public final class ReceiveSlot {
    public final int index;
    public final Registration[] registration = new Registration[Cts.MAX_RECVS];
    public final long[] offset = new long[Cts.MAX_RECVS];
    public final long[] maxSize = new long[Cts.MAX_RECVS];
    public final int[] tag = new int[Cts.MAX_RECVS];
    /** Bytes that arrived in buffer i: the real size once the slot is complete. */
    public final long[] received = new long[Cts.MAX_RECVS];
    public int nreqs;
    /** Request sequence number (1, 2, ...): what the peer's clear-to-send and data name. */
    public long seq;
    /** Stream position of the message for buffer 0: the sends of a connection are numbered from 0 in order. */
    long first;
    /** Buffers an eager record filled. */
    int filled;
    /** Buffers a wire that completes per buffer ({@link #land}) put in place. */
    int landed;
    /** An eager message was larger than its buffer: test reports TRUNCATED. */
    boolean truncated;
    boolean busy;
    boolean done;

    ReceiveSlot(int index) {
        this.index = index;
    }

    /** Posted and not yet reported. */
    public boolean busy() {
        return busy;
    }

    /** Every buffer has its message (and whatever must precede it is in place): test may report it. */
    public void complete() {
        done = true;
    }

    /**
     * For a wire whose data can overtake the eager records of the same receive (TCP: records on one socket, chunks
     * on others): {@code buffers} (a mask) are in place, with whatever must precede them. The slot completes once
     * they and the buffers eager records filled are all of it, whichever comes last.
     */
    public void land(int buffers) {
        landed |= buffers;
        if ((landed | filled) == (1 << nreqs) - 1) {
            done = true;
        }
    }

    /** Whether buffer i has its message, through the wire or an eager record. */
    public boolean has(int i) {
        return ((landed | filled) & (1 << i)) != 0;
    }

    public boolean completed() {
        return done;
    }

    static ReceiveSlot[] ring() {
        ReceiveSlot[] slots = new ReceiveSlot[Cts.MAX_REQUESTS];
        for (int i = 0; i < slots.length; i++) {
            slots[i] = new ReceiveSlot(i);
        }
        return slots;
    }
}
