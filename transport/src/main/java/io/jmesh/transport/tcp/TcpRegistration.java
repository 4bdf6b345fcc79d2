package io.jmesh.transport.tcp;

import io.jmesh.api.Registration;
import io.jmesh.api.RemoteRegion;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * Memory "registered" with the TCP provider: the segment and its {@link ByteBuffer} views, made once here so the data
 * path never makes one per message. A ByteBuffer cannot cover 2 GiB, so a segment over 1 GiB gets one view per 1 GiB
 * window, each reaching {@value ChunkHeader#MAX_CHUNK} bytes into the next window: any chunk (at most that long) that
 * starts in window k lies wholly inside view k.
 *
 * <p>The views' position and limit are never used here; each data socket works on its own duplicates ({@link
 * ViewCache}).
 *
 * <p>A registration made by a provider also has a random 64-bit id, its entry in the provider's {@link TcpRegistry}:
 * {@link #remote()} hands it out (as the region's two keys), and peers name it in one-sided requests. {@link #close()}
 * removes it, so later requests naming it are refused.
 */
public final class TcpRegistration implements Registration {
    static final int WINDOW_SHIFT = 30;
    private static final long WINDOW_SPAN = (1L << WINDOW_SHIFT) + ChunkHeader.MAX_CHUNK;

    private final MemorySegment memory;
    final long length;
    private final ByteBuffer[] windows;
    private final TcpRegistry registry;
    /** The id peers name this registration by; 0 when it is not in a registry (not reachable one-sided). */
    final long id;
    private volatile boolean closed;
    /**
     * Whether threads other than the registering one may touch the memory (not a confined arena's): only then may
     * the fabric's helper threads send from it or receive into it ({@link TcpPumps}).
     */
    final boolean shared;
    private static final Thread ANOTHER = Thread.ofVirtual().unstarted(() -> { });

    /**
     * Whether a connection of the fabric with {@code registry} may use this registration: only its own fabric's, as
     * on verbs, where another fabric's keys belong to another protection domain (a null registry: a test's wire).
     */
    boolean usableWith(TcpRegistry registry) {
        return registry == null || this.registry == registry;
    }

    /** A registration that is in no registry (tests of the two-sided data path). */
    TcpRegistration(MemorySegment memory) {
        this(memory, null);
    }

    /**
     * @throws IllegalArgumentException when the segment cannot be viewed as a ByteBuffer (a heap segment over an
     *                                  array other than byte[])
     */
    TcpRegistration(MemorySegment memory, TcpRegistry registry) {
        this.memory = memory;
        this.length = memory.byteSize();
        try {
            if (length <= 1L << WINDOW_SHIFT) {
                windows = new ByteBuffer[] {memory.asByteBuffer()};
            } else {
                int count = (int) (((length - 1) >>> WINDOW_SHIFT) + 1);
                windows = new ByteBuffer[count];
                for (int k = 0; k < count; k++) {
                    long base = windowBase(k);
                    windows[k] = memory.asSlice(base, Math.min(length - base, WINDOW_SPAN)).asByteBuffer();
                }
            }
        } catch (UnsupportedOperationException | IllegalStateException e) {
            throw new IllegalArgumentException("the TCP provider cannot send from or receive into " + memory + ": "
                    + e.getMessage() + "; use native memory (Arena.allocate) or a byte[] segment", e);
        }
        this.shared = memory.isAccessibleBy(ANOTHER);
        this.registry = registry;
        this.id = registry == null ? 0 : registry.add(this);
    }

    @Override
    public MemorySegment memory() {
        return memory;
    }

    @Override
    public long length() {
        return length;
    }

    /** True when [offset, offset + len) lies inside the registration and it is open. */
    boolean contains(long offset, long len) {
        return offset >= 0 && len >= 0 && offset <= length - len && !closed;
    }

    int windowCount() {
        return windows.length;
    }

    /** The window holding {@code offset}. */
    int windowIndex(long offset) {
        return windows.length == 1 ? 0 : (int) (offset >>> WINDOW_SHIFT);
    }

    static long windowBase(int k) {
        return (long) k << WINDOW_SHIFT;
    }

    /** Window k's shared view: duplicate it before moving its position or limit. */
    ByteBuffer window(int k) {
        return windows[k];
    }

    boolean closed() {
        return closed;
    }

    /**
     * The descriptor peers pass to {@link io.jmesh.api.Sender#write} and {@link io.jmesh.api.Sender#read}: provider
     * "tcp", this memory's address and length, and the registration's id as two keys (high half first). Over TCP the
     * owner's receiver applies those operations while its application polls it (see {@link TcpOpServer}).
     *
     * @throws IllegalStateException when the registration is closed, or was not made by a provider
     */
    @Override
    public RemoteRegion remote() {
        if (closed) {
            throw new IllegalStateException("the registration is closed; register the memory again to share it");
        }
        if (id == 0) {
            throw new IllegalStateException("this registration was not made by a TCP provider (register memory with "
                    + "Fabric.register) and cannot be reached by peers");
        }
        return new RemoteRegion("tcp", memory.address(), length, new int[] {(int) (id >>> 32), (int) id});
    }

    /** The registration id a TCP region names (its two keys), or 0 when it has not exactly two. */
    static long idOf(RemoteRegion region) {
        return region.keyCount() != 2 ? 0 : ((long) region.key(0) << 32) | (region.key(1) & 0xFFFF_FFFFL);
    }

    /**
     * Later sends and receives naming this registration fail with BAD_ARGUMENT, and peers' one-sided operations on
     * it are refused; the memory stays the caller's.
     */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            if (registry != null) {
                registry.remove(id);
            }
        }
    }

    @Override
    public String toString() {
        return "TcpRegistration[" + length + " bytes at 0x" + Long.toHexString(memory.address()) + "]";
    }
}
