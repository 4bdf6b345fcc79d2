/*
 * libnccl-net-jmesh.so: the NCCL net plugin entry points, versions 12 down to 8. They hold no transport logic: each
 * one converts between NCCL's version-specific argument layout and the single upcall table the Java adapter
 * (io.jmesh.nccl) hands over at bootstrap, and calls through it. The five exported tables come from one list
 * (NET_TABLE at the end); only what differs between versions is written per version.
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
#include <string.h>

#include "jmesh_shim.h"
#include "nccl_net_abi.h"
#include "nccl_collnet_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define WARN(...) jm_log(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, __VA_ARGS__)

static jm_boot_t g_boot;
static volatile ncclDebugLogger_t g_logger;
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_started;  /* the Java side has filled g_boot.upcalls */
static int g_contexts; /* open v11+ contexts, or 1 once a v8-v10 init succeeded */

/* What Java's NcclLogAppender calls for each event: a fixed-argument function, so Java never calls a vararg. */
static void log_line(int level, uint64_t flags, const char* file, int line, const char* msg) {
    ncclDebugLogger_t logger = g_logger;
    if (logger != NULL) {
        logger((ncclDebugLogLevel)level, (unsigned long)flags, file ? file : "jmesh", line, "%s", msg ? msg : "");
    } else if (level <= NCCL_LOG_WARN) {
        fprintf(stderr, "jmesh NCCL plugin: %s\n", msg ? msg : "");
    }
}

void jm_log(int level, uint64_t flags, const char* file, int line, const char* fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_line(level, flags, file, line, msg);
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
    g_boot.log = log_line;
    char why[JM_ERROR_BYTES];
    int rc = jm_java_start(&g_boot, why, sizeof why);
    if (rc != ncclSuccess) {
        WARN("jmesh: plugin not started: %s", why);
        if (g_logger != NULL) {
            fprintf(stderr, "jmesh NCCL plugin: not started: %s\n", why); /* also when NCCL_DEBUG is unset */
        }
        return (ncclResult_t)rc;
    }
    void** slots = (void**)&g_boot.upcalls;
    for (int i = 0; i < JM_UPCALL_COUNT; i++) {
        if (slots[i] == NULL) {
            WARN("jmesh: the Java bootstrap left upcall %d empty", i);
            return ncclInternalError;
        }
    }
    g_started = 1;
    return ncclSuccess;
}

/* After the last context: Java frees its stubs and unhooks the log appender, so nothing points into this library. */
static void stop(void) {
    if (g_started) {
        g_boot.release();
        memset(&g_boot.upcalls, 0, sizeof g_boot.upcalls);
        g_started = 0;
    }
}

/* v11+: one context per call. v8-v10: init once, and pin the library, as no finalize comes before NCCL's dlclose. */
ncclResult_t jm_init_context(void** ctx, uint64_t commId, int trafficClass, int apiVersion,
                             ncclDebugLogger_t logFunction) {
    pthread_mutex_lock(&g_init_lock);
    ncclResult_t rc = ncclSuccess;
    if (apiVersion >= 11 || g_contexts == 0) {
        void* c = NULL;
        rc = start(logFunction);
        rc = rc != ncclSuccess ? rc : (ncclResult_t)g_boot.upcalls.init(&c, commId, trafficClass, apiVersion);
        if (rc == ncclSuccess) {
            g_contexts++;
            if (ctx) {
                *ctx = c;
            }
            Dl_info self; /* v8-v10: stay mapped after NCCL's dlclose (a reference never dropped, on purpose) */
            if (apiVersion < 11 && dladdr((void*)&jm_init_context, &self) && self.dli_fname) {
                dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
            }
        } else if (g_contexts == 0) {
            stop();
        }
    }
    pthread_mutex_unlock(&g_init_lock);
    return rc;
}

ncclResult_t jm_finalize(void* ctx) {
    pthread_mutex_lock(&g_init_lock);
    int left = g_started ? g_boot.upcalls.finalize(ctx) : 0; /* contexts still open, or -ncclResult_t */
    if (left == 0) {
        stop();
    }
    g_contexts = left < 0 ? g_contexts : left;
    pthread_mutex_unlock(&g_init_lock);
    return left < 0 ? (ncclResult_t)(-left) : ncclSuccess;
}

/* NCCL never calls an entry point but init before a successful init; a caller that does gets an error, not a jump
   through an empty table. */
static ncclResult_t not_started(const char* fn) {
    WARN("jmesh: %s called before a successful init", fn);
    return ncclInternalError;
}

const jm_upcalls_t* jm_upcalls(const char* fn) {
    if (g_started) {
        return &g_boot.upcalls;
    }
    not_started(fn);
    return NULL;
}

#define CALL(upcall, ...) (g_started ? (ncclResult_t)g_boot.upcalls.upcall(__VA_ARGS__) : not_started(__func__))

