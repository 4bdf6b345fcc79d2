/*
 * What the two halves of nccl-net-driver share: the options, failure, the clock, and the plugin's entry points as
 * the driver calls them, whatever ncclNetPlugin_vN version the plugin exports (driver_plugin.c).
 */
#ifndef JMESH_NCCL_DRIVER_H
#define JMESH_NCCL_DRIVER_H

#include <stddef.h>

#include "nccl_net_abi.h"

#define MAX_PEERS 8
#define MAX_GROUP 8
#define MAX_WINDOW 32

struct driver_options {
    const char* plugin;
    const char* dir;
    int rank, nranks, api, dev, group, window, iters, logLevel, reload, destroyJvm, oneway, calls, warmup, plain, spin;
    size_t minSize, maxSize;
    double timeout, warmSeconds;
};
extern struct driver_options opt;

/* blocks until every rank reached the barrier `name` (files in opt.dir), or dies after opt.timeout */
void barrier(const char* name);

/* one connection to the other rank, registered buffers of opt.maxSize bytes at least (driver_calls.c) */
struct calls_peer {
    void* sendComm;
    void* recvComm;
    char* sendBuf;
    char* recvBuf;
    void* sendMh;
    void* recvMh;
};
void calls_bench(const struct calls_peer* p, int calls);

void die(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
double now(void);

#define CHECK(call)                                                                                     \
    do {                                                                                                \
        ncclResult_t rc_ = (call);                                                                      \
        if (rc_ != ncclSuccess) die("%s returned %d (line %d)", #call, (int)rc_, __LINE__);             \
    } while (0)

/* dlopen()s opt.plugin and picks the newest (or --api) ncclNetPlugin_vN; returns the plugin's name */
const char* load(void);
void unload(void);
int plugin_version(void);
void n_init(void);
int n_devices(void);
void n_print_props(int dev);
void n_listen(int dev, void* handle, void** listenComm);
void n_connect(int dev, void* handle, void** sendComm);
void n_accept(void* listenComm, void** recvComm);
void* n_regmr(void* comm, void* data, size_t size);
void n_isend(void* comm, void* data, size_t size, int tag, void* mh, void** req);
void n_irecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhs, void** req);
int n_test(void* req, int* sizes);
void n_close(void* sendComm, void* sendMh, void* recvComm, void* recvMh, void* listenComm);
void n_finalize(void);
void destroy_jvm(void);

#endif
