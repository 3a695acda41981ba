/* The stop policy (krr_stop, krr_solver_run; solvers/stop.c; no R):
 *   test_stop [--backend cpu|cuda] [--threads T] [--n N]
 * Prints "N passed, N failed".
 * Data: the common data (test_common.h), p = 3, m = 2, n = 400, rbf
 * bandwidth 2.
 *
 *  1. To tol: ASkotch stops with "tol", its exact criterion at most tol, at
 *     the same iteration and with bit-identical weights whether the caller's
 *     budget is one iteration or a million (the checks fall on iterations
 *     fixed by the count alone).
 *  2. max_passes: reason "max_passes" at the first iteration with at least
 *     that many passes; a final exact criterion is reported.
 *  3. An exact solver (Cholesky) ends with "exact".
 *  4. The precision floor: with use_floor the first stall asks for the floor
 *     (KRR_STOP_NEED_FLOOR) without running further; a floor above the
 *     criterion then stops the fit with "precision" at that iteration.
 *  5. The duality gap of the logistic loss (Joker, block 40, lambda 1e-3 n)
 *     is checked at passes 1, 2, 4, 8, and the fit ends at max_passes = 9.
 *  6. max_iter: reason "max_iter" at exactly that iteration, whatever the
 *     caller's budget (1 or 1000 a call); a final exact criterion is
 *     reported; max_passes still applies when it comes first. */
#include "test_common.h"

static krr_solver *make(tfit *f, const char *name, const char *spec) {
  krr_solver *s = NULL;
  if (tinit(f, name, spec, &s) != KRR_OK) {
    CHECK(0, "init %s %s: %s", name, spec, f->ctx->msg);
    return NULL;
  }
  return s;
}

/* run under `p` with a budget of `budget` iterations a call until a reason
 * (at most `calls` calls); the weights into w */
static krr_stop_result run_to_end(krr_solver *s, krr_stop *p, int64_t budget, int calls,
                                  double *w) {
  krr_stop_result r = {0};
  for (int c = 0; c < calls && r.reason == KRR_STOP_NONE; c++)
    if (krr_solver_run(s, p, budget, &r) != KRR_OK) break;
  if (w) krr_solver_weights(s, w);
  return r;
}

static void test_tol(tfit *f, int64_t n) {
  const char *spec = "block_size=40 rank=20 seed=5";
  double *w1 = malloc(sizeof(double) * n * 2), *w2 = malloc(sizeof(double) * n * 2);
  krr_stop_result r[2];
  for (int k = 0; k < 2; k++) {
    krr_solver *s = make(f, "askotch", spec);
    if (!s) break;
    krr_stop p;
    krr_stop_init(&p, 1e-8, 1000, INFINITY);
    p.exact_ok = 1;
    r[k] = run_to_end(s, &p, k == 0 ? 1 : 1000000, 1000000, k == 0 ? w1 : w2);
    krr_solver_free(s);
  }
  CHECK(r[0].reason == KRR_STOP_TOL && r[0].exact <= 1e-8, "to tol: reason %s, exact %.3g",
        krr_stop_reason_name(r[0].reason), r[0].exact);
  CHECK(r[0].diag.iter == r[1].diag.iter && r[1].reason == KRR_STOP_TOL,
        "to tol: iteration %lld with a budget of 1, %lld with 1e6 (%s)", (long long)r[0].diag.iter,
        (long long)r[1].diag.iter, krr_stop_reason_name(r[1].reason));
  CHECK(memcmp(w1, w2, sizeof(double) * n * 2) == 0, "to tol: the weights depend on the budget");
  free(w1);
  free(w2);
}

static void test_max_passes(tfit *f) {
  krr_solver *s = make(f, "askotch", "block_size=40 rank=20 seed=5");
  if (!s) return;
  krr_stop p;
  krr_stop_init(&p, 0, 2, INFINITY);
  p.exact_ok = 1;
  krr_stop_result r = run_to_end(s, &p, 7, 1000, NULL);
  CHECK(r.reason == KRR_STOP_MAX_PASSES && r.diag.passes >= 2 - 1e-9 &&
            r.diag.passes < 2 + 40.0 / 400 + 1e-9 && !isnan(r.exact),
        "max_passes: reason %s after %.3f passes, exact %.3g", krr_stop_reason_name(r.reason),
        r.diag.passes, r.exact);
  krr_solver_free(s);
}

static void test_max_iter(tfit *f) {
  for (int k = 0; k < 3; k++) {
    krr_solver *s = make(f, "askotch", "block_size=40 rank=20 seed=5");
    if (!s) return;
    krr_stop p;
    krr_stop_init(&p, 0, k == 2 ? 0.5 : INFINITY, INFINITY);
    p.exact_ok = 1;
    p.max_iter = 13;
    krr_stop_result r = run_to_end(s, &p, k == 0 ? 1 : 1000, 1000, NULL);
    krr_stop_reason want = k == 2 ? KRR_STOP_MAX_PASSES : KRR_STOP_MAX_ITER;
    /* max_passes = 0.5: before 13 iterations (10 of block 40 make a pass) */
    int iter_ok = k == 2 ? r.diag.iter < 13 : r.diag.iter == 13;
    CHECK(r.reason == want && iter_ok && !isnan(r.exact),
          "max_iter (budget %d, max_passes %g): reason %s at iteration %lld, exact %.3g",
          k == 0 ? 1 : 1000, p.max_passes, krr_stop_reason_name(r.reason), (long long)r.diag.iter,
          r.exact);
    krr_solver_free(s);
  }
}

