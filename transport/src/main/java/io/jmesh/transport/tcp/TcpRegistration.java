package io.jmesh.transport.tcp;

import io.jmesh.api.Registration;

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
 */
public final class TcpRegistration implements Registration {
    static final int WINDOW_SHIFT = 30;
    private static final long WINDOW_SPAN = (1L << WINDOW_SHIFT) + ChunkHeader.MAX_CHUNK;

    private final MemorySegment memory;
    final long length;
    private final ByteBuffer[] windows;
    private volatile boolean closed;

    /**
     * @throws IllegalArgumentException when the segment cannot be viewed as a ByteBuffer (a heap segment over an
     *                                  array other than byte[])
     */
    TcpRegistration(MemorySegment memory) {
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

    @Override
    public io.jmesh.api.RemoteRegion remote() {
        throw new UnsupportedOperationException("one-sided operations over the TCP provider are not implemented yet");
    }

    /** Later sends and receives naming this registration fail with BAD_ARGUMENT; the memory stays the caller's. */
    @Override
    public void close() {
        closed = true;
    }

    @Override
    public String toString() {
        return "TcpRegistration[" + length + " bytes at 0x" + Long.toHexString(memory.address()) + "]";
    }
}
