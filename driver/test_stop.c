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
 *  4. The precision floor: with use_floor and a floor above the criterion
 *     the first stall stops the fit with "precision" and an exact
 *     criterion; with the points given (floor_X) the policy measures the
 *     floor itself, as krr_stop_floor gives it.
 *  5. The floor's measurement (krr_stop_floor) against closed forms: in
 *     double precision 2^-53 (||K||_F / sqrt(n) + lambda) / ||Y||_F (the
 *     kernel's Frobenius norm from the kernel formula; on 1000 of n = 1500
 *     points within 10%); in single precision ||(K~ - K) W|| / ||Y|| / ||W||
 *     and Falkon's ||K~_nm^T K~_nm a - K_nm^T K_nm a|| / ||K_nm^T y|| / ||a||
 *     (the host products in float and double), far above the double model;
 *     NaN where the floor does not apply (tol = 0, an exact solver, Falkon
 *     in double, no points, the logistic loss).
 *  6. The duality gap of the logistic loss (Joker, block 40, lambda 1e-3 n)
 *     is checked at passes 1, 2, 4, 8, and the fit ends at max_passes = 9.
 *  7. The loss table's closed forms: krr_duality_gap (P + D) / max(|P|, |D|,
 *     1e-300) and krr_loss_dual_bound (hinge and SVR 1 / lambda, Huber
 *     delta / lambda, squared hinge Inf, NaN for squared and logistic).
 *  8. max_iter: reason "max_iter" at exactly that iteration, whatever the
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

static void test_floor(tfit *f, const double *X) {
  krr_solver *s = make(f, "askotch", "block_size=40 rank=20 seed=5");
  if (!s) return;
  krr_stop p;
  krr_stop_init(&p, 1e-30, 300, INFINITY); /* a tolerance no iterate reaches */
  p.exact_ok = 1;
  p.use_floor = 1;
  p.floor_per_w = 1e300; /* a floor above any criterion */
  krr_stop_result r = run_to_end(s, &p, 1000000, 100000, NULL);
  CHECK(r.reason == KRR_STOP_PRECISION && !isnan(r.exact) && r.diag.passes < 300,
        "floor: reason %s after %.3g passes, exact %.3g", krr_stop_reason_name(r.reason),
        r.diag.passes, r.exact);
  krr_solver_free(s);
  /* measured by the policy: the floor it keeps is krr_stop_floor's at the stall */
  s = make(f, "askotch", "block_size=40 rank=20 seed=5");
  if (!s) return;
  krr_stop_init(&p, 1e-30, 300, INFINITY);
  p.exact_ok = 1;
  p.use_floor = 1;
  p.floor_X = X;
  r = run_to_end(s, &p, 1000000, 100000, NULL);
  double fw = NAN;
  krr_stop_floor(s, &p, &fw);
  CHECK(!isnan(p.floor_per_w) && fabs(p.floor_per_w - fw) <= 1e-12 * fw && p.floor > 0,
        "floor measured by the policy: %.6g per |W| (krr_stop_floor %.6g), floor %.3g, reason %s",
        p.floor_per_w, fw, p.floor, krr_stop_reason_name(r.reason));
  krr_solver_free(s);
}

/* ||K(X, X)||_F / sqrt(n) from the kernel formula */
static double kernel_rms_closed(const krr_kernel *k, const double *X, int64_t n, int p) {
  krr_kparams kp = krr_kparams_make(k);
  double ss = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      double t = 0;
      for (int d = 0; d < p; d++) {
        double dd = X[i + d * n] - X[j + d * n];
        t += krr_kernel_is_l1(kp.type) ? fabs(dd) : dd * dd;
      }
      double v = krr_kernel_eval(kp, t);
      ss += v * v;
    }
  return sqrt(ss / (double)n);
}

static double nrm(const double *v, int64_t len) {
  double ss = 0;
  for (int64_t i = 0; i < len; i++) ss += v[i] * v[i];
  return sqrt(ss);
}

/* the floor of solver `name` after 30 iterations under a tol-1e-8 stop
 * (NaN when it does not apply); the weights into w (may be NULL) */
static double floor_after(tfit *f, const char *name, const char *spec, const double *X, double tol,
                          int direct, double *w) {
  krr_solver *s = make(f, name, spec);
  if (!s) return -1;
  krr_stop p;
  krr_stop_init(&p, tol, 300, INFINITY);
  p.direct = direct;
  p.floor_X = X;
  double fw = -1;
  if (krr_solver_step(s, direct ? 1 : 30) == KRR_OK && krr_stop_floor(s, &p, &fw) != KRR_OK)
    fw = -1;
  if (w) krr_solver_weights(s, w);
  krr_solver_free(s);
  return fw;
}

