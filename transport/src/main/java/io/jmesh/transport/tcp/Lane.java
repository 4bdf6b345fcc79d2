package io.jmesh.transport.tcp;

import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

/**
 * One bulk data socket of a connection (sockets 1 and up; socket 0 stays with the connection's own thread), moved by
 * exactly one thread: a {@link TcpPumps} helper, or the application's thread inside {@code test()} when the fabric has
 * none. The connection's thread and the lane meet only in single-producer single-consumer rings with release/acquire
 * counters, so neither ever waits for the other.
 *
 * <p>Closing: the owner sets {@link #closing} and then waits for {@link #active} to clear, so once {@link #retire()}
 * returns no helper touches the socket or the application's memory again, and the memory may be freed. Both flags
 * are volatile: the helper writes active then reads closing, the owner writes closing then reads active, so at least
 * one of them sees the other.
 */
abstract class Lane {
    final SocketChannel channel;
    final DataConnection conn;
    /** Which helper moves this lane; null: the connection's own thread, in progress(). */
    private volatile TcpPumps.Pump pump;
    volatile boolean closing;
    volatile boolean active;
    /** The helper's selection key; only the helper touches it. */
    SelectionKey key;
    int interest = -1;

    Lane(SocketChannel channel, DataConnection conn) {
        this.channel = channel;
        this.conn = conn;
    }

    void pumpedBy(TcpPumps.Pump p) {
        pump = p;
    }

    /** Whether a helper moves this lane (else the owner calls {@link #pump()} itself). */
    final boolean pumped() {
        return pump != null;
    }

    /** Wakes the lane's helper if it sleeps: new work was handed over. Costs a volatile read when it is awake. */
    final void wake() {
        TcpPumps.Pump p = pump;
        if (p != null) {
            p.wake();
        }
    }

    /** Moves what it can without blocking; true when any byte moved. Runs on one thread only. */
    abstract boolean pump();

    /** Whether {@link #pump()} has something it could do now without the socket becoming ready. */
    abstract boolean ready();

    /** The selector interest that would let the lane go on ({@link SelectionKey#OP_READ} or OP_WRITE, or 0). */
    abstract int interestOps();

    /**
     * A socket call failed: a reset or a closed socket ({@link java.io.IOException}), or the memory went away under
     * it (its arena closed, or a confined one). Fails the connection with the cause; always false.
     */
    final boolean failed(Exception e) {
        if (e instanceof java.io.IOException io) {
            conn.lost(io);
        } else {
            conn.memoryGone((RuntimeException) e);
        }
        return false;
    }

    /** Stops the lane: returns once no helper is inside {@link #pump()} and none will enter it again. */
    final void retire() {
        closing = true;
        while (active) {
            Thread.onSpinWait();
        }
    }
}
