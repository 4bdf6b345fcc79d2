package io.jmesh.soak;

import java.util.List;
import java.util.Map;

/** The resource samples as an SVG: three panels (threads, descriptors, RSS), a line per node incarnation. */
final class Plot {
    private static final String[] COLOURS = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
        "#e377c2", "#7f7f7f", "#17becf"};
    private static final String[] TITLES = {"threads", "file descriptors", "RSS (MiB)"};
    private static final int W = 900;
    private static final int H = 200;
    private static final int PAD = 40;

    private Plot() {
    }

    static String svg(Map<String, List<long[]>> samples, long startMs, long[] faultsAtMs) {
        long tMax = 1;
        long[] max = new long[4];
        for (List<long[]> s : samples.values()) {
            for (long[] x : s) {
                tMax = Math.max(tMax, x[0] - startMs);
                for (int k = 1; k < 4; k++) {
                    max[k] = Math.max(max[k], k == 3 ? x[k] / 1024 : x[k]);
                }
            }
        }
        StringBuilder sb = new StringBuilder();
        sb.append("<svg xmlns='http://www.w3.org/2000/svg' width='").append(W + 2 * PAD).append("' height='")
                .append(3 * (H + PAD) + PAD).append("' font-family='sans-serif' font-size='12'>\n");
        for (int k = 1; k < 4; k++) {
            int top = PAD + (k - 1) * (H + PAD);
            sb.append("<text x='").append(PAD).append("' y='").append(top - 6).append("'>").append(TITLES[k - 1])
                    .append(" (max ").append(max[k]).append("), seconds 0 to ").append(tMax / 1000)
                    .append("; grey: faults</text>\n");
            sb.append("<rect x='").append(PAD).append("' y='").append(top).append("' width='").append(W)
                    .append("' height='").append(H).append("' fill='none' stroke='black'/>\n");
            for (long f : faultsAtMs) {
                long x = PAD + f * W / tMax;
                sb.append("<line x1='").append(x).append("' x2='").append(x).append("' y1='").append(top)
                        .append("' y2='").append(top + H).append("' stroke='#ccc'/>\n");
            }
            for (Map.Entry<String, List<long[]>> e : samples.entrySet()) {
                int node = Integer.parseInt(e.getKey().split("/")[0]);
                sb.append("<polyline fill='none' stroke='").append(COLOURS[node % COLOURS.length])
                        .append("' points='");
                for (long[] x : e.getValue()) {
                    long v = k == 3 ? x[k] / 1024 : x[k];
                    sb.append(PAD + (x[0] - startMs) * W / tMax).append(',')
                            .append(top + H - (max[k] == 0 ? 0 : v * H / max[k])).append(' ');
                }
                sb.append("'/>\n");
            }
        }
        for (int i = 0; i < COLOURS.length && i < 9; i++) {
            sb.append("<text x='").append(PAD + i * 40).append("' y='").append(3 * (H + PAD) + PAD - 10)
                    .append("' fill='").append(COLOURS[i]).append("'>").append(Ring.name(i)).append("</text>\n");
        }
        return sb.append("</svg>\n").toString();
    }
}
