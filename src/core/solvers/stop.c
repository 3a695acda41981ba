/* The stop policy (krr_stop, see krr.h): when a fit has converged, run out
 * of passes or time, or reached the rounding floor of its precision --
 * decided here for every caller (R, each MPI rank, the C driver), so that
 * they stop at the same iteration.
 *
 * Every check happens at an iteration fixed by the iteration count alone:
 * the steps end at the first iteration (from the next allowed exact check
 * on, or any iteration when the solver's estimate is the exact criterion,
 * exact_est: exact_from) whose running estimate is at most tol
 * (krr_solver_step_until),
 * at the duality-gap checks (passes 1, 2, 4, 8, ...), at the precision-floor
 * checks (once a pass) and at max_passes; a caller's iteration budget or a
 * chunk's length never moves a check, so the stopping iteration does not
 * depend on the machine's speed (only time_limit does). */
#include <math.h>
#include <stdlib.h>
#include "solver.h"
#include "../dist/dist.h"

static const char *reason_names[] = {NULL,        "tol",   "max_passes", "time_limit",
                                     "precision", "exact", "max_iter"};

const char *krr_stop_reason_name(krr_stop_reason r) {
  return r > KRR_STOP_NONE && r <= KRR_STOP_MAX_ITER ? reason_names[r] : NULL;
}

void krr_stop_init(krr_stop *p, double tol, double max_passes, double time_limit) {
  *p = (krr_stop){0};
  p->tol = tol;
  p->max_passes = max_passes;
  p->max_iter = INFINITY;
  p->time_limit = time_limit;
  p->t0 = krr_now();
  p->floor_factor = 2;
  p->floor_per_w = NAN;
  p->floor = NAN;
  p->best_est = NAN;
  p->due_iter = -1;
  p->t_exact = NAN;
  p->per_iter = NAN;
  p->deadline = time_limit;
  p->final_exact = 1;
}

/* the communicator of a distributed solver with more than one rank */
static krr_comm *comm_of(krr_solver *s) {
  krr_comm *c = krr_op_comm(s->op, NULL);
  return c && c->size > 1 ? c : NULL;
}

/* A flag the ranks agree on (any rank's 1 wins): decisions read from a
 * rank's own clock must be the same on every rank. */
static int agree_any(krr_solver *s, int v) {
  krr_comm *c = comm_of(s);
  if (!c) return v;
  int64_t x = v;
  if (krr_comm_allreduce(c, s->ctx, &x, 1, KRR_DT_INT64, KRR_RED_MAX) != KRR_OK) return v;
  return x != 0;
}

static double ipp_of(const krr_diag *d) { return (double)d->iter / fmax(d->passes, 1e-12); }
static int64_t pass_iters(const krr_diag *d) {
  double k = ceil(ipp_of(d) - 1e-9);
  return k < 1 ? 1 : (int64_t)fmin(k, 9e15);
}

/* The exact criterion (one kernel pass), timed; with a time limit it runs
 * under the fit's deadline, and running out of time there is no error: the
 * criterion is NaN and the fit stops with "time_limit" (exact_cut). */
static krr_status exact_check(krr_solver *s, krr_stop *p, double *crit) {
  krr_ctx *ctx = s->ctx;
  double te = krr_now(), saved = ctx->deadline;
  if (isfinite(p->time_limit)) ctx->deadline = p->t0 + p->time_limit;
  *crit = NAN;
  krr_status st = p->exact ? p->exact(s, p->exact_data, crit) : krr_solver_residual(s, crit);
  ctx->deadline = saved;
  p->t_exact = krr_now() - te;
  int cut = st == KRR_ERR_TIME_LIMIT;
  if (isfinite(p->time_limit)) cut = agree_any(s, cut);
  if (cut) {
    krr_clear(ctx);
    p->exact_cut = 1;
    *crit = NAN;
    return KRR_OK;
  }
  return st;
}

