/*
 * libnccl-net-jmesh.so: the NCCL net plugin entry points, versions 12 down to 8. They hold no transport logic: each
 * one converts between NCCL's version-specific argument layout and the single upcall table the Java adapter
 * (io.jmesh.nccl) hands over at bootstrap, and calls through it.
 *
 * NCCL takes the newest ncclNetPlugin_vN it knows (2.30: v12; 2.28: v11). v11 and v12 call init once per
 * communicator and finalize each; v8 to v10 call init once and never finalize, so with those the plugin pins itself in
 * memory (NCCL may dlclose it while the JVM still holds the log helper's address).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jmesh_shim.h"
#include "nccl_net_abi.h"

#define PLUGIN_NAME "jmesh"
#define EXPORT __attribute__((visibility("default")))

static jm_boot_t g_boot;
static volatile ncclDebugLogger_t g_logger;
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_started;  /* the Java side has filled g_boot.upcalls */
static int g_contexts; /* open v11+ contexts, or 1 once a v8-v10 init succeeded */

#define UP (g_boot.upcalls)

/* Every entry point but init: NCCL never calls them before a successful init, but a caller that does gets an error,
   not a jump through an empty table. */
#define REQUIRE_STARTED()                                                                                        \
    do {                                                                                                         \
        if (!g_started) {                                                                                        \
            jm_log(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, "jmesh: %s called before a successful init", __func__); \
            return ncclInternalError;                                                                            \
        }                                                                                                        \
    } while (0)

/* ---- logging -------------------------------------------------------------------------------------------------- */

void jm_log(int level, uint64_t flags, const char* file, int line, const char* fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ncclDebugLogger_t logger = g_logger;
    if (logger != NULL) {
        logger((ncclDebugLogLevel)level, (unsigned long)flags, file, line, "%s", msg);
    } else if (level == NCCL_LOG_WARN) {
        fprintf(stderr, "jmesh NCCL plugin: %s\n", msg);
    }
}

/* What Java's NcclLogAppender calls for each event: a fixed-argument function, so Java never calls a vararg. */
static void log_from_java(int level, uint64_t flags, const char* file, int line, const char* msg) {
    ncclDebugLogger_t logger = g_logger;
    if (logger != NULL) {
        logger((ncclDebugLogLevel)level, (unsigned long)flags, file ? file : "jmesh", line, "%s", msg ? msg : "");
    } else if (level <= NCCL_LOG_WARN) {
        fprintf(stderr, "jmesh NCCL plugin: %s\n", msg ? msg : "");
    }
}

/* ---- start-up and shut-down ------------------------------------------------------------------------------------ */

/* Pins this library: it stays mapped after NCCL's dlclose. */
static void pin_library(void) {
    Dl_info info;
    if (dladdr((void*)&pin_library, &info) && info.dli_fname) {
        void* self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        (void)self; /* the extra reference is never dropped on purpose */
    }
}

static ncclResult_t start(ncclDebugLogger_t logFunction) {
    if (logFunction != NULL) {
        g_logger = logFunction;
    }
    if (g_started) {
        return ncclSuccess;
    }
    memset(&g_boot, 0, sizeof g_boot);
    g_boot.magic = JM_BOOT_MAGIC;
    g_boot.abiVersion = JM_ABI_VERSION;
    g_boot.upcallCount = JM_UPCALL_COUNT;
    g_boot.log = log_from_java;
    char why[JM_ERROR_BYTES];
    int rc = jm_java_start(&g_boot, why, sizeof why);
    if (rc != ncclSuccess) {
        jm_log(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, "jmesh: plugin not started: %s", why);
        if (g_logger != NULL) {
            fprintf(stderr, "jmesh NCCL plugin: not started: %s\n", why); /* also when NCCL_DEBUG is unset */
        }
        return (ncclResult_t)rc;
    }
    void** slots = (void**)&g_boot.upcalls;
    for (int i = 0; i < JM_UPCALL_COUNT; i++) {
        if (slots[i] == NULL) {
            jm_log(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, "jmesh: the Java bootstrap left upcall %d empty", i);
            return ncclInternalError;
        }
    }
    g_started = 1;
    return ncclSuccess;
}

/* After the last context: Java frees its stubs and unhooks the log appender, so nothing points into this library. */
static void stop(void) {
    if (g_started) {
        jm_java_release();
        memset(&g_boot.upcalls, 0, sizeof g_boot.upcalls);
        g_started = 0;
    }
}

