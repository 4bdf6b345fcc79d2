package io.jmesh.api;

import java.lang.foreign.MemorySegment;

/**
 * Memory registered with a fabric for sending from, receiving into, and one-sided access by peers. On verbs it holds
 * one memory region per device; on TCP it only holds the segment. Close it after the connections that use it.
 */
public interface Registration extends AutoCloseable {
    /** The registered memory. */
    MemorySegment memory();

    default long length() {
        return memory().byteSize();
    }

    /**
     * The descriptor a peer needs for one-sided {@link Sender#write} and {@link Sender#read} into this memory. Give
     * it only to peers you trust with the whole registered range: they can read and write it while it is registered.
     */
    RemoteRegion remote();

    @Override
    void close();
}
