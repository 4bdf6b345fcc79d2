package io.jmesh.transport.tcp;

import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The helper threads of one TCP fabric ({@code JMESH_TCP_THREADS}), as NCCL's Socket transport has: each bulk data
 * socket ({@link Lane}) is given to one helper, round-robin, and that helper alone reads or writes it, so the
 * sockets of many connections, and of one connection, move in parallel while the application's thread only hands
 * chunks over and collects completions.
 *
 * <p>A helper with nothing to do keeps polling for {@code JMESH_TCP_SPIN_US} (the next step of a collective usually
 * comes within that, and waking a sleeping thread costs tens of microseconds), then sleeps in its selector until a
 * lane's socket is ready or an owner hands it work ({@link Pump#wake()}: a selector wake-up only when it sleeps). It
 * never allocates in steady state: lanes are adopted through a queue and kept in an array that changes only on adopt
 * and retire.
 */
final class TcpPumps implements AutoCloseable {
    private static final Logger LOG = JmeshLog.logger(TcpPumps.class);
    private static final long SLEEP_MS = 100;
    private static final Lane[] NONE = {};

    private final Pump[] pumps;
    private int next;

    private TcpPumps(Pump[] pumps) {
        this.pumps = pumps;
    }

    /**
     * {@code threads} helpers, started; null when threads is 0 (every lane is moved by its owner's thread). If a
     * selector cannot be opened or a thread cannot be started, the helpers already started stop (each closes its own
     * selector) and the selectors of the others are closed here, before the error says what to change.
     */
    static TcpPumps start(int threads, int spinUs, String name) {
        if (threads == 0) {
            return null;
        }
        Pump[] pumps = new Pump[threads];
        int started = 0;
        try {
            for (int i = 0; i < threads; i++) {
                pumps[i] = new Pump(Selector.open(), TimeUnit.MICROSECONDS.toNanos(spinUs));
            }
            for (; started < threads; started++) {
                Thread t = new Thread(pumps[started], "jmesh-tcp-" + name + "-" + started);
                t.setDaemon(true);
                pumps[started].thread = t;
                t.start();
            }
            return new TcpPumps(pumps);
        } catch (IOException | RuntimeException | OutOfMemoryError e) {
            for (int i = 0; i < threads && pumps[i] != null; i++) {
                if (i < started) {
                    pumps[i].stop();
                } else {
                    pumps[i].closeSelector();
                }
            }
            if (e instanceof IOException io) {
                throw new UncheckedIOException("cannot open a selector for the TCP helper threads: " + io.getMessage()
                        + "; raise the open-file limit (ulimit -n) or set JMESH_TCP_THREADS=0", io);
            }
            throw new IllegalStateException("cannot start " + threads + " TCP helper threads (" + e
                    + "); raise the process's thread limit (ulimit -u) or set JMESH_TCP_THREADS lower, 0 for none", e);
        }
    }

    /**
     * Gives {@code lane} to the next helper; from then on only that helper moves it, until it is retired. A helper
     * that has stopped fails the lane's connection at once, with why.
     */
    synchronized void attach(Lane lane) {
        Pump p = pumps[next];
        next = (next + 1) % pumps.length;
        lane.pumpedBy(p);
        p.added.add(lane);
        p.wakeAlways();
        String death = p.death;
        if (death != null) {
            lane.conn.fail(death);                 // the lane may be in no list the dying helper failed
        }
    }

    int threads() {
        return pumps.length;
    }