/* ||W||_F of the current weights (host copy) */
static krr_status weights_norm(krr_solver *s, double *out) {
  int64_t len = s->wrows * (int64_t)s->m;
  double *w = malloc(sizeof(double) * (size_t)(len > 0 ? len : 1));
  if (!w) return krr_fail(s->ctx, KRR_ERR_MEMORY, "the weights' norm: out of host memory");
  krr_status st = krr_solver_weights(s, w);
  double ss = 0;
  for (int64_t i = 0; st == KRR_OK && i < len; i++) ss += w[i] * w[i];
  free(w);
  *out = sqrt(ss);
  return st;
}

/* --- the precision floor's measurement ----------------------------------------
 * Which floor a solve has (floor_kind): none unless the criterion is the
 * relative residual of a squared-loss fit with tol > 0 (not an exact
 * solver), nonzero targets and the plain exact kernel of the training points
 * (no features, intercept, observation weights or sharding); then
 *   FLOOR_MODEL   double precision, weights on the training points: the
 *                 model u (||K||_F / sqrt(n) + lambda) ||W||_F / ||Y||_F,
 *                 u = 2^-53 (a double product cannot be checked against a
 *                 better one);
 *   FLOOR_KERNEL  single precision, weights on the training points: the
 *                 measured ||(K~ - K) W||_F / ||Y||_F, K~ the kernel product
 *                 in single precision, K the one in double;
 *   FLOOR_NORMAL  single precision, a solver whose criterion is the residual
 *                 of the normal equations H a = b, H = K_nm^T K_nm + lambda
 *                 K_mm, b = K_nm^T y (normal_floor: Falkon), whose products
 *                 with K_nm run in single precision (everything m x m in
 *                 double): ||K~_nm^T (K~_nm a) - K_nm^T (K_nm a)|| / ||b||.
 * The measurements use the host points p->floor_X (double, the points the
 * problem was made from: the single-precision product sees them rounded, as
 * the solver does). */
enum { FLOOR_NONE, FLOOR_MODEL, FLOOR_KERNEL, FLOOR_NORMAL };

static int floor_kind(const krr_solver *s, const krr_stop *p) {
  const krr_objective *o = s->obj;
  if (!(p->tol > 0) || p->direct || o->loss->crit != KRR_CRIT_RESIDUAL ||
      !(o->ynorm > 0 && isfinite(o->ynorm)) || !krr_op_exact_points(s->op))
    return FLOOR_NONE;
  if (s->ncenters == 0) return s->prec == KRR_DOUBLE ? FLOOR_MODEL : FLOOR_KERNEL;
  return s->prec == KRR_FLOAT && s->def->normal_floor ? FLOOR_NORMAL : FLOOR_NONE;
}

/* the floor rule is on for this solve: asked for, applicable, and measurable
 * (the host points given) or measured already by the caller */
static int floor_on(const krr_solver *s, const krr_stop *p) {
  return p->use_floor && floor_kind(s, p) != FLOOR_NONE && (p->floor_X || !isnan(p->floor_per_w));
}

/* rows idx (n_idx of them) of the column-major n x p matrix X, into out */
static void rows_of(const double *X, int64_t n, int p, const int64_t *idx, int64_t n_idx,
                    double *out) {
  for (int j = 0; j < p; j++)
    for (int64_t i = 0; i < n_idx; i++) out[i + j * n_idx] = X[idx[i] + j * n];
}

static double sum_sq(const double *v, int64_t len) {
  double ss = 0;
  for (int64_t i = 0; i < len; i++) ss += v[i] * v[i];
  return ss;
}

/* ||K||_F / sqrt(n) = sqrt(n mean(K_ij^2)), estimated on at most 1000 of the
 * points, drawn from the solver's seed */
