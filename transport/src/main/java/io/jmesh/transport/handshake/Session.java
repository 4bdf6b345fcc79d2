package io.jmesh.transport.handshake;

import java.io.IOException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

/**
 * One handshake socket's I/O on the agent thread: reads frames, writes one frame at a time, enforces the deadline.
 * Subclasses hold the protocol state. Nothing here blocks: reads and writes are non-blocking and a peer that stalls
 * only runs into its own deadline.
 */
abstract sealed class Session permits InboundSession, OutboundSession {
    final HandshakeAgent agent;
    final SocketChannel channel;
    /** Agent thread only; an inbound session waiting for READY extends it once. */
    long deadlineNanos;
    final String peer;
    private final FrameReader reader = new FrameReader();
    SelectionKey key;
    private ByteBuffer out;
    private int outType;
    private boolean closed;

    Session(HandshakeAgent agent, SocketChannel channel, long deadlineNanos, String peer) {
        this.agent = agent;
        this.channel = channel;
        this.deadlineNanos = deadlineNanos;
        this.peer = peer;
    }

    /** A frame arrived; the body is positioned at 0. */
    abstract void onFrame(int version, int type, ByteBuffer body);

    /** The peer closed its side. */
    abstract void onEndOfStream();

    /** A frame of {@code type} has been written completely. */
    abstract void onSent(int type);

    /** The peer broke the protocol (bad magic, huge length, unexpected frame) or the socket failed. */
    abstract void onViolation(String problem);

    /** The deadline passed. */
    abstract void onDeadline();

    /** The socket failed (reset, unreachable ...). */
    void onIoError(IOException e) {
        onViolation("socket error: " + e.getMessage());
    }

    /** The handshake this socket serves, or null when there is none yet (inbound before HELLO). */
    abstract Handshake handshake();

    /** The socket finished connecting (outbound only). */
    void onConnectable() throws IOException {
        throw new IllegalStateException("not connecting");
    }

    final boolean isClosed() {
        return closed;
    }

    final void handle(SelectionKey k) throws IOException {
        if (k.isConnectable()) {
            onConnectable();
        }
        if (!closed && k.isValid() && k.isWritable()) {
            flush();
        }
        if (!closed && k.isValid() && k.isReadable()) {
            readFrames();
        }
    }

    /** Reads and handles every frame already received; also from a deadline, so a frame in flight still counts. */
    final void readFrames() throws IOException {
        while (!closed) {
            switch (reader.read(channel)) {
                case FrameReader.NEED_MORE -> {
                    return;
                }
                case FrameReader.END_OF_STREAM -> {
                    onEndOfStream();
                    return;
                }
                case FrameReader.BAD -> {
                    onViolation(reader.problem());
                    return;
                }
                default -> {
                    int version = reader.version();
                    int type = reader.type();
                    ByteBuffer body = reader.body();
                    reader.reset();
                    onFrame(version, type, body);
                }
            }
        }
    }

    /** Starts writing one frame; {@link #onSent} follows once it is all out. */
    final void send(int type, ByteBuffer frame) throws IOException {
        if (out != null) {
            throw new IllegalStateException("a frame is already being sent");
        }
        out = frame;
        outType = type;
        flush();
    }

    private void flush() throws IOException {
        channel.write(out);
        if (out.hasRemaining()) {
            key.interestOps(key.interestOps() | SelectionKey.OP_WRITE);
            return;
        }
        out = null;
        if (key.isValid()) {
            key.interestOps(key.interestOps() & ~SelectionKey.OP_WRITE);
        }
        onSent(outType);
    }

    /**
     * Tells the peer why in one best-effort write and closes: nothing is written while a frame is half out (a REJECT
     * in its middle would garble both), and a peer that does not read loses only the reason.
     */
    final void rejectAndClose(String reason) {
        if (!closed && out == null) {
            try {
                channel.write(Frame.reject(reason));
            } catch (IOException ignored) {
                // gone already: nothing to tell
            }
        }
        close();
    }

    /** Stops reading (the peer has nothing more to say that we would act on). */
    final void stopReading() {
        if (key != null && key.isValid()) {
            key.interestOps(key.interestOps() & ~SelectionKey.OP_READ);
        }
    }

    /** Closes the socket; idempotent. */
    final void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (key != null) {
            key.cancel();
        }
        try {
            channel.close();
        } catch (IOException ignored) {
            // nothing more to release
        }
        agent.sessionClosed(this);
    }

    /** Tells a socket turned away before it had a session why (best effort: one non-blocking write), and closes it. */
    static void rejectAtOnce(SocketChannel channel, String reason) {
        try {
            channel.write(Frame.reject(reason));
        } catch (IOException ignored) {
            // it is gone already; nothing to tell
        }
        try {
            channel.close();
        } catch (IOException ignored) {
            // nothing more to release
        }
    }

    static String describe(SocketAddress a) {
        return a == null ? "?" : a.toString().replaceFirst("^[^/]*/", "");
    }
}
