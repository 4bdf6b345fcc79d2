/*
 * What the files of nccl-net-driver share: the options, failure, the clock and the files in --dir (driver_util.c,
 * which calls none of the others); the settle of the JIT (driver_settle.c); the per-call measurement
 * (driver_calls.c); the plugin's entry points as the driver calls them, whatever ncclNetPlugin_vN version the plugin
 * exports (driver_plugin.c). nccl_net_driver.c, the main program, uses them all.
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
    int rank, nranks, api, dev, group, window, iters, logLevel, reload, destroyJvm, oneway, calls, warmup, plain, spin,
        coll;
    size_t minSize, maxSize;
    double timeout, warmSeconds, settle;
};
extern struct driver_options opt;

/* driver_util.c: blocks until every rank reached the barrier `name` (files in opt.dir), or dies after opt.timeout */
void barrier(const char* name);
/* small files in opt.dir, written atomically (rename); read_file is 1 once `len` bytes were read */
void write_file(const char* name, const void* data, size_t len);
int read_file(const char* name, void* data, size_t len);
/* read_file until it succeeds, or dies after opt.timeout naming `what` it waited for */
void await_file(const char* name, void* data, size_t len, const char* what);

/* --settle (driver_settle.c): CPU ms of this process's JIT compiler threads (0 without a JVM); rounds of `round`
 * until every rank's compilers were quiet during one, for at most opt.settle seconds (nothing when it is 0) */
long jit_cpu_ms(void);
/* rank 0's value, on every rank (a file in opt.dir named `name`, written once) */
long share_from_rank0(const char* name, long value);
void settle(const char* what, void (*round)(void*), void* arg);
/* the same for a loop that rank 0 steers: call jit_watch_quiet() on every pass of both ranks; on rank 0 it answers
 * 1 once both ranks' compilers were quiet for about a second */
struct jit_watch {
    double next;
    long mine, peer, count;
};
void jit_watch_start(struct jit_watch* w);
int jit_watch_quiet(struct jit_watch* w);

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
/* the loaded plugin's symbol `name`, or NULL; the logger the driver hands plugins */
void* plugin_symbol(const char* name);
ncclDebugLogger_t driver_logger(void);

/* --coll (driver_coll.c): the plugin's CollNet, driven as NCCL's proxy does, every result checked */
void coll_run(void);
/* --tuner (driver_tuner.c): the library's ncclTunerPlugin_v5 on NCCL-like cost tables, for each node count in the
 * comma-separated list */
void tuner_run(const char* nodesList);

#endif
