package io.jmesh.cli.perf;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.StringJoiner;

/**
 * The listening side of the out-of-band channel: one port on a chosen set of addresses (the mesh links' by default,
 * so the listen handle and its secret are not offered on every network the host is on), or on all of them.
 */
public final class OobServer implements AutoCloseable {
    private final Selector selector;
    private final List<ServerSocketChannel> channels = new ArrayList<>();
    private final String where;
    private final int port;

    private OobServer(int port, List<InetAddress> addresses, List<InetAddress> ifFree) throws IOException {
        this.selector = Selector.open();
        StringJoiner j = new StringJoiner(", ");
        try {
            for (InetAddress a : addresses.isEmpty() ? List.of((InetAddress) null) : addresses) {
                ServerSocketChannel ch = ServerSocketChannel.open();
                channels.add(ch);
                ch.setOption(java.net.StandardSocketOptions.SO_REUSEADDR, true);
                InetSocketAddress at = a == null ? new InetSocketAddress(port) : new InetSocketAddress(a, port);
                try {
                    ch.bind(at);
                    // port 0 (tests): every address on the one port the first bind got
                    port = ((InetSocketAddress) ch.getLocalAddress()).getPort();
                } catch (IOException e) {
                    throw new IOException("cannot listen on TCP port " + port + (a == null ? "" : " of "
                            + a.getHostAddress()) + " for the out-of-band exchange (" + e.getMessage() + "): another "
                            + "'jmesh' or perftest server uses it; pick another one with -p", e);
                }
                ch.configureBlocking(false);
                ch.register(selector, SelectionKey.OP_ACCEPT);
                j.add(a == null ? "every address" : a.getHostAddress());
            }
            for (InetAddress a : addresses.isEmpty() ? List.<InetAddress>of() : ifFree) {
                if (addresses.contains(a)) {
                    continue;
                }
                ServerSocketChannel ch = ServerSocketChannel.open();
                try {
                    ch.setOption(java.net.StandardSocketOptions.SO_REUSEADDR, true);
                    ch.bind(new InetSocketAddress(a, port));
                    ch.configureBlocking(false);
                    ch.register(selector, SelectionKey.OP_ACCEPT);
                    channels.add(ch);
                    j.add(a.getHostAddress());
                } catch (IOException e) {
                    // another server on this host has it: a convenience, so this one goes without
                    ch.close();
                }
            }
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
        this.where = j.toString();
        this.port = port;
    }

    /** Listens on {@code port} (0: an ephemeral one, for tests) of each address; none: every address. */
    public static OobServer listen(int port, List<InetAddress> addresses) throws IOException {
        return new OobServer(port, addresses, List.of());
    }

    /** As {@link #listen(int, List)}, and also on each of {@code ifFree} where the port is free there. */
    public static OobServer listen(int port, List<InetAddress> addresses, List<InetAddress> ifFree)
            throws IOException {
        return new OobServer(port, addresses, ifFree);
    }

    public int port() {
        return port;
    }

    /** The addresses it listens on, for the "waiting" line. */
    public String where() {
        return where;
    }

    /** Waits for one client, at most {@code wait}; its reads time out after {@code timeout}. */
    public Oob accept(Duration wait, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + wait.toNanos();
        while (true) {
            long left = (deadline - System.nanoTime()) / 1_000_000;
            if (left <= 0) {
                throw new IOException("no client connected to TCP port " + port + " (" + where + ") within "
                        + wait.toSeconds() + " s: start the client with this host's address on a mesh link and the "
                        + "same -p");
            }
            selector.select(left);
            Iterator<SelectionKey> it = selector.selectedKeys().iterator();
            while (it.hasNext()) {
                SelectionKey k = it.next();
                it.remove();
                SocketChannel s = ((ServerSocketChannel) k.channel()).accept();
                if (s != null) {
                    s.configureBlocking(true);
                    return Oob.of(s.socket(), timeout);
                }
            }
        }
    }

    @Override
    public void close() {
        for (ServerSocketChannel ch : channels) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // a listening socket that failed: nothing left to release
            }
        }
        try {
            selector.close();
        } catch (IOException ignored) {
            // as above
        }
    }
}
