/* Exact solver: Cholesky of K + lambda I (the oracle; n up to ~2e4 on a CPU). */
#include <math.h>
#include <string.h>
#include "internal.h"

typedef struct {
  struct krr_solver base;
  void *K; /* n x n, freed after the solve */
} chol_t;

static void chol_free(krr_solver *base) {
  chol_t *s = (chol_t *)base;
  krr_dfree(base->ctx, &s->K);
  krr_dfree(base->ctx, &base->w);
  free(s);
}

static krr_status chol_step(krr_solver *base, int64_t iters) {
  (void)iters;
  chol_t *s = (chol_t *)base;
  krr_ctx *ctx = base->ctx;
  const krr_problem *pb = base->pb;
  krr_precision prec = pb->prec;
  int64_t n = pb->n;
  if (base->diag.done) return KRR_OK;
  double t0 = krr_now();
  s->K = krr_dalloc(ctx, n * n, base->es);
  if (!s->K) return ctx->status;
  KTRY(KOP(ctx, prec, kernel_block, &pb->kernel, pb->X, n, pb->X, n, pb->p, s->K, n));
  KTRY(KOP(ctx, prec, add_diag, n, s->K, n, pb->lambda, NULL));
  int info = 0;
  KTRY(KOP(ctx, prec, potrf, n, s->K, n, &info));
  if (info != 0) {
    krr_dfree(ctx, &s->K);
    return krr_fail(ctx, KRR_ERR_NUMERIC,
                    "K + lambda I is not numerically positive definite (Cholesky failed at "
                    "column %d); increase lambda or use precision = \"double\"", info);
  }
  KTRY(ctx->ops->copy(ctx, base->w, pb->y, base->es * (size_t)(n * pb->m)));
  KTRY(KOP(ctx, prec, trsm, 0, 1, n, pb->m, 1.0, s->K, n, base->w, n));
  KTRY(KOP(ctx, prec, trsm, 0, 0, n, pb->m, 1.0, s->K, n, base->w, n));
  KTRY(ctx->ops->sync(ctx));
  krr_dfree(ctx, &s->K);
  base->diag.iter = 1;
  base->diag.passes = 1;
  base->diag.done = 1;
  base->diag.resid_est = 0;
  base->diag.t_block = krr_now() - t0;
  return KRR_OK;
}

static const krr_solver_vt chol_vt = {.step = chol_step, .free = chol_free};

krr_status krr_cholesky_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                             krr_solver **out) {
  size_t es = krr_sizeof(pb->prec);
  size_t fr = 0, tot = 0;
  KTRY(ctx->ops->mem_info(ctx, &fr, &tot));
  size_t avail = o->mem_limit > 0 ? o->mem_limit : (size_t)((double)fr * 0.9);
  double need = (double)es * ((double)pb->n * (double)pb->n + (double)(pb->n * pb->m));
  if (need > (double)avail)
    return krr_fail(ctx, KRR_ERR_MEMORY,
                    "the exact Cholesky solver needs the full %lld x %lld kernel matrix "
                    "(%.1f MiB) but only %.1f MiB are available; use solver = askotch()",
                    (long long)pb->n, (long long)pb->n, need / 1048576.0, avail / 1048576.0);
  chol_t *s = (chol_t *)calloc(1, sizeof(chol_t));
  if (!s) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  s->base.vt = &chol_vt;
  s->base.ctx = ctx;
  s->base.pb = pb;
  s->base.o = *o;
  s->base.es = es;
  s->base.w = krr_dalloc(ctx, pb->n * (int64_t)pb->m, es);
  if (!s->base.w) { free(s); return ctx->status; }
  krr_status st = ctx->ops->zero(ctx, s->base.w, es * (size_t)(pb->n * pb->m));
  if (st != KRR_OK) { chol_free(&s->base); return st; }
  s->base.diag.block_size = pb->n;
  s->base.diag.resid_est = 1.0;
  s->base.diag.block_resid = NAN;
  *out = &s->base;
  return KRR_OK;
}
