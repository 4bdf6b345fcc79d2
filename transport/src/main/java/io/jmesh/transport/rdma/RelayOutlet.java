package io.jmesh.transport.rdma;

/**
 * How a relay node passes the pieces of each message on: into the receiver's buffers ({@link ReceiverOutlet}) or as
 * records to the next relay ({@link RecordOutlet}). It posts the pipe's ready pieces in order; a piece is free again
 * once every work request posted from it has completed.
 */
abstract class RelayOutlet {
    final RelayPipe pipe;

    RelayOutlet(RelayPipe pipe) {
        this.pipe = pipe;
    }

    /** Bounded work: posts what is ready; returns how much was done. */
    abstract int poll();

    /**
     * Posts the goodbye after the last message ({@link RelayPipe#goodbyeFrom}) once every piece is posted and every
     * message ended, with work request id {@link RelayPipe#BYE}; false while it cannot yet (or the post failed).
     */
    abstract boolean goodbye(long messages);

    /** The node after, for messages: "the receiver", "the next relay". */
    abstract String describe();
}