/* Device offload (netDeviceType UNPACK) is not offered, so NCCL must never ask for a device handle. */
static ncclResult_t no_offload(ncclNetDeviceHandle_v8_t** devComm) {
    if (devComm == NULL || *devComm == NULL) {
        return ncclSuccess;
    }
    WARN("jmesh: NCCL asked for device offload, which jmesh does not offer (netDeviceType HOST)");
    return ncclInternalError;
}

static ncclResult_t jm_devices(int* ndev) { return CALL(devices, ndev); }
static ncclResult_t jm_deregMr(void* comm, void* mhandle) { return CALL(deregMr, comm, mhandle); }
static ncclResult_t jm_test(void* request, int* done, int* sizes) { return CALL(test, request, done, sizes); }
static ncclResult_t jm_closeSend(void* comm) { return CALL(closeSend, comm); }
static ncclResult_t jm_closeRecv(void* comm) { return CALL(closeRecv, comm); }
static ncclResult_t jm_closeListen(void* comm) { return CALL(closeListen, comm); }

static ncclResult_t jm_accept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v8_t** recvDevComm) {
    ncclResult_t rc = no_offload(recvDevComm);
    return rc != ncclSuccess ? rc : CALL(accept, listenComm, recvComm);
}

static ncclResult_t jm_regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
    return CALL(regMr, comm, data, size, type, 0, -1, mhandle);
}

static ncclResult_t jm_regMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                   void** mhandle) {
    return CALL(regMr, comm, data, size, type, offset, fd, mhandle);
}

static ncclResult_t jm_iflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
    return CALL(iflush, recvComm, n, data, sizes, mhandles, request);
}

/* Device offload is not offered, so NCCL never needs these two; they answer "nothing to do". */
static ncclResult_t jm_getDeviceMr(void* comm, void* mhandle, void** dptr) {
    if (dptr) {
        *dptr = NULL;
    }
    return ncclSuccess;
}

static ncclResult_t jm_irecvConsumed(void* recvComm, int n, void* request) { return ncclSuccess; }

/* ---- what differs between versions ---- */

/* v8 and v9 (no context) */
static ncclResult_t init_v8(ncclDebugLogger_t logFunction) { return jm_init_context(NULL, 0, -1, 8, logFunction); }
static ncclResult_t init_v9(ncclDebugLogger_t logFunction) { return jm_init_context(NULL, 0, -1, 9, logFunction); }

static ncclResult_t listen_noctx(int dev, void* handle, void** listenComm) {
    return CALL(listen, NULL, dev, handle, listenComm);
}

static ncclResult_t connect_v8(int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v8_t** sendDevComm) {
    ncclResult_t rc = no_offload(sendDevComm);
    return rc != ncclSuccess ? rc : CALL(connect, NULL, dev, handle, sendComm);
}

static ncclResult_t isend_v9(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request) {
    return CALL(isend, sendComm, data, size, tag, mhandle, request);
}

static ncclResult_t irecv_v9(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                             void** request) {
    return CALL(irecv, recvComm, n, data, sizes, tags, mhandles, request);
}

/* v8 has int sizes */
static ncclResult_t isend_v8(void* sendComm, void* data, int size, int tag, void* mhandle, void** request) {
    return g_started && size < 0 ? ncclInvalidArgument : isend_v9(sendComm, data, (size_t)size, tag, mhandle, request);
}

static ncclResult_t irecv_v8(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                             void** request) {
    size_t wide[8];
    int bad = n < 1 || n > 8;
    for (int i = 0; i < n && !bad; i++) {
        bad = sizes[i] < 0;
        wide[i] = (size_t)sizes[i];
    }
    return g_started && bad ? ncclInvalidArgument : irecv_v9(recvComm, n, data, wide, tags, mhandles, request);
}

/* v10: a profiler callback, a per-connection config and per-request profiler handles, none of which jmesh uses */
static ncclResult_t init_v10(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
    return jm_init_context(NULL, 0, -1, 10, logFunction);
}

static ncclResult_t connect_v10(int dev, ncclNetCommConfig_v10_t* config, void* handle, void** sendComm,
                                ncclNetDeviceHandle_v10_t** sendDevComm) {
    return connect_v8(dev, handle, sendComm, sendDevComm);
}

static ncclResult_t isend_v10(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                              void** request) {
    return isend_v9(sendComm, data, size, tag, mhandle, request);
}

static ncclResult_t irecv_v10(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                              void** phandles, void** request) {
    return irecv_v9(recvComm, n, data, sizes, tags, mhandles, request);
}

/* v11 and v12: a context per communicator, and per-operation hints (setNetAttr) the transport has no use for yet */
static ncclResult_t listen_ctx(void* ctx, int dev, void* handle, void** listenComm) {
    return CALL(listen, ctx, dev, handle, listenComm);
}

static ncclResult_t connect_ctx(void* ctx, int dev, void* handle, void** sendComm,
                                ncclNetDeviceHandle_v8_t** sendDevComm) {
    ncclResult_t rc = no_offload(sendDevComm);
    return rc != ncclSuccess ? rc : CALL(connect, ctx, dev, handle, sendComm);
}

