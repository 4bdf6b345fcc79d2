/*
 * nccl-net-driver --coll: drives the plugin's ncclCollNetPlugin_v11 the way NCCL's proxy does, without NCCL or a GPU.
 * init (after the net plugin's, as NCCL does), devices, getProperties, listen; the handles exchanged through --dir;
 * connect with every rank's handle (one call, which NCCL expects to return with the communicator), closeListen;
 * reduceSupport for every type and op NCCL asks about; regMr of host buffers; then, for every (type, op) the plugin
 * supports, batches of --window all-reduces in flight at once (a NULL request means "try again": the driver tests the
 * earlier ones and calls again, as NCCL's proxy does), each element checked against a reference computed here:
 *   - every element of rank r's buffer is a value derived from (r, the operation's number, the element's index);
 *   - the reference reduces the ranks' values in rank order, left to right: integers wrap around (min and max signed
 *     or unsigned as the type is); fp32 and fp64 one IEEE operation per step; fp16 and bf16 converted to fp32, reduced
 *     in fp32 as fp32 is, rounded once at the end to nearest even; max and min keep the earlier value unless the later
 *     one is greater (less). Results must match bit for bit.
 * Then bad input, which the plugin must refuse with an error and a NULL request without losing step with the other
 * ranks: a type and an op it does not support, more bytes than maxCollBytes, a NULL buffer, a memory handle that is no
 * registration, a buffer outside its registration; and one more batch to show the ranks are still in step.
 * With --calls N: then, per size from --min to --max (x4), --warmup unmeasured and N timed fp32 sum all-reduces,
 * one at a time as a decode step issues them (each rank starts the next once its last is done; a barrier before each
 * size), each result's first element checked; prints each rank's median and p90 time per all-reduce: what the plugin
 * itself adds to NCCL's CollNet step, without NCCL, a GPU or the proxy's staging.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "nccl_collnet_abi.h"

#define NTYPES 12
#define NOPS 5
static const char* TYPE_NAMES[NTYPES] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                         "fp16", "fp32", "fp64", "bf16", "fp8e4m3", "fp8e5m2"};
static const int TYPE_SIZES[NTYPES] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
static const char* OP_NAMES[NOPS] = {"sum", "prod", "max", "min", "avg"};
enum { INT8, UINT8, INT32, UINT32, INT64, UINT64, FP16, FP32, FP64, BF16, CHECKABLE_TYPES };
enum { SUM, PROD, MAX, MIN, CHECKABLE_OPS };

static const jm_collnet_v11_t* coll;
static void* comm;
static char *sendBuf, *recvBuf;
static void *sendMh, *recvMh;
static size_t slotBytes;
static uint64_t opSeq, opsChecked, elementsChecked, nullRequests;

static uint64_t mix(uint64_t x) { /* splitmix64's finalizer */
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint16_t to_bf16(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    if (f != f) return (uint16_t)((b >> 16) | 0x40);
    return (uint16_t)((b + 0x7FFF + ((b >> 16) & 1)) >> 16);
}

