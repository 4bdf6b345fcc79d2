package io.jmesh.transport.route;

import java.util.ArrayDeque;

/**
 * The relay requests that wait for their first bytes or their handshake, bounded: when it is full the oldest is
 * evicted, so held sockets cannot lock neighbours out (the handshake listener's rule). Any thread; the caller closes
 * what is evicted.
 *
 * @param <T> what a request is held as (a socket, a splice)
 */
public final class PendingRequests<T> {
    private final int max;
    private final ArrayDeque<T> queue = new ArrayDeque<>();

    public PendingRequests(int max) {
        if (max < 1) {
            throw new IllegalArgumentException("at least one pending relay request, not " + max);
        }
        this.max = max;
    }

    /** Adds {@code request}; returns the oldest one, evicted to make room, or null. */
    public synchronized T add(T request) {
        T evicted = queue.size() >= max ? queue.poll() : null;
        queue.add(request);
        return evicted;
    }

    /** The request is no longer pending (it was decided, failed or closed); false when it was not here. */
    public synchronized boolean remove(T request) {
        return queue.remove(request);
    }

    /** The oldest request, or null. */
    public synchronized T oldest() {
        return queue.peek();
    }

    /** Removes and returns the oldest request, or null. */
    public synchronized T poll() {
        return queue.poll();
    }

    public synchronized int size() {
        return queue.size();
    }

    public int max() {
        return max;
    }
}
