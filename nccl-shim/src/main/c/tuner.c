/*
 * ncclTunerPlugin_v5: steers NCCL's choice of algorithm away from jmesh's CollNet where it loses.
 *
 * Why: NCCL's cost model rates a CollNet all-reduce at 14 us + 2 x the plugin's latency (one GPU per node), below
 * Ring/LL, so with NCCL_COLLNET_ENABLE=1 it picks COLLNET_CHAIN/SIMPLE for small all-reduces. Measured on 2 x H200
 * through jmesh (TCP, NCCL 2.28.9, a decode step in a CUDA graph): 85 us per 4 KiB all-reduce against 46 us for
 * Ring/LL, 87 against 89 at 16 KiB. At two nodes the one-shot CollNet exchange saves no network steps over a ring
 * (2(n-1) = 2) and adds the proxy's staging, so below JMESH_COLLNET_MIN_NODES nodes (default 3) the CollNet entries
 * of the all-reduce cost table get a prohibitive cost and NCCL falls back to its next best choice.
 *
 * Plain C, no JVM: NCCL loads and inits the tuner per communicator in initTransportsRank (src/init.cc:1352-1355 of
 * NCCL v2.28.9-1), whatever the net plugin did, and a failing tuner init fails the communicator (NCCLCHECK there),
 * so init never fails: without memory the tuner becomes a no-op.
 *
 * How NCCL finds it (src/plugin/tuner.cc:56-70, src/plugin/plugin_open.cc:63-139 of v2.28.9-1): it opens
 * NCCL_TUNER_PLUGIN (or, when unset, libnccl-tuner.so; a bare name NAME also as libnccl-tuner-NAME.so), and when that
 * fails it takes the library the net plugin came from (ncclGetNetPluginLib). So NCCL_NET_PLUGIN=jmesh brings this
 * tuner along; NCCL_TUNER_PLUGIN=none or JMESH_TUNER=0 leaves NCCL's own choices.
 *
 * Only v5 is exported: jmesh's CollNet exists only for NCCL 2.28 and newer (ncclCollNetPlugin_v11), which load v5
 * first, and an older NCCL has no jmesh CollNet to steer away from.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_tuner_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define MIN_NODES_DEFAULT 3
/* 1000 s: far above any real collective, yet below the 3600 s that NCCL's search starts from (topoGetAlgoInfo,
 * src/enqueue.cc:1828), so the entry stays usable if everything else disappears */
#define AVOID_COST_US 1.0e9f
#define NUM_FUNCS 16 /* room for every ncclFunc_t (11 in 2.28) */

typedef struct {
    ncclDebugLogger_t log;
    size_t nNodes;
    int active;   /* 0: JMESH_TUNER=0, or nNodes >= minNodes: NCCL's table untouched */
    int minNodes;
    /* bit b of logged[f]: a change for function f at sizes in [2^b, 2^(b+1)) was logged already */
    uint64_t logged[NUM_FUNCS];
} tuner_ctx_t;

static const char* const ALGO_NAMES[JM_NUM_ALGORITHMS] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                                          "NVLS", "NVLS_TREE", "PAT"};
static const char* const PROTO_NAMES[JM_NUM_PROTOCOLS] = {"LL", "LL128", "SIMPLE"};

static const char* algo_name(int a) {
    return a >= 0 && a < JM_NUM_ALGORITHMS ? ALGO_NAMES[a] : "?";
}

static const char* proto_name(int p) {
    return p >= 0 && p < JM_NUM_PROTOCOLS ? PROTO_NAMES[p] : "?";
}

static int is_collnet(int algo) {
    return algo == JM_ALGO_COLLNET_DIRECT || algo == JM_ALGO_COLLNET_CHAIN;
}

/* JMESH_COLLNET_MIN_NODES: an integer >= 2 (one node never has a CollNet); anything else warns and takes the default */
static int min_nodes_setting(ncclDebugLogger_t log) {
    const char* env = getenv("JMESH_COLLNET_MIN_NODES");
    if (env == NULL || *env == '\0') return MIN_NODES_DEFAULT;
    char* end;
    errno = 0;
    long v = strtol(env, &end, 10);
    if (errno == 0 && *end == '\0' && v >= 2 && v <= 1000000) return (int)v;
    if (log)
        log(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__,
            "jmesh tuner: JMESH_COLLNET_MIN_NODES=%s is not an integer from 2 to 1000000: using %d; set it to the "
            "node count from which NCCL may use the CollNet for all_reduce", env, MIN_NODES_DEFAULT);
    return MIN_NODES_DEFAULT;
}

