/*
 * nccl-net-driver's half that talks to the plugin: loading it, and each entry point as NCCL calls it in every
 * ncclNetPlugin_vN version from 8 to 12 (the other half, nccl_net_driver.c, drives the traffic).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"

static void* g_lib;
static int g_ver;
static union {
    const ncclNet_v8_t* v8;
    const ncclNet_v9_t* v9;
    const ncclNet_v10_t* v10;
    const ncclNet_v11_t* v11;
    const ncclNet_v12_t* v12;
} g_net;
static void* g_ctx;

/* NCCL's logger as a plugin sees it; prints what passes --log-level, with the level and subsystem flags. */
static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
    if ((int)level > opt.logLevel) return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[plugin log rank %d level=%d flags=0x%lx %s:%d] %s\n", opt.rank, (int)level, flags, file, line,
            msg);
}

const char* load(void) {
    g_lib = dlopen(opt.plugin, RTLD_NOW | RTLD_LOCAL);
    if (g_lib == NULL) die("cannot load %s: %s", opt.plugin, dlerror());
    int versions[] = {12, 11, 10, 9, 8};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        int v = versions[i];
        if (opt.api && opt.api != v) continue;
        char sym[32];
        snprintf(sym, sizeof sym, "ncclNetPlugin_v%d", v);
        void* p = dlsym(g_lib, sym);
        if (p != NULL) {
            g_ver = v;
            g_net.v8 = p;
            return ((const ncclNet_v8_t*)p)->name; /* name is the first field in every version */
        }
    }
    if (opt.api) die("%s exports no ncclNetPlugin_v%d", opt.plugin, opt.api);
    die("%s exports none of ncclNetPlugin_v12..v8", opt.plugin);
}

void n_init(void) {
    switch (g_ver) {
        case 12: { ncclNetCommConfig_v12_t c = {-1}; CHECK(g_net.v12->init(&g_ctx, 0x1234, &c, logger, NULL)); break; }
        case 11: { ncclNetCommConfig_v11_t c = {-1}; CHECK(g_net.v11->init(&g_ctx, 0x1234, &c, logger, NULL)); break; }
        case 10: CHECK(g_net.v10->init(logger, NULL)); break;
        case 9: CHECK(g_net.v9->init(logger)); break;
        default: CHECK(g_net.v8->init(logger)); break;
    }
}

int n_devices(void) {
    int n = 0;
    CHECK(g_net.v8->devices(&n)); /* same slot and signature in every version */
    return n;
}

void n_print_props(int dev) {
    ncclNetProperties_v12_t p;
    memset(&p, 0, sizeof p);
    switch (g_ver) {
        case 12: CHECK(g_net.v12->getProperties(dev, &p)); break;
        case 11: { ncclNetProperties_v11_t q; CHECK(g_net.v11->getProperties(dev, &q));
                   memcpy(&p, &q, offsetof(ncclNetProperties_v11_t, vProps));
                   p.maxP2pBytes = q.maxP2pBytes; p.maxMultiRequestSize = q.maxMultiRequestSize; break; }
        case 10: { ncclNetProperties_v10_t q; CHECK(g_net.v10->getProperties(dev, &q));
                   memcpy(&p, &q, offsetof(ncclNetProperties_v10_t, vProps)); p.maxP2pBytes = q.maxP2pBytes; break; }
        case 9: { ncclNetProperties_v9_t q; CHECK(g_net.v9->getProperties(dev, &q));
                  memcpy(&p, &q, offsetof(ncclNetProperties_v9_t, vProps)); p.maxP2pBytes = q.maxP2pBytes; break; }
        default: { ncclNetProperties_v8_t q; CHECK(g_net.v8->getProperties(dev, &q));
                   p.name = q.name; p.pciPath = q.pciPath; p.guid = q.guid; p.ptrSupport = q.ptrSupport;
                   p.regIsGlobal = q.regIsGlobal; p.speed = q.speed; p.port = q.port; p.latency = q.latency;
                   p.maxComms = q.maxComms; p.maxRecvs = q.maxRecvs; break; }
    }
    printf("driver: rank %d: dev %d name=%s pciPath=%s guid=0x%llx ptrSupport=0x%x regIsGlobal=%d speed=%d port=%d "
           "latency=%.1f maxComms=%d maxRecvs=%d maxP2pBytes=%zu\n", opt.rank, dev, p.name ? p.name : "(null)",
           p.pciPath ? p.pciPath : "(null)", (unsigned long long)p.guid, p.ptrSupport, p.regIsGlobal, p.speed,
           p.port, p.latency, p.maxComms, p.maxRecvs, p.maxP2pBytes);
    if (!(p.ptrSupport & NCCL_PTR_HOST)) die("dev %d does not support host memory", dev);
    if (p.maxRecvs < 1) die("dev %d: maxRecvs %d", dev, p.maxRecvs);
    if (opt.group > p.maxRecvs) {
        printf("driver: rank %d: --group %d > maxRecvs %d, using %d\n", opt.rank, opt.group, p.maxRecvs, p.maxRecvs);
        opt.group = p.maxRecvs;
    }
}