static krr_status kernel_rms(krr_solver *s, const double *X, double *out) {
  int64_t n = s->op->n, ns = n > 1000 ? 1000 : n;
  int p = s->op->p;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)ns);
  uint64_t *mark = calloc((size_t)(n + 63) / 64, sizeof(uint64_t));
  double *xs = malloc(sizeof(double) * (size_t)(ns * p > 0 ? ns * p : 1));
  double *K = malloc(sizeof(double) * (size_t)(ns * ns));
  krr_status st = idx && mark && xs && K
                      ? KRR_OK
                      : krr_fail(s->ctx, KRR_ERR_MEMORY, "the precision floor: out of host memory");
  if (st == KRR_OK) {
    if (ns < n)
      krr_sample_uniform(krr_rng_stream(krr_options_seed(s->opts), 0x666c6f6f72ULL, 0), n, ns, mark,
                         idx);
    else
      for (int64_t i = 0; i < n; i++) idx[i] = i;
    rows_of(X, n, p, idx, ns, xs);
    st = krr_kernel_matrix_host(s->ctx, KRR_DOUBLE, &s->op->kernel, xs, ns, xs, ns, p, K);
  }
  if (st == KRR_OK) *out = sqrt((double)n * sum_sq(K, ns * ns) / ((double)ns * (double)ns));
  free(idx);
  free(mark);
  free(xs);
  free(K);
  return st;
}

/* out (n1 x q) = K(X1, X2) V, in single (precision 0) or double precision */
static krr_status host_mv(krr_solver *s, int dbl, const double *X1, int64_t n1, const double *X2,
                          int64_t n2, const double *V, int q, double *out) {
  return krr_kernel_apply_host(s->ctx, dbl ? KRR_DOUBLE : KRR_FLOAT, &s->op->kernel, X1, n1, X2, n2,
                               s->op->p, V, q, out);
}

/* ||K~ W - K W||_F over the training points (W: n x m) */
static krr_status kernel_diff(krr_solver *s, const double *X, const double *W, double *out) {
  int64_t n = s->op->n, len = n * (int64_t)s->m;
  double *f = malloc(sizeof(double) * (size_t)len), *d = malloc(sizeof(double) * (size_t)len);
  krr_status st =
      f && d ? KRR_OK : krr_fail(s->ctx, KRR_ERR_MEMORY, "the precision floor: out of host memory");
  if (st == KRR_OK) st = host_mv(s, 0, X, n, X, n, W, s->m, f);
  if (st == KRR_OK) st = host_mv(s, 1, X, n, X, n, W, s->m, d);
  for (int64_t i = 0; st == KRR_OK && i < len; i++) f[i] -= d[i];
  if (st == KRR_OK) *out = sqrt(sum_sq(f, len));
  free(f);
  free(d);
  return st;
}

/* Falkon's floor ||K~_nm^T (K~_nm A) - K_nm^T (K_nm A)|| / ||K_nm^T Y|| (A:
 * mc x m on the centres, Y the targets) */
static krr_status normal_diff(krr_solver *s, const double *X, const double *A, double *out) {
  int64_t n = s->op->n, mc = s->ncenters, m = s->m;
  int p = s->op->p;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)mc);
  double *xc = malloc(sizeof(double) * (size_t)(mc * p)),
         *u = malloc(sizeof(double) * (size_t)(n * m));
  double *vf = malloc(sizeof(double) * (size_t)(mc * m)),
         *vd = malloc(sizeof(double) * (size_t)(mc * m));
  krr_status st = idx && xc && u && vf && vd
                      ? KRR_OK
                      : krr_fail(s->ctx, KRR_ERR_MEMORY, "the precision floor: out of host memory");
  if (st == KRR_OK) st = krr_solver_centers(s, idx);
  if (st == KRR_OK) rows_of(X, n, p, idx, mc, xc);
  for (int dbl = 0; dbl < 2 && st == KRR_OK; dbl++) {
    st = host_mv(s, dbl, X, n, xc, mc, A, (int)m, u);
    if (st == KRR_OK) st = host_mv(s, dbl, xc, mc, X, n, u, (int)m, dbl ? vd : vf);
  }
  for (int64_t i = 0; st == KRR_OK && i < mc * m; i++) vf[i] -= vd[i];
  /* b = K_nm^T y in double, y the targets the solver holds */
  if (st == KRR_OK) st = krr_download_vec(s->ctx, s->prec, s->obj->y, n * m, u);
  if (st == KRR_OK) st = host_mv(s, 1, xc, mc, X, n, u, (int)m, vd);
  if (st == KRR_OK) *out = sqrt(sum_sq(vf, mc * m)) / fmax(sqrt(sum_sq(vd, mc * m)), 1e-300);
  free(idx);
  free(xc);
  free(u);
  free(vf);
  free(vd);
  return st;
}

