/* EigenPro 2.0 (Ma and Belkin 2019), written
 * once for both precisions on the kernel operator; the iteration itself is
 * linalg/eigenpro.c (EigenPro 3.0 runs it as its projection).
 *
 * EigenPro 2.0: preconditioned mini-batch SGD (Richardson) on OUR regularised
 * system (K + lambda I) w = y.  The papers set lambda = 0 and iterate on
 * K w = y; we always have lambda > 0 and put it in the gradient:
 *     g = K_{B:} w + lambda w_B - y_B                     (batch B, |B| = bs)
 *     w_B -= (eta / bs) g                                  (SGD step)
 *     w_S += (eta / bs) U D U^T K_{S,B} g                   (EigenPro correction)
 * S: s points drawn uniformly once (subsample, default min(n, 4000));
 * K_SS = U Sigma U^T its eigensystem (krr_sym_top: LAPACK, or for a large
 * subsample polled subspace iteration to a residual of 1e-3 sigma_q+1), top q = rank (default
 * min(100, s - 1)) directions corrected with the (q+1)-th as the tail:
 *     D_j = (1 - t_j) / sigma_j,
 *     t_j = ((sigma_q+1 / s + lambda / n) / (sigma_j / s + lambda / n))^alpha, alpha = 0.95
 * (the EigenPro repository's alpha; with lambda = 0 this is exactly its
 * preconditioner).  sigma_j / s estimates the j-th eigenvalue of the
 * covariance operator K / n, and lambda / n is our ridge on the same scale, so
 * the corrected top eigenvalue of the preconditioned (K + lambda I)/n is
 *     top = (sigma_1/s + lambda/n)^(1-alpha) (sigma_q+1/s + lambda/n)^alpha.
 * Since y - (K + lambda I) w* = 0 on every coordinate, the batch gradient
 * vanishes at the solution: the iteration is consistent (no noise floor in
 * exact arithmetic) and converges linearly in expectation, like randomised
 * Kaczmarz -- but at the rate of the preconditioned condition number
 * top / (lambda/n), which is slow for small lambda.
 * Automatic batch and step (EigenPro 2.0 rules, as in its code):
 *     beta  = max_{i in S} k_P(x_i, x_i) + lambda, k_P(x_i, x_i) = K(x_i, x_i) - sum_j (1 - t_j) sigma_j U_ij^2
 *     m*    = beta / top                  (critical batch size)
 *     bs    = min(m* + 1, n, 4096)        (batch_size overrides; the GPU-memory cap of
 *                                          the original is replaced by 4096)
 *     eta   = bs / beta                   if bs < m* + 1
 *           = 0.99 * 2 bs / (beta + (bs - 1) top)   otherwise   (step overrides)
 * One iteration = one batch; passes = iter * bs / n (+ the correction's
 * s * bs pairs, not counted).  Batches are drawn uniformly without
 * replacement within a batch, independently across iterations.
 * resid_est: the skeleton's running estimate from the batch gradient,
 * (n / bs) ||g||^2 / ||y||^2 smoothed by an exponential average.
 *
 * The subsample and its eigensystem do not depend on lambda and are kept
 * across a change of lambda; the preconditioner, batch and step are redone. */
#include <math.h>
#include "solver.h"

#define OPTIONS(X)                                                                            \
  X(subsample, INT, 0, 2, INFINITY, 0, NULL,                                                  \
    "points s of the preconditioner's subsample (0: min(n, 4000))")                           \
  X(rank, INT, 0, 1, INFINITY, 0, NULL, "corrected eigendirections q (0: min(100, s - 1))")   \
  X(batch_size, INT, 0, 1, INFINITY, 0, NULL, "mini-batch size (0: the EigenPro 2.0 rule)")   \
  X(step, REAL, 0, 0, INFINITY, 1, NULL, "step size (0: the EigenPro 2.0 rule)")
typedef struct { krr_common_opts common; KRR_OPT_FIELDS(OPTIONS) } opts_t;
static const krr_optdef optdefs[] = {KRR_OPT_DEFS(OPTIONS)};

typedef struct {
  krr_ep ep;
  int halvings; /* of the automatic step, after divergence */
} ep2_t;

static const char *const extras[] = {"batch_size", "step", "top", "step_halvings", NULL};

/* The automatic step comes from the subsample's eigenvalues; with a small
 * subsample and many corrected directions it can exceed the stability limit
 * of the whole data's preconditioned operator, and the iterates then grow
 * geometrically (relative residual 1e8 after 14 passes at n = 4000, s = 1000,
 * q = 100, lambda = 1e-4).  A stable step never takes the residual far above
 * that of the zero start (1): at EP_DIVERGED times it, the step is halved and
 * the iteration starts again from zero, at most EP_MAX_HALVINGS times (then
 * the caller's divergence check reports it).  A user's step is kept. */