static ncclResult_t init_context(void** ctx, uint64_t commId, int trafficClass, int apiVersion,
                                 ncclDebugLogger_t logFunction) {
    pthread_mutex_lock(&g_init_lock);
    ncclResult_t rc = start(logFunction);
    if (rc == ncclSuccess) {
        void* c = NULL;
        rc = (ncclResult_t)UP.init(&c, commId, trafficClass, apiVersion);
        if (rc == ncclSuccess) {
            g_contexts++;
            if (ctx) {
                *ctx = c;
            }
        } else if (g_contexts == 0) {
            stop();
        }
    }
    pthread_mutex_unlock(&g_init_lock);
    return rc;
}

static ncclResult_t init_once(ncclDebugLogger_t logFunction, int apiVersion) {
    pthread_mutex_lock(&g_init_lock);
    int already = g_contexts > 0;
    pthread_mutex_unlock(&g_init_lock);
    if (already) {
        return ncclSuccess;
    }
    ncclResult_t rc = init_context(NULL, 0, -1, apiVersion, logFunction);
    if (rc == ncclSuccess) {
        pin_library(); /* no finalize will come before NCCL's dlclose */
    }
    return rc;
}

static ncclResult_t jm_finalize(void* ctx) {
    pthread_mutex_lock(&g_init_lock);
    ncclResult_t rc = ncclSuccess;
    if (g_started) {
        int left = UP.finalize(ctx);
        if (left < 0) {
            rc = (ncclResult_t)(-left);
        } else {
            g_contexts = left;
            if (left == 0) {
                stop();
            }
        }
    }
    pthread_mutex_unlock(&g_init_lock);
    return rc;
}

/* ---- common entry points (same signature in every version) ---------------------------------------------------- */

static ncclResult_t jm_devices(int* ndev) {
    REQUIRE_STARTED();
    return (ncclResult_t)UP.devices(ndev);
}

static ncclResult_t jm_accept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v8_t** recvDevComm) {
    REQUIRE_STARTED();
    if (recvDevComm != NULL && *recvDevComm != NULL) {
        jm_log(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, "jmesh: NCCL asked for device offload, which jmesh does "
               "not offer (netDeviceType HOST)");
        return ncclInternalError;
    }
    return (ncclResult_t)UP.accept(listenComm, recvComm);
}

static ncclResult_t jm_regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
    REQUIRE_STARTED();
    return (ncclResult_t)UP.regMr(comm, data, size, type, 0, -1, mhandle);
}

static ncclResult_t jm_regMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                   void** mhandle) {
    REQUIRE_STARTED();
    return (ncclResult_t)UP.regMr(comm, data, size, type, offset, fd, mhandle);
}

static ncclResult_t jm_deregMr(void* comm, void* mhandle) {
    REQUIRE_STARTED();
    return (ncclResult_t)UP.deregMr(comm, mhandle);
}

static ncclResult_t jm_iflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
    REQUIRE_STARTED();
    return (ncclResult_t)UP.iflush(recvComm, n, data, sizes, mhandles, request);
}

static ncclResult_t jm_test(void* request, int* done, int* sizes) {
    REQUIRE_STARTED();
    return (ncclResult_t)UP.test(request, done, sizes);
}

static ncclResult_t jm_closeSend(void* comm) {
    REQUIRE_STARTED();
    return (ncclResult_t)UP.closeSend(comm);
}

static ncclResult_t jm_closeRecv(void* comm) {
    REQUIRE_STARTED();
    return (ncclResult_t)UP.closeRecv(comm);
}

static ncclResult_t jm_closeListen(void* comm) {
    REQUIRE_STARTED();
    return (ncclResult_t)UP.closeListen(comm);
}

/* Device offload (UNPACK and friends) is not offered, so NCCL never needs these; they answer "nothing to do". */
static ncclResult_t jm_getDeviceMr(void* comm, void* mhandle, void** dptr) {
    (void)comm;
    (void)mhandle;
    if (dptr) {
        *dptr = NULL;
    }
    return ncclSuccess;
}

static ncclResult_t jm_irecvConsumed(void* recvComm, int n, void* request) {
    (void)recvComm;
    (void)n;
    (void)request;
    return ncclSuccess;
}

/* Per-operation hints (peers, flows, algorithm); the transport has nothing to tune with them yet. */
#if JM_HAVE_V12
static ncclResult_t setNetAttr_v12(void* ctx, ncclNetAttr_v12_t* attr) {
    (void)ctx;
    (void)attr;
    return ncclSuccess;
}
#endif

static ncclResult_t setNetAttr_v11(void* ctx, ncclNetAttr_v11_t* attr) {
    (void)ctx;
    (void)attr;
    return ncclSuccess;
}