krr_status krr_stop_floor(krr_solver *s, const krr_stop *p, double *per_w) {
  int kind = floor_kind(s, p);
  const krr_objective *o = s->obj;
  *per_w = NAN;
  if (kind == FLOOR_NONE || !p->floor_X) return KRR_OK;
  if (kind == FLOOR_MODEL) {
    double krms = 0;
    KTRY(kernel_rms(s, p->floor_X, &krms));
    *per_w = 0x1p-53 * (krms + o->lambda) / o->ynorm;
    return KRR_OK;
  }
  int64_t len = s->wrows * (int64_t)s->m;
  double *w = malloc(sizeof(double) * (size_t)(len > 0 ? len : 1)), fl = 0;
  krr_status st =
      w ? krr_solver_weights(s, w) : krr_fail(s->ctx, KRR_ERR_MEMORY, "the weights: out of memory");
  if (st == KRR_OK && kind == FLOOR_KERNEL) {
    st = kernel_diff(s, p->floor_X, w, &fl);
    fl /= o->ynorm;
  } else if (st == KRR_OK) {
    st = normal_diff(s, p->floor_X, w, &fl);
  }
  if (st == KRR_OK) *per_w = fl / fmax(sqrt(sum_sq(w, len)), 1e-300);
  free(w);
  return st;
}

/* The precision floor (Higham, "Accuracy and Stability of Numerical
 * Algorithms", 2002, ch. 3: a product computed in precision u carries an
 * error of order u times the sizes involved): a solver iterating with the
 * kernel K~ of its working precision solves (K~ + lambda I) w = y, so the
 * true relative residual levels off at ||(K~ - K) W|| / ||Y|| and no lower.
 * Once a pass the running estimate is compared with its best value; when it
 * has not improved by 10% over max(3 passes, 10% of the passes) and is
 * within floor_factor times the floor, the exact criterion decides: at most
 * tol is "tol", at most floor_factor times the floor is "precision".  The
 * floor per unit ||W|| is measured at the first stall (krr_stop_floor) and
 * kept for the rest of the solve.  *exact: the exact criterion when it was
 * computed. */
static krr_status floor_check(krr_solver *s, krr_stop *p, const krr_diag *d,
                              krr_stop_reason *reason, double *exact) {
  double est = d->resid_est, passes = d->passes;
  *reason = KRR_STOP_NONE;
  *exact = NAN;
  if (!isfinite(est)) goto next;
  if (isnan(p->best_est) || est < 0.9 * p->best_est) {
    p->best_est = est;
    p->best_pass = passes;
    goto next;
  }
  if (passes - p->best_pass < fmax(3, 0.1 * passes)) goto next;
  /* the floor and the exact check cost up to three kernel passes: not when
   * the time limit cannot afford them */
  if (isfinite(p->time_limit)) {
    double left = p->deadline - (krr_now() - p->t0);
    if (agree_any(s, isnan(p->t_exact) || left < 4 * p->t_exact)) goto next;
  }
  if (isnan(p->floor_per_w)) KTRY(krr_stop_floor(s, p, &p->floor_per_w));
  double wn = 0;
  KTRY(weights_norm(s, &wn));
  p->floor = p->floor_per_w * wn;
  double fl = p->floor_factor * p->floor;
  if (est > fl) goto next;
  p->floor_iter = d->iter + pass_iters(d);
  if (!p->exact_ok) {
    *reason = KRR_STOP_PRECISION;
    return KRR_OK;
  }
  KTRY(exact_check(s, p, exact));
  p->next_exact_iter = d->iter + pass_iters(d);
  if (!isnan(*exact) && *exact <= fmax(fl, p->tol))
    *reason = *exact <= p->tol ? KRR_STOP_TOL : KRR_STOP_PRECISION;
  return KRR_OK;
next:
  p->floor_iter = d->iter + pass_iters(d);
  return KRR_OK;
}

