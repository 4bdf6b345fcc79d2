/*
 * A stand-in RDMA provider for testing jmesh's hand-written inline verbs on a machine without RDMA: it builds a
 * verbs_context the way real providers do (abi_compat = UINTPTR_MAX, sz, query_port, ops.*) with functions that log
 * what they were given. The c_* functions are gcc's own static inlines and macros from verbs.h over the same context,
 * so a test can compare what C passes with what Java passes.
 */
#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char log_buf[16384];
static size_t log_len;

static void note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(log_buf + log_len, sizeof(log_buf) - log_len, fmt, ap);
    va_end(ap);
    if (n > 0 && log_len + n < sizeof(log_buf)) log_len += n;
}

const char *fake_log(void) { return log_buf; }
void fake_log_reset(void) { log_len = 0; log_buf[0] = 0; }

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
    note("post_send qp=%u\n", qp->qp_num);
    for (; wr; wr = wr->next) {
        if (wr->opcode == 0x7f) { *bad = wr; note("reject wr_id=%llu\n", (unsigned long long) wr->wr_id); return EINVAL; }
        note("wr id=%llu op=%d flags=%u nsge=%d imm=%08x raddr=%llx rkey=%u\n", (unsigned long long) wr->wr_id,
             wr->opcode, wr->send_flags, wr->num_sge, ntohl(wr->imm_data),
             (unsigned long long) wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
        for (int i = 0; i < wr->num_sge; i++)
            note("  sge addr=%llx len=%u lkey=%u\n", (unsigned long long) wr->sg_list[i].addr,
                 wr->sg_list[i].length, wr->sg_list[i].lkey);
    }
    return 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
    note("post_recv qp=%u\n", qp->qp_num);
    for (; wr; wr = wr->next) {
        if (wr->num_sge < 0) { *bad = wr; return EINVAL; }
        note("recv id=%llu nsge=%d\n", (unsigned long long) wr->wr_id, wr->num_sge);
    }
    return 0;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
    int k = n < 2 ? n : 2;
    note("poll_cq cqe=%d n=%d\n", cq->cqe, n);
    for (int i = 0; i < k; i++) {
        memset(&wc[i], 0, sizeof(wc[i]));
        wc[i].wr_id = 100 + i;
        wc[i].status = i == 0 ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR;
        wc[i].opcode = IBV_WC_RECV_RDMA_WITH_IMM;
        wc[i].byte_len = 4096 + i;
        wc[i].imm_data = htonl(0xabc0 + i);
        wc[i].qp_num = 77;
        wc[i].wc_flags = IBV_WC_WITH_IMM;
    }
    return k;
}

static int fake_req_notify_cq(struct ibv_cq *cq, int solicited_only) {
    note("req_notify_cq cqe=%d solicited=%d\n", cq->cqe, solicited_only);
    return 0;
}

static int fake_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr, size_t len) {
    (void) ctx;
    note("query_port port=%u len=%zu\n", port, len);
    memset(attr, 0, len);
    attr->state = IBV_PORT_ACTIVE;
    attr->active_mtu = IBV_MTU_1024;
    attr->gid_tbl_len = 16;
    attr->link_layer = IBV_LINK_LAYER_ETHERNET;
    if (len >= sizeof(struct ibv_port_attr)) attr->port_cap_flags2 = 0x1234;
    return 0;
}

struct ibv_context *fake_context(void) {
    struct verbs_context *v = calloc(1, sizeof(*v));
    v->sz = sizeof(*v);
    v->query_port = fake_query_port;
    v->context.abi_compat = (void *) UINTPTR_MAX;
    v->context.ops.post_send = fake_post_send;
    v->context.ops.post_recv = fake_post_recv;
    v->context.ops.poll_cq = fake_poll_cq;
    v->context.ops.req_notify_cq = fake_req_notify_cq;
    return &v->context;
}

/* A context whose provider lacks post_send: DataPath must refuse it. */
struct ibv_context *fake_context_without_post_send(void) {
    struct ibv_context *c = fake_context();
    c->ops.post_send = NULL;
    return c;
}

int c_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) { return ibv_post_send(qp, wr, bad); }
int c_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) { return ibv_post_recv(qp, wr, bad); }
int c_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) { return ibv_poll_cq(cq, n, wc); }
int c_req_notify_cq(struct ibv_cq *cq, int solicited) { return ibv_req_notify_cq(cq, solicited); }
int c_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr) { return ibv_query_port(ctx, port, attr); }
