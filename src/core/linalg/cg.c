/* Preconditioned conjugate gradients with m right-hand sides (see
 * linalg.h), written once for PCG on (K + lambda I) w = y and Falkon's
 * preconditioned normal equations. */
#include <math.h>
#include <string.h>
#include "linalg.h"

#define COL(cg, buf, j) KAT(buf, (int64_t)(j) * (cg)->len, (cg)->es)
#define COP(cg, name, ...) KOP((cg)->ctx, (cg)->prec, name, __VA_ARGS__)

static krr_status cdot(krr_cg *cg, const void *x, const void *y, double *out) {
  if (cg->red) return krr_op_dot(cg->red, cg->len, x, y, out);
  return COP(cg, dot, cg->len, x, y, out);
}

static krr_status cnrm(krr_cg *cg, const void *x, double *out) {
  if (cg->red) return krr_op_nrm2(cg->red, cg->len, x, out);
  return COP(cg, nrm2, cg->len, x, out);
}

double krr_cg_memory(krr_precision prec, int64_t len, int m, int precond) {
  return (double)krr_sizeof(prec) * (double)(len * m) * (precond ? 4.0 : 3.0) +
         6.0 * 8.0 * (double)m;
}

krr_status krr_cg_alloc(krr_cg *cg, krr_arena *a, krr_precision prec, int64_t len, int m,
                        krr_op *red, krr_linop_fn A, krr_linop_fn M, void *arg, int every) {
  memset(cg, 0, sizeof *cg);
  cg->ctx = a->ctx;
  cg->prec = prec;
  cg->es = krr_sizeof(prec);
  cg->len = len;
  cg->m = m;
  cg->red = red;
  cg->A = A;
  cg->M = M;
  cg->arg = arg;
  cg->every = every > 0 ? every : 50;
  int64_t lm = len * m;
  cg->r = krr_arena_dev(a, lm, cg->es);
  cg->z = M ? krr_arena_dev(a, lm, cg->es) : cg->r;
  cg->d = krr_arena_dev(a, lm, cg->es);
  cg->Ad = krr_arena_dev(a, lm, cg->es);
  cg->rz = (double *)krr_arena_host(a, m, sizeof(double));
  cg->rn = (double *)krr_arena_host(a, m, sizeof(double));
  cg->rlast = (double *)krr_arena_host(a, m, sizeof(double));
  cg->frozen = (int *)krr_arena_host(a, m, sizeof(int));
  cg->restart = (int *)krr_arena_host(a, m, sizeof(int));
  cg->step = (double *)krr_arena_host(a, m, sizeof(double));
  return KRR_ALLOCATED(a, cg->r, cg->z, cg->d, cg->Ad, cg->rz, cg->rn, cg->rlast, cg->frozen,
                       cg->restart, cg->step);
}

/* z = M^{-1} r; per live column: r.z, ||r||, d = z + beta d (beta = 0 at the
 * start and for columns flagged in restart) */
static krr_status direction(krr_cg *cg, int first) {
  if (cg->M) KTRY(cg->M(cg->arg, cg->r, cg->z));
  double sum = 0;
  int live = 0;
  for (int j = 0; j < cg->m; j++) {
    if (!cg->frozen[j]) {
      double rz = 0;
      KTRY(cdot(cg, COL(cg, cg->r, j), COL(cg, cg->z, j), &rz));
      KTRY(cnrm(cg, COL(cg, cg->r, j), &cg->rn[j]));
      if (!isfinite(cg->rn[j]) || !isfinite(rz))
        return krr_fail(cg->ctx, KRR_ERR_NUMERIC, "CG diverged (non-finite residual)");
      if (!(rz > 0) || cg->rn[j] == 0) {
        cg->frozen[j] = 1;
      } else {
        double beta = first || cg->restart[j] ? 0.0 : rz / cg->rz[j];
        if (!first && cg->rec_it - 1 < cg->rec_cap)
          cg->rec_beta[(cg->rec_it - 1) * cg->m + j] = beta;
        KTRY(COP(cg, axpby, cg->len, 1.0, COL(cg, cg->z, j), beta, COL(cg, cg->d, j)));
        cg->rz[j] = rz;
      }
    }
    cg->restart[j] = 0;
    live += !cg->frozen[j];
    sum += cg->rn[j] * cg->rn[j];
  }
  cg->rnorm = sqrt(sum);
  cg->live = live;
  return KRR_OK;
}

