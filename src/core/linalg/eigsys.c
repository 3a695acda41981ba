/* Top-q eigensystem of a kernel block (EigenPro 2.0 and 3.0), and the dual
 * block gradient of the block methods. */
#include <math.h>
#include <stdlib.h>
#include "linalg.h"
#include "../rng.h"

/* Subspace iteration with Rayleigh-Ritz (Saad, "Numerical Methods for Large
 * Eigenvalue Problems", 2nd ed., SIAM 2011, ch. 5) for the top k eigenpairs
 * of a symmetric positive semidefinite n x n matrix K: Q (n x L, L = 2k)
 * orthonormal; Y = K Q; the Ritz pairs (theta, V) of Q^T Y; the top k Ritz
 * vectors Z = Q V_k and residuals Y V_k - Z diag(theta); then Q <- qr(Y).
 * Every n-sized product is polled in pieces; the L x L eigensolver and the
 * n x L QR take milliseconds.  Converged when each of the top k residuals is
 * within EIG_TOL of the smallest of their Ritz values theta_k (or within the
 * rounding floor 8 sqrt(n) eps theta_1): the Ritz values are then within
 * |r|^2 / gap of eigenvalues, and the part of each Ritz vector outside its
 * eigenvector moves a preconditioner built from them by no more than about
 * EIG_TOL theta_k.  *iters: the iterations, negated when maxit passed
 * without convergence (the caller falls back to LAPACK).  W: the k Ritz
 * values ascending; Z: their vectors in the same order (as the ops table's
 * syev_top). */
#define EIG_TOL 1e-3

static krr_status top_subspace(krr_ctx *ctx, krr_precision prec, int64_t n, const void *K,
                               int64_t k, int64_t L, int maxit, uint64_t seed, void *W, void *Z,
                               int *iters) {
  const size_t es = krr_sizeof(prec);
  const double eps = krr_precision_eps(prec);
  void *Q = krr_dalloc(ctx, n * L, es), *Y = krr_dalloc(ctx, n * L, es),
       *T = krr_dalloc(ctx, L * L, es), *Tw = krr_dalloc(ctx, L, es),
       *R = krr_dalloc(ctx, n * k, es);
  double *th = (double *)malloc(sizeof(double) * (size_t)L);
  krr_status st = (Q && Y && T && Tw && R) ? KRR_OK : (ctx->status ? ctx->status : KRR_ERR_MEMORY);
  if (st == KRR_OK && !th) st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  int ok = 0;
  double rprev[2] = {INFINITY, INFINITY}; /* r0 one and two steps back */
  *iters = 0;
  if (st == KRR_OK) st = KOP(ctx, prec, randn, n * L, seed, 0, Q);
  if (st == KRR_OK) st = KOP(ctx, prec, qr_q, n, L, Q, n);
  for (int it = 0; st == KRR_OK && it < maxit && !ok; it++) {
    *iters = it + 1;
    st = krr_gemm_polled(ctx, prec, 0, 0, n, L, n, 1.0, K, n, Q, n, 0.0, Y, n);
    if (st == KRR_OK) st = krr_gemm_polled(ctx, prec, 1, 0, L, L, n, 1.0, Q, n, Y, n, 0.0, T, L);
    if (st == KRR_OK) st = krr_poll(ctx);
    if (st == KRR_OK) st = KOP(ctx, prec, syev, L, T, L, Tw); /* T <- V, ascending */
    if (st == KRR_OK) st = krr_download_vec(ctx, prec, Tw, L, th);
    if (st != KRR_OK) break;
    const double *tk = th + (L - k), top = th[L - 1];
    if (!isfinite(top) || !isfinite(tk[0])) {
      st = krr_fail(ctx, KRR_ERR_NUMERIC,
                    "the subsample's kernel matrix has non-finite eigenvalues");
      break;
    }
    const void *Vk = KAT(T, (L - k) * L, es);
    st = krr_gemm_polled(ctx, prec, 0, 0, n, k, L, 1.0, Q, n, Vk, L, 0.0, Z, n);
    if (st == KRR_OK) st = krr_gemm_polled(ctx, prec, 0, 0, n, k, L, 1.0, Y, n, Vk, L, 0.0, R, n);
    const double bound =
        fmax(EIG_TOL * (tk[0] > 0 ? tk[0] : 0.0), 8.0 * sqrt((double)n) * eps * fabs(top));
    int conv = 1;
    double r0 = 0; /* the residual of the smallest (slowest) pair */
    for (int64_t j = 0; st == KRR_OK && conv && j < k; j++) {
      double rn = 0;
      st = KOP(ctx, prec, axpby, n, -tk[j], KAT(Z, j * n, es), 1.0, KAT(R, j * n, es));
      if (st == KRR_OK) st = KOP(ctx, prec, nrm2, n, KAT(R, j * n, es), &rn);
      conv = rn <= bound;
      if (j == 0) r0 = rn;
    }
    /* it converges linearly (at about theta_{L+1} / theta_k per step, after
     * a transient): give up early when the rate over the last two steps says
     * maxit will not do (a spectrum too flat for the subspace) */
    if (st == KRR_OK && !conv && it >= 4) {
      const double rate = sqrt(r0 / rprev[1]);
      if (!(rate < 1) || it + 1 + log(bound / r0) / log(rate) > maxit) break;
    }
    rprev[1] = rprev[0];
    rprev[0] = r0;
    if (st == KRR_OK && conv) {
      st = krr_upload_vec_into(ctx, prec, tk, k, W);
      ok = st == KRR_OK;
    } else if (st == KRR_OK) { /* Q <- qr(K Q) */
      void *t = Q;
      Q = Y;
      Y = t;
      st = KOP(ctx, prec, qr_q, n, L, Q, n);
    }
  }
  if (!ok) *iters = -*iters;
  free(th);
  krr_dfree(ctx, &Q);
  krr_dfree(ctx, &Y);
  krr_dfree(ctx, &T);
  krr_dfree(ctx, &Tw);
  krr_dfree(ctx, &R);
  return st;
}

