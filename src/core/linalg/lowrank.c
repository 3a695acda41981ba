/* Low-rank preconditioners P + rho I, P = U diag(lam) U^T: the randomized
 * Nystrom sketch (Rathore et al., Alg. 2, after Frangella, Tropp and Udell)
 * and the Woodbury applications, shared by the solvers (ASkotch on its b x b
 * blocks, PCG on the full K).  Written once over void* device buffers. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "linalg.h"
#include "../dist/dist.h"

#define LOP(ctx, lr, name, ...) KOP(ctx, (lr)->prec, name, __VA_ARGS__)

/* Distributed (the rows of U and Y spread over the ranks, as the n-vectors
 * of a sharded operator): every product that sums over the n rows -- the
 * r x r Gram matrices and U^T g -- is a local product plus an allreduce
 * (r^2 or r m numbers per rank); everything else is row-local. */
static int lr_dist(const krr_lowrank *lr) { return lr->comm && lr->comm->size > 1; }

void krr_lowrank_distribute(krr_lowrank *lr, krr_comm *comm, int64_t row0, int64_t nglob) {
  lr->comm = comm;
  lr->row0 = row0;
  lr->nglob = nglob;
}

/* C (rows x cols, ld rows) = A^T B over the n rows (polled or one call),
 * summed over the ranks.  Every rank's status is agreed first (a rank
 * whose product failed meets the others there, not in the sum).  same: the
 * sum is rank 0's on every rank, bit for bit (matrices that are factorised
 * or decomposed everywhere and must agree) */
static krr_status lr_gram(krr_ctx *ctx, krr_lowrank *lr, int polled, int rows, int cols,
                          const void *A, const void *B, void *C, int same) {
  const int64_t n = lr->n;
  krr_status st =
      polled ? krr_gemm_polled(ctx, lr->prec, 1, 0, rows, cols, n, 1.0, A, n, B, n, 0.0, C, rows)
             : LOP(ctx, lr, gemm, 1, 0, rows, cols, n, 1.0, A, n, B, n, 0.0, C, rows);
  if (!lr_dist(lr)) return st;
  KTRY(krr_comm_agree(lr->comm, ctx, st));
  const int64_t count = (int64_t)rows * cols;
  double *h = (double *)malloc(sizeof(double) * (size_t)(count > 0 ? count : 1));
  st = h ? krr_download_vec(ctx, lr->prec, C, count, h)
         : krr_fail(ctx, KRR_ERR_MEMORY, "low-rank preconditioner: %lld host numbers",
                    (long long)count);
  st = krr_comm_agree(lr->comm, ctx, st);
  if (st == KRR_OK) st = krr_comm_allreduce(lr->comm, ctx, h, count, KRR_DT_DOUBLE, KRR_RED_SUM);
  if (st == KRR_OK && same)
    st = krr_comm_bcast(lr->comm, ctx, h, (int64_t)sizeof(double) * count, 0);
  if (st == KRR_OK) st = krr_upload_vec_into(ctx, lr->prec, h, count, C);
  free(h);
  return st;
}

/* r x r C = A^T B whose value is symmetric and which potrf then reads
 * through its upper triangle (the ops table's contract): that triangle
 * alone (half the work) on one process, the whole product when the rows
 * are distributed (the sum over the ranks moves whole matrices).  (syev has
 * no such contract: the CPU backend reads the lower triangle, cuSOLVER the
 * upper, so its input stays whole.) */
static krr_status lr_sym(krr_ctx *ctx, krr_lowrank *lr, int r, const void *A, const void *B,
                         void *C) {
  if (lr_dist(lr)) return lr_gram(ctx, lr, 1, r, r, A, B, C, 1);
  return krr_gram_upper_polled(ctx, lr->prec, r, lr->n, A, lr->n, B, lr->n, C, r);
}

double krr_lowrank_memory(krr_precision prec, int64_t n, int r, int mmax) {
  double e = 2.0 * (double)n * r + (double)r * r + 3.0 * r + (double)r * mmax;
  return e * (double)krr_sizeof(prec) + 2.0 * sizeof(double) * (r > 0 ? r : 1);
}

