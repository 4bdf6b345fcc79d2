package io.jmesh.transport.tcp;

import java.nio.ByteBuffer;

/**
 * One data socket's ByteBuffer views of the registrations it reads into or writes from. A socket works on one chunk
 * at a time, so it owns one duplicate per registration window and moves its position and limit freely; the last
 * {@value #ENTRIES} registrations are kept, so steady traffic over a few buffers allocates nothing. Single-threaded,
 * like the sender or receiver that owns it.
 */
final class ViewCache {
    static final int ENTRIES = 4;

    private final TcpRegistration[] registrations = new TcpRegistration[ENTRIES];
    private final ByteBuffer[][] views = new ByteBuffer[ENTRIES][];
    private int next;

    /** A view of bytes [offset, offset + length) of {@code r}; length is at most {@value ChunkHeader#MAX_CHUNK}. */
    ByteBuffer view(TcpRegistration r, long offset, int length) {
        int e = -1;
        for (int i = 0; i < ENTRIES; i++) {
            if (registrations[i] == r) {
                e = i;
                break;
            }
        }
        if (e < 0) {
            e = next;
            next = (next + 1) % ENTRIES;
            registrations[e] = r;
            views[e] = new ByteBuffer[r.windowCount()];
        }
        int k = r.windowIndex(offset);
        ByteBuffer b = views[e][k];
        if (b == null) {
            b = r.window(k).duplicate();
            views[e][k] = b;
        }
        int position = (int) (offset - TcpRegistration.windowBase(k));
        b.limit(position + length);
        b.position(position);
        return b;
    }
}
