/*
 * jmesh's own declaration of NCCL's tuner plugin ABI, version 5: the newest NCCL 2.28 loads (ncclTunerPlugin_v5,
 * src/include/plugin/tuner/tuner_v5.h of NVIDIA/nccl v2.28.9-1); NCCL 2.30 still loads it after its own v6.
 *
 * Checked by hand against that header (sizes and offsets with static asserts, once) and ext-tuner/example/nccl/
 * tuner.h of the same tag for the constants: the struct is a name and three function pointers in NCCL's order; the
 * algorithm and protocol indices, the function numbers and the "ignored" cost are NCCL's values. (The example's
 * ncclTunerConstants_v5_t lacks perChMaxNVLSTreeBws; NCCL's own header, which NCCL is built with, has it.) Names are jmesh's (jm_, JM_) so that this file never collides with NVIDIA's headers; the
 * shared types (ncclResult_t, ncclDebugLogger_t) come from nccl_net_abi.h.
 */
#ifndef JMESH_NCCL_TUNER_ABI_H
#define JMESH_NCCL_TUNER_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_net_abi.h"

/* ncclFunc_t (src/include/nccl_common.h): an int-sized enum; only these two matter to jmesh */
#define JM_FUNC_ALL_GATHER 2
#define JM_FUNC_ALL_REDUCE 4

/* the rows and columns of NCCL's cost table, float[numAlgo][numProto] in microseconds */
#define JM_ALGO_TREE 0
#define JM_ALGO_RING 1
#define JM_ALGO_COLLNET_DIRECT 2
#define JM_ALGO_COLLNET_CHAIN 3
#define JM_ALGO_NVLS 4
#define JM_ALGO_NVLS_TREE 5
#define JM_ALGO_PAT 6
#define JM_NUM_ALGORITHMS 7
#define JM_PROTO_LL 0
#define JM_PROTO_LL128 1
#define JM_PROTO_SIMPLE 2
#define JM_NUM_PROTOCOLS 3
/* NCCL_ALGO_PROTO_IGNORE: an entry NCCL cannot run here (disabled, unsupported, or excluded by NCCL_ALGO) */
#define JM_COST_IGNORE (-1.0f)
/* NCCL's subsystem flag for tuning decisions (NCCL_DEBUG_SUBSYS=TUNING) */
#define JM_NCCL_TUNING 0x40

typedef struct {
    int nNvlDomains;
    int minRanksPerNvlDomain;
    int maxRanksPerNvlDomain;
} jm_nvl_domain_info_v5_t;

/* NCCL's model constants, which a tuner may change before NCCL tunes its model; jmesh leaves them alone */
typedef struct {
    double baseLatencies[7][3];
    double hwLatencies[3][7][3];
    double llMaxBws[4][3];
    double perChMaxRingLL128Bws[4][3];
    double perChMaxTreeLL128Bws[4][3];
    double perChMaxTreeBws[4][3];
    double perChMaxNVLSTreeBws[4][3];
} jm_tuner_constants_v5_t;

typedef struct {
    const char* name;
    ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                         jm_nvl_domain_info_v5_t* nvlDomainInfo, jm_tuner_constants_v5_t* constants);
    ncclResult_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                                int numAlgo, int numProto, int regBuff, int* nChannels);
    ncclResult_t (*finalize)(void* ctx);
} jm_tuner_v5_t;

#endif
