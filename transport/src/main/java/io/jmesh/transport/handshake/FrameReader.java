package io.jmesh.transport.handshake;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ReadableByteChannel;

/**
 * Reads one frame at a time from a non-blocking channel, however the bytes arrive (all at once or one per packet).
 * It rejects a wrong magic at the first wrong byte and a length above {@link Frame#MAX_BODY} as soon as the header is
 * in, so garbage and huge lengths never cost more than 12 bytes of buffer. Memory per connection: the 12-byte header
 * plus one body of the announced (bounded) length. Not thread-safe; used by the agent thread only.
 */
final class FrameReader {
    static final int NEED_MORE = 0;
    static final int FRAME = 1;
    static final int END_OF_STREAM = -1;
    static final int BAD = -2;

    private final ByteBuffer header = ByteBuffer.allocate(Frame.HEADER_LENGTH).order(ByteOrder.BIG_ENDIAN);
    private ByteBuffer body;
    private int version;
    private int type;
    private String problem;

    /** Reads what is available: {@link #FRAME} when one is complete, else NEED_MORE, END_OF_STREAM or BAD. */
    int read(ReadableByteChannel channel) throws IOException {
        if (body == null) {
            int before = header.position();
            if (channel.read(header) < 0) {
                return END_OF_STREAM;
            }
            for (int i = before; i < Math.min(header.position(), 4); i++) {
                if (header.get(Frame.MAGIC_OFFSET + i) != (byte) (Frame.MAGIC >>> (24 - 8 * i))) {
                    problem = "not a jmesh handshake: wrong magic byte " + i + " 0x"
                            + Integer.toHexString(header.get(i) & 0xFF);
                    return BAD;
                }
            }
            if (header.hasRemaining()) {
                return NEED_MORE;
            }
            version = header.getShort(Frame.VERSION_OFFSET) & 0xFFFF;
            type = header.getShort(Frame.TYPE_OFFSET) & 0xFFFF;
            long length = header.getInt(Frame.LENGTH_OFFSET) & 0xFFFFFFFFL;
            if (length > Frame.MAX_BODY) {
                problem = "frame length " + length + " exceeds the limit of " + Frame.MAX_BODY + " bytes";
                return BAD;
            }
            body = ByteBuffer.allocate((int) length).order(ByteOrder.BIG_ENDIAN);
        }
        if (body.hasRemaining() && channel.read(body) < 0) {
            return END_OF_STREAM;
        }
        if (body.hasRemaining()) {
            return NEED_MORE;
        }
        body.flip();
        return FRAME;
    }

    int version() {
        return version;
    }

    int type() {
        return type;
    }

    /** The complete frame's body, positioned at 0; valid until {@link #reset()}. */
    ByteBuffer body() {
        return body;
    }

    String problem() {
        return problem;
    }

    /** Ready for the next frame. */
    void reset() {
        header.clear();
        body = null;
    }
}
