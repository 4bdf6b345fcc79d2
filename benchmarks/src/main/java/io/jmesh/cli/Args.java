package io.jmesh.cli;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A small command-line parser for perftest-style options: {@code -s 65536}, {@code --size=65536}, {@code --size 64K},
 * flags without values, and positional arguments. Unknown options and missing values fail with a message that names
 * the option and the fix.
 *
 * <pre>{@code
 * Args a = Args.parse(args, Map.of("s", "size", "n", "iters"), Set.of("size", "iters"));
 * long size = a.bytes("size", 65536);
 * }</pre>
 */
public final class Args {
    private final Map<String, String> values;
    private final List<String> positional;

    private Args(Map<String, String> values, List<String> positional) {
        this.values = values;
        this.positional = positional;
    }

    /**
     * @param args       the arguments after the command name
     * @param shortNames short option letter to long name, e.g. "s" to "size"
     * @param withValue  long names of options that take a value; every other known long name is a flag
     * @param flags      long names of flags
     */
    public static Args parse(List<String> args, Map<String, String> shortNames, java.util.Set<String> withValue,
                             java.util.Set<String> flags) {
        Map<String, String> values = new LinkedHashMap<>();
        List<String> positional = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            if (a.equals("--")) {
                positional.addAll(args.subList(i + 1, args.size()));
                break;
            }
            String name;
            String value = null;
            if (a.startsWith("--") && a.length() > 2) {
                name = a.substring(2);
                int eq = name.indexOf('=');
                if (eq >= 0) {
                    value = name.substring(eq + 1);
                    name = name.substring(0, eq);
                }
            } else if (a.startsWith("-") && a.length() > 1 && !Character.isDigit(a.charAt(1))) {
                String letter = a.substring(1, 2);
                name = shortNames.get(letter);
                if (name == null) {
                    throw new IllegalArgumentException("unknown option '" + a + "' (see --help)");
                }
                if (a.length() > 2) {
                    value = a.substring(2);
                }
            } else {
                positional.add(a);
                continue;
            }
            if (withValue.contains(name)) {
                if (value == null) {
                    if (i + 1 >= args.size()) {
                        throw new IllegalArgumentException("option '" + a + "' needs a value (see --help)");
                    }
                    value = args.get(++i);
                }
                values.put(name, value);
            } else if (flags.contains(name)) {
                if (value != null) {
                    throw new IllegalArgumentException("option '--" + name + "' takes no value");
                }
                values.put(name, "true");
            } else {
                throw new IllegalArgumentException("unknown option '" + a + "' (see --help)");
            }
        }
        return new Args(values, positional);
    }

    public List<String> positional() {
        return positional;
    }

    public boolean has(String name) {
        return values.containsKey(name);
    }

    public String string(String name, String defaultValue) {
        return values.getOrDefault(name, defaultValue);
    }

    public boolean flag(String name) {
        return values.containsKey(name);
    }

    /** An integer option in [min, max]. */
    public long integer(String name, long defaultValue, long min, long max) {
        String v = values.get(name);
        if (v == null) {
            return defaultValue;
        }
        try {
            long n = Long.parseLong(v.trim());
            if (n < min || n > max) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " " + v + " is not valid: expected an integer from " + min
                    + " to " + max);
        }
    }

    /** A byte count such as 65536, 64K, 64KiB, 1M or 64M (powers of 1024). */
    public static long parseBytes(String text) {
        String s = text.trim().toUpperCase(Locale.ROOT);
        if (s.endsWith("IB")) {
            s = s.substring(0, s.length() - 2);
        } else if (s.endsWith("B") && s.length() > 1 && !Character.isDigit(s.charAt(s.length() - 2))) {
            s = s.substring(0, s.length() - 1);
        }
        long unit = 1;
        if (!s.isEmpty()) {
            switch (s.charAt(s.length() - 1)) {
                case 'K' -> unit = 1L << 10;
                case 'M' -> unit = 1L << 20;
                case 'G' -> unit = 1L << 30;
                default -> { }
            }
            if (unit != 1) {
                s = s.substring(0, s.length() - 1);
            }
        }
        try {
            long n = Long.parseLong(s);
            if (n < 0 || n > Long.MAX_VALUE / unit) {
                throw new NumberFormatException();
            }
            return n * unit;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + text + "' is not a size: expected bytes like 65536, 64K or 1M");
        }
    }

    /** A comma-separated list of sizes, each in [min, max]. */
    public List<Long> sizes(String name, long defaultValue, long min, long max) {
        String v = values.get(name);
        List<Long> out = new ArrayList<>();
        if (v == null) {
            out.add(defaultValue);
            return out;
        }
        for (String part : v.split(",")) {
            if (part.isBlank()) {
                continue;
            }
            long n = parseBytes(part);
            if (n < min || n > max) {
                throw new IllegalArgumentException("--" + name + " " + part.trim() + " is out of range: expected "
                        + min + " to " + max + " bytes");
            }
            out.add(n);
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("--" + name + " is empty: expected sizes like 4K,64K,1M");
        }
        return out;
    }

    /** For help texts: the map of short to long names. */
    public static Map<String, String> shorts(String... pairs) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            m.put(pairs[i], pairs[i + 1]);
        }
        return m;
    }
}
