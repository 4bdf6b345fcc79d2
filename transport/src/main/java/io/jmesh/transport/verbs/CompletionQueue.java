package io.jmesh.transport.verbs;

import io.jmesh.verbs.DataPath;
import io.jmesh.posix.Errno;
import io.jmesh.verbs.VerbsException;

import java.lang.foreign.MemorySegment;

/**
 * A completion queue, polled (no completion channel): the progress loop polls it in batches. Close it after the
 * queue pairs that use it.
 */
public final class CompletionQueue implements AutoCloseable {
    private final DeviceContext device;
    private final DataPath dataPath;
    private final MemorySegment cq;
    private boolean closed;

    public CompletionQueue(DeviceContext device, int depth) {
        if (depth <= 0) {
            throw new IllegalArgumentException("CQ depth must be positive, not " + depth);
        }
        this.device = device;
        this.dataPath = device.dataPath();
        this.cq = device.verbs().createCq(device.handle(), depth, device.name());
    }

    /** The {@code struct ibv_cq*}. */
    public MemorySegment handle() {
        return cq;
    }

    /**
     * Reads up to {@code max} completions into {@code wcArray} (an array of {@code struct ibv_wc}).
     *
     * @return the number read, or negative on a provider error; never throws, never allocates
     */
    public int poll(MemorySegment wcArray, int max) {
        return dataPath.pollCq(cq, max, wcArray);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        int rc = device.verbs().destroyCq(cq);
        if (rc != 0) {
            throw new VerbsException("ibv_destroy_cq on " + device.name() + " failed: " + Errno.describe(rc)
                    + (rc == Errno.EBUSY ? "; a queue pair still uses it (close it first)" : ""), rc);
        }
    }
}
