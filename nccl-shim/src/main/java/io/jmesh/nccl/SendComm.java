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
        int id = sender.isend(mh.registration, offset, size, tag);
        if (StepTrace.ON && id >= 0) {
            trace.posted(id, size);
        }
        return id;
    }

    @Override
    int test(int id, long sizesAddress) {
        int rc = sender.test(id);
        if (StepTrace.ON) {
            trace.tested(id, rc == 1);
        }
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
        if (StepTrace.ON) {
            trace.closed(true);
        }
        sender.close();
    }
}