static ncclResult_t check_offload(ncclNetDeviceHandle_v8_t** devComm) {
    if (devComm != NULL && *devComm != NULL) {
        jm_log(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, "jmesh: NCCL asked for device offload, which jmesh does "
               "not offer (netDeviceType HOST)");
        return ncclInternalError;
    }
    return ncclSuccess;
}

/* ---- properties, per version ----------------------------------------------------------------------------------- */

static ncclResult_t read_props(int dev, jm_slot_t* p) {
    REQUIRE_STARTED();
    memset(p, 0, sizeof(jm_slot_t) * JM_P_SLOTS);
    return (ncclResult_t)UP.getProperties(dev, p);
}

#define COPY_COMMON(out, p)                                                     \
    do {                                                                        \
        (out)->name = (char*)(intptr_t)(p)[JM_P_NAME].i;                        \
        (out)->pciPath = (char*)(intptr_t)(p)[JM_P_PCI_PATH].i;                 \
        (out)->guid = (uint64_t)(p)[JM_P_GUID].i;                               \
        (out)->ptrSupport = (int)(p)[JM_P_PTR_SUPPORT].i;                       \
        (out)->regIsGlobal = (int)(p)[JM_P_REG_IS_GLOBAL].i;                    \
        (out)->speed = (int)(p)[JM_P_SPEED].i;                                  \
        (out)->port = (int)(p)[JM_P_PORT].i;                                    \
        (out)->latency = (float)(p)[JM_P_LATENCY].d;                            \
        (out)->maxComms = (int)(p)[JM_P_MAX_COMMS].i;                           \
        (out)->maxRecvs = (int)(p)[JM_P_MAX_RECVS].i;                           \
        (out)->netDeviceType = (ncclNetDeviceType)(p)[JM_P_NET_DEVICE_TYPE].i;  \
        (out)->netDeviceVersion = (int)(p)[JM_P_NET_DEVICE_VERSION].i;          \
    } while (0)

#define COPY_V9(out, p)                                                                       \
    do {                                                                                      \
        COPY_COMMON(out, p);                                                                  \
        (out)->forceFlush = (int)(p)[JM_P_FORCE_FLUSH].i;                                     \
        int cap = (int)(sizeof((out)->vProps.devs) / sizeof((out)->vProps.devs[0]));          \
        int nd = (int)(p)[JM_P_VDEV_COUNT].i;                                                 \
        (out)->vProps.ndevs = nd < cap ? nd : cap;                                            \
        for (int k = 0; k < cap; k++) {                                                       \
            (out)->vProps.devs[k] = k < nd ? (int)(p)[JM_P_VDEVS + k].i : 0;                  \
        }                                                                                     \
        (out)->maxP2pBytes = (size_t)(p)[JM_P_MAX_P2P_BYTES].i;                               \
        (out)->maxCollBytes = (size_t)(p)[JM_P_MAX_COLL_BYTES].i;                             \
    } while (0)

static ncclResult_t getProperties_v8(int dev, ncclNetProperties_v8_t* props) {
    jm_slot_t p[JM_P_SLOTS];
    ncclResult_t rc = read_props(dev, p);
    if (rc == ncclSuccess) {
        memset(props, 0, sizeof *props);
        COPY_COMMON(props, p);
    }
    return rc;
}

static ncclResult_t getProperties_v9(int dev, ncclNetProperties_v9_t* props) {
    jm_slot_t p[JM_P_SLOTS];
    ncclResult_t rc = read_props(dev, p);
    if (rc == ncclSuccess) {
        memset(props, 0, sizeof *props);
        COPY_V9(props, p);
    }
    return rc;
}

static ncclResult_t getProperties_v10(int dev, ncclNetProperties_v10_t* props) {
    jm_slot_t p[JM_P_SLOTS];
    ncclResult_t rc = read_props(dev, p);
    if (rc == ncclSuccess) {
        memset(props, 0, sizeof *props);
        COPY_V9(props, p);
    }
    return rc;
}

static ncclResult_t getProperties_v11(int dev, ncclNetProperties_v11_t* props) {
    jm_slot_t p[JM_P_SLOTS];
    ncclResult_t rc = read_props(dev, p);
    if (rc == ncclSuccess) {
        memset(props, 0, sizeof *props);
        COPY_V9(props, p);
        props->maxMultiRequestSize = (int)p[JM_P_MAX_MULTI_REQUEST_SIZE].i;
    }
    return rc;
}

