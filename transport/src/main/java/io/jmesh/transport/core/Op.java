package io.jmesh.transport.core;

import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;

/**
 * One entry of an {@link OpWindow}: a one-sided write or read of a sender, or a flush of a receiver, from issue until
 * {@code test} reports it. The core fills what the application gave; the wire finishes it.
 */
public final class Op {
    public final int index;
    public boolean read;
    public Registration local;
    public long localOffset;
    public long length;
    public RemoteRegion remote;
    public long remoteOffset;
    boolean busy;
    /** Issued at least once: its length is what size() answers. */
    boolean issued;
    /** 0 in flight, 1 done, or a negative Status (REFUSED) */
    int result;
    String failure;

    Op(int index) {
        this.index = index;
    }

    /** Finished: 1 for done, or {@link io.jmesh.api.Status#REFUSED} with the peer's reason. */
    public void finish(int result, String failure) {
        this.result = result;
        this.failure = failure;
    }

    public boolean finished() {
        return result != 0;
    }
}
