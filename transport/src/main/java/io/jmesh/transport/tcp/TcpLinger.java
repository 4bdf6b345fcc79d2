package io.jmesh.transport.tcp;

import io.jmesh.api.JmeshLog;
import io.jmesh.transport.agent.SelectorAgent;
import io.jmesh.transport.agent.SelectorAgentRunner;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Ends a sender's sockets so that what it reported done still arrives: its goodbye frame goes out behind the last
 * data on socket 0, every socket's output is shut down (a FIN behind the data), and this end goes on reading and
 * dropping whatever the peer still writes until the peer closes too, or {@link #LINGER_MS} ms pass. Closing a socket
 * that has unread bytes makes Linux answer with a reset instead of a FIN, and a reset throws away this end's bytes
 * the peer has not acknowledged yet: the very messages the sender reported done. The peer's clear-to-sends and
 * credits keep coming until it reads the goodbye, so some unread bytes are the rule, not the exception.
 *
 * <p>One thread per fabric ({@code jmesh-tcp-linger}), started by the first graceful close. Closing the provider
 * ends what still lingers: each socket's unread bytes are dropped first, so its close is still a FIN.
 */
final class TcpLinger implements SelectorAgent, AutoCloseable {
    private static final Logger LOG = JmeshLog.logger(TcpLinger.class);
    /** How long a closed sender waits for its peer to close too; the peer usually does within a round trip. */
    static final long LINGER_MS = 10_000;
    /**
     * How long closing the fabric waits for what still lingers: a receiver that polls ends its side as soon as it has
     * read the goodbye, well within this; after it a socket closed with unread bytes may be reset.
     */
    static final long CLOSE_WAIT_MS = 1_000;

    /** One closed sender's sockets: socket 0's goodbye bytes still to write, and the sockets still open. */
    private static final class Closing {
        final SocketChannel[] sockets;
        final ByteBuffer bye;
        final long deadline;
        final String peer;
        int open;
        boolean shut;

        Closing(SocketChannel[] sockets, ByteBuffer bye, long deadline, String peer) {
            this.sockets = sockets;
            this.bye = bye;
            this.deadline = deadline;
            this.peer = peer;
            this.open = sockets.length;
        }
    }

    private final String name;
    private final Queue<Closing> handed = new ConcurrentLinkedQueue<>();
    private final List<Closing> lingering = new ArrayList<>();
    /** Connections handed over and not yet closed: read by any thread (the fabric's close, tests). */
    private final AtomicInteger active = new AtomicInteger();
    private final ByteBuffer drop = ByteBuffer.allocateDirect(64 << 10);
    private Selector selector;
    private SelectorAgentRunner runner;
    private boolean closed;

    /** @param name the provider's name in the thread's name */
    TcpLinger(String name) {
        this.name = name;
    }

    /**
     * Takes over {@code sockets}: writes {@code bye} on socket 0, shuts every socket's output, and closes each once the
     * peer ended it or at the deadline. Never blocks; when the thread cannot run, the sockets close at once.
     */
    void hand(SocketChannel[] sockets, ByteBuffer bye, String peer) {
        Closing c = new Closing(sockets, bye, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LINGER_MS), peer);
        synchronized (this) {
            if (!closed && start()) {
                active.incrementAndGet();
                handed.add(c);
                runner.wakeup();
                return;
            }
        }
        finish(c);
    }

    /** Starts the thread on first use; false when it cannot. */
    private boolean start() {
        if (runner != null) {
            return runner.isRunning();
        }
        try {
            selector = Selector.open();
        } catch (IOException e) {
            LOG.warn("jmesh tcp: cannot open a selector for closing connections in order ({}); they close at once",
                    e.getMessage());
            return false;
        }
        runner = new SelectorAgentRunner("jmesh-tcp-linger-" + name, selector, this);
        runner.start();
        return true;
    }

    @Override
    public String roleName() {
        return "jmesh tcp linger";
    }

    @Override
    public long firstWaitMillis() {
        return 1;
    }

    @Override
    public void onSelected(SelectionKey key) {
        Closing c = (Closing) key.attachment();
        if (key.isValid()) {
            move(c);
        }
    }

    @Override
    public long doWork() {
        for (Closing c; (c = handed.poll()) != null; ) {
            if (register(c)) {
                lingering.add(c);
                move(c);
            } else {
                active.decrementAndGet();
            }
        }
        long now = System.nanoTime();
        long wait = 1_000;
        for (int i = lingering.size() - 1; i >= 0; i--) {
            Closing c = lingering.get(i);
            if (c.open == 0) {
                lingering.remove(i);
                active.decrementAndGet();
            } else if (now - c.deadline >= 0) {
                LOG.debug("jmesh tcp: {} did not close its end within {} ms of this sender's close", c.peer,
                        LINGER_MS);
                finish(c);
                lingering.remove(i);
                active.decrementAndGet();
            } else {
                wait = Math.min(wait, Math.max(1, TimeUnit.NANOSECONDS.toMillis(c.deadline - now)));
            }
        }
        return wait;
    }

    private boolean register(Closing c) {
        try {
            for (SocketChannel s : c.sockets) {
                s.configureBlocking(false);
                s.register(selector, 0, c);
            }
            return true;
        } catch (IOException | RuntimeException e) {
            finish(c);
            return false;
        }
    }

    /** Writes the goodbye, shuts the outputs once it is out, drops what arrived, closes the sockets that ended. */
    private void move(Closing c) {
        try {
            if (!c.shut && c.bye.hasRemaining()) {
                c.sockets[0].write(c.bye);
            }
            if (!c.shut && !c.bye.hasRemaining()) {
                for (SocketChannel s : c.sockets) {
                    s.shutdownOutput();
                }
                c.shut = true;
            }
            for (SocketChannel s : c.sockets) {
                if (s.isOpen() && dropInput(s) < 0) {
                    s.close();                     // the peer ended it too: nothing unread, so a FIN, no reset
                    c.open--;
                }
            }
            for (int i = 0; i < c.sockets.length && c.open > 0; i++) {
                SocketChannel s = c.sockets[i];
                SelectionKey k = s.keyFor(selector);
                if (s.isOpen() && k != null && k.isValid()) {
                    k.interestOps(SelectionKey.OP_READ | (i == 0 && !c.shut ? SelectionKey.OP_WRITE : 0));
                }
            }
        } catch (ClosedChannelException e) {
            finish(c);
        } catch (IOException e) {
            LOG.debug("jmesh tcp: closing the connection to {}: {}", c.peer, e.getMessage());
            finish(c);
        }
    }

    /** Reads and drops what is there; -1 at the end of the stream. */
    private int dropInput(SocketChannel s) throws IOException {
        int total = 0;
        while (true) {
            drop.clear();
            int n = s.read(drop);
            if (n < 0) {
                return -1;
            }
            if (n == 0) {
                return total;
            }
            total += n;
        }
    }

    /** Closes every socket of {@code c} now, after dropping what it holds (so that the close is a FIN if it can be). */
    private void finish(Closing c) {
        for (SocketChannel s : c.sockets) {
            if (s.isOpen()) {
                try {
                    if (!s.isBlocking()) {
                        dropInput(s);
                    }
                } catch (IOException ignored) {
                    // closing it anyway
                }
                DataSockets.closeQuietly(s);
            }
        }
        c.open = 0;
    }

    @Override
    public void onClose() {
        for (Closing c; (c = handed.poll()) != null; ) {
            finish(c);
            active.decrementAndGet();
        }
        for (Closing c : lingering) {
            finish(c);
            active.decrementAndGet();
        }
        lingering.clear();
        DataSockets.closeQuietly(selector);
    }

    /**
     * Ends the thread, after waiting up to {@link #CLOSE_WAIT_MS} for the peers to end what still lingers (an
     * application that closes its sender and then its fabric and exits must not reset what it reported done); what
     * still lingers then closes at once.
     */
    @Override
    public void close() {
        SelectorAgentRunner r;
        synchronized (this) {
            r = runner;
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_WAIT_MS);
        while (r != null && r.isRunning() && active.get() > 0 && System.nanoTime() - deadline < 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
        synchronized (this) {
            closed = true;
        }
        if (r != null) {
            r.close();
        }
    }

    /** Connections handed over and not yet closed. */
    int lingering() {
        return active.get();
    }
}
