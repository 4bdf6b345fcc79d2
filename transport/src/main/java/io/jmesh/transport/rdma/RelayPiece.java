package io.jmesh.transport.rdma;

/**
 * One contiguous piece of a relayed message in a relay node's registered memory: a chunk read from the sender, a
 * buffer the sender wrote inline, an empty buffer, or a record from the relay before. A {@link RelayPipe} keeps a
 * FIFO of them, preallocated: its intake adds pieces in message order, its outlet passes them on in that order, and a
 * piece's memory is free again once everything the outlet posted from it has completed. Mutable, reused; one thread.
 */
final class RelayPiece {
    /** the message's request slot */
    int slot;
    /** which buffer of the message */
    int buffer;
    /** where in that buffer */
    long offset;
    long length;
    /** where its bytes lie in the pipe's registered memory (0 for an empty piece) */
    long address;
    /** it occupies one of the pull intake's chunks */
    boolean chunk;
    /** the last piece of its message */
    boolean last;
    /** its bytes are in the relay's memory */
    boolean ready;
    /** bytes of it the outlet has posted */
    long sent;
    /** outlet work requests posted from it and not yet completed */
    int pending;

    void set(int slot, int buffer, long offset, long length, long address, boolean chunk, boolean ready) {
        this.slot = slot;
        this.buffer = buffer;
        this.offset = offset;
        this.length = length;
        this.address = address;
        this.chunk = chunk;
        this.ready = ready;
        this.last = false;
        this.sent = 0;
        this.pending = 0;
    }
}
