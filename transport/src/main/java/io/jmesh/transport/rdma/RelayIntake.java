package io.jmesh.transport.rdma;

/**
 * How the pieces of each message reach a relay node from the node before: pulled from a sender ({@link PullIntake})
 * or pushed by the relay before ({@link RecordIntake}). It adds them to its {@link RelayPipe} in message order and
 * keeps the status word that tells the node before what it may reuse.
 */
abstract class RelayIntake {
    final RelayPipe pipe;

    RelayIntake(RelayPipe pipe) {
        this.pipe = pipe;
    }

    /** How many pieces the pipe's FIFO holds. */
    abstract int capacity();

    /** Bounded work: adds what has arrived; returns how much was done. */
    abstract int poll();

    /** The piece's memory is free again (its outlet work completed), in FIFO order. */
    void freed(RelayPiece piece) {
    }

    /** The value of the node before's status word (without the failure bit). */
    abstract long status();

    /** Where the status word lies in the node before's control region. */
    abstract long statusAt();

    /** The node before, for messages: "the sender", "the relay before". */
    abstract String describe();
}