/* ||(K~ - K) V||, K(X1, X2) in float (K~) and double */
static double diff_closed(krr_ctx *ctx, const krr_kernel *k, const double *X1, int64_t n1,
                          const double *X2, int64_t n2, const double *V, int q, double *outd) {
  double *of = malloc(sizeof(double) * n1 * q);
  krr_kernel_apply_host(ctx, KRR_FLOAT, k, X1, n1, X2, n2, 3, V, q, of);
  krr_kernel_apply_host(ctx, KRR_DOUBLE, k, X1, n1, X2, n2, 3, V, q, outd);
  for (int64_t i = 0; i < n1 * q; i++) of[i] -= outd[i];
  double d = nrm(of, n1 * q);
  free(of);
  return d;
}

static void test_floor_measure(krr_ctx *ctx, const double *X, const double *y, int64_t n) {
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 2.0};
  double lambda = 1e-3 * (double)n, ynorm = nrm(y, 2 * n);
  double model = 0x1p-53 * (kernel_rms_closed(&k, X, n, 3) + lambda) / ynorm;
  tfit f;
  double *w = malloc(sizeof(double) * n * 2), *u = malloc(sizeof(double) * n * 2);
  if (tfit_make(ctx, KRR_DOUBLE, X, n, 3, y, 2, k, lambda, &f) == KRR_OK) {
    double fw = floor_after(&f, "askotch", "block_size=40 rank=20 seed=5", X, 1e-8, 0, NULL);
    CHECK(fabs(fw - model) <= 1e-10 * model, "double floor %.6g, closed form %.6g", fw, model);
    double none[4] = {
        floor_after(&f, "askotch", "block_size=40 rank=20 seed=5", X, 0, 0, NULL),
        floor_after(&f, "cholesky", "", X, 1e-8, 1, NULL),
        floor_after(&f, "falkon", "n_centers=50 seed=3", X, 1e-8, 0, NULL),
        floor_after(&f, "askotch", "block_size=40 rank=20 seed=5", NULL, 1e-8, 0, NULL)};
    CHECK(isnan(none[0]) && isnan(none[1]) && isnan(none[2]) && isnan(none[3]),
          "no floor for tol 0, cholesky, double falkon, no points: %g %g %g %g", none[0], none[1],
          none[2], none[3]);
    tfit_free(&f);
  }
  if (tfit_make(ctx, KRR_FLOAT, X, n, 3, y, 2, k, lambda, &f) == KRR_OK) {
    double fw = floor_after(&f, "askotch", "block_size=40 rank=20 seed=5", X, 1e-8, 0, w);
    double cf = diff_closed(ctx, &k, X, n, X, n, w, 2, u) / ynorm / nrm(w, 2 * n);
    CHECK(fabs(fw - cf) <= 1e-9 * cf && cf > 1e3 * model,
          "single floor %.6g, closed form %.6g (double model %.3g)", fw, cf, model);
    /* Falkon: K_nm^T (K_nm a) in float and double, over ||K_nm^T y|| */
    krr_solver *s = make(&f, "falkon", "n_centers=50 seed=3");
    int64_t c[50];
    double a[100], xc[150], vd[100];
    if (s && krr_solver_centers(s, c) == KRR_OK) {
      krr_solver_free(s);
      fw = floor_after(&f, "falkon", "n_centers=50 seed=3", X, 1e-8, 0, a);
      for (int d = 0; d < 3; d++)
        for (int j = 0; j < 50; j++) xc[j + d * 50] = X[c[j] + d * n];
      double *uf = malloc(sizeof(double) * n * 2), *vf = malloc(sizeof(double) * 100);
      krr_kernel_apply_host(ctx, KRR_FLOAT, &k, X, n, xc, 50, 3, a, 2, uf);
      krr_kernel_apply_host(ctx, KRR_FLOAT, &k, xc, 50, X, n, 3, uf, 2, vf);
      krr_kernel_apply_host(ctx, KRR_DOUBLE, &k, X, n, xc, 50, 3, a, 2, u);
      krr_kernel_apply_host(ctx, KRR_DOUBLE, &k, xc, 50, X, n, 3, u, 2, vd);
      for (int i = 0; i < 100; i++) vf[i] -= vd[i];
      /* b from the targets as the float objective holds them */
      for (int64_t i = 0; i < 2 * n; i++) u[i] = (double)(float)y[i];
      krr_kernel_apply_host(ctx, KRR_DOUBLE, &k, xc, 50, X, n, 3, u, 2, vd);
      cf = nrm(vf, 100) / nrm(vd, 100) / nrm(a, 100);
      CHECK(fabs(fw - cf) <= 1e-9 * cf && cf > 1e3 * model,
            "single falkon floor %.6g, closed form %.6g", fw, cf);
      free(uf);
      free(vf);
    } else {
      CHECK(0, "falkon centres: %s", ctx->msg);
      krr_solver_free(s);
    }
    tfit_free(&f);
  }
  free(w);
  free(u);
}

