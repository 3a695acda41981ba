/* The exact solver: Cholesky of K + lambda I (the oracle; n up to a few tens
 * of thousands on a CPU).  The factor is kept: new targets cost two
 * triangular solves; a new lambda refactors. */
#include <math.h>
#include "solver.h"

typedef krr_common_opts opts_t;
typedef struct {
  void *K; /* n x n: the upper Cholesky factor of K + lambda I */
} chol_t;

static krr_status chol_resolve(krr_solver *s) { (void)s; return KRR_OK; }

static double chol_memory(const krr_solver *s) {
  return (double)s->es * ((double)s->n * (double)s->n + (double)s->n * s->m);
}

static krr_status chol_init(krr_solver *s) {
  chol_t *c = (chol_t *)s->st;
  KTRY(krr_solver_alloc_weights(s, s->n, s->prec));
  c->K = krr_arena_dev(&s->arena, s->n * s->n, s->es);
  return c->K ? KRR_OK : s->ctx->status;
}

static krr_status chol_tune(krr_solver *s) {
  chol_t *c = (chol_t *)s->st;
  int64_t n = s->n;
  int info = 0;
  /* a factorisation that clearly cannot finish within the time limit is
   * refused before it starts (n^3 / 3 flops, plus the kernel matrix) */
  KTRY(krr_refuse_flops(s->ctx, (double)n * (double)n * ((double)n / 3.0 + 3.0 * s->op->p),
                        "the Cholesky factorisation of the n x n kernel matrix"));
  KTRY(krr_op_mat(s->op, NULL, NULL, c->K, n));
  KTRY(SOP(s, add_diag, n, c->K, n, s->obj->lambda, NULL));
  KTRY(krr_potrf_polled(s->ctx, s->prec, n, c->K, n, &info));
  if (info != 0)
    return krr_fail(s->ctx, KRR_ERR_NUMERIC,
                    "K + lambda I is not numerically positive definite (Cholesky failed at "
                    "column %d); increase lambda or use precision = \"double\"", info);
  return KRR_OK;
}

static krr_status chol_iterate(krr_solver *s) {
  chol_t *c = (chol_t *)s->st;
  int64_t n = s->n;
  KTRY(s->ctx->ops->copy(s->ctx, s->w, s->obj->y, s->es * (size_t)(n * s->m)));
  KTRY(SOP(s, trsm, 0, 1, n, s->m, 1.0, c->K, n, s->w, n));
  KTRY(SOP(s, trsm, 0, 0, n, s->m, 1.0, c->K, n, s->w, n));
  krr_solver_tick(s);
  s->diag.passes = 1;
  s->diag.done = 1;
  s->diag.resid_est = 0;
  return KRR_OK;
}

const krr_solver_def krr_solver_cholesky = {
    .name = "cholesky",
    .title = "Cholesky (exact direct solve)",
    .losses = "squared",
    .options = {NULL, 0, sizeof(opts_t)},
    .state_size = sizeof(chol_t),
    .mem_advice = "the exact solver needs the full n x n kernel matrix; use solver = askotch()",
    .resolve = chol_resolve,
    .memory = chol_memory,
    .init = chol_init,
    .tune = chol_tune,
    .iterate = chol_iterate,
};
