package io.jmesh.api;

import java.time.Duration;

/**
 * A connect or an accept that did not complete within its deadline ({@link Connections}). The message names what was
 * waited for, for how long, and what to check.
 */
public final class ConnectTimeoutException extends RuntimeException {
    private final Duration timeout;

    public ConnectTimeoutException(String message, Duration timeout) {
        super(message);
        this.timeout = timeout;
    }

    /** The deadline that passed. */
    public Duration timeout() {
        return timeout;
    }

    /** "30 s", "1.5 s", "200 ms": for messages. */
    static String describe(Duration d) {
        long ms = d.toMillis();
        if (ms < 1000) {
            return ms + " ms";
        }
        return ms % 1000 == 0 ? ms / 1000 + " s" : String.format(java.util.Locale.ROOT, "%.1f s", ms / 1000.0);
    }
}