static ncclResult_t tuner_init(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                               jm_nvl_domain_info_v5_t* nvlDomainInfo, jm_tuner_constants_v5_t* constants) {
    (void)commId;
    (void)nvlDomainInfo;
    (void)constants;
    *ctx = NULL;
    tuner_ctx_t* c = calloc(1, sizeof *c);
    if (c == NULL) {
        if (logFunction)
            logFunction(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__,
                        "jmesh tuner: out of memory for its context: NCCL's own algorithm choices apply");
        return ncclSuccess;
    }
    c->log = logFunction;
    c->nNodes = nNodes;
    const char* env = getenv("JMESH_TUNER");
    int on = 1;
    if (env != NULL && strcmp(env, "0") == 0) {
        on = 0;
    } else if (env != NULL && strcmp(env, "1") != 0 && logFunction) {
        logFunction(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__,
                    "jmesh tuner: JMESH_TUNER=%s is neither 0 (NCCL's own choices) nor 1 (on): tuner on; set it to "
                    "0 or 1", env);
    }
    c->minNodes = min_nodes_setting(logFunction);
    c->active = on && nNodes < (size_t)c->minNodes;
    *ctx = c;
    if (!logFunction) return ncclSuccess;
    if (!on) {
        logFunction(NCCL_LOG_INFO, NCCL_INIT | JM_NCCL_TUNING, __FILE__, __LINE__,
                    "jmesh tuner: off (JMESH_TUNER=0): NCCL's own algorithm choices (%zu ranks, %zu nodes)", nRanks,
                    nNodes);
    } else {
        logFunction(NCCL_LOG_INFO, NCCL_INIT | JM_NCCL_TUNING, __FILE__, __LINE__,
                    "jmesh tuner: %zu nodes, CollNet for all_reduce off below %d nodes (JMESH_COLLNET_MIN_NODES): %s",
                    nNodes, c->minNodes,
                    c->active ? "avoided in this communicator" : "NCCL's own choice in this communicator");
    }
    return ncclSuccess;
}

static int bucket_of(size_t nBytes) {
    int b = 0;
    while (b < 63 && (nBytes >> (b + 1)) != 0) b++;
    return b;
}

/* the cheapest usable entry, algorithms for which skip(algo) holds left out; -1 in *algo when there is none */
static float cheapest(const float* t, int numAlgo, int numProto, int (*skip)(int), int* algo, int* proto) {
    float best = -1.0f;
    *algo = *proto = -1;
    for (int a = 0; a < numAlgo; a++) {
        if (skip && skip(a)) continue;
        for (int p = 0; p < numProto; p++) {
            float v = t[a * numProto + p];
            if (v >= 0.0f && (best < 0.0f || v < best)) {
                best = v;
                *algo = a;
                *proto = p;
            }
        }
    }
    return best;
}

static ncclResult_t tuner_getCollInfo(void* ctx, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                                      int numAlgo, int numProto, int regBuff, int* nChannels) {
    (void)numPipeOps;
    (void)regBuff;
    (void)nChannels; /* NCCL keeps its own channel count when this stays untouched */
    tuner_ctx_t* c = ctx;
    if (c == NULL || !c->active || collType != JM_FUNC_ALL_REDUCE || collCostTable == NULL ||
        numAlgo <= JM_ALGO_COLLNET_CHAIN || numProto <= 0)
        return ncclSuccess;
    /* NCCL passes its float[numAlgo][numProto] cast to float** (src/enqueue.cc:1932-1945) */
    float* t = (float*)collCostTable;
    int keepAlgo, keepProto, wasAlgo, wasProto;
    float keep = cheapest(t, numAlgo, numProto, is_collnet, &keepAlgo, &keepProto);
    /* only CollNet is usable (NCCL_ALGO=allreduce:collnet...): the user's choice, and NCCL needs one entry */
    if (keep < 0.0f || keep >= AVOID_COST_US) return ncclSuccess;
    float was = cheapest(t, numAlgo, numProto, NULL, &wasAlgo, &wasProto);
    for (int a = JM_ALGO_COLLNET_DIRECT; a <= JM_ALGO_COLLNET_CHAIN; a++) {
        for (int p = 0; p < numProto; p++) {
            float* v = &t[a * numProto + p];
            /* negative: NCCL's "cannot run here" (-1); it must stay that way */
            if (*v >= 0.0f && *v < AVOID_COST_US) *v = AVOID_COST_US;
        }
    }
    if (!is_collnet(wasAlgo) || c->log == NULL || collType >= NUM_FUNCS) return ncclSuccess;
    int b = bucket_of(nBytes);
    uint64_t bit = 1ULL << b;
    if (__atomic_fetch_or(&c->logged[collType], bit, __ATOMIC_RELAXED) & bit) return ncclSuccess;
    c->log(NCCL_LOG_INFO, JM_NCCL_TUNING, __FILE__, __LINE__,
           "jmesh tuner: all_reduce of %zu bytes on %zu nodes: %s/%s (%.1f us in NCCL's model) instead of %s/%s "
           "(%.1f us): CollNet off below %d nodes (JMESH_COLLNET_MIN_NODES); said once for %zu to %zu bytes",
           nBytes, c->nNodes, algo_name(keepAlgo), proto_name(keepProto), keep, algo_name(wasAlgo),
           proto_name(wasProto), was, c->minNodes, (size_t)bit, b >= 63 ? (size_t)-1 : (size_t)((bit << 1) - 1));
    return ncclSuccess;
}

static ncclResult_t tuner_finalize(void* ctx) {
    free(ctx);
    return ncclSuccess;
}

EXPORT const jm_tuner_v5_t ncclTunerPlugin_v5 = {
    .name = "jmesh",
    .init = tuner_init,
    .getCollInfo = tuner_getCollInfo,
    .finalize = tuner_finalize,
};