krr_status krr_lowrank_alloc(krr_arena *a, krr_precision prec, int64_t n, int r, int mmax,
                             krr_lowrank *lr) {
  memset(lr, 0, sizeof *lr);
  lr->prec = prec; lr->n = n; lr->r = r; lr->mmax = mmax;
  size_t es = krr_sizeof(prec);
  lr->U = krr_arena_dev(a, n * r, es);
  lr->Y = krr_arena_dev(a, n * r, es);
  lr->C = krr_arena_dev(a, (int64_t)r * r, es);
  lr->S = krr_arena_dev(a, r, es);
  lr->dinv = krr_arena_dev(a, r, es);
  lr->dsq = krr_arena_dev(a, r, es);
  lr->t = krr_arena_dev(a, (int64_t)r * mmax, es);
  lr->lam = (double *)krr_arena_host(a, r, sizeof(double));
  lr->hv = (double *)krr_arena_host(a, r, sizeof(double));
  return KRR_ALLOCATED(a, lr->U, lr->Y, lr->C, lr->S, lr->dinv, lr->dsq, lr->t, lr->lam, lr->hv);
}

/* C <- upper Cholesky of Omega^T Y, raising the shift delta until it succeeds */
static krr_status sketch_core(krr_ctx *ctx, krr_lowrank *lr, double *delta) {
  int64_t n = lr->n;
  int r = lr->r, info = 1;
  for (int attempt = 0; attempt < 8; attempt++) {
    KTRY(lr_sym(ctx, lr, r, lr->U, lr->Y, lr->C));
    KTRY(krr_potrf_polled(ctx, lr->prec, r, lr->C, r, &info));
    if (info == 0) return KRR_OK;
    double dd = *delta * pow(10.0, attempt + 1); /* Y += dd Omega: Omega^T Y gains dd I */
    KTRY(LOP(ctx, lr, axpby, n * r, dd, lr->U, 1.0, lr->Y));
    *delta += dd;
  }
  return krr_fail(ctx, KRR_ERR_NUMERIC,
                  "Nystrom sketch: Cholesky of Omega^T Y failed even with shift %.3g; "
                  "try precision = \"double\" or a smaller rank", *delta);
}

/* The test matrix in lr->U <- Q of its thin QR by Cholesky QR, twice
 * (Yamamoto, Nakatsukasa, Yanagisawa and Fukaya, ETNA 44, 2015): a Gaussian
 * n x r matrix with n >= 2r has a condition number below about 6, where
 * the second pass leaves it orthonormal to rounding; up to r = n it stays
 * far below eps^(-1/2) in double (about 8 at r = 0.6 n), where the second
 * pass still does.  Every step is a
 * polled product, factorisation or solve.  *ok = 0 when a Cholesky factor
 * fails (then the columns still span the same space). */
static krr_status cholesky_qr2(krr_ctx *ctx, krr_lowrank *lr, int *ok) {
  const int64_t n = lr->n;
  const int r = lr->r;
  int info = 0;
  *ok = 0;
  for (int pass = 0; pass < 2; pass++) {
    KTRY(lr_sym(ctx, lr, r, lr->U, lr->U, lr->C));
    KTRY(krr_potrf_polled(ctx, lr->prec, r, lr->C, r, &info));
    if (info != 0) return KRR_OK;
    KTRY(krr_trsm_polled(ctx, lr->prec, 1, 0, n, r, 1.0, lr->C, r, lr->U, n));
  }
  *ok = 1;
  return KRR_OK;
}

/* B = lr->Y (n x r) -> lr->U = its left singular vectors B V diag(1/s) and
 * lr->hv = its singular values s (descending), from the eigensystem
 * B^T B = V diag(s^2) V^T (every n-sized step a polled product; the r x r
 * eigensolver is polled by the CPU backend where it is long).  Singular values at
 * or below sqrt(delta) (their lam would be clipped to 0) get zero columns;
 * the others lose orthogonality in proportion to s_1 / s_k, which the
 * Woodbury form (orth = 0) absorbs: the preconditioner is exactly
 * U diag(lam) U^T + rho I for the U it holds. */
static krr_status svd_by_gram(krr_ctx *ctx, krr_lowrank *lr, double delta) {
  const int64_t n = lr->n;
  const int r = lr->r;
  KTRY(lr_gram(ctx, lr, 1, r, r, lr->Y, lr->Y, lr->C, 1));
  KTRY(krr_poll(ctx));
  KTRY(LOP(ctx, lr, syev, r, lr->C, r, lr->S)); /* C <- V, S <- s^2, ascending */
  KTRY(krr_poll(ctx));
  double *V = (double *)malloc(sizeof(double) * (size_t)r * (size_t)r);
  double *W = (double *)malloc(sizeof(double) * (size_t)r * (size_t)r);
  if (!V || !W) {
    free(V); free(W);
    return krr_fail(ctx, KRR_ERR_MEMORY, "Nystrom sketch: %d x %d host buffers", r, r);
  }
  krr_status st = krr_download_vec(ctx, lr->prec, lr->C, (int64_t)r * r, V);
  if (st == KRR_OK) st = krr_download_vec(ctx, lr->prec, lr->S, r, lr->lam);
  if (st == KRR_OK) {
    /* column k of W: eigenvector r - 1 - k over its singular value */
    for (int k = 0; k < r; k++) {
      const int src = r - 1 - k;
      const double s2 = lr->lam[src] > 0 ? lr->lam[src] : 0.0, sv = sqrt(s2);
      lr->hv[k] = sv;
      const double f = s2 > delta ? 1.0 / sv : 0.0;
      for (int i = 0; i < r; i++) W[i + (int64_t)k * r] = f * V[i + (int64_t)src * r];
    }
    st = krr_upload_vec_into(ctx, lr->prec, W, (int64_t)r * r, lr->C);
  }
  free(V); free(W);
  KTRY(st);
  return krr_gemm_polled(ctx, lr->prec, 0, 0, n, r, r, 1.0, lr->Y, n, lr->C, r, 0.0, lr->U, n);
}

