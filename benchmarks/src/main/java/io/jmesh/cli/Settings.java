package io.jmesh.cli;

import io.jmesh.api.Context;
import io.jmesh.api.Setting;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The fabric settings of every subcommand that builds a fabric: the process's JMESH_* variables (and -Djmesh.*
 * properties) with the command's options on top, each bad one refused as a usage error in the command line's terms
 * (the option or variable the user typed, not the Java call that stores it).
 */
public final class Settings {
    /**
     * JMESH_* names that are not fabric settings but are still jmesh's: the launcher's, the log level, and the NCCL
     * plugin's (docs/nccl.md), which a node's environment may hold for its NCCL jobs.
     */
    private static final Set<String> OTHERS = Set.of("JMESH_LOG_LEVEL", "JMESH_JAVA_OPTS", "JMESH_ROOT",
            "JMESH_JAVA_HOME", "JMESH_CLASSPATH", "JMESH_JVM_OPTS", "JMESH_COLLNET", "JMESH_COLLNET_MAX_BYTES",
            "JMESH_COLLNET_MIN_NODES", "JMESH_TUNER", "JMESH_NCCL_LATENCY_US", "JMESH_NCCL_SPEED_MBPS",
            "JMESH_NCCL_TRACE");
    private static final AtomicBoolean WARNED = new AtomicBoolean();

    private Settings() {
    }

    /** The process's settings, checked. */
    public static Context environment() {
        Context c = new Context();
        try {
            c.conclude();
        } catch (IllegalArgumentException e) {
            throw new Cli.UsageError(withoutDescriptions(e.getMessage()) + "; correct the value or unset it "
                    + "(docs/configuration.md lists every setting)");
        }
        return c;
    }

    /**
     * The process's settings with a command's options on top: a provider ("auto" or null changes nothing), the
     * local addresses (null: unchanged) and a forced GID index (-1: none).
     */
    public static Context withOptions(String provider, String addresses, int gidIndex) {
        Context c = environment();
        if (provider != null && !provider.equals("auto")) {
            check(Setting.PROVIDER, "--provider", provider);
            c.provider(provider);
        }
        if (addresses != null) {
            check(Setting.ADDRESSES, "--addresses", addresses);
            c.addresses(addresses);
        }
        if (gidIndex >= 0) {
            check(Setting.GID_INDEX, "--gid-index", Integer.toString(gidIndex));
            c.gidIndex(gidIndex);
        }
        return c;
    }

    /** Refuses {@code value} for {@code option} the way the setting behind it would, naming the option. */
    static void check(Setting s, String option, String value) {
        try {
            Context.from(Map.of(), Map.of(s.env(), value)).conclude();
        } catch (IllegalArgumentException e) {
            String m = withoutDescriptions(e.getMessage()).replace(s.env() + "='" + value + "'",
                    option + " '" + value + "'").replace(s.names(), option);
            throw new Cli.UsageError(m);
        }
    }

    /** Context's messages end each problem with the setting's description, which often repeats what it takes. */
    private static String withoutDescriptions(String message) {
        for (Setting s : Setting.values()) {
            message = message.replace(" (" + s.description() + ")", "");
        }
        return message;
    }

    /**
     * Warns once per process about each JMESH_* variable that is no jmesh name but one or two letters from one: a
     * misspelt setting is otherwise silently ignored. Names further from every known one are left alone, because
     * the project's scripts export variables of their own under the same prefix.
     */
    public static void warnMisspelt(Map<String, String> environment, PrintStream err) {
        if (WARNED.compareAndSet(false, true)) {
            misspelt(environment).forEach(line -> err.println("jmesh: warning: " + line));
        }
    }

    /** One line per JMESH_* variable of {@code environment} that looks like a misspelt jmesh name. */
    static List<String> misspelt(Map<String, String> environment) {
        Set<String> known = new TreeSet<>(OTHERS);
        for (Setting s : Setting.values()) {
            known.add(s.env());
        }
        List<String> lines = new ArrayList<>();
        for (String name : new TreeSet<>(environment.keySet())) {
            if (!name.startsWith("JMESH_") || known.contains(name)) {
                continue;
            }
            List<String> near = known.stream().filter(k -> distance(name, k) <= 2).toList();
            if (!near.isEmpty()) {
                lines.add(name + " is not a jmesh setting and is ignored; did you mean " + String.join(" or ", near)
                        + "? (docs/configuration.md lists every setting)");
            }
        }
        return lines;
    }

    /** Levenshtein distance: insertions, deletions and substitutions. */
    static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int sub = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                cur[j] = Math.min(sub, Math.min(prev[j] + 1, cur[j - 1] + 1));
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }
}