/* r = b - A x */
static krr_status true_residual(krr_cg *cg, const void *b) {
  KTRY(cg->A(cg->arg, cg->x, cg->r));
  return COP(cg, axpby, cg->len * cg->m, 1.0, b, -1.0, cg->r);
}

krr_status krr_cg_start(krr_cg *cg, void *x, const void *b, int x_zero) {
  cg->x = x;
  cg->since = 0;
  cg->rec_it = 0;
  for (int64_t t = 0; t < (int64_t)cg->rec_cap * cg->m; t++)
    cg->rec_alpha[t] = cg->rec_beta[t] = NAN;
  for (int j = 0; j < cg->m; j++) {
    cg->frozen[j] = cg->restart[j] = 0;
    cg->rlast[j] = INFINITY;
    cg->rz[j] = 0;
  }
  size_t bytes = cg->es * (size_t)(cg->len * cg->m);
  KTRY(cg->ctx->ops->zero(cg->ctx, cg->d, bytes));
  if (x_zero) {
    KTRY(cg->ctx->ops->zero(cg->ctx, x, bytes));
    KTRY(cg->ctx->ops->copy(cg->ctx, cg->r, b, bytes));
  } else {
    KTRY(true_residual(cg, b));
  }
  return direction(cg, 1);
}

/* the replacement: a column whose true residual exceeds twice the recursive
 * one, or did not decrease since the previous replacement, restarts */
static krr_status replace(krr_cg *cg, const void *b) {
  for (int j = 0; j < cg->m; j++) KTRY(cnrm(cg, COL(cg, cg->r, j), &cg->rn[j]));
  KTRY(true_residual(cg, b));
  for (int j = 0; j < cg->m; j++) {
    double tr = 0;
    KTRY(cnrm(cg, COL(cg, cg->r, j), &tr));
    cg->restart[j] = !(tr <= 2.0 * cg->rn[j]) || !(tr < cg->rlast[j]);
    cg->rlast[j] = tr;
  }
  cg->since = 0;
  return KRR_OK;
}

krr_status krr_cg_iter(krr_cg *cg, const void *b, int *done) {
  KTRY(cg->A(cg->arg, cg->d, cg->Ad));
  cg->replaced = 0;
  for (int j = 0; j < cg->m; j++) {
    cg->step[j] = 0;
    if (cg->frozen[j]) continue;
    double dAd = 0;
    KTRY(cdot(cg, COL(cg, cg->d, j), COL(cg, cg->Ad, j), &dAd));
    double alpha = cg->rz[j] / dAd;
    if (!(dAd > 0) || !isfinite(alpha)) { cg->frozen[j] = 1; continue; }
    KTRY(COP(cg, axpby, cg->len, alpha, COL(cg, cg->d, j), 1.0, COL(cg, cg->x, j)));
    KTRY(COP(cg, axpby, cg->len, -alpha, COL(cg, cg->Ad, j), 1.0, COL(cg, cg->r, j)));
    cg->step[j] = alpha;
    if (cg->rec_it < cg->rec_cap) cg->rec_alpha[cg->rec_it * cg->m + j] = alpha;
  }
  cg->rec_it++;
  if (++cg->since >= cg->every) {
    KTRY(replace(cg, b));
    cg->replaced = 1;
  }
  KTRY(direction(cg, 0));
  *done = cg->live == 0;
  return KRR_OK;
}