/* the double floor on n = 1500 points: ||K||_F / sqrt(n) from 1000 of them */
static void test_floor_subsample(krr_ctx *ctx) {
  int64_t n = 1500;
  double *X = malloc(sizeof(double) * n * 3), *y = malloc(sizeof(double) * n * 2);
  make_data(n, 3, 2, 7, X, y);
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 2.0};
  double lambda = 1e-3 * (double)n;
  double model = 0x1p-53 * (kernel_rms_closed(&k, X, n, 3) + lambda) / nrm(y, 2 * n);
  tfit f;
  if (tfit_make(ctx, KRR_DOUBLE, X, n, 3, y, 2, k, lambda, &f) == KRR_OK) {
    double fw = floor_after(&f, "askotch", "block_size=100 rank=20 seed=5", X, 1e-8, 0, NULL);
    CHECK(fabs(fw - model) <= 0.1 * model, "double floor on 1000 of 1500 points %.6g, all %.6g", fw,
          model);
    tfit_free(&f);
  }
  free(X);
  free(y);
}

static void test_gap(krr_ctx *ctx, const double *X, const double *y, int64_t n) {
  double *yc = malloc(sizeof(double) * n);
  for (int64_t i = 0; i < n; i++) yc[i] = y[i] > 0 ? 1.0 : -1.0;
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 2.0};
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
  double fw = floor_after(&f, "joker", "block_size=40 seed=1", X, 1e-8, 0, NULL);
  CHECK(isnan(fw), "no floor for the logistic loss: %g", fw);
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

static void test_loss_closed(void) {
  double g[5] = {krr_duality_gap(3, -1), krr_duality_gap(-1, 3), krr_duality_gap(2, -2),
                 krr_duality_gap(0, 0), krr_duality_gap(1e-310, 0)};
  CHECK(fabs(g[0] - 2.0 / 3) < 1e-15 && fabs(g[1] - 2.0 / 3) < 1e-15 && g[2] == 0 && g[3] == 0 &&
            fabs(g[4] - 1e-10) < 1e-20,
        "duality gap: %g %g %g %g %g", g[0], g[1], g[2], g[3], g[4]);
  double b[6] = {krr_loss_dual_bound(krr_loss_lookup("hinge"), 0.5, 0),
                 krr_loss_dual_bound(krr_loss_lookup("svr"), 4, 0.3),
                 krr_loss_dual_bound(krr_loss_lookup("huber"), 2, 3),
                 krr_loss_dual_bound(krr_loss_lookup("squared_hinge"), 2, 0),
                 krr_loss_dual_bound(krr_loss_lookup("squared"), 2, 0),
                 krr_loss_dual_bound(krr_loss_lookup("logistic"), 2, 0)};
  CHECK(b[0] == 2 && b[1] == 0.25 && b[2] == 1.5 && isinf(b[3]) && b[3] > 0 && isnan(b[4]) &&
            isnan(b[5]),
        "dual bounds: hinge %g svr %g huber %g squared_hinge %g squared %g logistic %g", b[0], b[1],
        b[2], b[3], b[4], b[5]);
}

int main(int argc, char **argv) {
  krr_ctx ctx;
  int64_t n;
  double *X, *y;
  if (test_start(argc, argv, 400, &ctx, &n, &X, &y)) return 1;
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 2.0};
  tfit f;
  if (tfit_make(&ctx, KRR_DOUBLE, X, n, 3, y, 2, k, 1e-3 * (double)n, &f) == KRR_OK) {
    test_tol(&f, n);
    test_max_passes(&f);
    test_max_iter(&f);
    test_exact(&f);
    test_floor(&f, X);
    tfit_free(&f);
  }
  test_floor_measure(&ctx, X, y, n);
  test_floor_subsample(&ctx);
  test_gap(&ctx, X, y, n);
  test_loss_closed();
  free(X);
  free(y);
  krr_ctx_free(&ctx);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail > 0;
}
