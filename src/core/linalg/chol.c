/* Cholesky factorisation of a symmetric positive semidefinite matrix with a
 * jitter fallback, and the solve with its factor: the block solves of the
 * block coordinate descent solvers (Tu et al.). */
#include <math.h>
#include "linalg.h"

krr_status krr_chol_jitter(krr_ctx *ctx, int64_t n, const void *src, void *A, double jitter0,
                           double *used) {
  size_t bytes = sizeof(double) * (size_t)(n * n);
  int info = 0;
  double jitter = 0;
  *used = NAN;
  if (!(jitter0 > 0)) jitter0 = 1e-15;
  for (int attempt = 0; attempt < 9; attempt++) {
    KTRY(ctx->ops->copy(ctx, A, src, bytes));
    if (jitter > 0) KTRY(KOP(ctx, KRR_DOUBLE, add_diag, n, A, n, jitter, NULL));
    KTRY(krr_potrf_polled(ctx, KRR_DOUBLE, n, A, n, &info));
    if (info == 0) {
      *used = jitter;
      return KRR_OK;
    }
    jitter = attempt == 0 ? jitter0 : jitter * 10;
  }
  return KRR_OK;
}

krr_status krr_chol_solve(krr_ctx *ctx, int64_t n, const void *T, int m, void *B, int64_t ldb) {
  KTRY(krr_trsm_polled(ctx, KRR_DOUBLE, 0, 1, n, m, 1.0, T, n, B, ldb));
  return krr_trsm_polled(ctx, KRR_DOUBLE, 0, 0, n, m, 1.0, T, n, B, ldb);
}
