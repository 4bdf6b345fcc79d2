package io.jmesh.transport.handshake;

import org.apache.logging.log4j.Logger;

/**
 * Rate-limits WARN lines so a flood of hostile connections cannot flood the log: at most {@code perWindow} lines per
 * window, then one line saying how many were suppressed. Agent thread only.
 */
final class WarnLimiter {
    private final Logger log;
    private final int perWindow;
    private final long windowNanos;
    private long windowStart = System.nanoTime();
    private int logged;
    private long suppressed;

    WarnLimiter(Logger log, int perWindow, long windowNanos) {
        this.log = log;
        this.perWindow = perWindow;
        this.windowNanos = windowNanos;
    }

    void warn(String format, Object a, Object b) {
        long now = System.nanoTime();
        if (now - windowStart >= windowNanos) {
            if (suppressed > 0) {
                log.warn("jmesh handshake: {} more warnings suppressed in the last {} ms", suppressed,
                        windowNanos / 1_000_000);
            }
            windowStart = now;
            logged = 0;
            suppressed = 0;
        }
        if (logged < perWindow) {
            logged++;
            log.warn("jmesh " + format, a, b);
        } else {
            suppressed++;
        }
    }
}
