/* The primal and dual objective values at host weights: what R records in
 * the trace of a kernel machine at its checks (one kernel pass, F = K a). */
#include <stdlib.h>
#include "loss.h"
#include "../op/op.h"

/* F = K a.  For a loss whose dual has exact zeros (the non-support vectors
 * of the hinge, squared hinge and SVR losses), where at most half of the
 * rows of a are nonzero, the sum runs over those rows only, K(X, X_S) a_S,
 * in pieces of at most 4096 rows (memory O(4096 p + n m)): the same sums in
 * another order.  Exact operator on one process only; else, or when that
 * memory is not there, over all rows. */
static krr_status k_times_a(krr_op *op, const krr_objective *obj, const double *a_host,
                            const void *a, void *F) {
  krr_ctx *ctx = op->ctx;
  int m = obj->m;
  int64_t n = op->nloc, c = 0;
  if (op->nfeat > 0 || op->nloc != op->n || !obj->loss->sparse)
    return krr_op_mv(op, NULL, NULL, a, n, m, F, n);
  int64_t *idx = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  if (!idx) return krr_op_mv(op, NULL, NULL, a, n, m, F, n);
  for (int64_t i = 0; i < n; i++) {
    int nz = 0;
    for (int j = 0; j < m && !nz; j++) nz = !(a_host[i + (int64_t)j * n] == 0); /* NaN counts */
    if (nz) idx[c++] = i;
  }
  if (c > n / 2) {
    free(idx);
    return krr_op_mv(op, NULL, NULL, a, n, m, F, n);
  }
  const int64_t piece = 4096;
  int64_t cap = c < piece ? (c > 0 ? c : 1) : piece;
  krr_arena ar;
  krr_arena_init(&ar, ctx);
  krr_block blk;
  /* one piece: its product straight into F; more: each into T, summed into F */
  void *aS = krr_arena_dev(&ar, cap * (int64_t)m, op->es),
       *T = c > piece ? krr_arena_dev(&ar, n * (int64_t)m, op->es) : F;
  krr_status st = KRR_ALLOCATED(&ar, aS, T);
  if (st == KRR_OK) st = krr_block_alloc(op, &ar, cap, &blk);
  if (st == KRR_ERR_MEMORY) { /* the product over all rows needs nothing more */
    krr_arena_free(&ar);
    free(idx);
    krr_clear(ctx);
    return krr_op_mv(op, NULL, NULL, a, n, m, F, n);
  }
  if (st == KRR_OK && (c == 0 || T != F)) st = ctx->ops->zero(ctx, F, op->es * (size_t)(n * m));
  for (int64_t r0 = 0; st == KRR_OK && r0 < c; r0 += piece) {
    int64_t cnt = c - r0 < piece ? c - r0 : piece;
    st = krr_block_set(op, &blk, idx + r0, cnt);
    if (st == KRR_OK) st = krr_op_gather(op, &blk, a, m, aS, cnt);
    if (st == KRR_OK) st = krr_op_mv(op, NULL, &blk, aS, cnt, m, T, n);
    if (st == KRR_OK && T != F) st = KOP(ctx, op->prec, axpby, n * m, 1.0, T, 1.0, F);
  }
  krr_arena_free(&ar);
  free(idx);
  return st;
}

krr_status krr_objective_values_host(krr_op *op, const krr_objective *obj, const double *a_host,
                                     double *primal, double *dual) {
  krr_ctx *ctx = op->ctx;
  int64_t len = op->nloc * (int64_t)obj->m;
  void *a = NULL, *F = NULL, *work = NULL;
  krr_status st = krr_upload_vec(ctx, obj->prec, a_host, len, &a);
  if (st == KRR_OK && !(F = krr_dalloc(ctx, len, op->es))) st = ctx->status;
  if (st == KRR_OK && !(work = krr_dalloc(ctx, len, op->es))) st = ctx->status;
  if (st == KRR_OK) st = k_times_a(op, obj, a_host, a, F);
  if (st == KRR_OK) st = krr_objective_values(op, obj, a, F, work, primal, dual);
  krr_dfree(ctx, &work);
  krr_dfree(ctx, &F);
  krr_dfree(ctx, &a);
  return st;
}
