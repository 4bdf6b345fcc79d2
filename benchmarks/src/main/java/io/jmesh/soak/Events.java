package io.jmesh.soak;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * What a soak node tells the driver, one line each on stdout: "EV TYPE key=value ... [err=free text to the end]".
 * Times are wall-clock milliseconds, which the driver and the nodes share on one machine.
 */
final class Events {
    private Events() {
    }

    static void emit(String type, String fields) {
        emit(type, fields, null);
    }

    static synchronized void emit(String type, String fields, String err) {
        StringBuilder sb = new StringBuilder("EV ").append(type).append(" t=").append(System.currentTimeMillis());
        if (!fields.isEmpty()) {
            sb.append(' ').append(fields);
        }
        if (err != null) {
            sb.append(" err=").append(err.replace('\n', ' '));
        }
        System.out.println(sb);
        System.out.flush();
    }

    /** "threads=N fds=N rss_kb=N" of this process, from /proc (what must stay flat in a survivor). */
    static String resources() {
        long threads = -1;
        long rss = -1;
        try {
            List<String> status = Files.readAllLines(Path.of("/proc/self/status"));
            for (String l : status) {
                if (l.startsWith("Threads:")) {
                    threads = Long.parseLong(l.substring(8).trim());
                } else if (l.startsWith("VmRSS:")) {
                    rss = Long.parseLong(l.substring(6).replace("kB", "").trim());
                }
            }
        } catch (IOException | NumberFormatException e) {
            // not Linux: the samples say -1
        }
        long fds;
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            fds = s.count() - 1;               // the listing's own descriptor
        } catch (IOException e) {
            fds = -1;
        }
        return "threads=" + threads + " fds=" + fds + " rss_kb=" + rss;
    }
}
