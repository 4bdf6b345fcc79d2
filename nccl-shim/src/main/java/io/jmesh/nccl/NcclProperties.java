package io.jmesh.nccl;

import io.jmesh.api.Receiver;

import java.lang.foreign.MemorySegment;

/**
 * Fills the shim's properties record for one device ({@link ShimAbi}'s {@code P_*} slots, 8 bytes each), from which
 * the C side builds the {@code ncclNetProperties_vN} of the version NCCL asked for.
 */
final class NcclProperties {
    private NcclProperties() {
    }

    /**
     * @param name    the device's name as a C string NCCL may keep
     * @param pciPath its PCI path as a C string
     * @param gpu     whether the device takes GPU memory by dma-buf
     * @param tuning  the speed and latency to report
     */
    static void write(long props, int dev, NcclDevice d, MemorySegment name, MemorySegment pciPath, boolean gpu,
                      NcclTuning tuning) {
        slot(props, ShimAbi.P_NAME, name.address());
        slot(props, ShimAbi.P_PCI_PATH, pciPath.address());
        slot(props, ShimAbi.P_GUID, d.guid());
        // GPU memory only where the NIC can take it by dma-buf (never over TCP, never on Soft-RoCE)
        slot(props, ShimAbi.P_PTR_SUPPORT, gpu ? Nccl.PTR_HOST | Nccl.PTR_CUDA | Nccl.PTR_DMABUF : Nccl.PTR_HOST);
        slot(props, ShimAbi.P_REG_IS_GLOBAL, 1);
        slot(props, ShimAbi.P_FORCE_FLUSH, 0);
        slot(props, ShimAbi.P_SPEED, tuning.speedFor(d.speedMbps()));
        slot(props, ShimAbi.P_PORT, d.port());
        Mem.putDouble(props + 8L * ShimAbi.P_LATENCY, tuning.latencyUs());
        slot(props, ShimAbi.P_MAX_COMMS, 65_536);
        slot(props, ShimAbi.P_MAX_RECVS, Receiver.MAX_RECVS);
        slot(props, ShimAbi.P_NET_DEVICE_TYPE, 0);
        slot(props, ShimAbi.P_NET_DEVICE_VERSION, 0);
        slot(props, ShimAbi.P_VDEV_COUNT, 1);
        slot(props, ShimAbi.P_VDEVS, dev);
        slot(props, ShimAbi.P_MAX_P2P_BYTES, Nccl.MAX_MESSAGE_BYTES);
        slot(props, ShimAbi.P_MAX_COLL_BYTES, Nccl.MAX_MESSAGE_BYTES);
        slot(props, ShimAbi.P_MAX_MULTI_REQUEST_SIZE, 1);
        slot(props, ShimAbi.P_RAIL_ID, -1);
        slot(props, ShimAbi.P_PLANE_ID, -1);
    }

    private static void slot(long props, int slot, long value) {
        Mem.putLong(props + 8L * slot, value);
    }
}
