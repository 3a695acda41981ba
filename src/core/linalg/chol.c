/* Cholesky factorisation of a symmetric positive semidefinite matrix with a
 * jitter fallback, and the solve with its factor: the block solves of the
 * block coordinate descent solvers (Tu et al.); the plain factor of a host
 * matrix (the exact GP likelihood's). */
#include <limits.h>
#include <math.h>
#include <string.h>
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

/* The upper factor in place, the entries below the diagonal zeroed; a
 * column with a value that is not finite is where A is not positive
 * definite (LAPACKE's potrf would refuse the argument) */
static krr_status chol_host_run(krr_ctx *ctx, int64_t n, double *A, int *info) {
  for (int64_t j = 0; j < n; j++) {
    for (int64_t i = 0; i <= j; i++) {
      if (!isfinite(A[i + j * n])) {
        *info = (int)KRR_MIN(j + 1, (int64_t)INT_MAX);
        return KRR_OK;
      }
    }
  }
  KTRY(krr_potrf_polled(ctx, KRR_DOUBLE, n, A, n, info));
  if (*info == 0) {
    for (int64_t j = 0; j + 1 < n; j++)
      memset(A + j * n + j + 1, 0, sizeof(double) * (size_t)(n - j - 1));
  }
  return KRR_OK;
}

krr_status krr_chol_host(krr_ctx *ctx, int64_t n, double *A, int *info) {
  *info = 0;
  if (n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "chol: negative size");
  if (n == 0) return KRR_OK;
  if (!ctx->host_ops) return krr_fail(ctx, KRR_ERR_INPUT, "chol: the context has no host backend");
  if (krr_ctx_on_host(ctx)) return chol_host_run(ctx, n, A, info);
  krr_ctx hc;
  KTRY(krr_ctx_host_twin(ctx, &hc));
  const krr_status st = krr_ctx_forward(ctx, &hc, chol_host_run(&hc, n, A, info));
  krr_ctx_free(&hc);
  return st;
}
