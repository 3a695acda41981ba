/* The upper Cholesky factorisation A = R^T R of a large matrix in panels,
 * with krr_poll between them: a single LAPACK call on an n x n matrix runs
 * for seconds to minutes (n^3 / 3 flops) and could not be interrupted.  The
 * right-looking blocked algorithm (Golub and Van Loan, Matrix Computations,
 * 4th ed., Alg. 4.2.11 in its upper form): for each panel of nb columns,
 * factor the diagonal block (potrf), solve for the panel's row of R (trsm),
 * and update the trailing matrix one column block at a time (gemm above
 * the diagonal block, syrk on it).  Only the upper triangle of A is read
 * and written.  The factored blocks are 256 wide, so the CPU's LAPACK calls
 * run on one thread, and the solves, products and syrk in slices fixed by
 * the sizes: the bits do not depend on the thread count, as they would
 * through LAPACK's and the BLAS's own threads. */
#include <math.h>
#include "base.h"

#define NB 256
#define PW 1024 /* the trailing update's column blocks */

krr_status krr_potrf_polled(krr_ctx *ctx, krr_precision prec, int64_t n, void *A, int64_t lda,
                            int *info) {
  *info = 0;
  KTRY(krr_poll(ctx));
  if (n <= 2 * NB) return KOP(ctx, prec, potrf, n, A, lda, info);
  const size_t es = krr_sizeof(prec);
#define AT(i, j) KAT(A, (i) + (j)*lda, es)
  for (int64_t k0 = 0; k0 < n; k0 += NB) {
    const int64_t kb = KRR_MIN(NB, n - k0), k1 = k0 + kb;
    int inf = 0;
    KTRY(KOP(ctx, prec, potrf, kb, AT(k0, k0), lda, &inf));
    if (inf != 0) {
      *info = (int)(k0 + inf);
      return KRR_OK;
    }
    if (k1 >= n) break;
    /* R12 = R11^{-T} A12 */
    KTRY(krr_trsm_polled(ctx, prec, 0, 1, kb, n - k1, 1.0, AT(k0, k0), lda, AT(k0, k1), lda));
    /* A22 -= R12^T R12 on and above the diagonal, by column blocks of PW:
     * a product above the diagonal block, syrk on it (blocks of NB made
     * products too thin for the BLAS's packing to pay) */
    for (int64_t j0 = k1; j0 < n; j0 += PW) {
      const int64_t jb = KRR_MIN(PW, n - j0);
      KTRY(krr_poll(ctx));
      if (j0 > k1)
        KTRY(KOP(ctx, prec, gemm, 1, 0, j0 - k1, jb, kb, -1.0, AT(k0, k1), lda, AT(k0, j0), lda,
                 1.0, AT(k1, j0), lda));
      KTRY(KOP(ctx, prec, syrk, jb, kb, -1.0, AT(k0, j0), lda, 1.0, AT(j0, j0), lda));
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

/* Dense products and triangular solves in pieces of at most about
 * ctx->piece_flops flops each, with krr_poll between them: at n = 1e5 and rank
 * 4096 a single product U^T V is 3.4e12 flops (a minute or more on a laptop)
 * and could not be interrupted.  A dimension is halved only while it is
 * wider than 256, so each piece is still an efficient GEMM / TRSM. */
#define PIECE_MIN 256

static int64_t halve(int64_t v) { return (v + 1) / 2; }
double krr_piece_flops(const krr_ctx *ctx) {
  return ctx && ctx->piece_flops > 0 ? ctx->piece_flops : 8589934592.0; /* 2^33 */
}

krr_status krr_gemm_polled(krr_ctx *ctx, krr_precision prec, int ta, int tb, int64_t m,
                           int64_t n, int64_t k, double alpha, const void *A, int64_t lda,
                           const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
  KTRY(krr_poll(ctx));
  const double T = krr_piece_flops(ctx);
  if (m <= 0 || n <= 0 || k <= 0 || 2.0 * m * n * k <= T)
    return KOP(ctx, prec, gemm, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  /* halve the widest dimension until a piece is small enough: pieces stay
   * as square as the shape allows (a long inner dimension is split first,
   * which changes the rounding of the sums, not their value) */
  int64_t mc = m, nc = n, kc = k;
  while (2.0 * mc * nc * kc > T) {
    int64_t *w = &kc;
    if (mc > *w) w = &mc;
    if (nc > *w) w = &nc;
    if (*w <= PIECE_MIN) break;
    *w = halve(*w);
  }
  const size_t es = krr_sizeof(prec);
  for (int64_t l0 = 0; l0 < k; l0 += kc) {
    const int64_t kb = KRR_MIN(kc, k - l0);
    const double b = l0 == 0 ? beta : 1.0;
    for (int64_t j0 = 0; j0 < n; j0 += nc) {
      const int64_t nb = KRR_MIN(nc, n - j0);
      for (int64_t i0 = 0; i0 < m; i0 += mc) {
        const int64_t mb = KRR_MIN(mc, m - i0);
        KTRY(krr_poll(ctx));
        const void *Ap = KAT(A, ta ? l0 + i0 * lda : i0 + l0 * lda, es);
        const void *Bp = KAT(B, tb ? j0 + l0 * ldb : l0 + j0 * ldb, es);
        KTRY(KOP(ctx, prec, gemm, ta, tb, mb, nb, kb, alpha, Ap, lda, Bp, ldb, b,
                 KAT(C, i0 + j0 * ldc, es), ldc));
      }
    }
  }
  return krr_poll(ctx);
}

/* C = alpha A^T A + beta C on and above the diagonal by syrk, in pieces of
 * the inner dimension (at least PIECE_MIN wide) */
static krr_status syrk_polled(krr_ctx *ctx, krr_precision prec, int64_t r, int64_t k, double alpha,
                              const void *A, int64_t lda, double beta, void *C, int64_t ldc) {
  if (k == 0) return KOP(ctx, prec, syrk, r, 0, alpha, A, lda, beta, C, ldc);
  const size_t es = krr_sizeof(prec);
  int64_t kc = k;
  while (kc > PIECE_MIN && (double)r * r * kc > krr_piece_flops(ctx)) kc = halve(kc);
  for (int64_t l0 = 0; l0 < k; l0 += kc) {
    KTRY(krr_poll(ctx));
    KTRY(KOP(ctx, prec, syrk, r, KRR_MIN(kc, k - l0), alpha, KAT(A, l0, es), lda,
             l0 == 0 ? beta : 1.0, C, ldc));
  }
  return krr_poll(ctx);
}

/* C = alpha A^T B + beta C on and above the diagonal.  B = A: syrk, whole
 * when its pieces of the inner dimension stay within a polled piece, else
 * by block columns (syrk on the diagonal block, a product above it).
 * Otherwise by block columns of width about r / 8 (at least NB) with whole
 * diagonal blocks, which add about 1/8 to the triangle's work. */
static krr_status gram_upper(krr_ctx *ctx, krr_precision prec, int64_t r, int64_t k, double alpha,
                             const void *A, int64_t lda, const void *B, int64_t ldb, double beta,
                             void *C, int64_t ldc) {
  const size_t es = krr_sizeof(prec);
  if (A == B && lda == ldb) { /* a Gram matrix */
    const int64_t w = KRR_MAX((int64_t)NB, (int64_t)sqrt(krr_piece_flops(ctx) / PIECE_MIN));
    if (r <= w) return syrk_polled(ctx, prec, r, k, alpha, A, lda, beta, C, ldc);
    for (int64_t j0 = 0; j0 < r; j0 += w) {
      const int64_t jb = KRR_MIN(w, r - j0);
      const void *AJ = KAT(A, j0 * lda, es);
      KTRY(krr_gemm_polled(ctx, prec, 1, 0, j0, jb, k, alpha, A, lda, AJ, lda, beta,
                           KAT(C, j0 * ldc, es), ldc));
      KTRY(syrk_polled(ctx, prec, jb, k, alpha, AJ, lda, beta, KAT(C, j0 + j0 * ldc, es), ldc));
    }
    return KRR_OK;
  }
  const int64_t nb = KRR_MAX((int64_t)NB, (r + 7) / 8);
  if (r <= nb)
    return krr_gemm_polled(ctx, prec, 1, 0, r, r, k, alpha, A, lda, B, ldb, beta, C, ldc);
  for (int64_t j0 = 0; j0 < r; j0 += nb) {
    const int64_t jb = KRR_MIN(nb, r - j0);
    /* C[0 : j0 + jb, J] = alpha A^T B[, J] + beta C[0 : j0 + jb, J] */
    KTRY(krr_gemm_polled(ctx, prec, 1, 0, j0 + jb, jb, k, alpha, A, lda, KAT(B, j0 * ldb, es), ldb,
                         beta, KAT(C, j0 * ldc, es), ldc));
  }
  return KRR_OK;
}

krr_status krr_gram_upper_polled(krr_ctx *ctx, krr_precision prec, int64_t r, int64_t k,
                                 const void *A, int64_t lda, const void *B, int64_t ldb, void *C,
                                 int64_t ldc) {
  return gram_upper(ctx, prec, r, k, 1.0, A, lda, B, ldb, 0.0, C, ldc);
}

krr_status krr_uut_polled(krr_ctx *ctx, krr_precision prec, int64_t n, double alpha, const void *U,
                          int64_t ldu, void *C, int64_t ldc) {
  const size_t es = krr_sizeof(prec);
  for (int64_t j0 = 0; j0 < n; j0 += NB) {
    const int64_t jb = KRR_MIN(NB, n - j0);
    /* C[0 : j0 + jb, J] = U[0 : j0 + jb, j0 : n] U[J, j0 : n]^T: row i of U
     * is zero left of column i, so the inner index starts at j0 */
    KTRY(krr_gemm_polled(ctx, prec, 0, 1, j0 + jb, jb, n - j0, alpha, KAT(U, j0 * ldu, es), ldu,
                         KAT(U, j0 + j0 * ldu, es), ldu, 0.0, KAT(C, j0 * ldc, es), ldc));
  }
  return KRR_OK;
}

krr_status krr_trsm_polled(krr_ctx *ctx, krr_precision prec, int right, int trans, int64_t m,
                           int64_t n, double alpha, const void *A, int64_t lda, void *B,
                           int64_t ldb) {
  KTRY(krr_poll(ctx));
  /* right: B (m x n) <- B op(A)^{-1}, rows independent; left: columns */
  const int64_t tri = right ? n : m, free_dim = right ? m : n;
  const double per = (double)tri * tri; /* flops per row (right) or column (left) */
  const double T = krr_piece_flops(ctx);
  int64_t fc = free_dim;
  while (fc > PIECE_MIN && per * fc > T) fc = halve(fc);
  const size_t es = krr_sizeof(prec);
  for (int64_t f0 = 0; f0 < free_dim; f0 += fc) {
    const int64_t fb = KRR_MIN(fc, free_dim - f0);
    KTRY(krr_poll(ctx));
    KTRY(KOP(ctx, prec, trsm, right, trans, right ? fb : m, right ? n : fb, alpha, A, lda,
             KAT(B, right ? f0 : f0 * ldb, es), ldb));
  }
  return krr_poll(ctx);
}
