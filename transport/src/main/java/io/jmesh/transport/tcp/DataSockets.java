package io.jmesh.transport.tcp;

import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How data sockets are set up: non-blocking, TCP_NODELAY, and {@value #BUFFER_BYTES}-byte kernel buffers where the
 * kernel allows that much. Linux stops auto-tuning a socket's buffer once it is set explicitly, and caps the value at
 * net.core.rmem_max / wmem_max; so a buffer is only set when the cap admits the full size, and left to auto-tuning
 * (which reaches tcp_rmem / tcp_wmem's maximum) otherwise.
 */
final class DataSockets {
    static final int BUFFER_BYTES = 4 << 20;
    private static final boolean SET_RCVBUF = sysctl("/proc/sys/net/core/rmem_max") >= BUFFER_BYTES;
    private static final boolean SET_SNDBUF = sysctl("/proc/sys/net/core/wmem_max") >= BUFFER_BYTES;

    private DataSockets() {
    }

    /** A connector's data socket, bound to the link's own address (so it runs over that link), not yet connected. */
    static SocketChannel open(InetAddress local) throws IOException {
        SocketChannel ch = SocketChannel.open();
        try {
            ch.configureBlocking(false);
            configure(ch);
            ch.bind(new InetSocketAddress(local, 0));
            return ch;
        } catch (IOException | RuntimeException e) {
            closeQuietly(ch);
            throw e;
        }
    }

    /** A listener's data server on one link address; accepted sockets inherit its receive buffer. */
    static ServerSocketChannel listen(InetAddress local, int backlog) throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open();
        try {
            server.configureBlocking(false);
            if (SET_RCVBUF) {
                server.setOption(StandardSocketOptions.SO_RCVBUF, BUFFER_BYTES);
            }
            server.bind(new InetSocketAddress(local, 0), backlog);
            return server;
        } catch (IOException | RuntimeException e) {
            closeQuietly(server);
            throw e;
        }
    }

    /** Options for an accepted or opened data socket. */
    static void configure(SocketChannel ch) throws IOException {
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        if (SET_SNDBUF) {
            ch.setOption(StandardSocketOptions.SO_SNDBUF, BUFFER_BYTES);
        }
        if (SET_RCVBUF) {
            ch.setOption(StandardSocketOptions.SO_RCVBUF, BUFFER_BYTES);
        }
    }

    /** "192.168.101.3:40123" or "[fd00::3]:40123"; "?" when unknown. */
    static String describe(SocketAddress address) {
        if (!(address instanceof InetSocketAddress a) || a.getAddress() == null) {
            return String.valueOf(address);
        }
        return host(a.getAddress()) + ":" + a.getPort();
    }

    /** "192.168.101.3", or "[fd00::3]" in RFC 5952 short form (the JDK writes "fd00:0:0:0:0:0:0:3"). */
    static String host(InetAddress address) {
        if (!(address instanceof Inet6Address)) {
            return address.getHostAddress();
        }
        byte[] b = address.getAddress();
        int[] groups = new int[8];
        for (int i = 0; i < 8; i++) {
            groups[i] = ((b[2 * i] & 0xff) << 8) | (b[2 * i + 1] & 0xff);
        }
        int bestStart = -1;
        int bestLength = 1; // a single zero group is not shortened
        for (int i = 0; i < 8; ) {
            int j = i;
            while (j < 8 && groups[j] == 0) {
                j++;
            }
            if (j - i > bestLength) {
                bestStart = i;
                bestLength = j - i;
            }
            i = j == i ? i + 1 : j;
        }
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append("::");
                i += bestLength - 1;
                continue;
            }
            if (sb.length() > 1 && sb.charAt(sb.length() - 1) != ':') {
                sb.append(':');
            }
            sb.append(Integer.toHexString(groups[i]));
        }
        return sb.append(']').toString();
    }

    static String remote(SocketChannel ch) {
        try {
            return describe(ch.getRemoteAddress());
        } catch (IOException e) {
            return "?";
        }
    }

    static InetSocketAddress localAddress(SocketChannel ch) {
        try {
            return (InetSocketAddress) ch.getLocalAddress();
        } catch (IOException e) {
            return null;
        }
    }

    static InetSocketAddress remoteAddress(SocketChannel ch) {
        try {
            return (InetSocketAddress) ch.getRemoteAddress();
        } catch (IOException e) {
            return null;
        }
    }

    static void closeQuietly(AutoCloseable c) {
        if (c != null) {
            try {
                c.close();
            } catch (Exception ignored) {
                // nothing more to release
            }
        }
    }

    private static long sysctl(String path) {
        try {
            return Long.parseLong(Files.readString(Path.of(path)).trim());
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }
}
