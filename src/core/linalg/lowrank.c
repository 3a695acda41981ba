/* Low-rank preconditioners P + rho I, P = U diag(lam) U^T: the randomized
 * Nystrom sketch (Rathore et al., Alg. 2, after Frangella, Tropp and Udell)
 * and the Woodbury applications, shared by the solvers (ASkotch on its b x b
 * blocks, PCG on the full K).  Written once over void* device buffers. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "linalg.h"

#define LOP(ctx, lr, name, ...) KOP(ctx, (lr)->prec, name, __VA_ARGS__)

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
    KTRY(LOP(ctx, lr, gemm, 1, 0, r, r, n, 1.0, lr->U, n, lr->Y, n, 0.0, lr->C, r));
    KTRY(LOP(ctx, lr, potrf, r, lr->C, r, &info));
    if (info == 0) return KRR_OK;
    double dd = *delta * pow(10.0, attempt + 1); /* Y += dd Omega: Omega^T Y gains dd I */
    KTRY(LOP(ctx, lr, axpby, n * r, dd, lr->U, 1.0, lr->Y));
    *delta += dd;
  }
  return krr_fail(ctx, KRR_ERR_NUMERIC,
                  "Nystrom sketch: Cholesky of Omega^T Y failed even with shift %.3g; "
                  "try precision = \"double\" or a smaller rank", *delta);
}

krr_status krr_nystrom_sketch(krr_ctx *ctx, krr_lowrank *lr, krr_matmul_fn mv, void *arg,
                              double trace, uint64_t seed) {
  int64_t n = lr->n;
  int r = lr->r;
  double eps = lr->prec == KRR_DOUBLE ? DBL_EPSILON : FLT_EPSILON;
  double delta = eps * trace;
  KTRY(LOP(ctx, lr, randn, n * r, seed, 0, lr->U));
  KTRY(krr_poll(ctx));
  KTRY(LOP(ctx, lr, qr_q, n, r, lr->U, n));
  KTRY(krr_poll(ctx));
  KTRY(mv(arg, lr->U, r, lr->Y));
  KTRY(LOP(ctx, lr, axpby, n * r, delta, lr->U, 1.0, lr->Y));
  KTRY(sketch_core(ctx, lr, &delta));
  KTRY(krr_poll(ctx));
  KTRY(LOP(ctx, lr, trsm, 1, 0, n, r, 1.0, lr->C, r, lr->Y, n)); /* Bm = Y C^{-1} */
  KTRY(krr_poll(ctx));
  KTRY(LOP(ctx, lr, svd_thin, n, r, lr->Y, n, lr->S));            /* Y <- U */
  KTRY(krr_poll(ctx));
  void *tmp = lr->U; lr->U = lr->Y; lr->Y = tmp;
  KTRY(krr_download_vec(ctx, lr->prec, lr->S, r, lr->hv));
  lr->r_eff = 0;
  for (int k = 0; k < r; k++) {
    if (!isfinite(lr->hv[k]))
      return krr_fail(ctx, KRR_ERR_NUMERIC, "Nystrom sketch produced non-finite values");
    double l = lr->hv[k] * lr->hv[k] - delta;
    lr->lam[k] = l > 0 ? l : 0;
    if (lr->lam[k] > 0) lr->r_eff = k + 1;
  }
  lr->orth = 1;
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
  int64_t n = lr->n;
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
  KTRY(LOP(ctx, lr, gemm, 1, 0, re, re, n, 1.0, lr->U, n, lr->U, n, 0.0, lr->C, re));
  KTRY(LOP(ctx, lr, add_diag, re, lr->C, re, 0.0, lr->S));
  KTRY(LOP(ctx, lr, potrf, re, lr->C, re, &info));
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
    KTRY(LOP(ctx, lr, gemm, 1, 0, re, m, n, 1.0, lr->U, n, in, n, 0.0, lr->t, re));
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
  KTRY(LOP(ctx, lr, gemm, 1, 0, re, m, n, 1.0, lr->U, n, in, n, 0.0, lr->t, re));
  KTRY(LOP(ctx, lr, trsm, 0, 1, re, m, 1.0, lr->C, re, lr->t, re));
  KTRY(LOP(ctx, lr, trsm, 0, 0, re, m, 1.0, lr->C, re, lr->t, re));
  if (out != in) KTRY(ctx->ops->copy(ctx, out, in, krr_sizeof(lr->prec) * (size_t)(n * m)));
  KTRY(LOP(ctx, lr, gemm, 0, 0, n, m, re, -1.0, lr->U, n, lr->t, re, 1.0, out, n));
  return LOP(ctx, lr, axpby, n * m, 0.0, out, 1.0 / lr->rho, out);
}

krr_status krr_lowrank_invsqrt(krr_ctx *ctx, krr_lowrank *lr, const void *in, void *out, int m) {
  return apply_orth(ctx, lr, lr->dsq, sqrt(lr->rho), in, out, m);
}