krr_status krr_nystrom_sketch(krr_ctx *ctx, krr_lowrank *lr, krr_matmul_fn mv, void *arg,
                              double trace, uint64_t seed) {
  int64_t n = lr->n;
  int r = lr->r;
  double eps = lr->prec == KRR_DOUBLE ? DBL_EPSILON : FLT_EPSILON;
  double delta = eps * trace;
  /* the polled route where the n x r steps are long (see linalg.h), and
   * always when the rows are distributed (its n-sized steps are row-local
   * products and r x r sums; a thin QR or SVD of the whole would not be) */
  const int dist = lr_dist(lr);
  if (dist && !(lr->gram_ok && lr->nglob >= 2 * (int64_t)r))
    return krr_fail(ctx, KRR_ERR_INPUT, "a distributed Nystrom sketch needs rank <= n / 2 "
                    "(rank %d, n = %lld)", r, (long long)lr->nglob);
  /* (the Gram route for any r <= n: Cholesky QR2 orthonormalises a
   * Gaussian n x r matrix whose condition number, about (sqrt n + sqrt r) /
   * (sqrt n - sqrt r), stays below eps^(-1/2) -- all r < n in double; where
   * a factor fails the Householder QR below takes over) */
  const int gram = dist || (lr->gram_ok && n >= (int64_t)r &&
                            2.0 * (double)n * r * r > krr_piece_flops(ctx));
  int ok = 0;
  if (dist) { /* this rank's rows of the global test matrix (column-major stream) */
    for (int j = 0; j < r; j++)
      KTRY(LOP(ctx, lr, randn, n, seed, (uint64_t)(j * lr->nglob + lr->row0),
               KAT(lr->U, (int64_t)j * n, krr_sizeof(lr->prec))));
  } else {
    KTRY(LOP(ctx, lr, randn, n * r, seed, 0, lr->U));
  }
  KTRY(krr_poll(ctx));
  if (gram) KTRY(cholesky_qr2(ctx, lr, &ok));
  if (!ok && dist)
    return krr_fail(ctx, KRR_ERR_NUMERIC, "distributed Nystrom sketch: the Cholesky QR of the "
                    "%lld x %d test matrix failed", (long long)lr->nglob, r);
  if (!ok) KTRY(LOP(ctx, lr, qr_q, n, r, lr->U, n));
  KTRY(krr_poll(ctx));
  KTRY(mv(arg, lr->U, r, lr->Y));
  KTRY(LOP(ctx, lr, axpby, n * r, delta, lr->U, 1.0, lr->Y));
  KTRY(sketch_core(ctx, lr, &delta));
  KTRY(krr_poll(ctx));
  KTRY(krr_trsm_polled(ctx, lr->prec, 1, 0, n, r, 1.0, lr->C, r, lr->Y, n)); /* Bm = Y C^{-1} */
  KTRY(krr_poll(ctx));
  if (gram) {
    KTRY(svd_by_gram(ctx, lr, delta));
  } else {
    KTRY(LOP(ctx, lr, svd_thin, n, r, lr->Y, n, lr->S)); /* Y <- U */
    KTRY(krr_poll(ctx));
    void *tmp = lr->U; lr->U = lr->Y; lr->Y = tmp;
    KTRY(krr_download_vec(ctx, lr->prec, lr->S, r, lr->hv));
  }
  lr->r_eff = 0;
  for (int k = 0; k < r; k++) {
    if (!isfinite(lr->hv[k]))
      return krr_fail(ctx, KRR_ERR_NUMERIC, "Nystrom sketch produced non-finite values");
    double l = lr->hv[k] * lr->hv[k] - delta;
    lr->lam[k] = l > 0 ? l : 0;
    if (lr->lam[k] > 0) lr->r_eff = k + 1;
  }
  lr->orth = !gram;
  return KRR_OK;
}