static int64_t subspace_width(int64_t k) { return 2 * k > k + 16 ? 2 * k : k + 16; }

double krr_sym_top_bytes(int64_t n, int64_t k, size_t es) {
  const int64_t L = subspace_width(k);
  return (double)es *
         ((double)n * (double)n + (double)n + (double)n * (double)k + 2.0 * (double)n * (double)L +
          (double)L * (double)L + (double)L + (double)n * (double)k);
}

krr_status krr_sym_top(krr_ctx *ctx, krr_precision prec, int64_t n, void *K, int64_t k,
                       uint64_t seed, void *W, void *Z, int *iters) {
  /* LAPACK's tridiagonal reduction, 4/3 n^3 flops, and 2 n^2 k for the
   * vectors, in one call; the subspace iteration when that call is long and
   * L is small beside n, given at most three times LAPACK's flops (its
   * products run near the BLAS's peak, the reduction at about a third:
   * about LAPACK's time at most, at n = 4000, k = 101 on 2 cores) */
  const int64_t L = subspace_width(k);
  const double lapack = (4.0 / 3.0 * (double)n + 2.0 * (double)k) * (double)n * (double)n;
  const double per_it =
      2.0 * (double)n * (double)n * (double)L + 10.0 * (double)n * (double)L * (double)L;
  const int maxit = (int)fmin(3.0 * lapack / per_it, 1000.0);
  int it = 0;
  if (iters) *iters = 0;
  if (lapack > krr_piece_flops(ctx) && 4 * L <= n && maxit >= 3) {
    KTRY(top_subspace(ctx, prec, n, K, k, L, maxit, seed, W, Z, &it));
    if (iters) *iters = it;
    if (it > 0) return KRR_OK;
  }
  /* the backend's eigensolver (on the CPU in polled steps where it is long:
   * cpu_ops_t.c.inc), refused up front when it clearly exceeds the time left */
  KTRY(krr_refuse_flops(ctx, lapack, "the eigendecomposition of the subsample's kernel matrix"));
  return KOP(ctx, prec, syev_top, n, K, n, k, W, Z, n);
}

krr_status krr_kernel_eigsys(krr_op *op, const krr_block *S, int q, uint64_t seed, void *U,
                             double *w) {
  krr_ctx *ctx = op->ctx;
  int64_t n = S->b, k = (int64_t)q + 1 < n ? (int64_t)q + 1 : n;
  size_t es = op->es;
  /* the top k = q + 1 eigenpairs: the q corrected directions and the tail */
  void *K = krr_dalloc(ctx, n * n, es), *W = krr_dalloc(ctx, n, es),
       *Z = krr_dalloc(ctx, n * k, es);
  double *wk = (double *)malloc(sizeof(double) * (size_t)n);
  krr_status st = (K && W && Z) ? KRR_OK : (ctx->status ? ctx->status : KRR_ERR_MEMORY);
  if (st == KRR_OK && !wk) st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK) st = krr_op_mat(op, S, S, K, n);
  if (st == KRR_OK) st = krr_poll(ctx);
  if (st == KRR_OK)
    st = krr_sym_top(ctx, op->prec, n, K, k, krr_rng_stream(seed, 0x5E16, 43), W, Z, NULL);
  if (st == KRR_OK) st = krr_download_vec(ctx, op->prec, W, k, wk);
  /* w: the n eigenvalues ascending, of which only the top k are computed
   * (the rest NaN); U: the top q vectors, largest first */
  for (int64_t i = 0; st == KRR_OK && i < n; i++) w[i] = i < n - k ? NAN : wk[i - (n - k)];
  for (int j = 0; st == KRR_OK && j < q; j++)
    st = ctx->ops->copy(ctx, KAT(U, (int64_t)j * n, es), KAT(Z, (k - 1 - j) * n, es),
                        es * (size_t)n);
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

/* The eigendecomposition of a symmetric host matrix (krr.h): the context's
 * host backend's eigensolver, which polls between steps (the CPU backend's
 * is interruptible). */
krr_status krr_sym_eigen_host(krr_ctx *ctx, int64_t n, double *A, double *w) {
  if (n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "eigen: negative size");
  if (n == 0) return KRR_OK;
  const krr_ops *h = ctx->host_ops;
  if (!h) return krr_fail(ctx, KRR_ERR_INPUT, "eigen: the context has no host backend");
  if (krr_ctx_on_host(ctx)) return h->syev_d(ctx, n, A, n, w);
  krr_ctx hc;
  KTRY(krr_ctx_host_twin(ctx, &hc));
  const krr_status st = krr_ctx_forward(ctx, &hc, h->syev_d(&hc, n, A, n, w));
  krr_ctx_free(&hc);
  return st;
}
