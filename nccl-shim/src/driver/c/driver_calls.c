/*
 * nccl-net-driver --calls N: what one call into the plugin costs, between two ranks, measured the way NCCL's proxy
 * makes those calls. Three figures, each comparable with the same operation in Java through jmesh's API (JMH
 * CallBenchmark, `jmesh lat`), so the difference is what the C -> Java layer costs:
 *   1. test() on a posted receive that no message has reached yet: NCCL's proxy makes this call most often (after
 *      calls/10 of them, and at least --warm-seconds, unmeasured: the JIT compiles the Java side meanwhile);
 *   2. a ping-pong of --calls round trips of --min bytes as `jmesh lat` makes it (rank 0 sends, rank 1 echoes; half
 *      a round trip is one message's latency, typical and average as in its columns; a wait yields the CPU after
 *      every test() that found nothing, as NCCL's proxy thread does, unless --spin);
 *   3. within that ping-pong, the time spent inside isend and irecv per call (a clock read on each side of the call,
 *      which the figures include).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* the ping-pong's phases, in the first byte of every message */
enum { WARM = 'w', MEASURED = 'm', END = 'e' };

static int by_value(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

static double deadline_after(void) { return now() + opt.timeout; }

/* time spent inside isend and irecv, and their counts, since the last reset */
static double isendTime, irecvTime;
static long isends, irecvs;

static void reset_times(void) {
    isendTime = irecvTime = 0;
    isends = irecvs = 0;
}

static void* post_recv(void* recvComm, char* buf, size_t size, void* mh) {
    void* data[1] = {buf};
    size_t sizes[1] = {size};
    int tags[1] = {0};
    void* mhs[1] = {mh};
    void* req = NULL;
    double deadline = deadline_after();
    while (req == NULL) {
        double t = now();
        n_irecv(recvComm, 1, data, sizes, tags, mhs, &req);
        irecvTime += now() - t;
        irecvs += req != NULL;
        if (req == NULL && now() > deadline) die("--calls: irecv not accepted for %.0f s", opt.timeout);
    }
    return req;
}

static void* post_send(void* sendComm, char* buf, size_t size, void* mh) {
    void* req = NULL;
    double deadline = deadline_after();
    while (req == NULL) {
        double t = now();
        n_isend(sendComm, buf, size, 0, mh, &req);
        isendTime += now() - t;
        isends += req != NULL;
        if (req == NULL && now() > deadline) die("--calls: isend not accepted for %.0f s", opt.timeout);
    }
    return req;
}

static void await(void* req, size_t expect, const char* what) {
    int sz[MAX_GROUP] = {0};
    double deadline = deadline_after();
    while (!n_test(req, sz)) {
        if (now() > deadline) die("--calls: %s did not complete in %.0f s", what, opt.timeout);
        if (!opt.spin) sched_yield(); /* as NCCL's proxy thread when nothing progressed */
    }
    if (!opt.plain && (size_t)sz[0] != expect)
        die("--calls: %s completed with %d bytes, expected %zu", what, sz[0], expect);
}

/* Rank 0: whether the ping-pong still warms up: --warm-seconds, then, with --settle, until both ranks' compilers were
 * quiet for about a second, for at most --settle seconds more. */
static int warming(char phase, double pongEnd, double settleEnd, struct jit_watch* w) {
    if (phase != WARM) return 0;
    int quiet = opt.settle > 0 && jit_watch_quiet(w);
    double t = now();
    if (t < pongEnd) return 1;
    if (opt.settle <= 0) return 0;
    if (quiet || t > settleEnd) {
        printf("driver: rank 0: ping-pong: %s after %.1f s of warm-up\n",
               quiet ? "the JIT was quiet" : "measuring anyway (a JIT still busy at the end of --settle)",
               t - (pongEnd - opt.warmSeconds));
        return 0;
    }
    return 1;
}

void calls_bench(const struct calls_peer* p, int calls) {
    size_t size = opt.minSize;

    /* 1. test() that finds nothing: the peer sends the message only after the barrier */
    void* req = post_recv(p->recvComm, p->recvBuf, size, p->recvMh);
    int sz[MAX_GROUP];
    double warmEnd = now() + opt.warmSeconds;
    for (int i = 0; i < calls / 10 || now() < warmEnd; i++) {
        if (n_test(req, sz)) die("--calls: a receive completed before its message was sent");
    }
    double t0 = now();
    for (int i = 0; i < calls; i++) {
        if (n_test(req, sz)) die("--calls: a receive completed before its message was sent");
    }
    double idle = now() - t0;
    printf("driver: rank %d: test() that finds nothing: %.1f ns per call (%d calls)\n", opt.rank, idle / calls * 1e9,
           calls);
    barrier("calls-idle");
    void* s = post_send(p->sendComm, p->sendBuf, size, p->sendMh);
    await(s, size, "the send that ends the idle test");
    await(req, size, "the receive of the idle test");
    barrier("calls-pingpong");

    /* 2. and 3. ping-pong, as `jmesh lat`: --window receives posted ahead, the echo sent before the repost, a send
     * completed after the next one is posted; rank 0 times each round trip from its isend to the echo's test(), the
     * repost outside. Rank 0 decides the phase and says it in each message's first byte, which rank 1 echoes:
     * warm-up for --warm-seconds (the JIT), `calls` measured round trips, one that ends it. */
    int ahead = opt.window, measured = 0, received = 0;
    void* ring[MAX_WINDOW];
    for (int i = 0; i < ahead; i++) ring[i] = post_recv(p->recvComm, p->recvBuf, size, p->recvMh);
    double* rtt = malloc(sizeof(double) * (size_t)calls);
    if (rtt == NULL) die("--calls %d: out of memory for the round-trip times", calls);
    void* prev = NULL;
    char phase = WARM;
    double pongEnd = now() + opt.warmSeconds, settleEnd = pongEnd + opt.settle;
    struct jit_watch watch;
    jit_watch_start(&watch);
    while (phase != END) {
        void** r = &ring[received % ahead];
        double t0 = now();
        if (opt.rank == 0) {
            char next = warming(phase, pongEnd, settleEnd, &watch) ? WARM : measured < calls ? MEASURED : END;
            if (next == MEASURED && phase == WARM) reset_times();
            phase = next;
            p->sendBuf[0] = phase;
            s = post_send(p->sendComm, p->sendBuf, size, p->sendMh);
            await(*r, size, "an echo");
            if (phase == MEASURED) rtt[measured++] = now() - t0;
        } else {
            await(*r, size, "a ping");
            char next = p->recvBuf[0]; /* rank 0 sends the next ping only after this echo: the buffer holds this one */
            if (next != WARM && next != MEASURED && next != END) die("--calls: a ping carries phase %d", next);
            if (next == MEASURED && phase == WARM) reset_times();
            phase = next;
            p->sendBuf[0] = phase;
            s = post_send(p->sendComm, p->sendBuf, size, p->sendMh);
            if (phase == MEASURED) measured++;
            if (phase == WARM && opt.settle > 0) jit_watch_quiet(&watch); /* publishes this rank's JIT time */
        }
        received++;
        if (prev) await(prev, size, "a ping-pong send");
        prev = s;
        *r = post_recv(p->recvComm, p->recvBuf, size, p->recvMh);
    }
    await(prev, size, "the last ping-pong send");
    if (opt.rank == 0) {
        double sum = 0;
        for (int i = 0; i < calls; i++) sum += rtt[i];
        qsort(rtt, (size_t)calls, sizeof(double), by_value);
        printf("driver: rank %d: ping-pong of %zu-byte messages (%d round trips, %d receives ahead), half a round "
               "trip: typical %.2f us, average %.2f us; isend %.1f ns, irecv %.1f ns per call\n", opt.rank, size, calls,
               ahead, rtt[calls / 2] / 2 * 1e6, sum / calls / 2 * 1e6, isendTime / isends * 1e9,
               irecvTime / irecvs * 1e9);
    } else {
        printf("driver: rank %d: echoed %d messages (%d measured); isend %.1f ns, irecv %.1f ns per call\n", opt.rank,
               received, measured, isendTime / isends * 1e9, irecvTime / irecvs * 1e9);
    }
    free(rtt);
    /* each side has `ahead` receives posted: the other side fills them */
    void* drain[MAX_WINDOW];
    p->sendBuf[0] = END;
    for (int i = 0; i < ahead; i++) drain[i] = post_send(p->sendComm, p->sendBuf, size, p->sendMh);
    for (int i = 0; i < ahead; i++) await(ring[(received + i) % ahead], size, "a receive left posted");
    for (int i = 0; i < ahead; i++) await(drain[i], size, "a send that fills a receive left posted");
    barrier("calls-done");
}