    /** Stops the helpers and waits for them; lanes should be retired by their connections first. */
    @Override
    public void close() {
        for (Pump p : pumps) {
            p.stop();
        }
        for (Pump p : pumps) {
            try {
                p.thread.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** One helper thread and the lanes it moves. */
    static final class Pump implements Runnable {
        private final Selector selector;
        private final long spinNanos;
        final ConcurrentLinkedQueue<Lane> added = new ConcurrentLinkedQueue<>();
        private final Consumer<SelectionKey> ignore = k -> { };
        private Lane[] lanes = NONE;
        private volatile boolean sleeping;
        private volatile boolean running = true;
        /** Why this helper stopped (a bug): every connection it moved, and any given to it later, fails with it. */
        volatile String death;
        Thread thread;

        Pump(Selector selector, long spinNanos) {
            this.selector = selector;
            this.spinNanos = spinNanos;
        }

        /** New work for a lane of this helper: wakes it if it sleeps. */
        void wake() {
            if (sleeping) {
                selector.wakeup();
            }
        }

        void wakeAlways() {
            selector.wakeup();
        }

        void stop() {
            running = false;
            selector.wakeup();
        }

        /** Closes the selector of a helper whose thread never started (a started one closes it as it ends). */
        void closeSelector() {
            try {
                selector.close();
            } catch (IOException e) {
                LOG.debug("closing a helper's selector: {}", e.toString());
            }
        }

        @Override
        public void run() {
            try {
                long idleSince = 0;
                while (running) {
                    if (!added.isEmpty()) {
                        adopt();
                    }
                    if (pass()) {
                        idleSince = 0;
                        continue;
                    }
                    long now = System.nanoTime();
                    if (idleSince == 0) {
                        idleSince = now;
                    }
                    if (now - idleSince < spinNanos) {
                        Thread.onSpinWait();
                        continue;
                    }
                    sleep();
                    idleSince = 0;
                }
            } catch (RuntimeException | Error e) {
                String why = "the jmesh TCP helper thread " + Thread.currentThread().getName() + " stopped (" + e
                        + "), so the connections whose sockets it moved fail; report this, and meanwhile set "
                        + "JMESH_TCP_THREADS=0 to move every byte on the application's thread";
                LOG.error("jmesh tcp: {}", why, e);
                death = why;
                for (Lane l : lanes) {
                    l.active = false;
                    l.conn.fail(why);
                }
                Lane l;
                while ((l = added.poll()) != null) {
                    l.conn.fail(why);
                }
                throw e;
            } finally {
                try {
                    selector.close();
                } catch (IOException e) {
                    LOG.debug("closing a helper's selector: {}", e.toString());
                }
            }
        }

        /** One pass over the lanes; true when any moved a byte. Drops the retired ones. */
        private boolean pass() {
            boolean worked = false;
            boolean retired = false;
            for (Lane l : lanes) {
                l.active = true;
                if (l.closing) {
                    l.active = false;
                    retired = true;
                    continue;
                }
                try {
                    if (l.conn.state() == 0) {
                        worked |= l.pump();
                    }
                } finally {
                    l.active = false;              // else a close waiting in retire() would wait for ever
                }
            }
            if (retired) {
                prune();
            }
            return worked;
        }

        private void adopt() {
            Lane l;
            while ((l = added.poll()) != null) {
                try {
                    l.key = l.channel.register(selector, 0, l);
                    l.interest = 0;
                } catch (ClosedChannelException e) {
                    continue;                      // its connection closed before it was adopted
                }
                lanes = Arrays.copyOf(lanes, lanes.length + 1);
                lanes[lanes.length - 1] = l;
            }
        }

        private void prune() {
            int n = 0;
            Lane[] kept = new Lane[lanes.length];
            for (Lane l : lanes) {
                if (l.closing) {
                    if (l.key != null) {
                        l.key.cancel();
                    }
                } else {
                    kept[n++] = l;
                }
            }
            lanes = Arrays.copyOf(kept, n);
        }

        /**
         * Sleeps until a lane's socket is ready, an owner wakes it, or {@value #SLEEP_MS} ms pass. It says it sleeps
         * before it looks at the lanes a last time, so a hand-over it misses still wakes the selector.
         */
        private void sleep() {
            sleeping = true;
            try {
                boolean ready = !added.isEmpty() || !running;
                for (Lane l : lanes) {
                    if (l.closing || l.conn.state() != 0) {
                        ready |= l.closing;
                        continue;
                    }
                    ready |= l.ready();
                    int ops = l.interestOps();
                    if (ops != l.interest) {
                        try {
                            l.key.interestOps(ops);
                            l.interest = ops;
                        } catch (CancelledKeyException e) {
                            l.interest = ops;      // its socket closed: the next pass sees why
                            ready = true;
                        }
                    }
                }
                if (!ready) {
                    selector.select(ignore, SLEEP_MS);
                }
            } catch (IOException e) {
                LOG.warn("jmesh tcp: a helper's selector failed: {}; it polls instead", e.toString());
                Thread.onSpinWait();
            } finally {
                sleeping = false;
            }
        }
    }
}
