package io.jmesh.nccl;

import io.jmesh.api.Receiver;
import io.jmesh.api.Registration;

/**
 * The receiving end of a connection: NCCL's recvComm over a transport {@link Receiver}. The argument arrays for the
 * transport's grouped irecv and the buffer count of each request are kept here and reused, so irecv and test do not
 * allocate.
 */
final class RecvComm extends Comm {
    final Receiver receiver;
    final Registration[] registrations = new Registration[Nccl.MAX_RECVS];
    final long[] offsets = new long[Nccl.MAX_RECVS];
    final long[] maxSizes = new long[Nccl.MAX_RECVS];
    final int[] tags = new int[Nccl.MAX_RECVS];
    /** Buffers in each request, by request id; grows (off the hot path) if the transport ever uses larger ids. */
    private int[] counts = new int[256];

    RecvComm(int dev, Receiver receiver) {
        super(dev);
        this.receiver = receiver;
    }

    /** Posts the grouped receive staged in the arrays: a request id or a negative status. */
    int irecv(int n) {
        int id = receiver.irecv(n, registrations, offsets, maxSizes, tags);
        if (id >= 0) {
            if (id >= counts.length) {
                counts = java.util.Arrays.copyOf(counts, Math.max(id + 1, counts.length * 2));
            }
            counts[id] = n;
            if (StepTrace.ON) {
                long bytes = 0;
                for (int i = 0; i < n; i++) {
                    bytes += maxSizes[i];
                }
                trace.posted(id, bytes);
            }
        }
        java.util.Arrays.fill(registrations, 0, n, null); // no stale references to closed registrations
        return id;
    }

    /** Flushes the buffers staged in the arrays (maxSizes holds the received sizes): a request id or a status. */
    int iflush(int n) {
        int id = receiver.iflush(n, registrations, offsets, maxSizes);
        if (id >= 0) {
            if (id >= counts.length) {
                counts = java.util.Arrays.copyOf(counts, Math.max(id + 1, counts.length * 2));
            }
            counts[id] = 0; // a flush reports no sizes
        }
        java.util.Arrays.fill(registrations, 0, n, null);
        return id;
    }

    @Override
    int test(int id, long sizesAddress) {
        int rc = receiver.test(id);
        if (StepTrace.ON) {
            trace.tested(id, rc == 1);
        }
        if (rc == 1 && sizesAddress != 0) {
            int n = id < counts.length ? counts[id] : 1;
            for (int i = 0; i < n; i++) {
                Mem.putInt(sizesAddress + 4L * i, (int) receiver.size(id, i));
            }
        }
        return rc;
    }

    @Override
    String error() {
        return receiver.error();
    }

    @Override
    void close() {
        if (StepTrace.ON) {
            trace.closed(false);
        }
        receiver.close();
    }
}
