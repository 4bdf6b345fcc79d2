/*
 * --settle S: measure only once the plugin's JIT is quiet. A plugin in Java compiles its hot path while the warm-up
 * runs, and on a machine with one CPU (the Soft-RoCE testbed's guests) those compiler threads take the CPU the
 * measurement and the NIC's emulation need: tens of seconds of compilation under TCG. `jmesh bw` and `jmesh lat`
 * wait the same way (JitSettle in the CLI); a plugin written in C has no compiler threads and is quiet at once.
 *
 * The driver and the plugin's JVM share the process, so the compiler threads are ours to see: HotSpot names them
 * "C1 CompilerThreadN" and "C2 CompilerThreadN", which the kernel keeps as "C1 CompilerThre" and "C2 CompilerThre".
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"

/* A settle round in which this process's compilers used at most this much CPU counts as quiet (JitSettle's 10 ms). */
#define QUIET_MS 10

long jit_cpu_ms(void) {
    DIR* d = opendir("/proc/self/task");
    if (d == NULL) return 0;
    long ticks = 0;
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[300], comm[64] = "", stat[1024];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE* f = fopen(path, "r");
        if (f == NULL) continue;
        int named = fgets(comm, sizeof comm, f) != NULL;
        fclose(f);
        if (!named || (strncmp(comm, "C1 Compiler", 11) != 0 && strncmp(comm, "C2 Compiler", 11) != 0)) continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        f = fopen(path, "r");
        if (f == NULL) continue;
        size_t n = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        stat[n] = 0;
        /* after the ")" that ends the name: state is field 3, utime and stime fields 14 and 15 */
        char* p = strrchr(stat, ')');
        unsigned long utime, stime;
        if (p != NULL && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2)
            ticks += (long)(utime + stime);
    }
    closedir(d);
    return ticks * 1000 / sysconf(_SC_CLK_TCK);
}

/* Each rank votes '1' (quiet), '0' (busy) or '2' (out of --settle time); true (stop) when all are quiet or any is out
 * of time, the same answer on every rank, so all stop after the same round. */
static int settle_agree(const char* what, int round, char vote) {
    char mine[256];
    snprintf(mine, sizeof mine, "settle-%s-%d-%d", what, round, opt.rank);
    write_file(mine, &vote, 1);
    int quiet = 1, late = 0;
    for (int r = 0; r < opt.nranks; r++) {
        char other[256], why[300], c;
        snprintf(other, sizeof other, "settle-%s-%d-%d", what, round, r);
        snprintf(why, sizeof why, "rank %d to settle (%s)", r, what);
        await_file(other, &c, 1, why);
        quiet &= c == '1';
        late |= c == '2';
    }
    return quiet || late;
}

long share_from_rank0(const char* name, long value) {
    char text[24];
    if (opt.rank == 0) {
        snprintf(text, sizeof text, "%020ld", value);
        write_file(name, text, 20);
        return value;
    }
    await_file(name, text, 20, "rank 0's figure");
    text[20] = 0;
    return atol(text);
}

void settle(const char* what, void (*round)(void*), void* arg) {
    if (opt.settle <= 0) return;
    double start = now();
    long before = jit_cpu_ms();
    for (int r = 0;; r++) {
        round(arg);
        long after = jit_cpu_ms();
        char vote = after - before <= QUIET_MS ? '1' : now() - start > opt.settle ? '2' : '0';
        before = after;
        if (settle_agree(what, r, vote)) {
            printf("driver: rank %d: %s: %s after %d settle round(s), %.1f s\n", opt.rank, what,
                   vote == '1' ? "the JIT was quiet" : "measuring anyway (a JIT still busy at the end of --settle)",
                   r + 1, now() - start);
            return;
        }
    }
}

void jit_watch_start(struct jit_watch* w) {
    w->next = now() + 0.5;
    w->mine = jit_cpu_ms();
    w->peer = -1;
    w->count = 0;
}

int jit_watch_quiet(struct jit_watch* w) {
    double t = now();
    if (t < w->next) return 0;
    long mine = jit_cpu_ms();
    char text[48];
    if (opt.rank != 0) { /* publishes its compilers' time twice a second, numbered */
        w->next = t + 0.5;
        snprintf(text, sizeof text, "%020ld %020ld", ++w->count, mine);
        write_file("jit-watch", text, 41);
        return 0;
    }
    /* rank 0 decides about once a second: its own compilers and the peer's quiet since its last look. A look that
     * finds no newer figure from the peer decides nothing. */
    long count = 0, peer = -1;
    if (read_file("jit-watch", text, 41)) {
        text[41] = 0;
        sscanf(text, "%ld %ld", &count, &peer);
    }
    if (count <= w->count) return 0;
    w->next = t + 1;
    int quiet = w->peer >= 0 && mine - w->mine <= QUIET_MS && peer - w->peer <= QUIET_MS;
    w->mine = mine;
    w->peer = peer;
    w->count = count;
    return quiet;
}
