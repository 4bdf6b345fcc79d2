package io.jmesh.nccl;

import io.jmesh.api.JmeshLog;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Marker;
import org.apache.logging.log4j.MarkerManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A Log4j 2 appender that hands every event of the {@code io.jmesh} loggers to NCCL's logger, so that jmesh's lines
 * appear with NCCL's own under {@code NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=NET}. It calls the library's fixed-argument
 * helper ({@code log_from_java} in net.c), which calls NCCL's variadic logFunction with "%s": Java never calls a
 * vararg function.
 *
 * <p>Mapping: ERROR and WARN go out as NCCL WARN with all subsystem flags (NCCL drops a message whose flags do not
 * meet its NCCL_DEBUG_SUBSYS mask, WARN included); INFO as NCCL INFO with flag NET (and INIT for events marked {@link
 * #INIT}); DEBUG and TRACE as NCCL TRACE with flag NET. The io.jmesh level follows NCCL_DEBUG (WARN, INFO, TRACE),
 * or JMESH_LOG_LEVEL when set (a bad value fails NCCL's init with one line naming it).
 *
 * <p>{@link #detach()} unhooks the helper and waits for calls in flight, so the library can be unloaded safely.
 */
final class NcclLogAppender extends AbstractAppender {
    /** Marks start-up and shut-down lines (NCCL's INIT subsystem as well as NET). */
    static final Marker INIT = MarkerManager.getMarker("NCCL_INIT");
    private static final String NAME = "jmesh-nccl";
    private static final String LOGGER = "io.jmesh";
    private static final FunctionDescriptor HELPER = FunctionDescriptor.ofVoid(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_INT,
            ADDRESS);

    private volatile MethodHandle helper;
    private final AtomicInteger inFlight = new AtomicInteger();

    private NcclLogAppender(MethodHandle helper) {
        super(NAME, null, null, true, Property.EMPTY_ARRAY);
        this.helper = helper;
    }

    /**
     * Routes the io.jmesh loggers to NCCL's logger through the C helper at {@code helperAddress}.
     *
     * @return the appender, or null when the JVM's Log4j is not Log4j Core (the host's own logging is left alone)
     */
    static NcclLogAppender install(long helperAddress) {
        if (!(LogManager.getContext(false) instanceof LoggerContext ctx)) {
            return null;
        }
        MethodHandle h = Linker.nativeLinker().downcallHandle(MemorySegment.ofAddress(helperAddress), HELPER);
        NcclLogAppender appender = new NcclLogAppender(h);
        appender.start();
        Configuration cfg = ctx.getConfiguration();
        cfg.addAppender(appender);
        LoggerConfig lc = LoggerConfig.newBuilder().withLoggerName(LOGGER).withLevel(level()).withAdditivity(false)
                .withConfig(cfg).build();
        lc.addAppender(appender, null, null);
        cfg.removeLogger(LOGGER);
        cfg.addLogger(LOGGER, lc);
        ctx.updateLoggers();
        return appender;
    }

    /** io.jmesh's level: JMESH_LOG_LEVEL (or -Djmesh.log.level), else from NCCL_DEBUG. */
    static Level level() {
        try {
            Level set = JmeshLog.level();
            if (set != null) {
                return set;
            }
        } catch (IllegalArgumentException e) {
            // a bad value: init refuses it moments later (Fabric.open), in one line through this appender to NCCL's
            // log, where a failed bootstrap could only report an exception; until then NCCL_DEBUG's level
        }
        String nccl = System.getenv("NCCL_DEBUG");
        if (nccl == null) {
            return Level.WARN;
        }
        return switch (nccl.trim().toUpperCase(Locale.ROOT)) {
            case "INFO" -> Level.INFO;
            case "TRACE" -> Level.TRACE;
            default -> Level.WARN;
        };
    }

    /** Stops forwarding to the C helper and waits until no call is in flight. */
    void detach() {
        helper = null;
        while (inFlight.get() > 0) {
            Thread.onSpinWait();
        }
        if (LogManager.getContext(false) instanceof LoggerContext ctx) {
            Configuration cfg = ctx.getConfiguration();
            cfg.removeLogger(LOGGER);
            cfg.getAppenders().remove(NAME);
            ctx.updateLoggers();
        }
        stop();
    }

    @Override
    public void append(LogEvent event) {
        inFlight.incrementAndGet();
        try {
            MethodHandle h = helper;
            if (h == null) {
                return;
            }
            Level l = event.getLevel();
            int level;
            long flags;
            if (l.isMoreSpecificThan(Level.WARN)) {
                level = Nccl.LOG_WARN;
                flags = Nccl.SUBSYS_ALL;
            } else if (l.isMoreSpecificThan(Level.INFO)) {
                level = Nccl.LOG_INFO;
                flags = Nccl.SUBSYS_NET | (event.getMarker() != null && event.getMarker().isInstanceOf(INIT)
                        ? Nccl.SUBSYS_INIT : 0);
            } else {
                level = Nccl.LOG_TRACE;
                flags = Nccl.SUBSYS_NET;
            }
            String text = event.getMessage().getFormattedMessage();
            Throwable t = event.getThrown();
            if (t != null) {
                text = text + ": " + t;
            }
            String logger = event.getLoggerName();
            String file = logger.substring(logger.lastIndexOf('.') + 1);
            try (Arena arena = Arena.ofConfined()) {
                h.invokeExact(level, flags, arena.allocateFrom(file), 0, arena.allocateFrom(text));
            }
        } catch (Throwable e) {
            // never let logging take the process down; NCCL simply misses this line
        } finally {
            inFlight.decrementAndGet();
        }
    }
}
