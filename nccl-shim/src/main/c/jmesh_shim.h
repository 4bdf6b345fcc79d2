/*
 * The contract between the C shim and the Java adapter (io.jmesh.nccl). Java fills jm_boot.upcalls with FFM upcall
 * stubs in exactly this order; Java's side of it is io.jmesh.nccl.ShimAbi. Change both together and bump
 * JM_ABI_VERSION, which Java checks on bootstrap, so a library and jars from different builds refuse each other.
 */
#ifndef JMESH_SHIM_H
#define JMESH_SHIM_H

#include <stddef.h>
#include <stdint.h>

#define JM_BOOT_MAGIC 0x4A4D4E43u /* "JMNC" */
#define JM_ABI_VERSION 3
#define JM_ERROR_BYTES 2048

/*
 * Device properties as Java writes them: 27 slots of 8 bytes, one per field (JM_P_<field name>), whatever NCCL's
 * version; the C entry points copy them into the layout of the version NCCL asked for. Pointers and integers are
 * int64, latency a double.
 */
enum {
    JM_P_name, JM_P_pciPath, JM_P_guid, JM_P_ptrSupport, JM_P_regIsGlobal, JM_P_forceFlush, JM_P_speed, JM_P_port,
    JM_P_latency, JM_P_maxComms, JM_P_maxRecvs, JM_P_netDeviceType, JM_P_netDeviceVersion, JM_P_vdevCount,
    JM_P_vdevs, /* 8 slots */
    JM_P_maxP2pBytes = JM_P_vdevs + 8, JM_P_maxCollBytes, JM_P_maxMultiRequestSize, JM_P_railId, JM_P_planeId,
    JM_P_SLOTS
};

typedef union {
    int64_t i;
    double d;
} jm_slot_t;

/*
 * The upcalls. Every one returns an ncclResult_t value; pointers NCCL passes are handed through as they are, and
 * output pointers (void** ctx, comm, request, mhandle) are written by Java.
 */
typedef struct {
    int (*init)(void** ctx, uint64_t commId, int trafficClass, int apiVersion);
    int (*devices)(int* ndev);
    int (*getProperties)(int dev, jm_slot_t* props);
    int (*listen)(void* ctx, int dev, void* handle, void** listenComm);
    int (*connect)(void* ctx, int dev, void* handle, void** sendComm);
    int (*accept)(void* listenComm, void** recvComm);
    int (*regMr)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
    int (*deregMr)(void* comm, void* mhandle);
    int (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request);
    int (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** request);
    int (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
    int (*test)(void* request, int* done, int* sizes);
    int (*closeSend)(void* sendComm);
    int (*closeRecv)(void* recvComm);
    int (*closeListen)(void* listenComm);
    /* Returns the number of contexts still open (>= 0), or a negative ncclResult_t. */
    int (*finalize)(void* ctx);
    /* CollNet (collnet.c): listen, closeListen, init, devices and finalize are the ones above */
    int (*collGetProperties)(int dev, jm_slot_t* props);
    int (*collConnect)(void** handles, int nranks, int rank, void* listenComm, void** collComm);
    int (*reduceSupport)(int dataType, int redOp, int* supported);
    int (*collRegMr)(void* collComm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
    int (*collDeregMr)(void* collComm, void* mhandle);
    int (*iallreduce)(void* collComm, void* sendData, void* recvData, size_t count, int dataType, int redOp,
                      void* sendMhandle, void* recvMhandle, void** request);
    int (*collTest)(void* request, int* done, int* size);
    int (*closeColl)(void* collComm);
} jm_upcalls_t;

#define JM_UPCALL_COUNT ((int)(sizeof(jm_upcalls_t) / sizeof(void*)))

/* The log helper Java calls (through a downcall) for every Log4j event; it forwards to NCCL's logger. */
typedef void (*jm_log_fn)(int level, uint64_t flags, const char* file, int line, const char* msg);

typedef struct {
    uint32_t magic;
    uint32_t abiVersion;
    uint32_t upcallCount;
    uint32_t reserved;
    jm_log_fn log;          /* C -> Java: where log events go */
    void (*release)(void);  /* Java -> C: after the last context, frees the upcalls and unhooks logging */
    jm_upcalls_t upcalls;   /* Java -> C: filled by bootstrap */
    char error[JM_ERROR_BYTES]; /* Java writes why bootstrap failed */
} jm_boot_t;

/* jvm.c: starts or joins the JVM and runs the Java bootstrap, which fills boot; 0, or an ncclResult_t and why. */
int jm_java_start(jm_boot_t* boot, char* why, size_t whyLen);

/* net.c, for collnet.c: the upcalls once Java filled them, else NULL (after logging that `fn` came too early) */
const jm_upcalls_t* jm_upcalls(const char* fn);

/* net.c: logging from C */
void jm_log(int level, uint64_t flags, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
