/* The upper Cholesky factorisation A = R^T R of a large matrix in panels,
 * with krr_poll between them: a single LAPACK call on an n x n matrix runs
 * for seconds to minutes (n^3 / 3 flops) and could not be interrupted.  The
 * right-looking blocked algorithm (Golub and Van Loan, Matrix Computations,
 * 4th ed., Alg. 4.2.11 in its upper form): for each panel of nb columns,
 * factor the diagonal block (potrf), solve for the panel's row of R (trsm),
 * and update the trailing matrix one column block at a time (gemm).  Only
 * the upper triangle of A is read; entries below the diagonal of the
 * trailing blocks are overwritten with scratch values. */
#include <math.h>
#include "base.h"

#define NB 256

krr_status krr_potrf_polled(krr_ctx *ctx, krr_precision prec, int64_t n, void *A, int64_t lda,
                            int *info) {
  *info = 0;
  KTRY(krr_poll(ctx));
  if (n <= 2 * NB) return KOP(ctx, prec, potrf, n, A, lda, info);
  const size_t es = krr_sizeof(prec);
#define AT(i, j) KAT(A, (i) + (j) * lda, es)
  for (int64_t k0 = 0; k0 < n; k0 += NB) {
    const int64_t kb = KRR_MIN(NB, n - k0), k1 = k0 + kb;
    int inf = 0;
    KTRY(KOP(ctx, prec, potrf, kb, AT(k0, k0), lda, &inf));
    if (inf != 0) {
      *info = (int)(k0 + inf);
      return KRR_OK;
    }
    if (k1 >= n) break;
    /* R12 = R11^{-T} A12, one column block at a time */
    for (int64_t j0 = k1; j0 < n; j0 += NB) {
      const int64_t jb = KRR_MIN(NB, n - j0);
      KTRY(krr_poll(ctx));
      KTRY(KOP(ctx, prec, trsm, 0, 1, kb, jb, 1.0, AT(k0, k0), lda, AT(k0, j0), lda));
    }
    /* A22 -= R12^T R12 on and above the diagonal, by column blocks */
    for (int64_t j0 = k1; j0 < n; j0 += NB) {
      const int64_t jb = KRR_MIN(NB, n - j0);
      KTRY(krr_poll(ctx));
      KTRY(KOP(ctx, prec, gemm, 1, 0, j0 + jb - k1, jb, kb, -1.0, AT(k0, k1), lda, AT(k0, j0),
               lda, 1.0, AT(k1, j0), lda));
    }
  }
#undef AT
  return krr_poll(ctx);
}

krr_status krr_refuse_flops(krr_ctx *ctx, double flops, const char *what) {
  double left = krr_time_left(ctx);
  if (!isfinite(left)) return KRR_OK;
  /* an optimistic rate (64 GFLOP/s per thread, about the double-precision
   * FMA peak of a 2020s core): refuse only what clearly cannot fit */
  double rate = 6.4e10 * (ctx->threads > 0 ? ctx->threads : 1);
  double need = flops / rate;
  if (need > left)
    return krr_fail(ctx, KRR_ERR_TIME_LIMIT,
                    "%s needs about %.3g GFLOP, at least %.2g s even at %.0f GFLOP/s, but only "
                    "%.2g s of the time limit are left",
                    what, flops / 1e9, need, rate / 1e9, left > 0 ? left : 0.0);
  return KRR_OK;
}
