/*
 * nccl-net-driver: loads an NCCL net plugin by path and drives it the way NCCL's proxy does, between 2 or 3
 * processes on one or several hosts, without NCCL or a GPU. Works with any plugin that exports ncclNetPlugin_v8..v12.
 *
 *   nccl-net-driver --plugin PATH --rank R --nranks N --dir DIR [options]
 *
 * Every rank listens once per peer and publishes the handle as DIR/handle-<listener>-<connector> (DIR is shared by
 * the ranks: a local folder, or a shared file system between hosts). Then, per message size:
 *   1. a verification round: every byte checked, sends of size-1 into receives of size to check that test() reports
 *      the real size, grouped receives (--group buffers per irecv, one tag each);
 *   2. a bandwidth round: --iters messages per peer, up to --window grouped requests in flight per connection,
 *      only a sequence word per message checked; prints the rank's send and receive bandwidth.
 *    (--oneway: only rank 0 sends, as `jmesh bw` measures; --calls N: no rounds, what each call costs instead, see
 *    driver_calls.c; --coll: no rounds, the plugin's CollNet all-reduce instead, every result checked, see
 *    driver_coll.c; --tuner: one process, no ranks, the library's NCCL tuner on cost tables, see driver_tuner.c.)
 * Then an orderly close (closeSend/closeRecv/deregMr/closeListen/finalize) and, with --reload, dlclose, dlopen and a
 * second init to check that the plugin survives being unloaded and loaded again as NCCL 2.28 does (under the name
 * libnccl-net.so: see the reload below).
 *
 * Exits 0 and prints "driver: rank R: PASS" on success; 1 with the reason otherwise. Every wait has a deadline
 * (--timeout seconds), so nothing hangs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

static double g_start; /* before init: the first listen reports the time from here */

/* ---- connections ------------------------------------------------------------------------------------------------ */

typedef struct {
    int rank;
    void* listenComm;
    void* sendComm;
    void* recvComm;
    char peerHandle[NCCL_NET_HANDLE_MAXSIZE];
    int haveHandle;
    char* sendBuf;
    char* recvBuf;
    size_t bufBytes;
    void* sendMh;
    void* recvMh;
} peer_t;

static peer_t peers[MAX_PEERS];
static int npeers;

static void connect_all(void) {
    int dev = opt.dev >= 0 ? opt.dev : 0;
    for (int r = 0; r < opt.nranks; r++) {
        if (r == opt.rank) continue;
        peer_t* p = &peers[npeers++];
        memset(p, 0, sizeof *p);
        p->rank = r;
        char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
        n_listen(dev, handle, &p->listenComm);
        if (p->listenComm == NULL) die("listen returned a NULL listenComm");
        if (npeers == 1) printf("driver: rank %d: init to first listen took %.3f s\n", opt.rank, now() - g_start);
        char name[64];
        snprintf(name, sizeof name, "handle-%d-%d", opt.rank, r);
        write_file(name, handle, sizeof handle);
    }
    double t0 = now(), deadline = t0 + opt.timeout;
    int pending = 2 * npeers;
    while (pending > 0) {
        int progress = 0;
        for (int i = 0; i < npeers; i++) {
            peer_t* p = &peers[i];
            if (p->sendComm == NULL) {
                if (!p->haveHandle) {
                    char name[64];
                    snprintf(name, sizeof name, "handle-%d-%d", p->rank, opt.rank);
                    p->haveHandle = read_file(name, p->peerHandle, sizeof p->peerHandle);
                }
                if (p->haveHandle) {
                    n_connect(dev, p->peerHandle, &p->sendComm); /* NULL while in progress: call again */
                    if (p->sendComm) { pending--; progress = 1; }
                }
            }
            if (p->recvComm == NULL) {
                n_accept(p->listenComm, &p->recvComm);
                if (p->recvComm) { pending--; progress = 1; }
            }
        }
        if (now() > deadline) {
            for (int i = 0; i < npeers; i++) {
                if (!peers[i].sendComm || !peers[i].recvComm)
                    die("timed out after %.0f s connecting to rank %d (send %s, receive %s)", opt.timeout,
                        peers[i].rank, peers[i].sendComm ? "up" : peers[i].haveHandle ? "connecting" : "no handle",
                        peers[i].recvComm ? "up" : "not accepted");
            }
        }
        if (!progress) usleep(200);
    }
    printf("driver: rank %d: connected to %d peer(s) in %.3f s (non-blocking connect/accept)\n", opt.rank, npeers,
           now() - t0);
}

