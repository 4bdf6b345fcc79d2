package io.jmesh.transport.discovery;

import java.util.List;

/**
 * An RDMA device with its ports.
 *
 * @param name    kernel name, e.g. "rocep1s0f0" or "rxe0"
 * @param guid    node GUID
 * @param pciPath the device's sysfs path (PCI for real NICs; virtual for rxe), "" when unknown
 * @param ports   its ports
 */
public record RdmaDevice(String name, long guid, String pciPath, List<RdmaPort> ports) {
    public RdmaDevice {
        ports = List.copyOf(ports);
    }
}