static float from_bf16(uint16_t h) {
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* rank r's element i of operation g, stored as the type's bits */
static void value(int type, int r, uint64_t g, size_t i, void* out) {
    uint64_t h = mix(((uint64_t)r << 56) ^ (g << 32) ^ i);
    if (type <= UINT64) {
        memcpy(out, &h, (size_t)TYPE_SIZES[type]); /* little-endian: the low bytes */
    } else if (type == FP64) {
        double d = ((double)(int64_t)(h % 2000001) - 1000000) / 65536.0 * 1.1;
        memcpy(out, &d, 8);
    } else {
        float f = ((float)(int)(h % 200001) - 100000) / 4096.0f; /* 12 fraction bits: fp16/bf16 round them */
        if (type == FP32) memcpy(out, &f, 4);
        else if (type == FP16) { _Float16 x = (_Float16)f; memcpy(out, &x, 2); }
        else { uint16_t x = to_bf16(f); memcpy(out, &x, 2); }
    }
}

static uint64_t load_int(int type, const void* p) {
    switch (type) {
        case INT8: return (uint64_t)(int64_t)*(const int8_t*)p;
        case UINT8: return *(const uint8_t*)p;
        case INT32: { int32_t v; memcpy(&v, p, 4); return (uint64_t)(int64_t)v; }
        case UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
        default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static float load_float(int type, const void* p) {
    if (type == FP32) { float f; memcpy(&f, p, 4); return f; }
    uint16_t h;
    memcpy(&h, p, 2);
    if (type == BF16) return from_bf16(h);
    _Float16 x;
    memcpy(&x, &h, 2);
    return (float)x;
}

/* the reference result of element i of operation g, as the type's bits */
static void reference(int type, int op, uint64_t g, size_t i, void* out) {
    unsigned char v[8];
    value(type, 0, g, i, v);
    if (type <= UINT64) {
        int isSigned = type == INT8 || type == INT32 || type == INT64;
        uint64_t acc = load_int(type, v);
        for (int r = 1; r < opt.nranks; r++) {
            value(type, r, g, i, v);
            uint64_t x = load_int(type, v);
            int greater = isSigned ? (int64_t)x > (int64_t)acc : x > acc;
            int less = isSigned ? (int64_t)x < (int64_t)acc : x < acc;
            acc = op == SUM ? acc + x : op == PROD ? acc * x : op == MAX ? (greater ? x : acc) : (less ? x : acc);
        }
        memcpy(out, &acc, (size_t)TYPE_SIZES[type]);
    } else if (type == FP64) {
        double acc, x;
        memcpy(&acc, v, 8);
        for (int r = 1; r < opt.nranks; r++) {
            value(type, r, g, i, v);
            memcpy(&x, v, 8);
            acc = op == SUM ? acc + x : op == PROD ? acc * x : op == MAX ? (x > acc ? x : acc) : (x < acc ? x : acc);
        }
        memcpy(out, &acc, 8);
    } else {
        float acc = load_float(type, v);
        for (int r = 1; r < opt.nranks; r++) {
            value(type, r, g, i, v);
            float x = load_float(type, v);
            acc = op == SUM ? acc + x : op == PROD ? acc * x : op == MAX ? (x > acc ? x : acc) : (x < acc ? x : acc);
        }
        if (type == FP32) memcpy(out, &acc, 4);
        else if (type == FP16) { _Float16 h = (_Float16)acc; memcpy(out, &h, 2); }
        else { uint16_t h = to_bf16(acc); memcpy(out, &h, 2); }
    }
}

static int test_once(void* req) {
    int done = 0, size = -1;
    CHECK(coll->test(req, &done, &size));
    return done;
}

/* --window all-reduces of `count` elements in flight, then every element checked */
static void batch(int type, int op, size_t count) {
    int w = opt.window, es = TYPE_SIZES[type];
    void* req[MAX_WINDOW] = {0};
    int done[MAX_WINDOW] = {0};
    uint64_t g0 = opSeq;
    for (int k = 0; k < w; k++) {
        char* s = sendBuf + k * slotBytes;
        for (size_t i = 0; i < count; i++) value(type, opt.rank, g0 + k, i, s + i * es);
        memset(recvBuf + k * slotBytes, 0xEE, count * es);
    }
    double deadline = now() + opt.timeout;
    int posted = 0, completed = 0;
    while (completed < w) {
        int progress = 0;
        if (posted < w) {
            CHECK(coll->iallreduce(comm, sendBuf + posted * slotBytes, recvBuf + posted * slotBytes, count, type, op,
                                   sendMh, recvMh, &req[posted]));
            if (req[posted]) { posted++; progress = 1; } else nullRequests++;
        }
        for (int k = 0; k < posted; k++) {
            if (!done[k] && test_once(req[k])) { done[k] = 1; completed++; progress = 1; }
        }
        if (now() > deadline)
            die("coll: %d of %d all-reduces of %zu x %s %s not done after %.0f s (%d posted)", w - completed, w,
                count, TYPE_NAMES[type], OP_NAMES[op], opt.timeout, posted);
        if (!progress && !opt.spin) sched_yield();
    }
    opSeq += (uint64_t)w;
    for (int k = 0; k < w; k++) {
        const char* got = recvBuf + k * slotBytes;
        for (size_t i = 0; i < count; i++) {
            unsigned char want[8];
            reference(type, op, g0 + k, i, want);
            if (memcmp(want, got + i * es, (size_t)es) != 0) {
                uint64_t a = 0, b = 0;
                memcpy(&a, want, (size_t)es);
                memcpy(&b, got + i * es, (size_t)es);
                die("coll: %s %s of %zu elements, operation %llu: element %zu is 0x%llx, the reference 0x%llx",
                    TYPE_NAMES[type], OP_NAMES[op], count, (unsigned long long)(g0 + k), i, (unsigned long long)b,
                    (unsigned long long)a);
            }
        }
        opsChecked++;
        elementsChecked += count;
    }
}

static int by_time(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* one fp32 sum all-reduce of `count` elements, posted until accepted and tested until done; its time in seconds */
static double one_allreduce(size_t count) {
    void* req = NULL;
    double deadline = now() + opt.timeout, t0 = now();
    while (req == NULL) {
        CHECK(coll->iallreduce(comm, sendBuf, recvBuf, count, FP32, SUM, sendMh, recvMh, &req));
        if (now() > deadline) die("coll: an all-reduce of %zu x fp32 was not accepted within %.0f s", count,
                                  opt.timeout);
    }
    while (!test_once(req)) {
        if (now() > deadline) die("coll: an all-reduce of %zu x fp32 not done after %.0f s", count, opt.timeout);
        if (!opt.spin) sched_yield();
    }
    return now() - t0;
}

/* --calls N: the time of one all-reduce at each size, one at a time */
static void timed(size_t most) {
    double* t = malloc(sizeof(double) * (size_t)opt.calls);
    if (t == NULL) die("coll: out of memory for %d times", opt.calls);
    printf("driver: rank %d: coll timed, %d ranks:      bytes   median us      p90 us  (fp32 sum, one at a time%s)\n",
           opt.rank, opt.nranks, opt.spin ? ", spinning" : ", yielding between tests");
    for (size_t bytes = opt.minSize < 4 ? 4 : opt.minSize; ; bytes *= 4) {
        if (bytes > most) bytes = most;
        size_t count = bytes / 4;
        char name[64];
        snprintf(name, sizeof name, "coll-timed-%zu", bytes);
        barrier(name);
        for (size_t i = 0; i < count; i++) value(FP32, opt.rank, 0, i, sendBuf + i * 4);
        for (int k = 0; k < opt.warmup; k++) one_allreduce(count);
        for (int k = 0; k < opt.calls; k++) t[k] = one_allreduce(count);
        unsigned char want[8];
        reference(FP32, SUM, 0, 0, want);
        if (memcmp(want, recvBuf, 4) != 0) die("coll: the timed all-reduce of %zu bytes gave a wrong result", bytes);
        qsort(t, (size_t)opt.calls, sizeof(double), by_time);
        printf("driver: rank %d: coll timed %10zu %11.1f %11.1f\n", opt.rank, bytes, t[opt.calls / 2] * 1e6,
               t[(size_t)opt.calls * 9 / 10] * 1e6);
        if (bytes >= most || bytes >= opt.maxSize) break;
    }
    free(t);
}

/* bad input: refused with an error and a NULL request */
static int refused(const char* what, void* send, void* recv, size_t count, int type, int op, void* smh, void* rmh) {
    void* req = (void*)0x1;
    ncclResult_t rc = coll->iallreduce(comm, send, recv, count, type, op, smh, rmh, &req);
    if (rc == ncclSuccess || req != NULL)
        die("coll: %s was accepted (rc %d, request %p): the plugin must refuse it", what, (int)rc, req);
    printf("driver: rank %d: coll refused as it should: %s (rc %d)\n", opt.rank, what, (int)rc);
    return 1;
}

void coll_run(void) {
    coll = plugin_symbol("ncclCollNetPlugin_v11");
    if (coll == NULL) die("%s exports no ncclCollNetPlugin_v11 (the CollNet API NCCL 2.28 loads)", opt.plugin);
    int dev = opt.dev >= 0 ? opt.dev : 0;
    void* ctx = NULL;
    CHECK(coll->init(&ctx, 0x1234, driver_logger()));
    int ndev = 0;
    CHECK(coll->devices(&ndev));
    if (ndev <= dev) die("coll: the CollNet has %d device(s), need dev %d", ndev, dev);
    ncclNetProperties_v11_t props;
    CHECK(coll->getProperties(dev, &props));
    printf("driver: rank %d: coll \"%s\" dev %d %s ptrSupport=0x%x maxCollBytes=%zu iallgather=%s ireducescatter=%s\n",
           opt.rank, coll->name, dev, props.name ? props.name : "(null)", props.ptrSupport, props.maxCollBytes,
           coll->iallgather ? "yes" : "no", coll->ireducescatter ? "yes" : "no");
    if (!(props.ptrSupport & NCCL_PTR_HOST)) die("coll: dev %d does not take host memory", dev);
    if (props.maxCollBytes == 0 || props.maxCollBytes > NCCL_MAX_NET_SIZE_BYTES)
        die("coll: maxCollBytes %zu is outside NCCL's (0, 1 TiB]", props.maxCollBytes);

    char handle[NCCL_NET_HANDLE_MAXSIZE] = {0}, name[64];
    void* listenComm = NULL;
    CHECK(coll->listen(ctx, dev, handle, &listenComm));
    snprintf(name, sizeof name, "coll-handle-%d", opt.rank);
    write_file(name, handle, sizeof handle);
    static char handles[MAX_PEERS + 1][NCCL_NET_HANDLE_MAXSIZE];
    void* ptrs[MAX_PEERS + 1];
    for (int r = 0; r < opt.nranks; r++) {
        char what[64];
        snprintf(name, sizeof name, "coll-handle-%d", r);
        snprintf(what, sizeof what, "rank %d's CollNet handle", r);
        await_file(name, handles[r], sizeof handles[r], what);
        ptrs[r] = handles[r];
    }
    double t0 = now();
    CHECK(coll->connect(ptrs, opt.nranks, opt.rank, listenComm, &comm));
    if (comm == NULL) die("coll: connect returned no communicator");
    CHECK(coll->closeListen(listenComm)); /* as NCCL does once connect succeeded */
    printf("driver: rank %d: coll connected to %d rank(s) in %.3f s\n", opt.rank, opt.nranks - 1, now() - t0);

    int support[NTYPES][NOPS], pairs = 0;
    for (int t = 0; t < NTYPES; t++) {
        for (int o = 0; o < NOPS; o++) {
            CHECK(coll->reduceSupport(t, o, &support[t][o]));
            if (support[t][o] && (t >= CHECKABLE_TYPES || o >= CHECKABLE_OPS))
                die("coll: reduceSupport says yes to %s %s, which this driver cannot check", TYPE_NAMES[t],
                    OP_NAMES[o]);
            pairs += support[t][o] != 0;
        }
    }
    printf("driver: rank %d: coll reduceSupport: %d of %d (type, op) pairs; refused:", opt.rank, pairs, NTYPES * NOPS);
    for (int t = 0; t < NTYPES; t++)
        for (int o = 0; o < NOPS; o++)
            if (!support[t][o]) printf(" %s/%s", TYPE_NAMES[t], OP_NAMES[o]);
    printf("\n");

    size_t most = props.maxCollBytes < opt.maxSize ? props.maxCollBytes : opt.maxSize;
    slotBytes = (most + 4095) & ~(size_t)4095;
    size_t bufBytes = slotBytes * (size_t)opt.window;
    sendBuf = aligned_alloc(4096, bufBytes);
    recvBuf = aligned_alloc(4096, bufBytes);
    if (!sendBuf || !recvBuf) die("coll: out of memory for 2 x %zu bytes", bufBytes);
    CHECK(coll->regMr(comm, sendBuf, bufBytes, NCCL_PTR_HOST, &sendMh));
    CHECK(coll->regMr(comm, recvBuf, bufBytes, NCCL_PTR_HOST, &recvMh));

    double t1 = now();
    for (int t = 0; t < CHECKABLE_TYPES; t++) {
        for (int o = 0; o < CHECKABLE_OPS; o++) {
            if (!support[t][o]) continue;
            size_t counts[] = {1, 3, 1000, most / (size_t)TYPE_SIZES[t]};
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                if (counts[c] * (size_t)TYPE_SIZES[t] <= most) batch(t, o, counts[c]);
            }
            printf("driver: rank %d: coll ok %s %s: counts 1, 3, 1000 and %zu (%zu bytes), %d in flight, every "
                   "element as the reference\n", opt.rank, TYPE_NAMES[t], OP_NAMES[o], most / (size_t)TYPE_SIZES[t],
                   most, opt.window);
        }
    }
    double secs = now() - t1;

    int bad = 0;
    bad += refused("fp8e4m3 sum (a type it does not reduce)", sendBuf, recvBuf, 16, 10, SUM, sendMh, recvMh);
    bad += refused("fp32 avg (an op it does not reduce)", sendBuf, recvBuf, 16, FP32, 4, sendMh, recvMh);
    bad += refused("int8 sum of maxCollBytes + 1 bytes", sendBuf, recvBuf, props.maxCollBytes + 1, INT8, SUM, sendMh,
                   recvMh);
    bad += refused("a NULL send buffer", NULL, recvBuf, 16, FP32, SUM, sendMh, recvMh);
    bad += refused("an unregistered memory handle", sendBuf, recvBuf, 16, FP32, SUM, (void*)0x7777, recvMh);
    bad += refused("a buffer past the end of its registration", sendBuf + bufBytes - 8, recvBuf, 16, FP32, SUM,
                   sendMh, recvMh);
    void* junk = NULL;
    if (coll->regMr(comm, sendBuf, bufBytes, NCCL_PTR_CUDA, &junk) == ncclSuccess || junk != NULL)
        die("coll: regMr of CUDA memory was accepted: a CollNet that reduces on the CPU must refuse it");
    printf("driver: rank %d: coll refused as it should: regMr of CUDA memory\n", opt.rank);
    bad++;
    batch(FP32, SUM, 100); /* the refusals took no operation number: the ranks are still in step */
    printf("driver: rank %d: coll still in step after the refusals\n", opt.rank);

    if (opt.calls > 0) timed(most);

    CHECK(coll->deregMr(comm, sendMh));
    CHECK(coll->deregMr(comm, recvMh));
    CHECK(coll->closeColl(comm));
    CHECK(coll->finalize(ctx));
    free(sendBuf);
    free(recvBuf);
    printf("driver: rank %d: coll PASS: %d (type, op) pairs, %llu all-reduces of up to %zu bytes checked (%llu "
           "elements) in %.2f s, %llu NULL requests retried, %d bad inputs refused\n", opt.rank, pairs,
           (unsigned long long)opsChecked, most, (unsigned long long)elementsChecked, secs,
           (unsigned long long)nullRequests, bad);
}
