package io.jmesh.transport.tcp;

import io.jmesh.transport.route.RelayRequest;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

/**
 * One relayed socket on the relay node: the socket from the previous hop ({@code in}), its relay request, and once
 * that is accepted the socket to the next hop ({@code out}) and one bounded buffer per direction. Bytes are copied as
 * they come; a full buffer stops reading its source, so TCP's own window slows the sender (back-pressure, never an
 * unbounded queue). An end-of-stream is passed on as a half-close once its buffer has drained; the pair closes when
 * both directions are done or either socket fails. Only the relay thread touches it.
 */
final class Splice {
    enum State { REQUEST, CONNECTING, SPLICING, CLOSED }

    static final int BUFFER_BYTES = 128 << 10;

    final SocketChannel in;
    final String from;
    final long deadlineNanos;
    final ByteBuffer request = ByteBuffer.allocate(RelayRequest.BYTES);
    State state = State.REQUEST;
    SelectionKey inKey;
    SelectionKey outKey;
    SocketChannel out;
    InetSocketAddress target;
    /** in -> out, then out -> in; both in fill mode (position = bytes waiting). */
    private ByteBuffer up;
    private ByteBuffer down;
    private boolean upEnded;
    private boolean downEnded;
    private boolean upShut;
    private boolean downShut;

    Splice(SocketChannel in, String from, long deadlineNanos) {
        this.in = in;
        this.from = from;
        this.deadlineNanos = deadlineNanos;
    }

    /** Reads the request; true once all of it is here. Reads never go past it: what follows is the next hop's. */
    boolean readRequest() throws IOException {
        if (in.read(request) < 0) {
            throw new IOException("closed before its relay request was complete (" + request.position() + " of "
                    + RelayRequest.BYTES + " bytes)");
        }
        return !request.hasRemaining();
    }

    /** Starts the onward connect; {@code preamble} (null when the next hop is the destination) goes out first. */
    void connecting(SocketChannel onward, ByteBuffer preamble) {
        out = onward;
        up = ByteBuffer.allocateDirect(BUFFER_BYTES);
        down = ByteBuffer.allocateDirect(BUFFER_BYTES);
        if (preamble != null) {
            up.put(preamble);
        }
        state = State.CONNECTING;
    }

    /** Copies what it can both ways without blocking and sets the interest of both keys; false once done. */
    boolean pump() throws IOException {
        if (!upEnded && up.hasRemaining()) {
            upEnded = in.read(up) < 0;
        }
        if (!downEnded && down.hasRemaining()) {
            downEnded = out.read(down) < 0;
        }
        drain(up, out);
        drain(down, in);
        if (upEnded && up.position() == 0 && !upShut) {
            out.shutdownOutput();
            upShut = true;
        }
        if (downEnded && down.position() == 0 && !downShut) {
            in.shutdownOutput();
            downShut = true;
        }
        if (upShut && downShut) {
            return false;
        }
        inKey.interestOps((upEnded || !up.hasRemaining() ? 0 : SelectionKey.OP_READ)
                | (down.position() > 0 ? SelectionKey.OP_WRITE : 0));
        outKey.interestOps((downEnded || !down.hasRemaining() ? 0 : SelectionKey.OP_READ)
                | (up.position() > 0 ? SelectionKey.OP_WRITE : 0));
        return true;
    }

    private static void drain(ByteBuffer b, SocketChannel to) throws IOException {
        if (b.position() == 0) {
            return;
        }
        b.flip();
        try {
            to.write(b);
        } finally {
            b.compact();
        }
    }

    void close() {
        state = State.CLOSED;
        DataSockets.closeQuietly(in);
        DataSockets.closeQuietly(out);
    }

    @Override
    public String toString() {
        return from + " -> " + (target == null ? "?" : DataSockets.describe(target));
    }
}
