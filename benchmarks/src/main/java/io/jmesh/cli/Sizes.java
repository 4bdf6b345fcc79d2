package io.jmesh.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Byte counts as the commands take them: 65536, 64K, 64KiB, 1M or 64M (powers of 1024), alone or in a list. */
public final class Sizes {
    private Sizes() {
    }

    /** A byte count such as 65536, 64K, 64KiB, 1M or 64M. */
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
            throw new Cli.UsageError("'" + text + "' is not a size: expected bytes like 65536, 64K or 1M");
        }
    }

    /** A comma-separated list of sizes given to {@code option}, each in [min, max]. */
    public static List<Long> list(String option, String text, long min, long max) {
        List<Long> out = new ArrayList<>();
        for (String part : text.split(",")) {
            if (part.isBlank()) {
                continue;
            }
            long n;
            try {
                n = parseBytes(part);
            } catch (Cli.UsageError e) {
                throw new Cli.UsageError(option + " " + e.getMessage());
            }
            if (n < min || n > max) {
                throw new Cli.UsageError(option + " " + part.trim() + " is out of range: expected " + min + " to "
                        + max + " bytes");
            }
            out.add(n);
        }
        if (out.isEmpty()) {
            throw new Cli.UsageError(option + " is empty: expected sizes like 4K,64K,1M");
        }
        return out;
    }
}
