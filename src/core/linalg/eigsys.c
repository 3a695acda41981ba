/* Top-q eigensystem of a kernel block (EigenPro 2.0 and 3.0), and the dual
 * block gradient of the block methods. */
#include <math.h>
#include <stdlib.h>
#include "linalg.h"

krr_status krr_kernel_eigsys(krr_op *op, const krr_block *S, int q, void *U, double *w) {
  krr_ctx *ctx = op->ctx;
  int64_t n = S->b, k = (int64_t)q + 1 < n ? (int64_t)q + 1 : n;
  size_t es = op->es;
  /* the top k = q + 1 eigenpairs (the q corrected directions and the tail):
   * one LAPACK call that cannot be interrupted (the tridiagonal reduction,
   * 4/3 n^3 flops, and 2 n^2 k for the vectors -- against about 9 n^3 for
   * the full eigensystem), refused up front when it clearly exceeds the time left */
  KTRY(krr_refuse_flops(ctx, (4.0 / 3.0 * (double)n + 2.0 * (double)k) * (double)n * (double)n,
                        "the eigendecomposition of the subsample's kernel matrix"));
  void *K = krr_dalloc(ctx, n * n, es), *W = krr_dalloc(ctx, n, es), *Z = krr_dalloc(ctx, n * k, es);
  double *wk = (double *)malloc(sizeof(double) * (size_t)n);
  krr_status st = (K && W && Z) ? KRR_OK : (ctx->status ? ctx->status : KRR_ERR_MEMORY);
  if (st == KRR_OK && !wk) st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK) st = krr_op_mat(op, S, S, K, n);
  if (st == KRR_OK) st = krr_poll(ctx);
  if (st == KRR_OK) st = KOP(ctx, op->prec, syev_top, n, K, n, k, W, Z, n);
  if (st == KRR_OK) st = krr_download_vec(ctx, op->prec, W, k, wk);
  /* w: the n eigenvalues ascending, of which only the top k are computed
   * (the rest NaN); U: the top q vectors, largest first */
  for (int64_t i = 0; st == KRR_OK && i < n; i++) w[i] = i < n - k ? NAN : wk[i - (n - k)];
  for (int j = 0; st == KRR_OK && j < q; j++)
    st = ctx->ops->copy(ctx, KAT(U, (int64_t)j * n, es), KAT(Z, (k - 1 - j) * n, es), es * (size_t)n);
  free(wk);
  krr_dfree(ctx, &K);
  krr_dfree(ctx, &W);
  krr_dfree(ctx, &Z);
  return st;
}

krr_status krr_block_gradient(krr_op *op, const krr_objective *obj, const krr_block *B,
                              const void *a, void *g, void *gb, void *work, double *gnorm,
                              double *ynorm) {
  int64_t b = B->b;
  int m = obj->m;
  KTRY(krr_op_mv(op, B, NULL, a, op->nloc, m, g, b));
  KTRY(krr_op_gather(op, B, a, m, work, b));
  KTRY(krr_op_gather(op, B, obj->y, m, gb, b));
  KTRY(obj->loss->grad(op->ctx, obj, b * m, gb, work, work));
  KTRY(KOP(op->ctx, op->prec, axpby, b * m, 1.0, work, 1.0, g));
  KTRY(KOP(op->ctx, op->prec, nrm2, b * m, g, gnorm));
  KTRY(KOP(op->ctx, op->prec, nrm2, b * m, gb, ynorm));
  if (!isfinite(*gnorm))
    return krr_fail(op->ctx, KRR_ERR_NUMERIC, "the iterate diverged (non-finite residual)");
  return KRR_OK;
}