#define EP_DIVERGED 10.0
#define EP_MAX_HALVINGS 20

#define E(s) (&((ep2_t *)(s)->st)->ep)
#define O(s) SOPT(s, opts_t)

static krr_status ep2_resolve(krr_solver *s) {
  opts_t *o = O(s);
  int64_t n = s->n;
  if (o->subsample == 0) o->subsample = n < 4000 ? n : 4000;
  if (o->subsample > n)
    return krr_fail(s->ctx, KRR_ERR_INPUT, "`subsample` (%lld) must not exceed the number of "
                    "training points (%lld)", (long long)o->subsample, (long long)n);
  if (o->rank == 0) o->rank = o->subsample - 1 < 100 ? o->subsample - 1 : 100;
  if (o->rank >= o->subsample)
    return krr_fail(s->ctx, KRR_ERR_INPUT, "`rank` (%lld) must be smaller than the EigenPro "
                    "subsample (%lld points)", (long long)o->rank, (long long)o->subsample);
  if (o->batch_size > n)
    return krr_fail(s->ctx, KRR_ERR_INPUT, "`batch_size` (%lld) must not exceed the number of "
                    "training points (%lld)", (long long)o->batch_size, (long long)n);
  return KRR_OK;
}

static double ep2_memory(const krr_solver *s) {
  const opts_t *o = O(s);
  return (double)s->es * (double)(s->n * s->m) +
         krr_ep_memory(s->op, s->m, o->subsample, (int)o->rank,
                       krr_ep_batch_cap(s->n, o->batch_size));
}

static krr_status ep2_init(krr_solver *s) {
  const opts_t *o = O(s);
  KTRY(krr_solver_alloc_weights(s, s->n, s->prec));
  return krr_ep_alloc(E(s), &s->arena, s->op, s->obj, o->subsample, (int)o->rank, o->batch_size,
                      o->step, 1.0, krr_options_seed(s->opts));
}

static krr_status ep2_prepare(krr_solver *s) { return krr_ep_prepare(E(s)); }

static krr_status ep2_tune(krr_solver *s) {
  krr_ep *ep = E(s);
  KTRY(krr_ep_tune(ep));
  krr_solver_set_extra(s, "batch_size", (double)ep->bs);
  krr_solver_set_extra(s, "step", ep->eta);
  krr_solver_set_extra(s, "top", ep->top);
  krr_solver_set_extra(s, "step_halvings", (double)((ep2_t *)s->st)->halvings);
  return KRR_OK;
}

static krr_status ep2_iterate(krr_solver *s) {
  krr_ep *ep = E(s);
  double gn = 0, ybn = 0;
  KTRY(krr_ep_iter(ep, s->w, (uint64_t)s->diag.iter, &gn, &ybn));
  krr_solver_tick(s);
  s->diag.passes = (double)s->diag.iter * (double)ep->bs / (double)s->n;
  krr_solver_track_block(s, ep->bs, gn, ybn);
  ep2_t *e = (ep2_t *)s->st;
  if (!(ep->user_step > 0) && s->diag.resid_est > EP_DIVERGED && e->halvings < EP_MAX_HALVINGS) {
    e->halvings++;
    ep->step_scale *= 0.5; /* kept by a later tune (a new lambda) */
    ep->eta *= 0.5;
    KTRY(s->ctx->ops->zero(s->ctx, s->w, s->es * (size_t)(s->wrows * (int64_t)s->m)));
    s->ema = 1.0; /* the zero start's relative residual, squared */
    s->diag.resid_est = 1.0;
    krr_solver_set_extra(s, "step", ep->eta);
    krr_solver_set_extra(s, "step_halvings", (double)e->halvings);
  }
  return KRR_OK;
}

const krr_solver_def krr_solver_eigenpro = {
    .name = "eigenpro",
    .title = "EigenPro 2.0",
    .losses = "squared",
    .options = {optdefs, KRR_NOPTS(optdefs), sizeof(opts_t)},
    .extras = extras,
    .state_size = sizeof(ep2_t),
    .mem_advice = "use a smaller subsample",
    .resolve = ep2_resolve,
    .memory = ep2_memory,
    .init = ep2_init,
    .prepare = ep2_prepare,
    .tune = ep2_tune,
    .iterate = ep2_iterate,
};
