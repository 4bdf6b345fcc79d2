package io.jmesh.testing;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Collects what one logger writes while open ("LEVEL message" lines), for tests of what a user sees in the log: a
 * normal event must not read as a failure. Attaches to the root configuration, so it sees every logger at INFO and up.
 */
public final class LogCapture implements AutoCloseable {
    private final String logger;
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final AbstractAppender appender;
    private final LoggerConfig root;

    /** @param logger the logger's name (a class's), whose events are kept */
    public LogCapture(Class<?> logger) {
        this.logger = logger.getName();
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        root = ctx.getConfiguration().getRootLogger();
        appender = new AbstractAppender("capture-" + System.identityHashCode(this), null, null, true,
                Property.EMPTY_ARRAY) {
            @Override
            public void append(LogEvent e) {
                if (LogCapture.this.logger.equals(e.getLoggerName())) {
                    lines.add(e.getLevel() + " " + e.getMessage().getFormattedMessage());
                }
            }
        };
        appender.start();
        root.addAppender(appender, Level.INFO, null);
        ctx.updateLoggers();
    }

    public List<String> lines() {
        return List.copyOf(lines);
    }

    @Override
    public void close() {
        root.removeAppender(appender.getName());
        appender.stop();
        ((LoggerContext) LogManager.getContext(false)).updateLoggers();
    }
}