double krr_lowrank_rho(const krr_lowrank *lr, krr_rho rho, double lambda) {
  switch (rho.mode) {
    case KRR_RHO_DAMPED: return lambda + (lr->r > 0 ? lr->lam[lr->r - 1] : 0.0);
    case KRR_RHO_REGULARIZATION: return lambda;
    default: return rho.value;
  }
}

krr_status krr_lowrank_prepare(krr_ctx *ctx, krr_lowrank *lr, double rho) {
  int re = lr->r_eff;
  lr->rho = rho;
  if (re == 0) return KRR_OK;
  for (int k = 0; k < re; k++) lr->hv[k] = 1.0 / (lr->lam[k] + rho) - 1.0 / rho;
  KTRY(krr_upload_vec_into(ctx, lr->prec, lr->hv, re, lr->dinv));
  for (int k = 0; k < re; k++) lr->hv[k] = 1.0 / sqrt(lr->lam[k] + rho) - 1.0 / sqrt(rho);
  KTRY(krr_upload_vec_into(ctx, lr->prec, lr->hv, re, lr->dsq));
  if (lr->orth && lr->prec == KRR_DOUBLE) return KRR_OK;
  /* C <- chol(rho diag(1/lam) + U^T U), re x re */
  int info = 0;
  for (int k = 0; k < re; k++) lr->hv[k] = rho / lr->lam[k];
  KTRY(krr_upload_vec_into(ctx, lr->prec, lr->hv, re, lr->S));
  KTRY(lr_sym(ctx, lr, re, lr->U, lr->U, lr->C));
  KTRY(LOP(ctx, lr, add_diag, re, lr->C, re, 0.0, lr->S));
  KTRY(krr_potrf_polled(ctx, lr->prec, re, lr->C, re, &info));
  if (info != 0)
    return krr_fail(ctx, KRR_ERR_NUMERIC, "low-rank preconditioner: Cholesky of the %d x %d "
                    "Woodbury core failed (column %d)", re, re, info);
  return KRR_OK;
}

/* out = in/c + U diag(dvec) U^T in (orthonormal U); U^T in is formed first,
 * so out may equal in */
static krr_status apply_orth(krr_ctx *ctx, krr_lowrank *lr, const void *dvec, double c,
                             const void *in, void *out, int m) {
  int64_t n = lr->n;
  int re = lr->r_eff;
  if (re > 0) {
    KTRY(lr_gram(ctx, lr, 0, re, m, lr->U, in, lr->t, 0));
    KTRY(LOP(ctx, lr, scale_rows, re, m, dvec, lr->t, re));
  }
  if (out != in) KTRY(ctx->ops->copy(ctx, out, in, krr_sizeof(lr->prec) * (size_t)(n * m)));
  KTRY(LOP(ctx, lr, axpby, n * m, 0.0, out, 1.0 / c, out));
  if (re == 0) return KRR_OK;
  return LOP(ctx, lr, gemm, 0, 0, n, m, re, 1.0, lr->U, n, lr->t, re, 1.0, out, n);
}

krr_status krr_lowrank_inv(krr_ctx *ctx, krr_lowrank *lr, const void *in, void *out, int m) {
  int64_t n = lr->n;
  int re = lr->r_eff;
  if (re == 0 || (lr->orth && lr->prec == KRR_DOUBLE))
    return apply_orth(ctx, lr, lr->dinv, lr->rho, in, out, m);
  /* Woodbury: (g - U C^{-1} C^{-T} U^T g)/rho */
  KTRY(lr_gram(ctx, lr, 0, re, m, lr->U, in, lr->t, 0));
  KTRY(LOP(ctx, lr, trsm, 0, 1, re, m, 1.0, lr->C, re, lr->t, re));
  KTRY(LOP(ctx, lr, trsm, 0, 0, re, m, 1.0, lr->C, re, lr->t, re));
  if (out != in) KTRY(ctx->ops->copy(ctx, out, in, krr_sizeof(lr->prec) * (size_t)(n * m)));
  KTRY(LOP(ctx, lr, gemm, 0, 0, n, m, re, -1.0, lr->U, n, lr->t, re, 1.0, out, n));
  return LOP(ctx, lr, axpby, n * m, 0.0, out, 1.0 / lr->rho, out);
}

krr_status krr_lowrank_invsqrt(krr_ctx *ctx, krr_lowrank *lr, const void *in, void *out, int m) {
  return apply_orth(ctx, lr, lr->dsq, sqrt(lr->rho), in, out, m);
}
