package io.jmesh.transport.log;

import org.apache.logging.log4j.Logger;

/**
 * Rate-limits WARN lines so a flood of hostile connections cannot flood the log: at most {@code perWindow} lines per
 * window, then one line saying how many were suppressed. Not thread-safe: its owner serialises calls.
 */
public final class WarnLimiter {
    private final Logger log;
    private final String prefix;
    private final int perWindow;
    private final long windowNanos;
    private long windowStart = System.nanoTime();
    private int logged;
    private long suppressed;

    /** @param prefix starts every line, e.g. "jmesh handshake: " */
    public WarnLimiter(Logger log, String prefix, int perWindow, long windowNanos) {
        this.log = log;
        this.prefix = prefix;
        this.perWindow = perWindow;
        this.windowNanos = windowNanos;
    }

    public void warn(String format, Object a, Object b) {
        long now = System.nanoTime();
        if (now - windowStart >= windowNanos) {
            if (suppressed > 0) {
                log.warn("{}{} more warnings suppressed in the last {} ms", prefix, suppressed,
                        windowNanos / 1_000_000);
            }
            windowStart = now;
            logged = 0;
            suppressed = 0;
        }
        if (logged < perWindow) {
            logged++;
            log.warn(prefix + format, a, b);
        } else {
            suppressed++;
        }
    }
}