void n_listen(int dev, void* handle, void** listenComm) {
    if (g_ver >= 11) CHECK(g_net.v11->listen(g_ctx, dev, handle, listenComm));
    else CHECK(g_net.v8->listen(dev, handle, listenComm));
}

void n_connect(int dev, void* handle, void** sendComm) {
    ncclNetDeviceHandle_v8_t* devComm = NULL;
    switch (g_ver) {
        case 12: CHECK(g_net.v12->connect(g_ctx, dev, handle, sendComm, &devComm)); break;
        case 11: CHECK(g_net.v11->connect(g_ctx, dev, handle, sendComm, &devComm)); break;
        case 10: { ncclNetCommConfig_v10_t c = {-1}; CHECK(g_net.v10->connect(dev, &c, handle, sendComm, &devComm));
                   break; }
        default: CHECK(g_net.v8->connect(dev, handle, sendComm, &devComm)); break;
    }
}

void n_accept(void* listenComm, void** recvComm) {
    ncclNetDeviceHandle_v8_t* devComm = NULL;
    CHECK(g_net.v8->accept(listenComm, recvComm, &devComm));
}

void* n_regmr(void* comm, void* data, size_t size) {
    void* mh = NULL;
    CHECK(g_net.v8->regMr(comm, data, size, NCCL_PTR_HOST, &mh));
    return mh;
}

void n_isend(void* comm, void* data, size_t size, int tag, void* mh, void** req) {
    switch (g_ver) {
        case 12: case 11: case 10: CHECK(g_net.v10->isend(comm, data, size, tag, mh, NULL, req)); break;
        case 9: CHECK(g_net.v9->isend(comm, data, size, tag, mh, req)); break;
        default: CHECK(g_net.v8->isend(comm, data, (int)size, tag, mh, req)); break;
    }
}

void n_irecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhs, void** req) {
    *req = (void*)0x1; /* NCCL pre-sets NCCL_NET_OPTIONAL_RECV_COMPLETION for LL receives; the plugin overwrites */
    switch (g_ver) {
        case 12: case 11: case 10: {
            void* ph[MAX_GROUP] = {0};
            CHECK(g_net.v10->irecv(comm, n, data, sizes, tags, mhs, ph, req));
            break;
        }
        case 9: CHECK(g_net.v9->irecv(comm, n, data, sizes, tags, mhs, req)); break;
        default: {
            int s[MAX_GROUP];
            for (int i = 0; i < n; i++) s[i] = (int)sizes[i];
            CHECK(g_net.v8->irecv(comm, n, data, s, tags, mhs, req));
            break;
        }
    }
}

int n_test(void* req, int* sizes) {
    int done = 0;
    CHECK(g_net.v8->test(req, &done, sizes));
    return done;
}

void n_close(void* sendComm, void* sendMh, void* recvComm, void* recvMh, void* listenComm) {
    CHECK(g_net.v8->deregMr(sendComm, sendMh));
    CHECK(g_net.v8->deregMr(recvComm, recvMh));
    CHECK(g_net.v8->closeSend(sendComm));
    CHECK(g_net.v8->closeRecv(recvComm));
    CHECK(g_net.v8->closeListen(listenComm));
}

void unload(void) {
    dlclose(g_lib);
}

void* plugin_symbol(const char* name) {
    return dlsym(g_lib, name);
}

ncclDebugLogger_t driver_logger(void) {
    return logger;
}

int plugin_version(void) {
    return g_ver;
}

void n_finalize(void) {
    if (g_ver >= 11) CHECK(g_net.v11->finalize(g_ctx));
}

/*
 * DestroyJavaVM on the JVM in this process, found through the symbols libjvm exported when the plugin opened it
 * (RTLD_GLOBAL): the driver itself never links Java. Waits for the JVM's non-daemon threads, as its exit would.
 */
void destroy_jvm(void) {
    typedef int (*created_fn)(void**, int, int*);
    created_fn created = (created_fn)dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs");
    void* vm = NULL;
    int count = 0;
    if (created == NULL || created(&vm, 1, &count) != 0 || count < 1) die("--destroy-jvm: no JVM in this process");
    /* JavaVM is a pointer to its function table; DestroyJavaVM is entry 3 (jni.h: reserved0..2 before it) */
    int (*destroy)(void*) = (int (*)(void*))((void**)*(void**)vm)[3];
    int rc = destroy(vm);
    if (rc != 0) die("--destroy-jvm: DestroyJavaVM returned %d", rc);
    printf("driver: rank %d: destroyed the plugin's JVM\n", opt.rank);
}

