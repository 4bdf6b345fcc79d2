/*
 * ncclCollNetPlugin_v11: NCCL's CollNet API, through which a network plugin runs a whole all-reduce itself (NCCL's
 * proxy calls iallreduce once per all-reduce step instead of the 2(n-1) sends and receives of its ring). Like net.c
 * this holds no logic: each entry point calls one upcall into Java (io.jmesh.nccl.CollNetPlugin), over the same JVM,
 * transport and contexts as the net plugin (init and finalize count contexts with net.c's).
 *
 * NCCL inits the CollNet whenever the library exports it, but uses it only with NCCL_COLLNET_ENABLE=1 (and two nodes
 * or more). JMESH_COLLNET=0 hides it: init fails quietly, which NCCL takes as "no CollNet" without a warning.
 * iallgather and ireducescatter are NULL, which tells NCCL not to use CollNet for those collectives.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "jmesh_shim.h"
#include "nccl_collnet_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define UPCALL(fn, ...)                                                                                                \
    do {                                                                                                               \
        const jm_upcalls_t* u_ = jm_upcalls(__func__);                                                                 \
        return u_ ? (ncclResult_t)u_->fn(__VA_ARGS__) : ncclInternalError;                                             \
    } while (0)

static ncclResult_t coll_init(void** ctx, uint64_t commId, ncclDebugLogger_t logFunction) {
    const char* env = getenv("JMESH_COLLNET");
    if (env != NULL && strcmp(env, "1") != 0) {
        /* NCCL inits its net plugin before the CollNet, so net.c already holds NCCL's logger */
        if (strcmp(env, "0") == 0) {
            jm_log(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, __FILE__, __LINE__,
                   "jmesh: CollNet hidden (JMESH_COLLNET=0): NCCL runs its collectives over the net plugin");
        } else {
            jm_log(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__,
                   "jmesh: JMESH_COLLNET=%s is neither 0 (hide the CollNet) nor 1 (offer it): CollNet hidden; "
                   "set it to 0 or 1", env);
        }
        return ncclInternalError;
    }
    return jm_init_context(ctx, commId, -1, 11, logFunction);
}

static ncclResult_t coll_devices(int* ndev) { UPCALL(devices, ndev); }

static ncclResult_t coll_getProperties(int dev, ncclNetProperties_v11_t* props) {
    const jm_upcalls_t* u = jm_upcalls(__func__);
    jm_slot_t p[JM_P_SLOTS] = {{0}};
    ncclResult_t rc = u ? (ncclResult_t)u->collGetProperties(dev, p) : ncclInternalError;
    if (rc == ncclSuccess) {
        jm_copy_props_v11(p, props);
    }
    return rc;
}

static ncclResult_t coll_listen(void* ctx, int dev, void* handle, void** listenComm) {
    UPCALL(listen, ctx, dev, handle, listenComm);
}

static ncclResult_t coll_connect(void* handles[], int nranks, int rank, void* listenComm, void** collComm) {
    UPCALL(collConnect, handles, nranks, rank, listenComm, collComm);
}

static ncclResult_t coll_reduceSupport(int dataType, int redOp, int* supported) {
    UPCALL(reduceSupport, dataType, redOp, supported);
}

static ncclResult_t coll_regMr(void* collComm, void* data, size_t size, int type, void** mhandle) {
    UPCALL(collRegMr, collComm, data, size, type, 0, -1, mhandle);
}

static ncclResult_t coll_regMrDmaBuf(void* collComm, void* data, size_t size, int type, uint64_t offset, int fd,
                                     void** mhandle) {
    UPCALL(collRegMr, collComm, data, size, type, offset, fd, mhandle);
}

static ncclResult_t coll_deregMr(void* collComm, void* mhandle) { UPCALL(collDeregMr, collComm, mhandle); }

static ncclResult_t coll_iallreduce(void* collComm, void* sendData, void* recvData, size_t count, int dataType,
                                    int redOp, void* sendMhandle, void* recvMhandle, void** request) {
    UPCALL(iallreduce, collComm, sendData, recvData, count, dataType, redOp, sendMhandle, recvMhandle, request);
}

/* The CollNet registers host memory only (ptrSupport HOST), which the CPU reads and writes: once test() reported an
   operation done its result is in place, so a flush has nothing to wait for (a NULL request means done). */
static ncclResult_t coll_iflush(void* collComm, void* data, int size, void* mhandle, void** request) {
    *request = NULL;
    return ncclSuccess;
}

static ncclResult_t coll_test(void* request, int* done, int* size) { UPCALL(collTest, request, done, size); }
static ncclResult_t coll_closeColl(void* collComm) { UPCALL(closeColl, collComm); }
static ncclResult_t coll_closeListen(void* listenComm) { UPCALL(closeListen, listenComm); }

EXPORT const jm_collnet_v11_t ncclCollNetPlugin_v11 = {
    .name = "jmesh",
    .init = coll_init,
    .devices = coll_devices,
    .getProperties = coll_getProperties,
    .listen = coll_listen,
    .connect = coll_connect,
    .reduceSupport = coll_reduceSupport,
    .regMr = coll_regMr,
    .regMrDmaBuf = coll_regMrDmaBuf,
    .deregMr = coll_deregMr,
    .iallreduce = coll_iallreduce,
    .iallgather = NULL,
    .ireducescatter = NULL,
    .iflush = coll_iflush,
    .test = coll_test,
    .closeColl = coll_closeColl,
    .closeListen = coll_closeListen,
    .makeVDevice = NULL,
    .finalize = jm_finalize,
};
