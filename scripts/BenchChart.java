/*
 * Draws docs/bench/*.svg from the committed benchmark results, with the JDK alone (no libraries, no downloads):
 *
 *   java scripts/BenchChart.java bandwidth OUT.svg LABEL=FILE.json [LABEL=FILE.json ...]
 *       bandwidth (MiB/s) against message size from JMH JSON of io.jmesh.bench.BandwidthBenchmark: one line per file;
 *       each point is ops/s x size, with the JMH error as a bar
 *   java scripts/BenchChart.java perftest OUT.svg testbed-perf.tsv
 *       jmesh bw against ib_write_bw by size (medians over rounds) from scripts/bench testbed's TSV
 *   java scripts/BenchChart.java table FILE.json
 *       a Markdown table of a JMH result file: the score, MiB/s for bandwidth, and the allocation per operation
 *       (gc.alloc.rate.norm of -prof gc, all threads; hotPathBytesPerOp, the benchmark thread alone)
 *
 * The source launcher runs it: 'java scripts/BenchChart.java ...' (JDK 25).
 */

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

public class BenchChart {
    record Point(double x, double y, double err) {
    }

    record Series(String label, List<Point> points) {
    }

    static final String[] COLORS = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

    public static void main(String[] args) throws IOException {
        if (args.length < 3 && !(args.length == 2 && args[0].equals("table"))) {
            System.err.println("usage: java scripts/BenchChart.java bandwidth OUT.svg LABEL=FILE.json... | "
                    + "perftest OUT.svg FILE.tsv");
            System.exit(2);
        }
        if (args[0].equals("table")) {
            table(Path.of(args[1]));
            return;
        }
        List<Series> series = new ArrayList<>();
        String title;
        if (args[0].equals("bandwidth")) {
            for (int i = 2; i < args.length; i++) {
                int eq = args[i].indexOf('=');
                series.add(fromJmh(args[i].substring(0, eq), Path.of(args[i].substring(eq + 1))));
            }
            title = "jmesh bandwidth by message size (JMH BandwidthBenchmark, one thread drives both ends)";
        } else if (args[0].equals("perftest")) {
            series.addAll(fromTsv(Path.of(args[2])));
            title = "jmesh bw vs ib_write_bw on one Soft-RoCE link (testbed, medians; ratios only)";
        } else {
            throw new IllegalArgumentException("unknown chart '" + args[0] + "'");
        }
        Files.writeString(Path.of(args[1]), svg(title, series));
        System.out.println("wrote " + args[1]);
    }

    // ---------------------------------------------------------------------------------------------- inputs