static void register_all(void) {
    for (int i = 0; i < npeers; i++) {
        peer_t* p = &peers[i];
        p->bufBytes = (size_t)opt.window * opt.group * (opt.maxSize ? opt.maxSize : 1);
        p->sendBuf = aligned_alloc(4096, (p->bufBytes + 4095) & ~(size_t)4095);
        p->recvBuf = aligned_alloc(4096, (p->bufBytes + 4095) & ~(size_t)4095);
        if (!p->sendBuf || !p->recvBuf) die("out of memory for %zu-byte buffers", p->bufBytes);
        memset(p->sendBuf, 0, p->bufBytes);
        memset(p->recvBuf, 0, p->bufBytes);
        p->sendMh = n_regmr(p->sendComm, p->sendBuf, p->bufBytes);
        p->recvMh = n_regmr(p->recvComm, p->recvBuf, p->bufBytes);
    }
}

/* ---- traffic ---------------------------------------------------------------------------------------------------- */

static inline uint8_t pattern(int src, int dst, uint64_t seq, size_t k) {
    return (uint8_t)(k * 31u + seq * 7u + (unsigned)src * 13u + (unsigned)dst * 5u + (k >> 8));
}

/* One direction of one connection in one round. */
typedef struct {
    uint64_t posted, completed;     /* messages (sender) or grouped receives (receiver) */
    void* req[MAX_WINDOW * MAX_GROUP];
} flow_t;

static size_t msg_len(size_t size, uint64_t seq, int verify) {
    /* some sends shorter than the posted receive */
    return verify && !opt.plain && size > 1 && seq % 3 == 2 ? size - 1 : size;
}

