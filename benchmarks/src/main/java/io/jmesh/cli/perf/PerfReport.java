package io.jmesh.cli.perf;

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
}
