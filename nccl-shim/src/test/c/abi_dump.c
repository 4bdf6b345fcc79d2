/*
 * Prints the size of every NCCL net-plugin struct jmesh uses, the offset of each field and the constants it relies
 * on, one "item value" line each (items hold no blanks, so that ../abi/nccl-abi.txt is a plain table).
 * NcclAbiCheckTest compiles it against jmesh's nccl_net_abi.h in every build and compares with that table, which
 * ../abi/regenerate.sh makes by compiling it against NVIDIA's headers (-DJMESH_USE_NCCL_HEADERS
 * -I<nccl>/plugins/net/example/nccl); with JMESH_NCCL_SRC set the test also compares against the headers directly.
 */
#include <stddef.h>
#include <stdio.h>

#include "nccl_net_abi.h"

#define SIZE(t) printf("sizeof(%s) %zu\n", #t, sizeof(t))
#define OFF(t, f) printf("offsetof(%s,%s) %zu\n", #t, #f, offsetof(t, f))
#define FSIZE(t, f) printf("sizeof(%s.%s) %zu\n", #t, #f, sizeof(((t*)0)->f))

#define PROPS_V8(t) \
    SIZE(t); OFF(t, name); OFF(t, pciPath); OFF(t, guid); OFF(t, ptrSupport); OFF(t, regIsGlobal); OFF(t, speed); \
    OFF(t, port); OFF(t, latency); OFF(t, maxComms); OFF(t, maxRecvs); OFF(t, netDeviceType); \
    OFF(t, netDeviceVersion)
#define PROPS_V9(t) \
    PROPS_V8(t); OFF(t, forceFlush); OFF(t, vProps); FSIZE(t, vProps); OFF(t, vProps.ndevs); OFF(t, vProps.devs); \
    OFF(t, maxP2pBytes); OFF(t, maxCollBytes)

/* the entry points every version has, in NCCL's order */
#define NET_COMMON(t) \
    SIZE(t); OFF(t, name); OFF(t, init); OFF(t, devices); OFF(t, getProperties); OFF(t, listen); OFF(t, connect); \
    OFF(t, accept); OFF(t, regMr); OFF(t, regMrDmaBuf); OFF(t, deregMr); OFF(t, isend); OFF(t, irecv); \
    OFF(t, iflush); OFF(t, test); OFF(t, closeSend); OFF(t, closeRecv); OFF(t, closeListen); OFF(t, getDeviceMr); \
    OFF(t, irecvConsumed)

int main(void) {
    SIZE(ncclResult_t);
    printf("ncclSuccess %d\nncclSystemError %d\nncclInternalError %d\nncclInvalidArgument %d\nncclRemoteError %d\n",
           ncclSuccess, ncclSystemError, ncclInternalError, ncclInvalidArgument, ncclRemoteError);
    printf("NCCL_LOG_WARN %d\nNCCL_LOG_INFO %d\nNCCL_LOG_TRACE %d\nNCCL_INIT %d\nNCCL_NET %d\nNCCL_ALL %d\n",
           NCCL_LOG_WARN, NCCL_LOG_INFO, NCCL_LOG_TRACE, (int)NCCL_INIT, (int)NCCL_NET, (int)NCCL_ALL);
    printf("NCCL_NET_HANDLE_MAXSIZE %d\nNCCL_PTR_HOST %d\nNCCL_PTR_CUDA %d\nNCCL_PTR_DMABUF %d\n",
           NCCL_NET_HANDLE_MAXSIZE, NCCL_PTR_HOST, NCCL_PTR_CUDA, NCCL_PTR_DMABUF);
    printf("NCCL_NET_DEVICE_HOST %d\n", (int)NCCL_NET_DEVICE_HOST);

    SIZE(ncclNetDeviceHandle_v8_t);
    OFF(ncclNetDeviceHandle_v8_t, netDeviceType);
    OFF(ncclNetDeviceHandle_v8_t, netDeviceVersion);
    OFF(ncclNetDeviceHandle_v8_t, handle);
    OFF(ncclNetDeviceHandle_v8_t, size);
    OFF(ncclNetDeviceHandle_v8_t, needsProxyProgress);

    PROPS_V8(ncclNetProperties_v8_t);
    NET_COMMON(ncclNet_v8_t);

    SIZE(ncclNetVDeviceProps_v9_t);
    PROPS_V9(ncclNetProperties_v9_t);
    NET_COMMON(ncclNet_v9_t);
    OFF(ncclNet_v9_t, makeVDevice);

    SIZE(ncclNetCommConfig_v10_t);
    OFF(ncclNetCommConfig_v10_t, trafficClass);
    PROPS_V9(ncclNetProperties_v10_t);
    NET_COMMON(ncclNet_v10_t);
    OFF(ncclNet_v10_t, makeVDevice);

    PROPS_V9(ncclNetProperties_v11_t);
    OFF(ncclNetProperties_v11_t, maxMultiRequestSize);
    SIZE(ncclNetAttr_v11_t);
    OFF(ncclNetAttr_v11_t, recvCommAttr);
    OFF(ncclNetAttr_v11_t, op);
    OFF(ncclNetAttr_v11_t, algo);
    OFF(ncclNetAttr_v11_t, proto);
    NET_COMMON(ncclNet_v11_t);
    OFF(ncclNet_v11_t, makeVDevice);
    OFF(ncclNet_v11_t, finalize);
    OFF(ncclNet_v11_t, setNetAttr);

#if JM_HAVE_V12
    SIZE(ncclNetVDeviceProps_v12_t);
    PROPS_V9(ncclNetProperties_v12_t);
    OFF(ncclNetProperties_v12_t, maxMultiRequestSize);
    OFF(ncclNetProperties_v12_t, railId);
    OFF(ncclNetProperties_v12_t, planeId);
    SIZE(ncclNetCommConfig_v12_t);
    SIZE(ncclNetAttr_v12_t);
    OFF(ncclNetAttr_v12_t, recvCommAttr);
    OFF(ncclNetAttr_v12_t, proto);
    NET_COMMON(ncclNet_v12_t);
    OFF(ncclNet_v12_t, makeVDevice);
    OFF(ncclNet_v12_t, finalize);
    OFF(ncclNet_v12_t, setNetAttr);
#endif
    return 0;
}