#if JM_HAVE_V12
static ncclResult_t getProperties_v12(int dev, ncclNetProperties_v12_t* props) {
    jm_slot_t p[JM_P_SLOTS];
    ncclResult_t rc = read_props(dev, p);
    if (rc == ncclSuccess) {
        memset(props, 0, sizeof *props);
        COPY_V9(props, p);
        props->maxMultiRequestSize = (int)p[JM_P_MAX_MULTI_REQUEST_SIZE].i;
        props->railId = (int16_t)p[JM_P_RAIL_ID].i;
        props->planeId = (int16_t)p[JM_P_PLANE_ID].i;
    }
    return rc;
}
#endif

/* ---- v12 / v11 ------------------------------------------------------------------------------------------------- */

static ncclResult_t init_v11(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config,
                             ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
    (void)profFunction;
    return init_context(ctx, commId, config ? config->trafficClass : -1, 11, logFunction);
}

#if JM_HAVE_V12
static ncclResult_t init_v12(void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config,
                             ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
    (void)profFunction;
    return init_context(ctx, commId, config ? config->trafficClass : -1, 12, logFunction);
}
#endif

static ncclResult_t listen_ctx(void* ctx, int dev, void* handle, void** listenComm) {
    REQUIRE_STARTED();
    return (ncclResult_t)UP.listen(ctx, dev, handle, listenComm);
}

static ncclResult_t connect_ctx(void* ctx, int dev, void* handle, void** sendComm,
                                ncclNetDeviceHandle_v8_t** sendDevComm) {
    REQUIRE_STARTED();
    ncclResult_t rc = check_offload(sendDevComm);
    return rc != ncclSuccess ? rc : (ncclResult_t)UP.connect(ctx, dev, handle, sendComm);
}

static ncclResult_t isend_v10(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                              void** request) {
    REQUIRE_STARTED();
    (void)phandle;
    return (ncclResult_t)UP.isend(sendComm, data, size, tag, mhandle, request);
}

static ncclResult_t irecv_v10(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                              void** phandles, void** request) {
    REQUIRE_STARTED();
    (void)phandles;
    return (ncclResult_t)UP.irecv(recvComm, n, data, sizes, tags, mhandles, request);
}

/* Virtual NICs (fusing several devices into one) are not offered; NCCL then uses the physical devices. */
#if JM_HAVE_V12
EXPORT const ncclNet_v12_t ncclNetPlugin_v12 = {
    .name = PLUGIN_NAME,
    .init = init_v12,
    .devices = jm_devices,
    .getProperties = getProperties_v12,
    .listen = listen_ctx,
    .connect = connect_ctx,
    .accept = jm_accept,
    .regMr = jm_regMr,
    .regMrDmaBuf = jm_regMrDmaBuf,
    .deregMr = jm_deregMr,
    .isend = isend_v10,
    .irecv = irecv_v10,
    .iflush = jm_iflush,
    .test = jm_test,
    .closeSend = jm_closeSend,
    .closeRecv = jm_closeRecv,
    .closeListen = jm_closeListen,
    .getDeviceMr = jm_getDeviceMr,
    .irecvConsumed = jm_irecvConsumed,
    .makeVDevice = NULL,
    .finalize = jm_finalize,
    .setNetAttr = setNetAttr_v12,
};
#endif

EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = PLUGIN_NAME,
    .init = init_v11,
    .devices = jm_devices,
    .getProperties = getProperties_v11,
    .listen = listen_ctx,
    .connect = connect_ctx,
    .accept = jm_accept,
    .regMr = jm_regMr,
    .regMrDmaBuf = jm_regMrDmaBuf,
    .deregMr = jm_deregMr,
    .isend = isend_v10,
    .irecv = irecv_v10,
    .iflush = jm_iflush,
    .test = jm_test,
    .closeSend = jm_closeSend,
    .closeRecv = jm_closeRecv,
    .closeListen = jm_closeListen,
    .getDeviceMr = jm_getDeviceMr,
    .irecvConsumed = jm_irecvConsumed,
    .makeVDevice = NULL,
    .finalize = jm_finalize,
    .setNetAttr = setNetAttr_v11,
};

/* ---- v10 ------------------------------------------------------------------------------------------------------- */

static ncclResult_t init_v10(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
    (void)profFunction;
    return init_once(logFunction, 10);
}

static ncclResult_t listen_noctx(int dev, void* handle, void** listenComm) {
    REQUIRE_STARTED();
    return (ncclResult_t)UP.listen(NULL, dev, handle, listenComm);
}

static ncclResult_t connect_v10(int dev, ncclNetCommConfig_v10_t* config, void* handle, void** sendComm,
                                ncclNetDeviceHandle_v10_t** sendDevComm) {
    REQUIRE_STARTED();
    (void)config;
    ncclResult_t rc = check_offload(sendDevComm);
    return rc != ncclSuccess ? rc : (ncclResult_t)UP.connect(NULL, dev, handle, sendComm);
}

EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = PLUGIN_NAME,
    .init = init_v10,
    .devices = jm_devices,
    .getProperties = getProperties_v10,
    .listen = listen_noctx,
    .connect = connect_v10,
    .accept = jm_accept,
    .regMr = jm_regMr,
    .regMrDmaBuf = jm_regMrDmaBuf,
    .deregMr = jm_deregMr,
    .isend = isend_v10,
    .irecv = irecv_v10,
    .iflush = jm_iflush,
    .test = jm_test,
    .closeSend = jm_closeSend,
    .closeRecv = jm_closeRecv,
    .closeListen = jm_closeListen,
    .getDeviceMr = jm_getDeviceMr,
    .irecvConsumed = jm_irecvConsumed,
    .makeVDevice = NULL,
};

/* ---- v9 -------------------------------------------------------------------------------------------------------- */

static ncclResult_t init_v9(ncclDebugLogger_t logFunction) {
    return init_once(logFunction, 9);
}

static ncclResult_t init_v8(ncclDebugLogger_t logFunction) {
    return init_once(logFunction, 8);
}

static ncclResult_t connect_v8(int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v8_t** sendDevComm) {
    REQUIRE_STARTED();
    ncclResult_t rc = check_offload(sendDevComm);
    return rc != ncclSuccess ? rc : (ncclResult_t)UP.connect(NULL, dev, handle, sendComm);
}

static ncclResult_t connect_v9(int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v9_t** sendDevComm) {
    REQUIRE_STARTED();
    ncclResult_t rc = check_offload(sendDevComm);
    return rc != ncclSuccess ? rc : (ncclResult_t)UP.connect(NULL, dev, handle, sendComm);
}

static ncclResult_t isend_v9(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request) {
    REQUIRE_STARTED();
    return (ncclResult_t)UP.isend(sendComm, data, size, tag, mhandle, request);
}

static ncclResult_t irecv_v9(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                             void** request) {
    REQUIRE_STARTED();
    return (ncclResult_t)UP.irecv(recvComm, n, data, sizes, tags, mhandles, request);
}

EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = PLUGIN_NAME,
    .init = init_v9,
    .devices = jm_devices,
    .getProperties = getProperties_v9,
    .listen = listen_noctx,
    .connect = connect_v9,
    .accept = jm_accept,
    .regMr = jm_regMr,
    .regMrDmaBuf = jm_regMrDmaBuf,
    .deregMr = jm_deregMr,
    .isend = isend_v9,
    .irecv = irecv_v9,
    .iflush = jm_iflush,
    .test = jm_test,
    .closeSend = jm_closeSend,
    .closeRecv = jm_closeRecv,
    .closeListen = jm_closeListen,
    .getDeviceMr = jm_getDeviceMr,
    .irecvConsumed = jm_irecvConsumed,
    .makeVDevice = NULL,
};

/* ---- v8: int sizes --------------------------------------------------------------------------------------------- */

static ncclResult_t isend_v8(void* sendComm, void* data, int size, int tag, void* mhandle, void** request) {
    REQUIRE_STARTED();
    if (size < 0) {
        return ncclInvalidArgument;
    }
    return (ncclResult_t)UP.isend(sendComm, data, (size_t)size, tag, mhandle, request);
}

static ncclResult_t irecv_v8(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                             void** request) {
    REQUIRE_STARTED();
    size_t wide[8];
    if (n < 1 || n > 8) {
        return ncclInvalidArgument;
    }
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0) {
            return ncclInvalidArgument;
        }
        wide[i] = (size_t)sizes[i];
    }
    return (ncclResult_t)UP.irecv(recvComm, n, data, wide, tags, mhandles, request);
}

EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = PLUGIN_NAME,
    .init = init_v8,
    .devices = jm_devices,
    .getProperties = getProperties_v8,
    .listen = listen_noctx,
    .connect = connect_v8,
    .accept = jm_accept,
    .regMr = jm_regMr,
    .regMrDmaBuf = jm_regMrDmaBuf,
    .deregMr = jm_deregMr,
    .isend = isend_v8,
    .irecv = irecv_v8,
    .iflush = jm_iflush,
    .test = jm_test,
    .closeSend = jm_closeSend,
    .closeRecv = jm_closeRecv,
    .closeListen = jm_closeListen,
    .getDeviceMr = jm_getDeviceMr,
    .irecvConsumed = jm_irecvConsumed,
};
