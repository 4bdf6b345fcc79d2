package io.jmesh.api;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.ObjLongConsumer;
import java.util.function.ToLongFunction;

/**
 * Where each setting of one {@link Context} came from, and whether it fits: reads a setting's names in their order
 * (system property, environment variable, the seed's variable), checks a number against its {@link Setting}'s range,
 * remembers the values that did not fit, and words what {@link Context#conclude()} throws. The values themselves are
 * the context's fields; this keeps what the context says about them.
 */
final class SettingSources {
    /** Where each value that is not the default came from: "JMESH_IB_TIMEOUT='40'", "Context.ibTimeout(40)". */
    private final Map<Setting, String> origins = new EnumMap<>(Setting.class);
    /** Values read that do not fit their setting, with a detail or null; {@link #check} reports them. */
    private final Map<Setting, String> unreadable = new EnumMap<>(Setting.class);

    /**
     * Reads every setting that is set, handing a text value to {@code text} (which throws IllegalArgumentException
     * when it does not parse) and a number within its range to {@code number}.
     */
    void readAll(Function<String, String> properties, Function<String, String> environment,
                 BiConsumer<Setting, String> text, ObjLongConsumer<Setting> number) {
        for (Setting s : Setting.values()) {
            String name = "-D" + s.property();
            String value = properties.apply(s.property());
            if (blank(value)) {
                name = s.env();
                value = environment.apply(s.env());
            }
            if (blank(value) && s.seedEnv() != null) {
                name = s.seedEnv();
                value = environment.apply(s.seedEnv());
            }
            if (!blank(value)) {
                read(s, name, value.trim(), text, number);
            }
        }
    }

    private static boolean blank(String v) {
        return v == null || v.isBlank();
    }

    /** Stores a value read from {@code name}, or notes why it does not fit for {@link #check}. */
    private void read(Setting s, String name, String value, BiConsumer<Setting, String> text,
                      ObjLongConsumer<Setting> number) {
        origins.put(s, name + (s == Setting.MESH_KEY ? " (set)" : "='" + value + "'")); // a key is never shown
        try {
            if (!s.isNumeric()) {
                text.accept(s, value);
            } else {
                long v = Long.parseLong(value);
                if (v < s.min() || v > s.max()) {
                    unreadable.put(s, null);
                } else {
                    number.accept(s, v);
                }
            }
        } catch (IllegalArgumentException e) {
            unreadable.put(s, e instanceof NumberFormatException ? null : e.getMessage());
        }
    }

    /** Records that a setter chose the value: it replaces whatever was read, bad or not. */
    void set(Setting s, String call) {
        origins.put(s, "Context." + call);
        unreadable.remove(s);
    }

    /** Notes that the value a setter was given does not parse, and why. */
    void unreadable(Setting s, String detail) {
        unreadable.put(s, detail);
    }

    /** Where a setting's value came from, or null: the default. */
    String origin(Setting s) {
        return origins.get(s);
    }

    /**
     * Fails with one message naming each bad setting: where its value came from, all its names and what it accepts.
     *
     * @param provider    the provider's name as set ("auto", a name or an alias)
     * @param gidIndexSet whether a GID index is forced (unset, it has no number to check)
     * @param numeric     a numeric setting's value
     */
    void check(String provider, boolean gidIndexSet, ToLongFunction<Setting> numeric) {
        List<String> problems = new ArrayList<>();
        for (Setting s : Setting.values()) {
            if (unreadable.containsKey(s)) {
                problems.add(problem(s, s.accepts(), unreadable.get(s)));
            } else if (s == Setting.PROVIDER) {
                boolean known = provider.equals(Providers.AUTO) || Providers.find(provider) != null;
                if (!known && !Providers.all().isEmpty()) {
                    problems.add(problem(s, Providers.choices(), null));
                }
            } else if (s.isNumeric() && !(s == Setting.GID_INDEX && !gidIndexSet)) {
                long v = numeric.applyAsLong(s);
                if (v < s.min() || v > s.max()) {
                    problems.add(problem(s, s.accepts(), null));
                }
            }
        }
        if (problems.size() == 1) {
            throw new IllegalArgumentException(problems.getFirst());
        }
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException(problems.size() + " settings are not valid: "
                    + String.join("; ", problems));
        }
    }

    private String problem(Setting s, String accepts, String detail) {
        return origins.get(s) + " is not valid" + (detail == null ? "" : " (" + detail + ")") + ": " + s.names()
                + " takes " + accepts + " (" + s.description() + ")";
    }
}