/* Runs one round of `count` messages to and from every peer (count a multiple of group). Returns elapsed seconds. */
static double round_trip(size_t size, uint64_t count, int verify, uint64_t seqBase, uint64_t* errors) {
    flow_t sendf[MAX_PEERS], recvf[MAX_PEERS];
    memset(sendf, 0, sizeof sendf);
    memset(recvf, 0, sizeof recvf);
    /* --oneway: rank 0 only sends, rank 1 only receives, as `jmesh bw` measures one direction */
    uint64_t sends = opt.oneway && opt.rank != 0 ? 0 : count;
    uint64_t groups = opt.oneway && opt.rank == 0 ? 0 : count / opt.group;
    size_t slotBytes = size ? size : 1;
    int slots = opt.window * opt.group;
    if (!verify) { /* bandwidth: fill once, only the sequence word changes */
        for (int i = 0; i < npeers; i++)
            for (int s = 0; s < slots; s++)
                for (size_t k = 0; k < size; k++) peers[i].sendBuf[s * slotBytes + k] = pattern(opt.rank, peers[i].rank, 0, k);
    }
    double t0 = now(), deadline = t0 + opt.timeout;
    int busy = 1;
    while (busy) {
        busy = 0;
        int progress = 0;
        for (int i = 0; i < npeers; i++) {
            peer_t* p = &peers[i];
            flow_t* s = &sendf[i];
            flow_t* r = &recvf[i];
            /* sender: keep up to window*group messages in flight, complete them in order */
            if (s->posted < sends && s->posted - s->completed < (uint64_t)slots) {
                uint64_t seq = seqBase + s->posted;
                int slot = (int)(s->posted % slots);
                char* buf = p->sendBuf + slot * slotBytes;
                size_t len = msg_len(size, seq, verify);
                if (verify) {
                    for (size_t k = 0; k < len; k++) buf[k] = pattern(opt.rank, p->rank, seq, k);
                } else if (len >= 8) {
                    memcpy(buf, &seq, 8);
                }
                void* req = NULL;
                n_isend(p->sendComm, buf, len, (int)(s->posted % opt.group), p->sendMh, &req);
                if (req) { s->req[s->posted % (MAX_WINDOW * MAX_GROUP)] = req; s->posted++; progress = 1; }
            }
            if (s->completed < s->posted) {
                int sz[MAX_GROUP] = {0};
                if (n_test(s->req[s->completed % (MAX_WINDOW * MAX_GROUP)], sz)) {
                    uint64_t seq = seqBase + s->completed;
                    if (!opt.plain && (size_t)sz[0] != msg_len(size, seq, verify)) {
                        fprintf(stderr, "driver: rank %d: send %llu to rank %d: test reported %d bytes, sent %zu\n",
                                opt.rank, (unsigned long long)seq, p->rank, sz[0], msg_len(size, seq, verify));
                        (*errors)++;
                    }
                    s->completed++;
                    progress = 1;
                }
            }
            /* receiver: grouped receives of `group` buffers, one tag each */
            if (r->posted < groups && r->posted - r->completed < (uint64_t)opt.window) {
                void* data[MAX_GROUP];
                size_t sizes[MAX_GROUP];
                int tags[MAX_GROUP];
                void* mhs[MAX_GROUP];
                int wslot = (int)(r->posted % opt.window);
                for (int g = 0; g < opt.group; g++) {
                    data[g] = p->recvBuf + (size_t)(wslot * opt.group + g) * slotBytes;
                    sizes[g] = size;
                    tags[g] = g;
                    mhs[g] = p->recvMh;
                }
                void* req = NULL;
                n_irecv(p->recvComm, opt.group, data, sizes, tags, mhs, &req);
                if (req) { r->req[r->posted % MAX_WINDOW] = req; r->posted++; progress = 1; }
            }
            if (r->completed < r->posted) {
                int sz[MAX_GROUP] = {0};
                if (n_test(r->req[r->completed % MAX_WINDOW], sz)) {
                    int wslot = (int)(r->completed % opt.window);
                    for (int g = 0; g < opt.group; g++) {
                        uint64_t seq = seqBase + r->completed * opt.group + g;
                        size_t len = msg_len(size, seq, verify);
                        const char* buf = p->recvBuf + (size_t)(wslot * opt.group + g) * slotBytes;
                        if (!opt.plain && (size_t)sz[g] != len) {
                            fprintf(stderr, "driver: rank %d: receive %llu from rank %d: test reported %d bytes, "
                                    "expected %zu\n", opt.rank, (unsigned long long)seq, p->rank, sz[g], len);
                            (*errors)++;
                        } else if (verify) {
                            for (size_t k = 0; k < len; k++) {
                                if ((uint8_t)buf[k] != pattern(p->rank, opt.rank, seq, k)) {
                                    fprintf(stderr, "driver: rank %d: receive %llu from rank %d: byte %zu is 0x%02x, "
                                            "expected 0x%02x\n", opt.rank, (unsigned long long)seq, p->rank, k,
                                            (uint8_t)buf[k], pattern(p->rank, opt.rank, seq, k));
                                    (*errors)++;
                                    break;
                                }
                            }
                        } else if (len >= 8) {
                            uint64_t got;
                            memcpy(&got, buf, 8);
                            if (got != seq) {
                                fprintf(stderr, "driver: rank %d: receive %llu from rank %d carries sequence %llu\n",
                                        opt.rank, (unsigned long long)seq, p->rank, (unsigned long long)got);
                                (*errors)++;
                            }
                        }
                    }
                    r->completed++;
                    progress = 1;
                }
            }
            if (s->completed < sends || r->completed < groups) busy = 1;
        }
        if (busy && now() > deadline) {
            for (int i = 0; i < npeers; i++)
                fprintf(stderr, "driver: rank %d: peer %d: sent %llu/%llu (completed %llu), received %llu/%llu groups\n",
                        opt.rank, peers[i].rank, (unsigned long long)sendf[i].posted, (unsigned long long)sends,
                        (unsigned long long)sendf[i].completed, (unsigned long long)recvf[i].completed,
                        (unsigned long long)groups);
            die("timed out after %.0f s in a %s round of %zu-byte messages", opt.timeout,
                verify ? "verification" : "bandwidth", size);
        }
        /* as NCCL's proxy thread: "No request progressed. Let others run." */
        if (!progress && !opt.spin) sched_yield();
    }
    return now() - t0;
}

/* One settle round: unmeasured messages of the first size. */
struct warm_round {
    size_t size;
    uint64_t count;
    uint64_t* seq;
    uint64_t* errors;
    double secs;
};

static void warm_round(void* arg) {
    struct warm_round* w = arg;
    w->secs = round_trip(w->size, w->count, 0, *w->seq, w->errors);
    *w->seq += w->count;
}

