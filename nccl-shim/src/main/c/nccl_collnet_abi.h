/*
 * jmesh's own declaration of NCCL's CollNet plugin ABI, version 11 (NCCL 2.28 and 2.29 load ncclCollNetPlugin_v11
 * from the library that gave them ncclNetPlugin_vN), and what collnet.c borrows from net.c.
 *
 * NVIDIA's example net-plugin headers, which NcclAbiCheckTest compares nccl_net_abi.h with, do not declare the CollNet
 * struct, so this file stays jmesh's own under -DJMESH_USE_NCCL_HEADERS too; it uses only types those headers
 * declare. The struct is a name and 18 function pointers in NCCL's order (src/include/plugin/net/net_v11.h of
 * NVIDIA/nccl v2.28.9-1); data types and reduction ops travel as int (NCCL's enums are int-sized).
 */
#ifndef JMESH_NCCL_COLLNET_ABI_H
#define JMESH_NCCL_COLLNET_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "jmesh_shim.h"
#include "nccl_net_abi.h"

/* one part of a scattered buffer (iallgather, ireducescatter) */
typedef struct {
    void* mhandle;
    void* address;
    size_t size;
} jm_collnet_sge_v11_t;

typedef struct {
    const char* name;
    ncclResult_t (*init)(void** ctx, uint64_t commId, ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int* ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t* props);
    ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
    ncclResult_t (*connect)(void* handles[], int nranks, int rank, void* listenComm, void** collComm);
    ncclResult_t (*reduceSupport)(int dataType, int redOp, int* supported);
    ncclResult_t (*regMr)(void* collComm, void* data, size_t size, int type, void** mhandle);
    ncclResult_t (*regMrDmaBuf)(void* collComm, void* data, size_t size, int type, uint64_t offset, int fd,
                                void** mhandle);
    ncclResult_t (*deregMr)(void* collComm, void* mhandle);
    ncclResult_t (*iallreduce)(void* collComm, void* sendData, void* recvData, size_t count, int dataType, int redOp,
                               void* sendMhandle, void* recvMhandle, void** request);
    ncclResult_t (*iallgather)(void* collComm, void* sendData, int nRecvParts, jm_collnet_sge_v11_t* recvParts,
                               size_t bytesPerRank, size_t windowOffset, size_t windowBytes, void* sendMhandle,
                               void** request);
    ncclResult_t (*ireducescatter)(void* collComm, int nSendParts, jm_collnet_sge_v11_t* sendParts, void* recvData,
                                   size_t bytesPerRank, size_t windowOffset, size_t windowBytes, int dataType,
                                   int redOp, void* recvMhandle, void** request);
    ncclResult_t (*iflush)(void* collComm, void* data, int size, void* mhandle, void** request);
    ncclResult_t (*test)(void* request, int* done, int* size);
    ncclResult_t (*closeColl)(void* collComm);
    ncclResult_t (*closeListen)(void* listenComm);
    ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v11_t* props);
    ncclResult_t (*finalize)(void* ctx);
} jm_collnet_v11_t;

/* net.c: a context of the net plugin's (the JVM, the transport), shared by the CollNet; its finalize */
ncclResult_t jm_init_context(void** ctx, uint64_t commId, int trafficClass, int apiVersion,
                             ncclDebugLogger_t logFunction);
ncclResult_t jm_finalize(void* ctx);
/* net.c: property slots (jmesh_shim.h) into NCCL's v11 layout */
void jm_copy_props_v11(const jm_slot_t* p, ncclNetProperties_v11_t* props);

#endif