#define CONTEXT_VERSION(V)                                                                                             \
    static ncclResult_t init_v##V(void** ctx, uint64_t commId, ncclNetCommConfig_v##V##_t* config,                     \
                                  ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {                \
        return jm_init_context(ctx, commId, config ? config->trafficClass : -1, V, logFunction);                       \
    }                                                                                                                  \
    static ncclResult_t setNetAttr_v##V(void* ctx, ncclNetAttr_v##V##_t* attr) { return ncclSuccess; }
CONTEXT_VERSION(11)
#if JM_HAVE_V12
CONTEXT_VERSION(12)
#endif

/* Device properties: Java fills version-neutral slots (jmesh_shim.h); each version copies the fields it has, by
   name through COPY, and latency (a double) and the virtual NIC's device list apart. */
#define PROPS_V8(X)                                                                                                    \
    X(name) X(pciPath) X(guid) X(ptrSupport) X(regIsGlobal) X(speed) X(port) X(maxComms) X(maxRecvs)                   \
    X(netDeviceType) X(netDeviceVersion) props->latency = (float)p[JM_P_latency].d;
#define PROPS_V9(X)                                                                                                    \
    PROPS_V8(X) X(forceFlush) X(maxP2pBytes) X(maxCollBytes)                                                           \
    copy_vdevs(&props->vProps.ndevs, props->vProps.devs, sizeof props->vProps.devs / sizeof(int), p);
#define PROPS_V11(X) PROPS_V9(X) X(maxMultiRequestSize)
#define PROPS_V12(X) PROPS_V11(X) X(railId) X(planeId)
#define COPY(field) props->field = (__typeof__(props->field))(intptr_t)p[JM_P_##field].i;

/* The devices a virtual NIC fuses, as many as the version holds. */
static void copy_vdevs(int* ndevs, int* devs, size_t capacity, const jm_slot_t* p) {
    int cap = (int)capacity, n = (int)p[JM_P_vdevCount].i;
    *ndevs = n < cap ? n : cap;
    for (int k = 0; k < cap; k++) {
        devs[k] = k < n ? (int)p[JM_P_vdevs + k].i : 0;
    }
}

#define GET_PROPERTIES(V, FIELDS)                                                                                      \
    static ncclResult_t getProperties_v##V(int dev, ncclNetProperties_v##V##_t* props) {                               \
        jm_slot_t p[JM_P_SLOTS] = {{0}};                                                                               \
        ncclResult_t rc = CALL(getProperties, dev, p);                                                                 \
        if (rc == ncclSuccess) {                                                                                       \
            memset(props, 0, sizeof *props);                                                                           \
            FIELDS(COPY)                                                                                               \
        }                                                                                                              \
        return rc;                                                                                                     \
    }

/* CollNet's v11 properties (collnet.c) come from slots of their own, in the same layout */
void jm_copy_props_v11(const jm_slot_t* p, ncclNetProperties_v11_t* props) {
    memset(props, 0, sizeof *props);
    PROPS_V11(COPY)
}

/*
 * The exported tables: one row per API version, naming the entry points whose arguments differ (init and
 * getProperties by the row's version); v9+ leave makeVDevice NULL (no virtual NICs: NCCL uses the physical devices).
 */
#define NET_TABLE(V, FIELDS, listen_, connect_, isend_, irecv_, ...)                                                   \
    GET_PROPERTIES(V, FIELDS)                                                                                          \
    EXPORT const ncclNet_v##V##_t ncclNetPlugin_v##V = {                                                               \
        .name = "jmesh", .init = init_v##V, .devices = jm_devices, .getProperties = getProperties_v##V,                \
        .listen = listen_, .connect = connect_, .accept = jm_accept, .regMr = jm_regMr,                                \
        .regMrDmaBuf = jm_regMrDmaBuf, .deregMr = jm_deregMr, .isend = isend_, .irecv = irecv_,                        \
        .iflush = jm_iflush, .test = jm_test, .closeSend = jm_closeSend, .closeRecv = jm_closeRecv,                    \
        .closeListen = jm_closeListen, .getDeviceMr = jm_getDeviceMr, .irecvConsumed = jm_irecvConsumed,               \
        __VA_ARGS__};

NET_TABLE(8, PROPS_V8, listen_noctx, connect_v8, isend_v8, irecv_v8)
NET_TABLE(9, PROPS_V9, listen_noctx, connect_v8, isend_v9, irecv_v9)
NET_TABLE(10, PROPS_V9, listen_noctx, connect_v10, isend_v10, irecv_v10)
NET_TABLE(11, PROPS_V11, listen_ctx, connect_ctx, isend_v10, irecv_v10, .finalize = jm_finalize,
          .setNetAttr = setNetAttr_v11)
#if JM_HAVE_V12
NET_TABLE(12, PROPS_V12, listen_ctx, connect_ctx, isend_v10, irecv_v10, .finalize = jm_finalize,
          .setNetAttr = setNetAttr_v12)
#endif
