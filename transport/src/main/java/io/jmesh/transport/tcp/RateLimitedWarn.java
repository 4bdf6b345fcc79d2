package io.jmesh.transport.tcp;

import org.apache.logging.log4j.Logger;

/**
 * At most {@code perWindow} WARN lines per window, then one line saying how many were suppressed, so hostile clients
 * cannot flood the log. Not thread-safe: the owner serialises calls.
 */
final class RateLimitedWarn {
    private final Logger log;
    private final int perWindow;
    private final long windowNanos;
    private long windowStart = System.nanoTime();
    private int logged;
    private long suppressed;

    RateLimitedWarn(Logger log, int perWindow, long windowNanos) {
        this.log = log;
        this.perWindow = perWindow;
        this.windowNanos = windowNanos;
    }

    void warn(String format, Object a, Object b) {
        long now = System.nanoTime();
        if (now - windowStart >= windowNanos) {
            if (suppressed > 0) {
                log.warn("jmesh tcp: {} more warnings suppressed in the last {} ms", suppressed,
                        windowNanos / 1_000_000);
            }
            windowStart = now;
            logged = 0;
            suppressed = 0;
        }
        if (logged < perWindow) {
            logged++;
            log.warn("jmesh tcp: " + format, a, b);
        } else {
            suppressed++;
        }
    }
}
