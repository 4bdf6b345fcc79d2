package io.jmesh.nccl;

import io.jmesh.api.Sender;

/** The sending end of a connection: NCCL's sendComm over a transport {@link Sender}. */
final class SendComm extends Comm {
    final Sender sender;

    SendComm(int dev, Sender sender) {
        super(dev);
        this.sender = sender;
    }

    /** The transport's isend: a request id, or a negative status ({@code NOT_READY}: call again). */
    int isend(MemHandle mh, long offset, long size, int tag) {
        return sender.isend(mh.registration, offset, size, tag);
    }

    @Override
    int test(int id, long sizesAddress) {
        int rc = sender.test(id);
        if (rc == 1 && sizesAddress != 0) {
            Mem.putInt(sizesAddress, (int) sender.size(id));
        }
        return rc;
    }

    @Override
    String error() {
        return sender.error();
    }

    @Override
    void close() {
        sender.close();
    }
}
