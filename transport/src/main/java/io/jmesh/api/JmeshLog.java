package io.jmesh.api;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.apache.logging.log4j.simple.SimpleLogger;
import org.apache.logging.log4j.spi.Provider;
import org.apache.logging.log4j.util.PropertiesUtil;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Where every jmesh logger comes from, and the {@code JMESH_LOG_LEVEL} setting.
 *
 * <p>jmesh logs through the Log4j 2 API. When the application has a Log4j API provider (Log4j Core, or a bridge such
 * as log4j-to-slf4j), jmesh's loggers are the application's: its configuration decides what is shown. Without one,
 * Log4j API alone would print "Log4j API could not find a logging provider" as an ERROR at the first logger and
 * then drop everything below ERROR, jmesh's warnings included. So when no provider is there, jmesh never asks
 * {@link LogManager}: it makes Log4j API's own {@link SimpleLogger}s itself, to stderr, at {@code JMESH_LOG_LEVEL}
 * (default WARN). It sets no system property and ships no provider or Log4j configuration file, which would take
 * the choice from an application that has one (Log4j's manual discourages several providers on one class path).
 */
public final class JmeshLog {
    public static final String PROPERTY = "jmesh.log.level";
    public static final String ENV = "JMESH_LOG_LEVEL";
    /** What {@link #level} accepts, in any case: Log4j's standard levels. */
    public static final List<String> ACCEPTED = List.of("off", "fatal", "error", "warn", "info", "debug", "trace",
            "all");
    private static final String DATE_FORMAT = "yyyy-MM-dd HH:mm:ss.SSS";

    private static final Map<String, Logger> FALLBACK = new ConcurrentHashMap<>();

    private JmeshLog() {
    }

    /** The logger of a jmesh class: the application's Log4j when it has a provider, else a simple stderr logger. */
    public static Logger logger(Class<?> owner) {
        if (Provided.LOG4J) {
            return LogManager.getLogger(owner);
        }
        return FALLBACK.computeIfAbsent(owner.getName(), JmeshLog::simple);
    }

    /** True when Log4j API will find a provider: jmesh's lines then go where the application's configuration says. */
    public static boolean applicationHasProvider() {
        return Provided.LOG4J;
    }

    private static Logger simple(String name) {
        Level level;
        try {
            Level set = level();
            level = set == null ? Level.WARN : set;
        } catch (IllegalArgumentException e) {
            // Fabric.open refuses the bad value with the same message (Context.conclude); until then, the default
            level = Level.WARN;
        }
        // empty properties: JMESH_LOG_LEVEL alone decides, not SimpleLogger's per-name system properties
        return new SimpleLogger(name, level, false, true, true, false, DATE_FORMAT, null,
                new PropertiesUtil(new Properties()), System.err);
    }

    /**
     * JMESH_LOG_LEVEL (or -Djmesh.log.level, which wins) of this process, or null when unset.
     *
     * @throws IllegalArgumentException naming the setting, its bad value and what it accepts
     */
    public static Level level() {
        return level(System::getProperty, System::getenv);
    }

    /** As {@link #level()}, from these lookups (tests, and {@code Context.from}). */
    public static Level level(Function<String, String> properties, Function<String, String> environment) {
        String origin = "-D" + PROPERTY;
        String value = properties.apply(PROPERTY);
        if (value == null || value.isBlank()) {
            origin = ENV;
            value = environment.apply(ENV);
        }
        if (value == null || value.isBlank()) {
            return null;
        }
        String v = value.trim();
        if (!ACCEPTED.contains(v.toLowerCase(Locale.ROOT))) {
            throw new IllegalArgumentException(origin + "='" + v + "' is not valid: " + ENV + " (-D" + PROPERTY
                    + ") takes " + String.join(", ", ACCEPTED.subList(0, ACCEPTED.size() - 1)) + " or "
                    + ACCEPTED.getLast() + " (the level of jmesh's log lines; unset: warn, or what the application's "
                    + "Log4j configuration says)");
        }
        return Level.valueOf(v.toUpperCase(Locale.ROOT));
    }

    /** Decided once, at jmesh's first logger: what Log4j API's LogManager would find. */
    private static final class Provided {
        static final boolean LOG4J = log4jHasProvider();

        /**
         * Log4j 2.25's ProviderUtil takes log4j2.provider (or the older log4j2.loggerContextFactory) when set, else
         * the ServiceLoader entries for {@link Provider} seen by its own class loader, else legacy
         * META-INF/log4j-provider.properties files; it reports none found as an ERROR. This asks the same questions
         * without asking LogManager, which would print that ERROR.
         */
        private static boolean log4jHasProvider() {
            PropertiesUtil props = PropertiesUtil.getProperties();
            if (props.getStringProperty("log4j.provider") != null
                    || props.getStringProperty("log4j2.loggerContextFactory") != null) {
                return true;
            }
            ClassLoader api = Provider.class.getClassLoader();
            try {
                if (ServiceLoader.load(Provider.class, api).stream().findAny().isPresent()) {
                    return true;
                }
            } catch (ServiceConfigurationError e) {
                return true; // a broken provider entry: Log4j reports it better than a guess here
            }
            ClassLoader context = Thread.currentThread().getContextClassLoader();
            for (ClassLoader cl : new ClassLoader[] {api, context}) {
                if (cl != null && cl.getResource("META-INF/log4j-provider.properties") != null) {
                    return true;
                }
            }
            return false;
        }
    }
}
