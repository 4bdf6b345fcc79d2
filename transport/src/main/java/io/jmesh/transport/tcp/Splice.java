package io.jmesh.transport.tcp;

import io.jmesh.transport.route.RelayRequest;

import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

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
 * both directions are done or either socket fails. A data socket's bytes go through a {@link KernelPipe} per
 * direction where Linux and the JVM allow it (the bytes stay in the kernel), else through the buffers; a handshake's
 * go through the buffers, whose frames the gate reads. Only the relay thread touches it.
 */
final class Splice {
    enum State { REQUEST, CONNECTING, SPLICING, CLOSED }

    /** Per direction: a relayed bulk socket moves up to this much per system call (128 KiB moved less). */
    static final int BUFFER_BYTES = 256 << 10;
    /** Rounds of source-pipe-sink per wake-up of a spliced socket: up to this many pipes' worth per direction. */
    static final int PIPE_ROUNDS = 4;
    private static final Logger LOG = JmeshLog.logger(Splice.class);

    final SocketChannel in;
    final String from;
    final long deadlineNanos;
    /**
     * The relay request with its mesh key's MAC (if any), and the first bytes after it, which tell a handshake
     * socket from a data socket; those start at {@code peekAt}.
     */
    final ByteBuffer request;
    final int peekAt;
    State state = State.REQUEST;
    /** The request's first {@value RelayRequest#BYTES} bytes were judged acceptable. */
    boolean requestChecked;
    SelectionKey inKey;
    SelectionKey outKey;
    SocketChannel out;
    InetSocketAddress target;
    /** The request's hop count, and whether a handshake follows it (else a data socket), once it is whole. */
    int hopsLeft;
    boolean handshake;
    /** Held, not read, while the route to its target, lost moments ago, may come back (RelayPolicy). */
    boolean awaitingRoute;
    /** The handshake's frames until its READY, null for a data socket (spliced as is once its target is checked). */
    SpliceGate gate;
    /** in -> out, then out -> in; both in fill mode (position = bytes waiting). */
    private ByteBuffer up;
    private ByteBuffer down;
    private boolean upEnded;
    private boolean downEnded;
    private boolean upShut;
    private boolean downShut;
    /** A data socket's pipes (null when it copies), with the descriptors they splice between. */
    private KernelPipe upPipe;
    private KernelPipe downPipe;
    private int inFd;
    private int outFd;

    Splice(SocketChannel in, String from, long deadlineNanos, int trailer) {
        this.peekAt = RelayRequest.BYTES + trailer;
        this.request = ByteBuffer.allocate(peekAt + SpliceGate.PEEK);
        this.in = in;
        this.from = from;
        this.deadlineNanos = deadlineNanos;
    }

    /**
     * Reads the request and the {@value SpliceGate#PEEK} bytes after it (a frame header or the start of a data
     * socket's header: every socket a connector opens through a relay has at least that many); true once all of it
     * is here.
     */
    boolean readRequest() throws IOException {
        if (in.read(request) < 0) {
            throw new IOException("closed before its relay request was complete (" + request.position() + " of "
                    + request.capacity() + " bytes)");
        }
        return !request.hasRemaining();
    }

    /**
     * Starts the onward connect; {@code preamble} (null when the next hop is the destination) goes out first, then
     * the peeked bytes (a data socket's) unless the gate holds them (a handshake's). A data socket is spliced when
     * {@code splice} allows and the kernel and JVM can.
     */
    void connecting(SocketChannel onward, ByteBuffer preamble, boolean splice, SpliceGate gate) {
        out = onward;
        this.gate = gate;
        if (gate == null && splice && pipes()) {
            // the buffer up carries only what was read before splicing started: the preamble and the peeked bytes
            up = ByteBuffer.allocateDirect((preamble == null ? 0 : preamble.remaining()) + SpliceGate.PEEK);
            down = ByteBuffer.allocate(0);
        } else {
            up = ByteBuffer.allocateDirect(BUFFER_BYTES);
            down = ByteBuffer.allocateDirect(BUFFER_BYTES);
        }
        if (preamble != null) {
            up.put(preamble);
        }
        if (gate == null) {
            up.put(request.slice(peekAt, SpliceGate.PEEK));
        }
        state = State.CONNECTING;
    }