/* The first iteration at which an estimate at tol may be confirmed by an
 * exact check: a pass after the last check, or at once where the solver's
 * estimate is the exact criterion (exact_est) until a check has found the
 * two apart (their rounding at a tol near it) */
static int64_t exact_from(const krr_solver *s, const krr_stop *p) {
  return s->def->exact_est && !p->est_missed ? 0 : p->next_exact_iter;
}

/* After a chunk of iterations: the reason to stop (KRR_STOP_NONE to go on)
 * and the exact criterion when it was computed (else NaN). */
static krr_status check(krr_solver *s, krr_stop *p, const krr_diag *d, krr_stop_result *r) {
  int64_t iter = d->iter;
  double est = d->resid_est, fexact = NAN;
  krr_stop_reason reason = KRR_STOP_NONE;
  r->exact = NAN;
  if (p->gap && p->due_iter < 0) p->due_iter = pass_iters(d); /* the first gap check: pass 1 */
  int due = p->gap && iter >= p->due_iter;
  int floor_due = !d->done && floor_on(s, p) && iter >= p->floor_iter;
  if (floor_due) KTRY(floor_check(s, p, d, &reason, &fexact));
  if (d->done) {
    reason = p->direct ? KRR_STOP_EXACT : KRR_STOP_TOL;
  } else if (reason != KRR_STOP_NONE) {
    r->exact = fexact; /* the floor check stopped the fit */
  } else if (!isnan(fexact)) {
    r->exact = fexact; /* a floor check that did not stop (for the trace) */
  } else if (due || (isfinite(est) && est <= p->tol && iter >= exact_from(s, p))) {
    /* The duality gap is also checked at passes 1, 2, 4, 8, ... (at most
     * log2(passes) extra kernel passes), for every n: a block method's
     * running estimate (a projected gradient norm) is not on the gap's
     * scale and can level off at its rounding floor above a small tol. */
    if (due) p->due_iter = iter > 0 ? 2 * iter : 1;
    if (p->exact_ok) {
      KTRY(exact_check(s, p, &r->exact));
      p->next_exact_iter = iter + pass_iters(d); /* the next one a pass later at least */
      if (!isnan(r->exact) && r->exact <= p->tol) reason = KRR_STOP_TOL;
      else if (isfinite(est) && est <= p->tol) p->est_missed = 1;
    } else {
      reason = KRR_STOP_TOL;
    }
  }
  /* after the exact check: it counts against time_limit */
  r->elapsed = krr_now() - p->t0;
  if (reason == KRR_STOP_NONE) {
    if (p->exact_cut) reason = KRR_STOP_TIME_LIMIT; /* the exact check ran out of time */
    else if (d->passes >= p->max_passes - 1e-9) reason = KRR_STOP_MAX_PASSES;
    else if ((double)iter >= p->max_iter) reason = KRR_STOP_MAX_ITER;
    else if (isfinite(p->deadline) && agree_any(s, r->elapsed >= p->deadline))
      reason = KRR_STOP_TIME_LIMIT;
  }
  if (reason != KRR_STOP_NONE && isnan(r->exact) && p->exact_ok &&
      (p->final_exact || reason != KRR_STOP_TIME_LIMIT)) {
    KTRY(exact_check(s, p, &r->exact));
    /* the last iterate meets tol (the running estimate lagged behind):
     * converged, not "max_passes" with a criterion below tol */
    if ((reason == KRR_STOP_MAX_PASSES || reason == KRR_STOP_MAX_ITER ||
         reason == KRR_STOP_TIME_LIMIT) &&
        !isnan(r->exact) && r->exact <= p->tol)
      reason = KRR_STOP_TOL;
  }
  r->reason = reason;
  return KRR_OK;
}

/* With a time limit the final exact check (one kernel pass) is part of the
 * budget: the iterations stop early enough for it, or, when it would take
 * more than half the limit, it is skipped (the estimate is reported). */