    @SuppressWarnings("unchecked")
    static void table(Path file) throws IOException {
        System.out.println("| benchmark | provider | size | score | MiB/s | gc.alloc.rate.norm (B/op, all threads) "
                + "| hotPathBytesPerOp (benchmark thread) |");
        System.out.println("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
        for (Object o : (List<Object>) new Json(Files.readString(file)).value()) {
            Map<String, Object> run = (Map<String, Object>) o;
            String bench = String.valueOf(run.get("benchmark"));
            bench = bench.substring(bench.lastIndexOf('.', bench.lastIndexOf('.') - 1) + 1);
            Map<String, Object> params = (Map<String, Object>) run.get("params");
            double size = Double.parseDouble(String.valueOf(params.get("size")));
            Map<String, Object> primary = (Map<String, Object>) run.get("primaryMetric");
            double score = ((Number) primary.get("score")).doubleValue();
            Object e = primary.get("scoreError");
            String err = e instanceof Number n && !Double.isNaN(n.doubleValue()) ? " ± " + fmt(n.doubleValue()) : "";
            Map<String, Object> sec = (Map<String, Object>) run.getOrDefault("secondaryMetrics", Map.of());
            boolean bw = bench.startsWith("Bandwidth");
            System.out.printf(Locale.ROOT, "| %s | %s | %s | %s%s %s | %s | %s | %s |%n", bench, params.get("provider"),
                    size(size), fmt(score), err, primary.get("scoreUnit"), bw ? fmt(score * size / (1 << 20)) : "–",
                    metric(sec, "gc.alloc.rate.norm"), metric(sec, "hotPathBytesPerOp"));
        }
    }

    @SuppressWarnings("unchecked")
    static String metric(Map<String, Object> secondary, String name) {
        Object m = secondary.get(name);
        if (!(m instanceof Map)) {
            return "–";
        }
        Object v = ((Map<String, Object>) m).get("score");
        return v instanceof Number n ? String.format(Locale.ROOT, "%.3f", n.doubleValue()) : "–";
    }

    @SuppressWarnings("unchecked")
    static Series fromJmh(String label, Path file) throws IOException {
        Object root = new Json(Files.readString(file)).value();
        List<Point> points = new ArrayList<>();
        for (Object o : (List<Object>) root) {
            Map<String, Object> run = (Map<String, Object>) o;
            if (!String.valueOf(run.get("benchmark")).endsWith("BandwidthBenchmark.message")) {
                continue;
            }
            Map<String, Object> params = (Map<String, Object>) run.get("params");
            double size = Double.parseDouble(String.valueOf(params.get("size")));
            Map<String, Object> primary = (Map<String, Object>) run.get("primaryMetric");
            double ops = ((Number) primary.get("score")).doubleValue();
            Object e = primary.get("scoreError");
            double err = e instanceof Number n && !Double.isNaN(n.doubleValue()) ? n.doubleValue() : 0;
            points.add(new Point(size, ops * size / (1 << 20), err * size / (1 << 20)));
        }
        points.sort((a, b) -> Double.compare(a.x(), b.x()));
        return new Series(label, points);
    }

    static List<Series> fromTsv(Path file) throws IOException {
        Map<String, Map<Double, List<Double>>> byTool = new LinkedHashMap<>();
        for (String line : Files.readAllLines(file)) {
            String[] f = line.split("\t");
            if (f.length < 7 || !f[2].equals("bw")) {
                continue;
            }
            byTool.computeIfAbsent(f[1], k -> new TreeMap<>()).computeIfAbsent(Double.parseDouble(f[3]),
                    k -> new ArrayList<>()).add(Double.parseDouble(f[5]));
        }
        List<Series> out = new ArrayList<>();
        for (var tool : byTool.entrySet()) {
            List<Point> points = new ArrayList<>();
            for (var e : tool.getValue().entrySet()) {
                List<Double> v = new ArrayList<>(e.getValue());
                v.sort(null);
                double median = v.size() % 2 == 1 ? v.get(v.size() / 2) : (v.get(v.size() / 2 - 1)
                        + v.get(v.size() / 2)) / 2;
                points.add(new Point(e.getKey(), median, 0));
            }
            String label = switch (tool.getKey()) {
                case "perftest" -> "ib_write_bw";
                case "jmesh" -> "jmesh bw";
                case "jmeshspin" -> "jmesh bw --poll spin";
                default -> tool.getKey();
            };
            out.add(new Series(label, points));
        }
        return out;
    }

    // ---------------------------------------------------------------------------------------------- drawing

    static String svg(String title, List<Series> series) {
        int w = 760;
        int h = 440;
        int left = 80;
        int right = 190;
        int top = 50;
        int bottom = 60;
        double minX = Double.MAX_VALUE;
        double maxX = 0;
        double maxY = 0;
        for (Series s : series) {
            for (Point p : s.points()) {
                minX = Math.min(minX, p.x());
                maxX = Math.max(maxX, p.x());
                maxY = Math.max(maxY, p.y() + p.err());
            }
        }
        if (maxX == 0) {
            throw new IllegalArgumentException("no data points");
        }
        double lx0 = Math.floor(log2(minX));
        double lx1 = Math.ceil(log2(maxX));
        if (lx1 == lx0) {
            lx1 = lx0 + 1;
        }
        double yTop = niceCeil(maxY);
        int pw = w - left - right;
        int ph = h - top - bottom;
        final double fx0 = lx0;
        final double fx1 = lx1;
        java.util.function.DoubleUnaryOperator sx = x -> left + (log2(x) - fx0) / (fx1 - fx0) * pw;
        java.util.function.DoubleUnaryOperator sy = y -> top + ph - y / yTop * ph;
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                + "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n", w, h, w, h));
        sb.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", w, h));
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"24\" font-size=\"14\" font-weight=\"bold\">%s</text>%n",
                left - 60, esc(title)));
        for (int i = 0; i <= 5; i++) {
            double y = yTop * i / 5;
            double py = sy.applyAsDouble(y);
            sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>%n",
                    left, py, left + pw, py));
            sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n", left - 6,
                    py + 4, fmt(y)));
        }
        for (double lx = lx0; lx <= lx1; lx += (lx1 - lx0 > 12 ? 2 : 1)) {
            double px = left + (lx - lx0) / (lx1 - lx0) * pw;
            sb.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>%n",
                    px, top, px, top + ph));
            sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n", px,
                    top + ph + 18, size(Math.pow(2, lx))));
        }
        sb.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                + "stroke=\"#333\"/>%n", left, top, pw, ph));
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">message size (bytes, "
                + "log scale)</text>%n", left + pw / 2, h - 16));
        sb.append(String.format(Locale.ROOT, "<text x=\"18\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 18 "
                + "%d)\">MiB/s</text>%n", top + ph / 2, top + ph / 2));
        for (int i = 0; i < series.size(); i++) {
            Series s = series.get(i);
            String c = COLORS[i % COLORS.length];
            StringBuilder path = new StringBuilder();
            for (Point p : s.points()) {
                double px = sx.applyAsDouble(p.x());
                double py = sy.applyAsDouble(p.y());
                path.append(path.isEmpty() ? "M" : " L").append(String.format(Locale.ROOT, "%.1f %.1f", px, py));
                if (p.err() > 0) {
                    sb.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                            + "stroke=\"%s\" stroke-width=\"1\"/>%n", px, sy.applyAsDouble(Math.max(0, p.y() - p.err())),
                            px, sy.applyAsDouble(p.y() + p.err()), c));
                }
                sb.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%s "
                        + "%s: %s MiB/s</title></circle>%n", px, py, c, esc(s.label()), size(p.x()), fmt(p.y())));
            }
            sb.append(String.format(Locale.ROOT, "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>%n",
                    path, c));
            int ly = top + 10 + i * 20;
            sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                    + "stroke-width=\"3\"/>%n", left + pw + 12, ly, left + pw + 32, ly, c));
            sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text>%n", left + pw + 38, ly + 4,
                    esc(s.label())));
        }
        sb.append("</svg>\n");
        return sb.toString();
    }

    static double log2(double x) {
        return Math.log(x) / Math.log(2);
    }

    static double niceCeil(double v) {
        double p = Math.pow(10, Math.floor(Math.log10(v)));
        for (double m : new double[] {1, 2, 2.5, 5, 10}) {
            if (m * p >= v) {
                return m * p;
            }
        }
        return 10 * p;
    }

    static String fmt(double v) {
        return v >= 100 ? String.format(Locale.ROOT, "%.0f", v) : v >= 10 ? String.format(Locale.ROOT, "%.1f", v)
                : String.format(Locale.ROOT, "%.2f", v);
    }

    static String size(double b) {
        long n = Math.round(b);
        return n >= (1L << 20) ? (n >> 20) + " MiB" : n >= 1024 ? (n >> 10) + " KiB" : n + " B";
    }

    static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }

    /** Just enough JSON for JMH's result files: objects, arrays, strings, numbers (incl. NaN), true/false/null. */
    static final class Json {
        private final String s;
        private int i;

        Json(String s) {
            this.s = s;
        }

        Object value() {
            ws();
            char c = s.charAt(i);
            return switch (c) {
                case '{' -> object();
                case '[' -> array();
                case '"' -> string();
                case 't' -> word("true", Boolean.TRUE);
                case 'f' -> word("false", Boolean.FALSE);
                case 'n' -> word("null", null);
                case 'N' -> word("NaN", Double.NaN);
                default -> number();
            };
        }

        private Object word(String w, Object v) {
            if (!s.startsWith(w, i)) {
                throw new IllegalArgumentException("bad JSON at " + i);
            }
            i += w.length();
            return v;
        }

        private Map<String, Object> object() {
            Map<String, Object> m = new LinkedHashMap<>();
            i++;
            ws();
            if (s.charAt(i) == '}') {
                i++;
                return m;
            }
            while (true) {
                ws();
                String k = string();
                ws();
                expect(':');
                m.put(k, value());
                ws();
                if (s.charAt(i) == ',') {
                    i++;
                } else {
                    expect('}');
                    return m;
                }
            }
        }

        private List<Object> array() {
            List<Object> l = new ArrayList<>();
            i++;
            ws();
            if (s.charAt(i) == ']') {
                i++;
                return l;
            }
            while (true) {
                l.add(value());
                ws();
                if (s.charAt(i) == ',') {
                    i++;
                } else {
                    expect(']');
                    return l;
                }
            }
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (s.charAt(i) != '"') {
                char c = s.charAt(i++);
                if (c == '\\') {
                    char e = s.charAt(i++);
                    switch (e) {
                        case 'n' -> b.append('\n');
                        case 't' -> b.append('\t');
                        case 'u' -> {
                            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                            i += 4;
                        }
                        default -> b.append(e);
                    }
                } else {
                    b.append(c);
                }
            }
            i++;
            return b.toString();
        }

        private Number number() {
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            return Double.parseDouble(s.substring(start, i));
        }

        private void expect(char c) {
            if (s.charAt(i) != c) {
                throw new IllegalArgumentException("expected '" + c + "' at " + i + ", got '" + s.charAt(i) + "'");
            }
            i++;
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }
    }
}
