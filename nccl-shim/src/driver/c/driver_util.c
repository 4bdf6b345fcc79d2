/*
 * The driver's helpers that every one of its files uses: its options, failure, the clock, and the small files in
 * --dir through which the ranks exchange handles and meet at barriers. They call nothing of the other files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

/* ---- options and failure --------------------------------------------------------------------------------------- */

struct driver_options opt = {.rank = -1, .dev = -1, .group = 2, .window = 8, .iters = 64, .warmup = -1,
                             .logLevel = NCCL_LOG_WARN, .minSize = 4096, .maxSize = 1 << 20, .timeout = 60.0,
                             .warmSeconds = 2.0};

void die(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "driver: rank %d: FAIL: ", opt.rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- files in DIR: handles and barriers ----------------------------------------------------------------------- */

void write_file(const char* name, const void* data, size_t len) {
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", opt.dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE* f = fopen(tmp, "wb");
    if (f == NULL || fwrite(data, 1, len, f) != len || fclose(f) != 0) die("cannot write %s: %s", tmp, strerror(errno));
    if (rename(tmp, path) != 0) die("cannot rename %s: %s", tmp, strerror(errno));
}

int read_file(const char* name, void* data, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", opt.dir, name);
    FILE* f = fopen(path, "rb");
    if (f == NULL) return 0;
    size_t n = fread(data, 1, len, f);
    fclose(f);
    return n == len;
}

void await_file(const char* name, void* data, size_t len, const char* what) {
    double deadline = now() + opt.timeout;
    while (!read_file(name, data, len)) {
        if (now() > deadline) die("timed out after %.0f s waiting for %s (%s/%s)", opt.timeout, what, opt.dir, name);
        usleep(2000);
    }
}

void barrier(const char* name) {
    char mine[256];
    snprintf(mine, sizeof mine, "barrier-%s-%d", name, opt.rank);
    write_file(mine, "x", 1);
    for (int r = 0; r < opt.nranks; r++) {
        char other[256], what[300], c;
        snprintf(other, sizeof other, "barrier-%s-%d", name, r);
        snprintf(what, sizeof what, "rank %d at barrier '%s'", r, name);
        await_file(other, &c, 1, what);
    }
}
