package io.jmesh.transport.discovery;

import java.util.List;

/**
 * What discovery found: the usable devices, a line for each device or port that cannot be used (with the reason), and,
 * when verbs cannot run on this machine at all, why.
 *
 * @param devices     devices that opened, with their ports
 * @param problems    one line per device or port that was skipped, each naming the cause and the fix
 * @param unavailable null, or why there is no RDMA on this machine and what to do
 */
public record DiscoveryResult(List<RdmaDevice> devices, List<String> problems, String unavailable) {
    public DiscoveryResult {
        devices = List.copyOf(devices);
        problems = List.copyOf(problems);
    }

    public static DiscoveryResult unavailable(String why) {
        return new DiscoveryResult(List.of(), List.of(), why);
    }
}
