package io.jmesh.transport.discovery;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads the few sysfs files verbs does not expose: a port's rate, a device's parent path and netdev. */
final class Sysfs {
    static final Path INFINIBAND = Path.of("/sys/class/infiniband");

    private Sysfs() {
    }

    static String read(Path file) {
        try {
            return Files.readString(file).trim();
        } catch (IOException | SecurityException e) {
            return "";
        }
    }

    /** "100 Gb/sec (4X EDR)" for a port, "" when unknown. */
    static String rate(String device, int port) {
        return read(INFINIBAND.resolve(device).resolve("ports").resolve(Integer.toString(port)).resolve("rate"));
    }

    /** The leading number of a rate text in Mb/s: "100 Gb/sec (4X EDR)" is 100000, "2.5 Gb/sec" 2500. */
    static long rateMbps(String rate) {
        int space = rate.indexOf(' ');
        if (space <= 0) {
            return 0;
        }
        try {
            double gbps = Double.parseDouble(rate.substring(0, space));
            return Math.round(gbps * 1000);
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /** The device's resolved sysfs device path (the PCI function for a real NIC), "" when unknown. */
    static String devicePath(String device) {
        try {
            return INFINIBAND.resolve(device).resolve("device").toRealPath().toString();
        } catch (IOException | SecurityException e) {
            return "";
        }
    }

    /** The netdev of a port from gid_attrs/ndevs/0, rxe's "parent" file, or the PCI function's net/ folder. */
    static String netdev(String device, int port) {
        Path dev = INFINIBAND.resolve(device);
        String s = read(dev.resolve("ports").resolve(Integer.toString(port)).resolve("gid_attrs/ndevs/0"));
        if (!s.isEmpty()) {
            return s;
        }
        s = read(dev.resolve("parent"));
        if (!s.isEmpty()) {
            return s;
        }
        try (var names = Files.list(dev.resolve("device/net"))) {
            return names.map(p -> p.getFileName().toString()).sorted().findFirst().orElse("");
        } catch (IOException | SecurityException e) {
            return "";
        }
    }
}
