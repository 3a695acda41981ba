/* Operator-independent parts of blocks and operators. */
#include <stdlib.h>
#include <string.h>
#include "op.h"

krr_status krr_block_alloc(krr_op *op, krr_arena *a, int64_t cap, krr_block *blk) {
  memset(blk, 0, sizeof *blk);
  blk->cap = cap;
  blk->idx_h = (int64_t *)krr_arena_host(a, cap, sizeof(int64_t));
  blk->idx = (int64_t *)krr_arena_dev(a, cap, sizeof(int64_t));
  KTRY(KRR_ALLOCATED(a, blk->idx_h, blk->idx));
  return op->vt->block_alloc(op, a, blk);
}

double krr_block_bytes(const krr_op *op, int64_t cap) {
  return 2.0 * (double)cap * sizeof(int64_t) + op->vt->block_bytes(op, cap);
}

krr_status krr_block_set(krr_op *op, krr_block *blk, const int64_t *idx, int64_t b) {
  if (b < 0 || b > blk->cap)
    return krr_fail(op->ctx, KRR_ERR_INTERNAL, "block of %lld rows exceeds its capacity %lld",
                    (long long)b, (long long)blk->cap);
  if (idx != blk->idx_h) memcpy(blk->idx_h, idx, sizeof(int64_t) * (size_t)b);
  blk->b = b;
  if (b == 0) return KRR_OK;
  KTRY(op->ctx->ops->upload(op->ctx, blk->idx, blk->idx_h, sizeof(int64_t) * (size_t)b));
  return op->vt->block_load(op, blk);
}

krr_status krr_block_range(krr_op *op, krr_block *blk, int64_t i0, int64_t b) {
  if (b > blk->cap) b = blk->cap;
  for (int64_t i = 0; i < b; i++) blk->idx_h[i] = i0 + i;
  return krr_block_set(op, blk, blk->idx_h, b);
}

krr_status krr_op_trace(krr_op *op, const krr_block *A, double *out) {
  int64_t b = A ? A->b : op->nloc;
  double *d = (double *)malloc(sizeof(double) * (size_t)(b > 0 ? b : 1));
  if (!d) return krr_fail(op->ctx, KRR_ERR_MEMORY, "out of host memory");
  krr_status st = krr_op_diag(op, A, d);
  double s = 0;
  for (int64_t i = 0; st == KRR_OK && i < b; i++) s += d[i];
  free(d);
  *out = s;
  return st;
}

static int gram_fused(const krr_op *op, int64_t b, int q) {
  return op->vt->gram_mv && op->vt->gram_work && op->vt->gram_work(op, b, q) > 0;
}

double krr_op_gram_bytes(const krr_op *op, int64_t b, int q) {
  if (gram_fused(op, b, q)) return op->vt->gram_work(op, b, q);
  return (double)op->nloc * (double)q * (double)op->es;
}

krr_status krr_op_gram_mv(krr_op *op, const krr_block *B, const void *V, int64_t ldv, int q,
                          void *out, int64_t ldo, void *work) {
  if (gram_fused(op, krr_block_rows(op, B), q))
    return op->vt->gram_mv(op, B, V, ldv, q, out, ldo, work);
  KTRY(krr_op_mv(op, NULL, B, V, ldv, q, work, op->nloc));
  return krr_op_mv(op, B, NULL, work, op->nloc, q, out, ldo);
}

krr_status krr_op_new(krr_ctx *ctx, const krr_op_vt *vt, krr_precision prec, int64_t n, int p,
                      krr_kernel kernel, size_t impl_bytes, krr_op **out) {
  *out = NULL;
  krr_op *op = (krr_op *)calloc(1, sizeof *op);
  void *impl = calloc(1, impl_bytes);
  if (!op || !impl) {
    free(op); free(impl);
    return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  }
  op->vt = vt;
  op->ctx = ctx;
  op->prec = prec;
  op->es = krr_sizeof(prec);
  op->n = op->nloc = n;
  op->p = p;
  op->kernel = kernel;
  op->impl = impl;
  *out = op;
  return KRR_OK;
}

/* n-vectors held whole on this process (the exact and random-feature
 * operators): reductions and row gathers are the device's own */
#define LOP(op, name, ...) KOP((op)->ctx, (op)->prec, name, __VA_ARGS__)
krr_status krr_op_local_dot(krr_op *op, int64_t len, const void *x, const void *y, double *out) {
  return LOP(op, dot, len, x, y, out);
}

krr_status krr_op_local_nrm2(krr_op *op, int64_t len, const void *x, double *out) {
  return LOP(op, nrm2, len, x, out);
}

krr_status krr_op_local_gather(krr_op *op, const krr_block *A, const void *src, int m, void *dst,
                               int64_t ldd) {
  return LOP(op, gather_rows, src, op->nloc, m, A->idx, A->b, dst, ldd);
}

krr_status krr_op_local_scatter(krr_op *op, double alpha, const void *src, int64_t lds, int m,
                                const krr_block *A, void *dst) {
  return LOP(op, scatter_axpy, alpha, src, lds, m, A->idx, A->b, dst, op->nloc);
}

void krr_op_free(krr_op *op) {
  if (op) op->vt->free(op);
}

