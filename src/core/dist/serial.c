/* The one-process communicator, and the collectives written once over any
 * communicator's table (status agreement, equality of a buffer). */
#include <stdio.h>
#include <string.h>
#include "dist.h"

size_t krr_dtype_size(krr_dtype t) {
  return t == KRR_DT_FLOAT ? sizeof(float) : t == KRR_DT_INT64 ? sizeof(int64_t) : sizeof(double);
}

static krr_status se_allreduce(krr_comm *c, krr_ctx *ctx, void *buf, int64_t count, krr_dtype t,
                               krr_redop op) {
  return KRR_OK; /* one rank: the reduction is the input */
}
static krr_status se_bcast(krr_comm *c, krr_ctx *ctx, void *buf, int64_t bytes, int root) {
  return KRR_OK;
}
static krr_status se_allgatherv(krr_comm *c, krr_ctx *ctx, const void *send, int64_t sendbytes,
                                void *recv, const int64_t *counts, const int64_t *displs) {
  if (sendbytes > 0 && (char *)recv + displs[0] != send)
    memmove((char *)recv + displs[0], send, (size_t)sendbytes);
  return KRR_OK;
}
static krr_status se_barrier(krr_comm *c, krr_ctx *ctx) { return KRR_OK; }
static void se_free(krr_comm *c) {}

static const krr_comm_vt serial_vt = {"serial", se_allreduce, se_bcast, se_allgatherv, se_barrier,
                                      se_free};

krr_comm *krr_comm_serial(void) {
  /* counters of the static communicator stay zero: nothing moves */
  static krr_comm serial = {&serial_vt, 0, 1, 0.0, 0.0, 0.0, 0, NULL, 0, 1};
  return &serial;
}

void krr_comm_free(krr_comm *c) {
  if (c) c->vt->free(c);
}

krr_status krr_comm_allgatherv(krr_comm *c, krr_ctx *ctx, const void *send, int64_t sendbytes,
                               void *recv, const int64_t *counts, const int64_t *displs) {
  return c->vt->allgatherv(c, ctx, send, sendbytes, recv, counts, displs);
}

krr_status krr_comm_agree(krr_comm *c, krr_ctx *ctx, krr_status st) {
  if (c->size <= 1) return st;
  if (st != KRR_OK && c->agreed) return st; /* this failure is agreed already */
  int64_t first = st != KRR_OK ? c->rank : c->size;
  /* a failing collective here leaves nothing to agree on: report it */
  krr_status cs = c->vt->allreduce(c, ctx, &first, 1, KRR_DT_INT64, KRR_RED_MIN);
  if (cs != KRR_OK) return cs;
  if (first >= c->size) return KRR_OK;
  c->agreed = 1;
  struct { int64_t st; char msg[sizeof ctx->msg]; } m;
  memset(&m, 0, sizeof m);
  if (c->rank == first) {
    m.st = (int64_t)st;
    snprintf(m.msg, sizeof m.msg, "%s", ctx->msg);
  }
  KTRY(c->vt->bcast(c, ctx, &m, (int64_t)sizeof m, (int)first));
  if (c->rank == first) return st;
  /* keep the root cause's message, named by its rank, on every other rank */
  ctx->status = KRR_OK;
  ctx->msg[0] = '\0';
  return krr_fail(ctx, (krr_status)m.st, "rank %d: %.990s", (int)first, m.msg);
}

krr_status krr_comm_same(krr_comm *c, krr_ctx *ctx, const void *buf, int64_t len, int *same) {
  /* FNV-1a, 64 bits */
  uint64_t h = 1469598103934665603ull;
  const unsigned char *p = (const unsigned char *)buf;
  for (int64_t i = 0; i < len; i++) { h ^= p[i]; h *= 1099511628211ull; }
  int64_t v[2] = {(int64_t)(h >> 1), (int64_t)(h >> 1)};
  *same = 1;
  if (c->size <= 1) return KRR_OK;
  KTRY(c->vt->allreduce(c, ctx, &v[0], 1, KRR_DT_INT64, KRR_RED_MAX));
  KTRY(c->vt->allreduce(c, ctx, &v[1], 1, KRR_DT_INT64, KRR_RED_MIN));
  *same = v[0] == v[1];
  return KRR_OK;
}
