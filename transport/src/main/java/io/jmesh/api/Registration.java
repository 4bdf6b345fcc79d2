package io.jmesh.api;

import java.lang.foreign.MemorySegment;

/**
 * Memory registered with a fabric for sending from, receiving into, and one-sided access by peers. On verbs it holds
 * one memory region per device; on TCP it holds the segment and a random id that peers name it by. Close it after the
 * connections that use it, and free the memory after that.
 *
 * <pre>{@code
 * try (Arena arena = Arena.ofShared()) {
 *     Registration reg = fabric.register(arena.allocate(1 << 20, 4096));
 *     byte[] forPeer = reg.remote().encode();      // only if peers may write/read it one-sided
 *     // ... sends, receives, one-sided operations ...
 *     reg.close();                                  // after the connections that use it
 * }                                                 // then the memory
 * }</pre>
 */
public interface Registration extends AutoCloseable {
    /** The registered memory. */
    MemorySegment memory();

    default long length() {
        return memory().byteSize();
    }

    /**
     * The descriptor a peer needs for one-sided {@link Sender#write} and {@link Sender#read} into this memory. Give
     * it only to peers you trust with the whole registered range: they can read and write it while it is registered
     * (on verbs, while any registration of the same pages is open: the provider shares memory regions among them).
     */
    RemoteRegion remote();

    @Override
    void close();
}
