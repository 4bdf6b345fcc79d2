package io.jmesh.cli;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A tiny JSON writer for the commands' --json output: one object per line, built in insertion order. Values are
 * strings, numbers, booleans, null, lists, maps and other objects; non-finite numbers become null, which JSON lacks.
 *
 * <pre>{@code
 * out.println(new Json().put("test", "bw").put("bytes", 65536).put("bw_average", 1888.5));
 * }</pre>
 */
public final class Json {
    private final StringBuilder sb = new StringBuilder("{");

    /** Adds one field; returns this object. */
    public Json put(String name, Object value) {
        if (sb.length() > 1) {
            sb.append(',');
        }
        string(sb, name);
        sb.append(':');
        value(sb, value);
        return this;
    }

    @Override
    public String toString() {
        return sb + "}";
    }

    private static void value(StringBuilder sb, Object v) {
        switch (v) {
            case null -> sb.append("null");
            case Json j -> sb.append(j);
            case Boolean b -> sb.append(b);
            case Double d when !Double.isFinite(d) -> sb.append("null");
            case Float f when !Float.isFinite(f) -> sb.append("null");
            case Double d -> sb.append(String.format(Locale.ROOT, "%s", d));
            case Number n -> sb.append(n);
            case List<?> l -> {
                sb.append('[');
                for (int i = 0; i < l.size(); i++) {
                    sb.append(i == 0 ? "" : ",");
                    value(sb, l.get(i));
                }
                sb.append(']');
            }
            case Map<?, ?> m -> {
                Json o = new Json();
                m.forEach((k, x) -> o.put(String.valueOf(k), x));
                sb.append(o);
            }
            default -> string(sb, v.toString());
        }
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }
}