static void test_exact(tfit *f) {
  krr_solver *s = make(f, "cholesky", "");
  if (!s) return;
  krr_stop p;
  krr_stop_init(&p, 1e-10, 100, INFINITY);
  p.exact_ok = 1;
  p.direct = 1;
  krr_stop_result r = run_to_end(s, &p, 10, 10, NULL);
  CHECK(r.reason == KRR_STOP_EXACT && r.exact < 1e-10, "cholesky: reason %s, exact %.3g",
        krr_stop_reason_name(r.reason), r.exact);
  krr_solver_free(s);
}

static void test_floor(tfit *f) {
  krr_solver *s = make(f, "askotch", "block_size=40 rank=20 seed=5");
  if (!s) return;
  krr_stop p;
  krr_stop_init(&p, 1e-30, 300, INFINITY); /* a tolerance no iterate reaches */
  p.exact_ok = 1;
  p.use_floor = 1;
  krr_stop_result r = run_to_end(s, &p, 1000000, 100000, NULL);
  krr_diag d;
  krr_solver_diag(s, &d);
  CHECK(r.reason == KRR_STOP_NEED_FLOOR && d.iter == r.diag.iter,
        "floor: reason %s at iteration %lld (asked for the floor: %s)", krr_stop_reason_name(r.reason),
        (long long)r.diag.iter, r.reason == KRR_STOP_NEED_FLOOR ? "yes" : "no");
  if (r.reason == KRR_STOP_NEED_FLOOR) {
    int64_t at = r.diag.iter;
    p.floor_per_w = 1e300; /* a floor above any criterion */
    krr_stop_result r2 = {0};
    krr_status st = krr_solver_run(s, &p, 1000000, &r2);
    CHECK(st == KRR_OK && r2.reason == KRR_STOP_PRECISION && r2.diag.iter == at && !isnan(r2.exact),
          "floor: reason %s at iteration %lld (asked at %lld), exact %.3g",
          krr_stop_reason_name(r2.reason), (long long)r2.diag.iter, (long long)at, r2.exact);
  }
  krr_solver_free(s);
}

static void test_gap(krr_ctx *ctx, const double *X, const double *y, int64_t n) {
  double *yc = malloc(sizeof(double) * n);
  for (int64_t i = 0; i < n; i++) yc[i] = y[i] > 0 ? 1.0 : -1.0;
  krr_kernel k = {KRR_RBF, 2.0};
  tfit f;
  if (tfit_make(ctx, KRR_DOUBLE, X, n, 3, yc, 1, k, 1e-3 * (double)n, &f) != KRR_OK) {
    free(yc);
    return;
  }
  krr_objective_free(ctx, &f.obj);
  if (krr_objective_init(ctx, f.op, krr_loss_lookup("logistic"), 1e-3 * (double)n, yc, 1, &f.obj) !=
      KRR_OK) {
    CHECK(0, "logistic objective: %s", ctx->msg);
    tfit_free(&f);
    free(yc);
    return;
  }
  krr_solver *s = make(&f, "joker", "block_size=40 seed=1");
  if (s) {
    krr_stop p;
    krr_stop_init(&p, 0, 9, INFINITY);
    p.exact_ok = 1;
    p.gap = 1;
    double at[8];
    int na = 0;
    krr_stop_result r = {0};
    for (int c = 0; c < 100000 && r.reason == KRR_STOP_NONE; c++) {
      if (krr_solver_run(s, &p, 1000000, &r) != KRR_OK) break;
      if (getenv("TRACE")) printf("  it %lld passes %.3f exact %.3g done %d reason %d\n", (long long)r.diag.iter, r.diag.passes, r.exact, r.diag.done, (int)r.reason);
      if (!isnan(r.exact) && r.reason == KRR_STOP_NONE && na < 8) at[na++] = r.diag.passes;
    }
    CHECK(na == 4 && fabs(at[0] - 1) < 1e-9 && fabs(at[1] - 2) < 1e-9 && fabs(at[2] - 4) < 1e-9 &&
              fabs(at[3] - 8) < 1e-9 && r.reason == KRR_STOP_MAX_PASSES,
          "gap checks at passes %.3g %.3g %.3g %.3g (%d of them), reason %s", na > 0 ? at[0] : NAN,
          na > 1 ? at[1] : NAN, na > 2 ? at[2] : NAN, na > 3 ? at[3] : NAN, na,
          krr_stop_reason_name(r.reason));
    krr_solver_free(s);
  }
  tfit_free(&f);
  free(yc);
}

int main(int argc, char **argv) {
  krr_ctx ctx;
  int64_t n;
  double *X, *y;
  if (test_start(argc, argv, 400, &ctx, &n, &X, &y)) return 1;
  krr_kernel k = {KRR_RBF, 2.0};
  tfit f;
  if (tfit_make(&ctx, KRR_DOUBLE, X, n, 3, y, 2, k, 1e-3 * (double)n, &f) == KRR_OK) {
    test_tol(&f, n);
    test_max_passes(&f);
    test_max_iter(&f);
    test_exact(&f);
    test_floor(&f);
    tfit_free(&f);
  }
  test_gap(&ctx, X, y, n);
  free(X);
  free(y);
  krr_ctx_free(&ctx);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail > 0;
}
