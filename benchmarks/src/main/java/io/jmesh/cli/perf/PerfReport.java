package io.jmesh.cli.perf;

import io.jmesh.cli.Json;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.Locale;

/** The output of 'jmesh bw' and 'jmesh lat', in the columns of ib_write_bw and ib_write_lat. */
public final class PerfReport {
    public static final String RULE = "-".repeat(87);
    public static final String BW_COLUMNS_MB =
            " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
    public static final String BW_COLUMNS_GB =
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";
    public static final String LAT_COLUMNS = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]"
            + "    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]";

    private PerfReport() {
    }

    /** perftest's units: MB = 2^20 bytes; Gb = 10^9 bits. */
    static double rate(double bytesPerSecond, boolean gbits) {
        return gbits ? bytesPerSecond * 8 / 1e9 : bytesPerSecond / (1 << 20);
    }

    public static String bwLine(long size, long iterations, double peakBytesPerSecond, double avgBytesPerSecond,
                                double messagesPerSecond, boolean gbits) {
        return String.format(Locale.ROOT, " %-10d %-10d     %-7.2f            %-7.2f              %-7.6f", size,
                iterations, rate(peakBytesPerSecond, gbits), rate(avgBytesPerSecond, gbits), messagesPerSecond / 1e6)
                .stripTrailing(); // left-justified columns pad a short last value: no trailing blanks
    }

    /**
     * One latency line from round-trip samples in nanoseconds; like ib_write_lat, each figure is half a round trip.
     * Sorts {@code rttNanos[0, n)} in place.
     */
    public static String latLine(long size, long[] rttNanos, int n) {
        Arrays.sort(rttNanos, 0, n);
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += rttNanos[i];
        }
        double avg = sum / n;
        double var = 0;
        for (int i = 0; i < n; i++) {
            double d = rttNanos[i] - avg;
            var += d * d;
        }
        double stdev = n > 1 ? Math.sqrt(var / n) : 0;
        return String.format(Locale.ROOT, " %-7d %-10d %-7.2f        %-7.2f      %-7.2f          %-7.2f          %-7.2f"
                        + "            %-7.2f                 %-7.2f", size, n, half(rttNanos[0]), half(rttNanos[n - 1]),
                half(rttNanos[n / 2]), avg / 2000.0, stdev / 2000.0, half(rttNanos[percentile(n, 0.99)]),
                half(rttNanos[percentile(n, 0.999)])).stripTrailing();
    }

    private static double half(long rttNanos) {
        return rttNanos / 2000.0;
    }

    static int percentile(int n, double p) {
        return Math.min(n - 1, (int) Math.ceil(p * n) - 1);
    }

    static void header(PrintStream out, String title, String... pairs) {
        out.println(RULE);
        out.println("                    " + title);
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            if (pairs[i + 1] == null) {
                continue;                          // a line that does not apply to this test
            }
            out.printf(Locale.ROOT, " %-16s: %s%n", pairs[i], pairs[i + 1]);
        }
        out.println(RULE);
    }

    /**
     * A result line as one JSON object (docs/cli.md lists the fields), or null for a line that is no result (a
     * header, the columns, a rule). Parsed from the line, so the client and the server, which gets the line over the
     * out-of-band channel, print the same figures.
     *
     * @param route the route of the measured connections, or null where this end does not know it
     */
    static Json json(PerfOptions o, String role, String provider, String route, String line) {
        String[] f = line.trim().split("\\s+");
        boolean lat = o.test().equals("lat");
        if (f.length != (lat ? 9 : 5) || !f[0].matches("[0-9]+")) {
            return null;
        }
        Json j = new Json().put("type", "result").put("test", o.test()).put("role", role).put("provider", provider)
                .put("route", route).put("bytes", Long.parseLong(f[0])).put("iterations", Long.parseLong(f[1]));
        if (lat) {
            String[] names = {"t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "t_stdev_us", "t_p99_us",
                    "t_p999_us"};
            for (int i = 0; i < names.length; i++) {
                j.put(names[i], Double.parseDouble(f[i + 2]));
            }
            return j.put("op", o.op());
        }
        return j.put("bw_peak", Double.parseDouble(f[2])).put("bw_average", Double.parseDouble(f[3]))
                .put("unit", o.gbits() ? "Gb/s" : "MB/s").put("msg_rate_mpps", Double.parseDouble(f[4]));
    }

    /** One interval of a timed ('-D') bandwidth run: the text line (as iperf3 prints them) or its JSON object. */
    static String interval(PerfOptions o, long size, double from, double to, long messages) {
        double rate = rate(size * messages / (to - from), o.gbits());
        if (o.json()) {
            return new Json().put("type", "interval").put("test", o.test()).put("bytes", size)
                    .put("start_s", round(from)).put("end_s", round(to)).put("messages", messages)
                    .put("bw", round(rate)).put("unit", o.gbits() ? "Gb/s" : "MB/s").toString();
        }
        return String.format(Locale.ROOT, " [%6.1f-%6.1f s]  %d bytes  %d messages  %.2f %s", from, to, size,
                messages, rate, o.gbits() ? "Gb/sec" : "MB/sec");
    }

    private static double round(double v) {
        return Math.round(v * 100) / 100.0;
    }
}
