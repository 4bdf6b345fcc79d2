package io.jmesh.cli.perf;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.NoRouteToHostException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * The out-of-band TCP channel between the two ends of 'jmesh bw', 'jmesh lat' and 'jmesh doctor', as perftest's:
 * the server listens on a port ({@code -p}), the client connects to it, and they exchange jmesh listen handles and
 * a few control lines. Lines are printable ASCII, at most {@value #MAX_LINE} bytes; every read has a timeout, so a
 * silent or hostile peer costs a bounded wait and a message, never a hang.
 */
public final class Oob implements AutoCloseable {
    /** The longest line either side accepts. */
    public static final int MAX_LINE = 4096;

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    private final String peer;
    private final byte[] line = new byte[MAX_LINE];
    /** What {@link #probe} read ahead for the next {@link #receive}: a byte, -1 (the end), or {@link #NOTHING}. */
    private int peeked = NOTHING;
    /** The reset {@link #probe} ran into, thrown by the next {@link #receive}. */
    private SocketException peekFailure;
    private static final int NOTHING = -2;

    private Oob(Socket socket, Duration timeout) throws IOException {
        this.socket = socket;
        socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, timeout.toMillis())));
        socket.setTcpNoDelay(true);
        this.in = socket.getInputStream();
        this.out = socket.getOutputStream();
        this.peer = socket.getRemoteSocketAddress().toString();
    }

    /** The channel over a connected socket (see {@link OobServer#accept}). */
    static Oob of(Socket socket, Duration timeout) throws IOException {
        return new Oob(socket, timeout);
    }

    /** From now on a read gives up after {@code timeout}. */
    public void timeout(Duration timeout) throws IOException {
        socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, timeout.toMillis())));
    }

    /** A server socket on {@code port} of every address (0: an ephemeral port, for tests). */
    public static ServerSocket listen(int port) throws IOException {
        ServerSocket server = new ServerSocket();
        server.setReuseAddress(true);
        try {
            server.bind(new InetSocketAddress(port));
        } catch (IOException e) {
            server.close();
            throw new IOException("cannot listen on TCP port " + port + " for the out-of-band exchange ("
                    + e.getMessage() + "): another 'jmesh' or perftest server uses it; pick another one with -p", e);
        }
        return server;
    }

    /** Waits for one client on {@code server}, at most {@code wait}. */
    public static Oob accept(ServerSocket server, Duration wait, Duration timeout) throws IOException {
        server.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, wait.toMillis())));
        try {
            return new Oob(server.accept(), timeout);
        } catch (SocketTimeoutException e) {
            throw new IOException("no client connected to TCP port " + server.getLocalPort() + " within "
                    + wait.toSeconds() + " s: start the client with this host's address and the same -p", e);
        }
    }

    /**
     * Connects to a server, retrying while it is not up yet (connection refused) until {@code wait} has passed, as a
     * client started a moment before its server must.
     */
    public static Oob connect(String host, int port, Duration wait, Duration timeout) throws IOException {
        return connect(host, port, wait, timeout, null, "");
    }

    /**
     * As {@link #connect(String, int, Duration, Duration)}, saying on {@code notes} (null: nowhere) when the first
     * try fails and every 10 s after, so that a user whose server is not up sees why nothing happens; {@code fix}
     * ends the message of a connect that gave up.
     */
    public static Oob connect(String host, int port, Duration wait, Duration timeout, java.io.PrintStream notes,
                              String fix) throws IOException {
        long start = System.nanoTime();
        long deadline = start + wait.toNanos();
        long nextNote = start;
        boolean noted = false;
        IOException last;
        while (true) {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(host, port), (int) Math.max(1, Math.min(5_000, wait.toMillis())));
                return new Oob(s, timeout);
            } catch (UnknownHostException e) {
                s.close();
                throw new IOException("unknown host '" + host + "': give the server's address or a name that "
                        + "resolves", e);
            } catch (ConnectException | SocketTimeoutException | NoRouteToHostException e) {
                s.close();
                last = e;
            }
            long now = System.nanoTime();
            if (notes != null && now - nextNote >= 0 && now - deadline < 0) {
                notes.println(" No jmesh server at " + host + ":" + port + " yet (" + last.getMessage() + "); "
                        + (noted ? "still retrying" : "retrying") + " until "
                        + wait.toSeconds() + " s have passed (--timeout); start the server there first (the same "
                        + "jmesh command without the address)");
                notes.flush();
                nextNote = now + 10_000_000_000L;
                noted = true;
            }
            if (now - deadline > 0) {
                throw new IOException("no jmesh server at " + host + ":" + port + " after " + wait.toSeconds()
                        + " s (" + last.getMessage() + ")" + fix, last);
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while connecting to " + host + ":" + port, e);
            }
        }
    }

    /** Sends one line (printable ASCII). */
    public void send(String text) throws IOException {
        byte[] b = (text + "\n").getBytes(StandardCharsets.US_ASCII);
        if (b.length > MAX_LINE) {
            throw new IllegalArgumentException("out-of-band line too long: " + b.length + " bytes");
        }
        out.write(b);
        out.flush();
    }

    /**
     * Reads one line.
     *
     * @throws IOException when the peer closed, timed out, or sent something that is not a short printable line
     */
    public String receive() throws IOException {
        int n = 0;
        while (true) {
            int c;
            try {
                c = next();
            } catch (SocketTimeoutException e) {
                throw new IOException("the peer " + peer + " sent nothing for " + socket.getSoTimeout() / 1000
                        + " s: it is stuck or was stopped (raise --timeout for slow links)", e);
            } catch (SocketException e) {
                // a reset: the peer died, or -p names a port where something other than a jmesh server listens
                // (a program that drops what it cannot parse, e.g. a fabric's own handshake port)
                throw new IOException("the out-of-band connection to " + peer + " failed (" + e.getMessage()
                        + "): the peer process died, or -p is the port of another program; check the other "
                        + "side's output and that both ends give the same -p", e);
            }
            if (c < 0) {
                throw new IOException("the peer " + peer + " closed the out-of-band connection"
                        + (n > 0 ? " in the middle of a line" : "") + " (it failed or was stopped: see its output)");
            }
            if (c == '\n') {
                return new String(line, 0, n, StandardCharsets.US_ASCII);
            }
            if (c < 0x20 || c > 0x7e || n == MAX_LINE) {
                throw new IOException("the peer " + peer + " sent " + (n == MAX_LINE ? "a line over " + MAX_LINE
                        + " bytes" : "a non-printable byte 0x" + Integer.toHexString(c)) + ": it is not a jmesh "
                        + "peer of this version (is -p the port of another program?)");
            }
            line[n++] = (byte) c;
        }
    }

    /** Reads a line that must start with {@code verb}; an "error ..." line becomes an exception with its text. */
    public Map<String, String> expect(String verb) throws IOException {
        String l = receive();
        if (l.startsWith("error ")) {
            throw new IOException("the peer reports: " + l.substring(6));
        }
        return fields(l, verb);
    }

    /** The next byte: one {@link #probe} read ahead first; the end it saw stays the end. */
    private int next() throws IOException {
        if (peekFailure != null) {
            throw peekFailure;
        }
        int c = peeked;
        if (c == NOTHING) {
            return in.read();
        }
        if (c >= 0) {
            peeked = NOTHING;
        }
        return c;
    }

    /**
     * True when a line is waiting: a cheap check for loops that must not block. It cannot tell a peer that closed
     * the connection or died from a quiet one (the kernel's count of unread bytes is 0 for both): {@link #probe} can.
     */
    public boolean ready() throws IOException {
        return peeked != NOTHING || peekFailure != null || in.available() > 0;
    }

    /**
     * {@link #ready}, and where nothing waits, whether the peer has gone: then it is true and the next {@link
     * #receive} says how. Only a read sees the end of the stream or a reset, so this one reads, waiting up to a
     * millisecond for a byte (kept for {@code receive}): call it where a loop is idle anyway, not on a measured path.
     */
    public boolean probe() throws IOException {
        if (ready()) {
            return true;
        }
        int timeout = socket.getSoTimeout();
        socket.setSoTimeout(1);
        try {
            peeked = in.read();
            return true;
        } catch (SocketTimeoutException quiet) {
            return false;                                   // connected, with nothing to say
        } catch (SocketException e) {
            peekFailure = e;
            return true;
        } finally {
            socket.setSoTimeout(timeout);
        }
    }

    /** {@code verb key=value key=value}: the fields, or an exception naming what was expected. */
    public static Map<String, String> fields(String line, String verb) throws IOException {
        String[] parts = line.split(" ");
        if (!parts[0].equals(verb)) {
            throw new IOException("protocol error: expected '" + verb + " ...' from the peer, got '"
                    + (line.length() > 80 ? line.substring(0, 80) + "..." : line) + "' (are both ends the same "
                    + "jmesh version, and the same command?)");
        }
        Map<String, String> m = new HashMap<>();
        for (int i = 1; i < parts.length; i++) {
            int eq = parts[i].indexOf('=');
            if (eq <= 0) {
                throw new IOException("protocol error: bad field '" + parts[i] + "' in '" + verb + "' line");
            }
            m.put(parts[i].substring(0, eq), parts[i].substring(eq + 1));
        }
        return m;
    }

    /** A numeric field in [min, max], or an exception naming it. */
    public static long number(Map<String, String> fields, String key, long min, long max) throws IOException {
        String v = fields.get(key);
        if (v == null) {
            throw new IOException("protocol error: the peer's line has no '" + key + "' field");
        }
        try {
            long n = Long.parseLong(v);
            if (n < min || n > max) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IOException("protocol error: field " + key + "=" + v + " is out of range " + min + ".." + max);
        }
    }

    public String peer() {
        return peer;
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing a socket that failed: nothing left to release
        }
    }
}
