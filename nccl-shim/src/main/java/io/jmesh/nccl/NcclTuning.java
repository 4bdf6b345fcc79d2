package io.jmesh.nccl;

import java.util.Map;

/**
 * What the plugin tells NCCL about a device's link for NCCL's tuning model, where the measured link says too little:
 * {@code speed} (Mb/s; NCCL's bandwidth for the device, which sets its channel count and where it switches from the
 * LL protocols to Simple) and {@code latency} (µs; added to every network step in NCCL's latency model). Unset, the
 * speed is the link's own from sysfs (10 Gb/s when unknown, as NCCL's Socket transport assumes) and the latency 0,
 * as NCCL's own IB and Socket transports report.
 *
 * @param speedMbps the speed to report, or 0 for the link's own
 * @param latencyUs the latency to report
 */
record NcclTuning(long speedMbps, double latencyUs) {
    static final String SPEED = "JMESH_NCCL_SPEED_MBPS";
    static final String LATENCY = "JMESH_NCCL_LATENCY_US";
    /** Reported where the link's speed is unknown (loopback, virtual NICs): NCCL Socket's own default. */
    static final long UNKNOWN_SPEED_MBPS = 10_000;
    /** NCCL keeps {@code speed} in an int. */
    static final long MAX_SPEED_MBPS = 10_000_000;
    static final double MAX_LATENCY_US = 10_000;

    static NcclTuning from(Map<String, String> env) {
        long speed = 0;
        String s = env.get(SPEED);
        if (s != null && !s.isBlank()) {
            try {
                speed = Long.parseLong(s.trim());
            } catch (NumberFormatException e) {
                speed = -1;
            }
            if (speed < 1 || speed > MAX_SPEED_MBPS) {
                throw new IllegalArgumentException(SPEED + "=" + s + " is not a speed in Mb/s from 1 to "
                        + MAX_SPEED_MBPS + " (e.g. 200000 for a 200 Gb/s link); unset it to report the link's own");
            }
        }
        double latency = 0;
        String l = env.get(LATENCY);
        if (l != null && !l.isBlank()) {
            try {
                latency = Double.parseDouble(l.trim());
            } catch (NumberFormatException e) {
                latency = -1;
            }
            if (!(latency >= 0 && latency <= MAX_LATENCY_US)) {
                throw new IllegalArgumentException(LATENCY + "=" + l + " is not a latency in µs from 0 to "
                        + MAX_LATENCY_US + " (e.g. 2.5); unset it to report 0");
            }
        }
        return new NcclTuning(speed, latency);
    }

    /** The speed to report for a device whose link runs at {@code linkMbps} (0: unknown). */
    long speedFor(long linkMbps) {
        if (speedMbps > 0) {
            return speedMbps;
        }
        return linkMbps > 0 ? Math.min(MAX_SPEED_MBPS, linkMbps) : UNKNOWN_SPEED_MBPS;
    }
}