/* Per message size: a verification round, then a bandwidth round; prints a line per size. */
static void rounds(void) {
    uint64_t errors = 0, seq = 0;
    size_t sizes[64];
    int nsizes = 0;
    for (size_t s = opt.minSize; s < opt.maxSize && nsizes < 63; s = s ? s * 4 : 4096) sizes[nsizes++] = s;
    sizes[nsizes++] = opt.maxSize;
    printf("driver: rank %d: %10s %8s %14s %12s  (window %d, group %d, %d peer(s); bandwidth = %s / round time; MB "
           "= 2^20 bytes, as perftest)\n", opt.rank, "bytes", "msgs/peer", "GB/s", "MB/s", opt.window, opt.group,
           npeers,
           !opt.oneway ? "this rank's bytes sent to all peers (the same amount is received)"
           : opt.rank == 0 ? "bytes sent (--oneway)" : "bytes received (--oneway)");
    for (int si = 0; si < nsizes; si++) {
        size_t size = sizes[si];
        uint64_t vcount = (uint64_t)opt.group * opt.window * 2;
        round_trip(size, vcount, 1, seq, &errors);
        seq += vcount;
        if (si == 0 && opt.warmup > 0) { /* unmeasured, for the JIT of a plugin in Java */
            uint64_t w = ((uint64_t)opt.warmup + opt.group - 1) / opt.group * opt.group;
            round_trip(size, w, 0, seq, &errors);
            seq += w;
        }
        if (si == 0 && opt.settle > 0) {
            /* settle rounds of about a second (JitSettle's): as many messages as rank 0 moves in one, found by
             * probes that double until one takes 0.2 s */
            uint64_t unit = (uint64_t)opt.group * opt.window * 2, n = unit;
            struct warm_round wr = {size, n, &seq, &errors, 0};
            for (int k = 0;; k++) {
                wr.count = n;
                warm_round(&wr);
                char name[32];
                snprintf(name, sizeof name, "settle-probe-%d", k);
                int enough = wr.secs >= 0.2 || n >= (1u << 22);
                long v = share_from_rank0(name, enough ? (long)(n / (wr.secs > 1e-3 ? wr.secs : 1e-3)) : -2 * (long)n);
                if (v > 0) {
                    wr.count = ((uint64_t)v + unit - 1) / unit * unit;
                    break;
                }
                n = (uint64_t)-v;
            }
            settle("bandwidth", warm_round, &wr);
        }
        double secs = round_trip(size, (uint64_t)opt.iters, 0, seq, &errors);
        seq += (uint64_t)opt.iters;
        double gbs = (double)size * opt.iters * npeers / secs / 1e9;
        printf("driver: rank %d: %10zu %8d %14.4f %12.2f\n", opt.rank, size, opt.iters, gbs, gbs * 1e9 / 1048576);
        if (errors) die("%llu error(s) at %zu bytes (see above)", (unsigned long long)errors, size);
    }
    printf("driver: rank %d: verified every byte of %llu messages per peer, %s\n", opt.rank, (unsigned long long)seq,
           opt.plain ? "sizes reported by test() not checked (--plain)" : "sizes reported by test() correct");
}

static void close_all(void) {
    for (int i = 0; i < npeers; i++) {
        peer_t* p = &peers[i];
        n_close(p->sendComm, p->sendMh, p->recvComm, p->recvMh, p->listenComm);
        free(p->sendBuf);
        free(p->recvBuf);
    }
    n_finalize();
}

static size_t parse_size(const char* s) {
    char* end;
    double v = strtod(s, &end);
    switch (*end) {
        case 'k': case 'K': v *= 1024; break;
        case 'm': case 'M': v *= 1024 * 1024; break;
        case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    }
    return (size_t)v;
}