    /** Opens both pipes and reads both descriptors; false (and nothing held) when this socket must copy. */
    private boolean pipes() {
        if (KernelPipe.UNAVAILABLE != null) {
            return false;
        }
        try {
            inFd = KernelPipe.fd(in);
            outFd = KernelPipe.fd(out);
            upPipe = KernelPipe.open();
            downPipe = KernelPipe.open();
            return true;
        } catch (IOException e) {
            LOG.debug("jmesh relay: {} copies instead of splicing: {}", this, e.getMessage());
            closePipes();
            return false;
        }
    }

    /**
     * Copies what it can both ways without blocking and sets the interest of both keys; false once done. What the
     * gate learnt from the frames read reaches {@code relay} before those frames go on: the connector opens its data
     * sockets as soon as it reads the ACCEPT, and the relay must know their port by then.
     */
    boolean pump(TcpRelay relay) throws IOException {
        if (upPipe != null) {
            return pumpPipes();
        }
        if (!downEnded && down.hasRemaining()) {
            downEnded = (gate == null ? out.read(down) : gate.down(out, down)) < 0;
        }
        if (!upEnded && up.hasRemaining() && (gate == null || gate.upReady())) {
            upEnded = (gate == null ? in.read(up) : gate.up(in, up)) < 0;
        }
        if (gate != null) {
            relay.gatePassed(this, gate);
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
        boolean upHeld = gate != null && !gate.upReady();
        inKey.interestOps((upEnded || upHeld || !up.hasRemaining() ? 0 : SelectionKey.OP_READ)
                | (down.position() > 0 ? SelectionKey.OP_WRITE : 0));
        outKey.interestOps((downEnded || !down.hasRemaining() ? 0 : SelectionKey.OP_READ)
                | (up.position() > 0 ? SelectionKey.OP_WRITE : 0));
        return true;
    }

    /**
     * The spliced pump: the bytes read before splicing go out first, then each direction moves source to pipe to
     * sink, a few rounds while either moves bytes (each round trip through the selector costs more than a round
     * that finds nothing), at most {@value #PIPE_ROUNDS} so that one busy socket leaves its thread to the others.
     */
    private boolean pumpPipes() throws IOException {
        drain(up, out);
        boolean head = up.position() == 0;
        for (int round = 0; round < PIPE_ROUNDS; round++) {
            long moved = 0;
            if (!downEnded && downPipe.hasRoom()) {
                long n = downPipe.fill(outFd);
                downEnded = n < 0;
                moved += Math.max(n, 0);
            }
            if (head && !upEnded && upPipe.hasRoom()) {
                long n = upPipe.fill(inFd);
                upEnded = n < 0;
                moved += Math.max(n, 0);
            }
            if (head) {
                moved += upPipe.drain(outFd);
            }
            moved += downPipe.drain(inFd);
            if (moved == 0) {
                break;
            }
        }
        boolean upEmpty = head && upPipe.isEmpty();
        if (upEnded && upEmpty && !upShut) {
            out.shutdownOutput();
            upShut = true;
        }
        if (downEnded && downPipe.isEmpty() && !downShut) {
            in.shutdownOutput();
            downShut = true;
        }
        if (upShut && downShut) {
            return false;
        }
        inKey.interestOps((upEnded || !head || !upPipe.hasRoom() ? 0 : SelectionKey.OP_READ)
                | (downPipe.isEmpty() ? 0 : SelectionKey.OP_WRITE));
        outKey.interestOps((downEnded || !downPipe.hasRoom() ? 0 : SelectionKey.OP_READ)
                | (upEmpty ? 0 : SelectionKey.OP_WRITE));
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
        closePipes();
    }

    private void closePipes() {
        if (upPipe != null) {
            upPipe.close();
            upPipe = null;
        }
        if (downPipe != null) {
            downPipe.close();
            downPipe = null;
        }
    }

    /** Whether this socket moves its bytes by splice(2) (for tests and the relay's log). */
    boolean splicing() {
        return upPipe != null;
    }

    @Override
    public String toString() {
        return from + " -> " + (target == null ? "?" : DataSockets.describe(target));
    }
}
