/*
 * --tuner: the plugin library's ncclTunerPlugin_v5, called as NCCL 2.28 calls it (src/init.cc:1352-1355 and
 * src/enqueue.cc:1930-1946 of NVIDIA/nccl v2.28.9-1): init per communicator with its rank and node counts and NCCL's
 * logger, then getCollInfo on a cost table NCCL filled (every entry NCCL_ALGO_PROTO_IGNORE, -1, except what can run
 * here), then finalize. One process, no ranks, no JVM: a tuner must work before and without the net plugin's init.
 *
 * Prints every table before and after, with the entry NCCL would pick from each (its rule: the cheapest entry that is
 * not negative, topoGetAlgoInfo in src/enqueue.cc:1831-1840), so that a test can check what the tuner changed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "nccl_tuner_abi.h"

#define A JM_NUM_ALGORITHMS
#define P JM_NUM_PROTOCOLS
#define X JM_COST_IGNORE

static const char* const ALGOS[A] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
static const char* const PROTOS[P] = {"LL", "LL128", "SIMPLE"};

struct tuner_case {
    const char* name;
    int coll;
    size_t bytes;
    float table[A][P]; /* rows: algorithms, columns LL, LL128, SIMPLE, microseconds as NCCL's model gives them */
};

/*
 * Tables shaped as NCCL fills them between one-GPU nodes over a network plugin with a CollNet: no NVLS, no PAT for
 * all_reduce, CollNet only with SIMPLE (NCCL zeroes CollNet's LL and LL128 bandwidth, src/graph/tuning.cc:311-312),
 * CollNetDirect only on a node with an NVSwitch (the 16 KiB case pretends there is one). CollNet looks cheapest, as
 * NCCL's model makes it (14 us + 2 x the plugin's latency).
 */
static const struct tuner_case CASES[] = {
    {"model", JM_FUNC_ALL_REDUCE, 4096,
     {{48.5f, 52.0f, 64.5f}, {46.0f, 50.1f, 70.3f}, {X, X, X}, {X, X, 30.0f}, {X, X, X}, {X, X, X}, {X, X, X}}},
    /* the same size class as 4096: the tuner changes it too, and says so only once */
    {"model", JM_FUNC_ALL_REDUCE, 6000,
     {{49.0f, 53.0f, 65.0f}, {47.0f, 51.0f, 71.0f}, {X, X, X}, {X, X, 31.0f}, {X, X, X}, {X, X, X}, {X, X, X}}},
    {"nvswitch", JM_FUNC_ALL_REDUCE, 16384,
     {{62.0f, 64.5f, 70.0f}, {58.0f, 60.0f, 75.0f}, {X, X, 25.0f}, {X, X, 33.0f}, {X, X, X}, {X, X, X}, {X, X, X}}},
    /* NCCL_ALGO=allreduce:collnetchain: only the CollNet is left, and NCCL needs one usable entry */
    {"collnet-only", JM_FUNC_ALL_REDUCE, 4096,
     {{X, X, X}, {X, X, X}, {X, X, X}, {X, X, 30.0f}, {X, X, X}, {X, X, X}, {X, X, X}}},
    {"model", JM_FUNC_ALL_GATHER, 4096,
     {{X, X, X}, {20.0f, 22.0f, 40.0f}, {X, X, 15.0f}, {X, X, X}, {X, X, X}, {X, X, X}, {X, X, 35.0f}}},
};

static void pick(const float t[A][P], int* algo, int* proto) {
    float best = 3600000000.0f;
    *algo = *proto = -1;
    for (int a = 0; a < A; a++)
        for (int p = 0; p < P; p++)
            if (t[a][p] >= 0.0f && t[a][p] < best) {
                best = t[a][p];
                *algo = a;
                *proto = p;
            }
}

static void print_table(const char* label, const float t[A][P]) {
    int a, p;
    pick(t, &a, &p);
    printf(" %s=", label);
    for (int i = 0; i < A; i++) printf("%s%s:%.1f,%.1f,%.1f", i ? ";" : "", ALGOS[i], t[i][0], t[i][1], t[i][2]);
    printf(" %s_pick=%s/%s", label, a < 0 ? "NONE" : ALGOS[a], p < 0 ? "NONE" : PROTOS[p]);
}

static void run_nodes(const jm_tuner_v5_t* tuner, size_t nodes) {
    void* ctx = NULL;
    jm_nvl_domain_info_v5_t nvl = {(int)nodes, 1, 1};
    jm_tuner_constants_v5_t constants;
    memset(&constants, 0, sizeof constants);
    /* one GPU per node: as many ranks as nodes */
    CHECK(tuner->init(&ctx, 0x1234, nodes, nodes, driver_logger(), &nvl, &constants));
    jm_tuner_constants_v5_t zero;
    memset(&zero, 0, sizeof zero);
    if (memcmp(&constants, &zero, sizeof zero) != 0) printf("tuner: nodes=%zu: init changed NCCL's constants\n", nodes);
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const struct tuner_case* c = &CASES[i];
        float t[A][P];
        memcpy(t, c->table, sizeof t);
        int channels = 0;
        CHECK(tuner->getCollInfo(ctx, c->coll, c->bytes, 1, (float**)t, A, P, 0, &channels));
        printf("tuner: nodes=%zu coll=%s bytes=%zu case=%s", nodes,
               c->coll == JM_FUNC_ALL_REDUCE ? "all_reduce" : "all_gather", c->bytes, c->name);
        print_table("before", c->table);
        print_table("after", t);
        printf(" channels=%d\n", channels);
    }
    CHECK(tuner->finalize(ctx));
}

void tuner_run(const char* nodesList) {
    void* lib = dlopen(opt.plugin, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) die("cannot load %s: %s", opt.plugin, dlerror());
    const jm_tuner_v5_t* tuner = dlsym(lib, "ncclTunerPlugin_v5");
    if (tuner == NULL) die("%s exports no ncclTunerPlugin_v5: not a tuner for NCCL 2.28", opt.plugin);
    printf("tuner: %s: \"%s\" through ncclTunerPlugin_v5\n", opt.plugin, tuner->name);
    char* list = strdup(nodesList);
    for (char* s = strtok(list, ","); s != NULL; s = strtok(NULL, ",")) {
        char* end;
        long n = strtol(s, &end, 10);
        if (*end != '\0' || n < 1 || n > 100000) die("--nodes %s: give node counts, e.g. 2,4", nodesList);
        run_nodes(tuner, (size_t)n);
    }
    free(list);
    printf("tuner: done\n");
}