static void usage(void) {
    fprintf(stderr,
            "usage: nccl-net-driver --plugin PATH --rank R --nranks N --dir DIR [options]\n"
            "  --dir DIR      a folder the ranks share to meet (handles, barriers): an empty one per run\n"
            "  --api V        use ncclNetPlugin_vV (default: newest of 12..8 the plugin exports)\n"
            "  --dev D        device index for listen/connect (default 0)\n"
            "  --min SIZE     smallest message (default 4K); --max SIZE largest (default 1M); sizes grow x4\n"
            "  --iters K      messages per peer and size in the bandwidth round (default 64)\n"
            "  --window W     grouped requests in flight per connection (default 8, max 32)\n"
            "  --group G      buffers per grouped receive (default 2, max 8)\n"
            "  --timeout S    deadline for every wait (default 60)\n"
            "  --log-level L  print plugin log lines up to NCCL level L (2 WARN, 3 INFO, 5 TRACE; default 2)\n"
            "  --warmup M     unmeasured messages at the first size before its bandwidth round (default --iters)\n"
            "  --oneway       rank 0 only sends, rank 1 only receives (2 ranks), as `jmesh bw` measures\n"
            "  --calls N      instead of the rounds: the cost of test() that finds nothing (N calls), then N\n"
            "                 round trips of --min bytes with the time spent in isend and irecv (2 ranks)\n"
            "  --warm-seconds S  --calls: unmeasured calls and round trips first, for the JIT (default 2)\n"
            "  --settle S     then go on warming up, in rounds of about a second (bandwidth: messages of the\n"
            "                 first size; --calls: round trips), until no rank's JIT compiled during one, for at\n"
            "                 most S s (default 0: no wait)\n"
            "  --spin         never yield the CPU while waiting (by default a pass over the requests that\n"
            "                 finds nothing calls sched_yield(), as NCCL's proxy thread does)\n"
            "  --plain        every send the receive's full size, and the sizes test() reports not checked:\n"
            "                 for a baseline plugin that reports the posted size (the reference plugin)\n"
            "  --reload       after closing, dlclose and load the plugin again as NCCL 2.28 does (libnccl-net.so\n"
            "                 beside it) and re-init it\n"
            "  --coll         instead of the rounds: the plugin's CollNet (ncclCollNetPlugin_v11): every (type, op)\n"
            "                 reduceSupport accepts, all-reduces of 1 element up to min(--max, maxCollBytes) bytes,\n"
            "                 --window in flight, checked against a reference; bad input must be refused;\n"
            "                 with --calls N, then N timed fp32 sum all-reduces one at a time per size from --min\n"
            "                 to --max (x4), after --warmup unmeasured ones: each one's time, median and p90\n"
            "  --tuner        alone (no --rank, --nranks, --dir): the library's ncclTunerPlugin_v5 on NCCL-like cost\n"
            "                 tables for --nodes N[,N...] one-GPU nodes (default 2,4); prints each table before\n"
            "                 and after, and the entry NCCL would pick\n"
            "  --destroy-jvm  at the end, destroy the JVM the plugin started (so that options such as\n"
            "                 -XX:AOTMode=record in JMESH_JVM_OPTS write their output, as at a JVM's exit)\n");
    exit(2);
}

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char* tunerNodes = NULL;
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (strcmp(a, name) == 0 && v && (i++, 1))
        if (ARG("--plugin")) opt.plugin = v;
        else if (ARG("--dir")) opt.dir = v;
        else if (ARG("--rank")) opt.rank = atoi(v);
        else if (ARG("--nranks")) opt.nranks = atoi(v);
        else if (ARG("--api")) {
            opt.api = atoi(v);
            if (opt.api < 8 || opt.api > 12) die("--api %s: this driver speaks the net plugin API v8 to v12", v);
        }
        else if (ARG("--dev")) opt.dev = atoi(v);
        else if (ARG("--min")) opt.minSize = parse_size(v);
        else if (ARG("--max")) opt.maxSize = parse_size(v);
        else if (ARG("--iters")) opt.iters = atoi(v);
        else if (ARG("--window")) opt.window = atoi(v);
        else if (ARG("--group")) opt.group = atoi(v);
        else if (ARG("--timeout")) opt.timeout = atof(v);
        else if (ARG("--log-level")) opt.logLevel = atoi(v);
        else if (ARG("--calls")) opt.calls = atoi(v);
        else if (ARG("--warmup")) opt.warmup = atoi(v);
        else if (ARG("--warm-seconds")) opt.warmSeconds = atof(v);
        else if (ARG("--settle")) opt.settle = atof(v);
        else if (strcmp(a, "--oneway") == 0) opt.oneway = 1;
        else if (strcmp(a, "--plain") == 0) opt.plain = 1;
        else if (strcmp(a, "--spin") == 0) opt.spin = 1;
        else if (strcmp(a, "--reload") == 0) opt.reload = 1;
        else if (strcmp(a, "--destroy-jvm") == 0) opt.destroyJvm = 1;
        else if (strcmp(a, "--coll") == 0) opt.coll = 1;
        else if (strcmp(a, "--tuner") == 0) tunerNodes = tunerNodes ? tunerNodes : "2,4";
        else if (ARG("--nodes")) tunerNodes = v;
        else usage();
    }
    if (tunerNodes) {
        if (!opt.plugin || opt.dir || opt.nranks || opt.coll || opt.calls || opt.oneway || opt.reload)
            die("--tuner runs alone, one process: --plugin PATH --tuner [--nodes N,...] [--log-level L]");
        tuner_run(tunerNodes);
        return 0;
    }
    if (!opt.plugin || !opt.dir || opt.rank < 0 || opt.nranks < 2 || opt.nranks > MAX_PEERS + 1 ||
        opt.rank >= opt.nranks || opt.group < 1 || opt.group > MAX_GROUP || opt.window < 1 ||
        opt.window > MAX_WINDOW || opt.iters < 1 || opt.minSize > opt.maxSize || opt.timeout <= 0)
        usage();
    if (opt.coll && (opt.oneway || opt.reload))
        die("--coll runs alone: not with --oneway or --reload");
    if ((opt.oneway || (opt.calls && !opt.coll)) && opt.nranks != 2)
        die("--oneway and --calls measure between 2 ranks, not %d", opt.nranks);
    if (opt.calls < 0) die("--calls %d: give the number of calls to measure", opt.calls);
    if (opt.calls && opt.minSize < 1 && !opt.coll)
        die("--calls: --min must be at least 1 byte (the phase travels in it)");
    if (opt.warmSeconds < 0 || opt.warmSeconds >= opt.timeout)
        die("--warm-seconds %.1f: give 0 or more, and less than --timeout (%.0f)", opt.warmSeconds, opt.timeout);
    if (opt.settle < 0) die("--settle %.1f: give 0 (no wait) or more seconds", opt.settle);
    opt.iters = (opt.iters + opt.group - 1) / opt.group * opt.group;
    if (opt.warmup < 0) opt.warmup = opt.iters;

    /* before anything is written: a folder a finished run left would hand this one its handles, barriers and
     * votes (no rank writes barrier-done before every rank of its own run has started) */
    char stale;
    if (read_file("barrier-done-0", &stale, 1))
        die("%s holds the files of a run that already finished (barrier-done-0): give every run an empty folder, "
            "e.g. --dir $(mktemp -d) shared by its ranks", opt.dir);
    const char* name = load();
    printf("driver: rank %d: plugin %s: \"%s\" through ncclNetPlugin_v%d\n", opt.rank, opt.plugin, name, plugin_version());
    double t = g_start = now();
    n_init();
    int ndev = n_devices();
    printf("driver: rank %d: init took %.3f s, %d device(s)\n", opt.rank, now() - t, ndev);
    if (ndev < 1) die("the plugin reports no devices");
    for (int d = 0; d < ndev; d++) n_print_props(d);
    if (opt.dev >= ndev) die("--dev %d, but the plugin has %d device(s)", opt.dev, ndev);

    if (opt.coll) {
        coll_run();
        barrier("done");
        n_finalize();
        printf("driver: rank %d: PASS\n", opt.rank);
        return 0;
    }
    connect_all();
    register_all();
    barrier("connected");
    if (opt.calls) {
        const peer_t* p = &peers[0];
        struct calls_peer c = {p->sendComm, p->recvComm, p->sendBuf, p->recvBuf, p->sendMh, p->recvMh};
        calls_bench(&c, opt.calls);
    } else {
        rounds();
    }
    barrier("done");
    close_all();
    printf("driver: rank %d: closed all comms, registrations and listeners%s\n", opt.rank,
           plugin_version() >= 11 ? ", finalized" : "");
    if (opt.reload) {
        unload();
        /* NCCL 2.28 and 2.29 forget a plugin's name when its last communicator ends (plugin/net.cc's unload clears
           the whole entry; 2.30 keeps the name) and load "libnccl-net.so" for the next one: reload that way, from
           the layout's folder, so that a layout without that name fails here and not in a user's restart */
        static char again_path[4096];
        const char* slash = strrchr(opt.plugin, '/');
        snprintf(again_path, sizeof again_path, "%.*slibnccl-net.so", slash ? (int)(slash - opt.plugin + 1) : 0,
                 opt.plugin);
        opt.plugin = again_path;
        name = load();
        n_init();
        int again = n_devices();
        if (again != ndev) die("after reload the plugin reports %d devices, before %d", again, ndev);
        n_finalize();
        unload();
        printf("driver: rank %d: reloaded as %s (dlclose, dlopen, init, devices=%d, finalize) ok\n", opt.rank,
               opt.plugin, again);
    }
    if (opt.destroyJvm) destroy_jvm();
    printf("driver: rank %d: PASS\n", opt.rank);
    return 0;
}