static void plan_deadline(krr_solver *s, krr_stop *p, const krr_diag *d) {
  if (!isfinite(p->time_limit) || p->direct || !p->exact_ok) return;
  double t_chk = isfinite(p->t_exact) ? p->t_exact : p->per_iter * ipp_of(d);
  p->final_exact = !agree_any(s, !(t_chk <= 0.5 * p->time_limit));
  p->deadline = p->final_exact ? p->time_limit - t_chk : p->time_limit;
}

/* the next chunk: up to `left` iterations, ending where a check is due */
static int64_t chunk(krr_solver *s, const krr_stop *p, const krr_diag *d, int64_t left) {
  if (d->iter == 0 || !(d->passes > 0)) return 1; /* the first one measures a pass */
  double ipp = ipp_of(d), k = (double)left;
  if (p->gap && p->due_iter >= 0) k = fmin(k, fmax(1, (double)(p->due_iter - d->iter)));
  if (floor_on(s, p)) k = fmin(k, fmax(1, (double)(p->floor_iter - d->iter)));
  if (isfinite(p->max_passes))
    k = fmin(k, fmax(1, ceil((p->max_passes - d->passes) * ipp - 1e-9)));
  if (isfinite(p->max_iter)) k = fmin(k, fmax(1, p->max_iter - (double)d->iter));
  if (isfinite(p->deadline) && p->per_iter > 0)
    k = fmin(k, fmax(1, floor((p->deadline - (krr_now() - p->t0)) / p->per_iter)));
  int64_t out = (int64_t)fmin(k, 1e6);
  krr_comm *c = comm_of(s);
  if (c) { /* every rank runs the same iterations */
    int64_t x = out;
    if (krr_comm_allreduce(c, s->ctx, &x, 1, KRR_DT_INT64, KRR_RED_MIN) == KRR_OK) out = x;
  }
  return out < 1 ? 1 : out;
}

krr_status krr_solver_run(krr_solver *s, krr_stop *p, int64_t iters, krr_stop_result *r) {
  if (!s || !p || !r) return KRR_ERR_INTERNAL;
  r->reason = KRR_STOP_NONE;
  r->exact = NAN;
  r->elapsed = krr_now() - p->t0;
  krr_solver_diag(s, &r->diag);
  krr_ctx *ctx = s->ctx;
  int64_t left = iters < 1 ? 1 : iters;
  krr_comm *c = comm_of(s);
  if (c) /* the ranks' budgets (from their own clocks) agree: the smallest */
    KTRY(krr_comm_allreduce(c, ctx, &left, 1, KRR_DT_INT64, KRR_RED_MIN));
  while (left > 0) {
    int64_t k = chunk(s, p, &r->diag, left), it0 = r->diag.iter;
    double saved = ctx->deadline, t1 = krr_now();
    /* the deadline ends a chunk between iterations (krr_solver_step_until) */
    ctx->deadline = isfinite(p->deadline) ? p->t0 + p->deadline : 0;
    krr_status st = krr_solver_step_until(s, k, p->tol, exact_from(s, p));
    ctx->deadline = saved;
    if (st != KRR_OK) return st;
    krr_solver_diag(s, &r->diag);
    int64_t ran = r->diag.iter - it0;
    if (ran > 0) {
      double pi = fmax(krr_now() - t1, 1e-4) / (double)ran;
      p->per_iter = isnan(p->per_iter) ? pi : 0.5 * p->per_iter + 0.5 * pi;
    }
    left -= ran > 0 ? ran : 1;
    plan_deadline(s, p, &r->diag);
    KTRY(check(s, p, &r->diag, r));
    if (r->reason != KRR_STOP_NONE || !isnan(r->exact)) return KRR_OK;
    /* iterations that may diverge: the caller's to judge (after the check,
     * so that a bound on the iterations or passes holds) */
    if (!p->gap && isfinite(r->diag.resid_est) && r->diag.resid_est > 1e8) return KRR_OK;
  }
  return KRR_OK;
}
