package io.jmesh.cli.doctor;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The locked-memory limit of this process, which memory registration counts against, and whether CAP_IPC_LOCK (root)
 * lifts it.
 *
 * @param softBytes   the soft RLIMIT_MEMLOCK in bytes, -1 for unlimited, -2 when unknown
 * @param capIpcLock  the process has CAP_IPC_LOCK (registration ignores the limit then)
 */
public record Memlock(long softBytes, boolean capIpcLock) {
    public static final long UNLIMITED = -1;
    public static final long UNKNOWN = -2;
    private static final int CAP_IPC_LOCK = 14;

    /** Reads /proc/self/limits and /proc/self/status. */
    public static Memlock read() {
        long soft = UNKNOWN;
        boolean cap = false;
        try {
            soft = parseLimits(Files.readString(Path.of("/proc/self/limits")));
        } catch (IOException | RuntimeException e) {
            // not Linux, or /proc unreadable: unknown, and the check says so
        }
        try {
            cap = parseCapIpcLock(Files.readString(Path.of("/proc/self/status")));
        } catch (IOException | RuntimeException e) {
            // as above
        }
        return new Memlock(soft, cap);
    }

    /** The soft limit from the "Max locked memory" line of /proc/PID/limits. */
    static long parseLimits(String limits) {
        for (String line : limits.split("\n")) {
            if (line.startsWith("Max locked memory")) {
                String[] f = line.substring("Max locked memory".length()).trim().split("\\s+");
                return f[0].equals("unlimited") ? UNLIMITED : Long.parseLong(f[0]);
            }
        }
        return UNKNOWN;
    }

    /** CAP_IPC_LOCK in the CapEff line of /proc/PID/status. */
    static boolean parseCapIpcLock(String status) {
        for (String line : status.split("\n")) {
            if (line.startsWith("CapEff:")) {
                long caps = Long.parseUnsignedLong(line.substring(7).trim(), 16);
                return (caps & (1L << CAP_IPC_LOCK)) != 0;
            }
        }
        return false;
    }
}
