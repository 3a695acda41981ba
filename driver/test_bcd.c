/* Tests of Tu et al.'s block coordinate descent in feature space (no R):
 *   test_bcd [--backend cpu|cuda] [--threads T] [--n N]
 * Nystrom BCD (bcd_nystrom): the centre coefficients against the exact
 * inducing-point solve with the same centres, formed naively on the host in
 * double (LAPACKE), for {rbf, matern52} x {double, single} x {K_b kept,
 * K_b in chunks}; solving again after a change of lambda (the cached block
 * factors must be dropped); a warm start at the solution; one block (b = the
 * centres: a direct solve); determinism across slices; a lambda path solved
 * at once (both BCD solvers, and SAP / NSAP on the full kernel) against
 * separate solves; invalid options.
 * Prints "N passed, N failed"; KRR_VERBOSE=1 prints each run.
 *
 * Tolerances (as Falkon's in test_solvers.c, the same problem):
 *  - double: normal-equation relres <= 1e-11, coefficients within 1e-8 of
 *    the host solve (both see the same H up to kernel rounding 1e-15);
 *  - single: normal-equation relres <= 1e-4 (float kernel products).
 * The bandwidth is 0.3 on the 3-d data: with wider kernels the centres are so
 * correlated that plain block Gauss-Seidel on the Nystrom normal equations
 * needs many thousands of epochs (Tu et al.: the Nystrom system is the worst
 * conditioned of the three), which a test cannot afford. */
#include "test_common.h"

static int verbose = 0;
static const char *kname(int kt) { return kt == KRR_RBF ? "rbf" : "matern52"; }

/* runs bcd_nystrom with the given centres and options until relres <= tol;
 * the coefficients into a; returns the status, *rr the final relres */
static krr_status run_nys(tfit *f, const int64_t *cen, int64_t mc, const char *spec, double tol,
                          int max_slices, double *a, double *rr, krr_diag *dg, krr_solver **keep) {
  krr_ctx *ctx = f->ctx;
  krr_options *o = topts(ctx, "bcd_nystrom", spec);
  if (!o) return ctx->status;
  krr_options_set_indices(ctx, o, "centers", cen, mc);
  krr_solver *s = NULL;
  krr_status st = krr_solver_init(ctx, f->op, &f->obj, o, &s);
  krr_options_free(o);
  *rr = INFINITY;
  for (int it = 0; st == KRR_OK && it < max_slices; it++) {
    if ((st = krr_solver_step(s, 4)) != KRR_OK) break;
    if ((st = krr_solver_residual(s, rr)) != KRR_OK) break;
    if (*rr <= tol) break;
  }
  if (st == KRR_OK) st = krr_solver_weights(s, a);
  if (s) krr_solver_diag(s, dg);
  if (keep && st == KRR_OK) *keep = s;
  else krr_solver_free(s);
  return st;
}

static void test_nystrom(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p, int m) {
  int64_t mc = 60;
  int64_t *cen = malloc(sizeof(int64_t) * mc), *got = malloc(sizeof(int64_t) * mc);
  for (int64_t i = 0; i < mc; i++) cen[i] = (i * 7919) % n;
  /* sorted, as the solver keeps them (the weights follow this order) */
  for (int64_t i = 1; i < mc; i++)
    for (int64_t j = i; j > 0 && cen[j] < cen[j - 1]; j--) {
      int64_t t = cen[j]; cen[j] = cen[j - 1]; cen[j - 1] = t;
    }
  double *a_ref = malloc(sizeof(double) * mc * m), *a = malloc(sizeof(double) * mc * m);
  int kernels[] = {KRR_RBF, KRR_MATERN52};
  for (int ki = 0; ki < 2; ki++) {
    krr_kernel k = {.type = (krr_kernel_type)kernels[ki], .bandwidth = 0.3};
    double lambda = 1e-3 * n, rr;
    krr_diag dg;
    int info = inducing_oracle(&k, X, n, p, y, m, lambda, cen, mc, a_ref);
    CHECK(info == 0, "nystrom oracle %s: dposv info %d", kname(kernels[ki]), info);
    for (int pr = 0; pr < 2; pr++) {
      tfit f;
      if (tfit_make(ctx, pr ? KRR_DOUBLE : KRR_FLOAT, X, n, p, y, m, k, lambda, &f) != KRR_OK) return;
      double tol = pr ? 1e-11 : 1e-4;
      const char *specs[] = {"block_size=30", "block_size=20 chunk=97", "block_size=60"};
      for (int sp = 0; sp < 3; sp++) {
        krr_solver *s = NULL;
        krr_status st = run_nys(&f, cen, mc, specs[sp], tol, 400, a, &rr, &dg, &s);
        double err = rel_diff(a, a_ref, mc * m);
        if (verbose)
          printf("bcd_nystrom %-8s %s %-22s: %4lld iters %7.2f passes relres %.2e est %.2e coef err %.2e\n",
                 kname(kernels[ki]), pr ? "double" : "single", specs[sp], (long long)dg.iter,
                 dg.passes, rr, dg.resid_est, err);
        CHECK(st == KRR_OK && rr <= tol && (!pr || err <= 1e-8),
              "bcd_nystrom %s %s %s: status %d (%s) relres %.3g coef err %.3g after %lld iters",
              kname(kernels[ki]), pr ? "double" : "single", specs[sp], st, st ? ctx->msg : "", rr,
              err, (long long)dg.iter);
        if (sp == 1 && s) CHECK(textra(s, "chunked") == 1.0, "chunk=97 must form K_b in chunks");
        if (sp == 0 && s) CHECK(textra(s, "chunked") == 0.0 && textra(s, "blocks") == 2.0,
                                "K_b kept, 2 blocks: %g %g", textra(s, "chunked"), textra(s, "blocks"));
        if (sp == 2 && pr && s)
          CHECK(dg.iter <= 8, "one block is a direct solve: %lld iterations", (long long)dg.iter);
        if (s && sp == 0) {
          CHECK(krr_solver_ncenters(s) == mc && krr_solver_weights_rows(s) == mc,
                "ncenters %lld", (long long)krr_solver_ncenters(s));
          krr_solver_centers(s, got);
          CHECK(memcmp(got, cen, sizeof(int64_t) * mc) == 0, "centres differ from the given ones");
          /* a new lambda: the cached factors must go (else the old fixed point) */
          double lam2 = 10 * lambda;
          double *a2 = malloc(sizeof(double) * mc * m);
          info = inducing_oracle(&k, X, n, p, y, m, lam2, cen, mc, a2);
          st = krr_solver_set_lambda(s, lam2);
          for (int it = 0; st == KRR_OK && it < 400; it++) {
            if ((st = krr_solver_step(s, 4)) != KRR_OK) break;
            if ((st = krr_solver_residual(s, &rr)) != KRR_OK || rr <= tol) break;
          }
          if (st == KRR_OK) st = krr_solver_weights(s, a);
          err = rel_diff(a, a2, mc * m);
          CHECK(info == 0 && st == KRR_OK && rr <= tol && (!pr || err <= 1e-8),
                "bcd_nystrom %s %s after set_lambda: relres %.3g coef err %.3g",
                kname(kernels[ki]), pr ? "double" : "single", rr, err);
          /* a warm start at the solution: converged at once */
          if (pr) {
            st = krr_solver_set_weights(s, a2);
            if (st == KRR_OK) st = krr_solver_residual(s, &rr);
            CHECK(st == KRR_OK && rr <= 1e-10, "warm start at the solution: relres %.3g", rr);
            if (st == KRR_OK) st = krr_solver_step(s, 1);
            if (st == KRR_OK) st = krr_solver_weights(s, a);
            CHECK(st == KRR_OK && rel_diff(a, a2, mc * m) <= 1e-9,
                  "a step from the solution moved it by %.3g", rel_diff(a, a2, mc * m));
          }
          free(a2);
          f.obj.lambda = lambda; /* the objective is shared with the next runs */
        }
        krr_solver_free(s);
      }
      if (pr) CHECK(same_by_slices(&f, "bcd_nystrom", "block_size=8 n_centers=40 seed=3", 40 * m, 7),
                    "bcd_nystrom: the same weights whatever the slices");
      tfit_free(&f);
    }
  }
  free(cen); free(got); free(a_ref); free(a);
}

/* the reference: the cholesky solver's weights on f's operator at one
 * lambda (targets y, m columns) */
static krr_status chol_at(const tfit *f, double lambda, const double *y, int m, double *ref) {
  tfit g = *f;
  krr_diag dg;
  double cr;
  krr_status st = krr_objective_init(f->ctx, f->op, krr_loss_lookup("squared"), lambda, y, m, &g.obj);
  if (st == KRR_OK) st = trun(&g, "cholesky", "", 1e-12, 1, 1, ref, &cr, &dg, NULL);
  krr_objective_free(f->ctx, &g.obj);
  return st;
}

/* A lambda path solved at once: the targets repeated L times with a lambda
 * per column equal the separate solves at each lambda (Nystrom: the host
 * inducing-point solve; random features: the cholesky solver on the same
 * feature operator); a solver without lambda_path refuses the objective. */
static void test_path(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p, int m) {
  const int L = 3;
  const double lams[3] = {0.3 * n, 0.03 * n, 3.0 * n};
  const int64_t mc = 30;
  int64_t *cen = malloc(sizeof(int64_t) * mc);
  for (int64_t i = 0; i < mc; i++) cen[i] = (i * 7919) % n;
  for (int64_t i = 1; i < mc; i++)
    for (int64_t j = i; j > 0 && cen[j] < cen[j - 1]; j--) {
      int64_t t = cen[j]; cen[j] = cen[j - 1]; cen[j - 1] = t;
    }
  double *Y = malloc(sizeof(double) * n * m * L), *lcol = malloc(sizeof(double) * m * L);
  for (int l = 0; l < L; l++)
    for (int c = 0; c < m; c++) {
      memcpy(Y + (int64_t)(l * m + c) * n, y + (int64_t)c * n, sizeof(double) * n);
      lcol[l * m + c] = lams[l];
    }
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 0.3};
  for (int feat = 0; feat < 2; feat++) {
    tfit f;
    memset(&f, 0, sizeof f);
    f.ctx = ctx;
    krr_clear(ctx);
    const int64_t M = 60;
    krr_status st = krr_problem_create(ctx, KRR_DOUBLE, X, n, p, &f.pb);
    if (st == KRR_OK)
      st = feat ? krr_op_features_create(ctx, &f.pb, &k, M, 17, &f.op) : krr_op_exact_create(ctx, &f.pb, k, &f.op);
    if (st == KRR_OK)
      st = krr_objective_init(ctx, f.op, krr_loss_lookup("squared"), 1.0, Y, m * L, &f.obj);
    if (st == KRR_OK) st = krr_objective_set_lambdas(ctx, &f.obj, lcol);
    CHECK(st == KRR_OK && f.obj.lambda == lams[1], "path objective: %s", ctx->msg);
    int64_t rows = feat ? n : mc;
    double *w = malloc(sizeof(double) * rows * m * L), *ref = malloc(sizeof(double) * rows * m), rr = INFINITY;
    krr_solver *s = NULL;
    krr_options *o = topts(ctx, feat ? "bcd_features" : "bcd_nystrom", "block_size=10");
    if (!feat) krr_options_set_indices(ctx, o, "centers", cen, mc);
    if (st == KRR_OK) st = krr_solver_init(ctx, f.op, &f.obj, o, &s);
    krr_options_free(o);
    for (int it = 0; st == KRR_OK && it < 500; it++) {
      if ((st = krr_solver_step(s, 6)) != KRR_OK) break;
      if ((st = krr_solver_residual(s, &rr)) != KRR_OK || rr <= 1e-11) break;
    }
    if (st == KRR_OK) st = krr_solver_weights(s, w);
    CHECK(st == KRR_OK && rr <= 1e-11, "%s path: status %d (%s) crit %.3g", feat ? "features" : "nystrom",
          st, ctx->msg, rr);
    for (int l = 0; st == KRR_OK && l < L; l++) {
      int info = 0;
      if (!feat) {
        info = inducing_oracle(&k, X, n, p, y, m, lams[l], cen, mc, ref);
      } else { /* cholesky on the same feature operator at lambda_l */
        st = chol_at(&f, lams[l], y, m, ref);
      }
      double e = rel_diff(w + (int64_t)l * m * rows, ref, rows * m);
      if (verbose) printf("path %s lambda %g: err %.2e\n", feat ? "features" : "nystrom", lams[l], e);
      CHECK(st == KRR_OK && info == 0 && e <= 1e-8, "%s path at lambda %g: err %.3g (%s)",
            feat ? "features" : "nystrom", lams[l], e, ctx->msg);
    }
    krr_solver *s2 = NULL;
    CHECK(tinit(&f, "askotch", "", &s2) == KRR_ERR_INPUT && strstr(ctx->msg, "path"),
          "askotch must refuse a path objective: %s", ctx->msg);
    krr_solver_free(s2);
    krr_clear(ctx);
    if (feat && st == KRR_OK) { /* one lambda for every column again: the path's eigensystems
                                   stay, only their scales change; = Cholesky at that lambda */
      const double l1 = 0.7 * lams[0];
      st = krr_solver_set_lambda(s, l1);
      for (int it = 0; st == KRR_OK && it < 500; it++) {
        if ((st = krr_solver_step(s, 6)) != KRR_OK) break;
        if ((st = krr_solver_residual(s, &rr)) != KRR_OK || rr <= 1e-11) break;
      }
      if (st == KRR_OK) st = krr_solver_weights(s, w);
      if (st == KRR_OK) st = chol_at(&f, l1, y, m, ref);
      double e = 0;
      for (int l = 0; l < L; l++) { /* every copy of the targets now solves the same system */
        double el = rel_diff(w + (int64_t)l * m * rows, ref, rows * m);
        if (el > e) e = el;
      }
      CHECK(st == KRR_OK && rr <= 1e-11 && e <= 1e-8, "features path then set_lambda: err %.3g, crit %.3g (%s)",
            e, rr, ctx->msg);
    }
    krr_solver_free(s);
    s = NULL;
    if (!feat) { /* SAP and NSAP (exact blocks) solve the full-kernel path at once */
      double *wf = malloc(sizeof(double) * n * m * L), *rf = malloc(sizeof(double) * n * m);
      const char *sap[] = {"block_solve=exact accelerated=0 block_size=40 seed=3",
                           "block_solve=exact accelerated=1 block_size=40 seed=3"};
      for (int v = 0; v < 2; v++) {
        krr_diag dg;
        double cr;
        st = trun(&f, "askotch", sap[v], 1e-11, 20000, 50, wf, &cr, &dg, NULL);
        CHECK(st == KRR_OK && cr <= 1e-11, "%s path: status %d (%s) crit %.3g", v ? "NSAP" : "SAP",
              st, ctx->msg, cr);
        for (int l = 0; st == KRR_OK && l < L; l++) {
          st = chol_at(&f, lams[l], y, m, rf);
          double e = rel_diff(wf + (int64_t)l * m * n, rf, n * m);
          if (verbose) printf("path %s lambda %g: err %.2e\n", v ? "NSAP" : "SAP", lams[l], e);
          CHECK(st == KRR_OK && e <= 1e-8, "%s path at lambda %g: err %.3g", v ? "NSAP" : "SAP",
                lams[l], e);
        }
      }
      free(wf); free(rf);
    }
    krr_solver_free(s);
    free(w); free(ref);
    tfit_free(&f);
  }
  free(Y); free(lcol); free(cen);
}

static void test_options(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p, int m) {
  tfit f;
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 1.0};
  if (tfit_make(ctx, KRR_DOUBLE, X, n, p, y, m, k, 1.0, &f) != KRR_OK) return;
  krr_solver *s = NULL;
  CHECK(tinit(&f, "bcd_nystrom", "n_centers=10 block_size=11", &s) == KRR_ERR_INPUT &&
        strstr(ctx->msg, "block_size"), "block_size > centres must be an input error: %s", ctx->msg);
  krr_solver_free(s);
  s = NULL;
  CHECK(topts(ctx, "bcd_nystrom", "gamma=-1") == NULL, "gamma < 0 must be refused");
  krr_clear(ctx);
  CHECK(tinit(&f, "bcd_nystrom", "mem_limit=1000", &s) == KRR_ERR_MEMORY,
        "a 1000-byte budget must be refused: status %s", ctx->msg);
  krr_solver_free(s);
  tfit_free(&f);
}

/* NSAP (full kernel, exact blocks) on a 7-lambda path: the tridiagonal form
 * of each sampled K_BB, factored beside the block's kernel product when its
 * team has two threads (krr_overlap; n and b below make it so), equals the
 * Cholesky solve at each lambda. */
static void test_sap_path(krr_ctx *ctx, int p) {
  const int L = 7;
  const int64_t n = 3000;
  double lams[7], *X = malloc(sizeof(double) * n * p), *y = malloc(sizeof(double) * n);
  for (int l = 0; l < L; l++) lams[l] = 0.5 * n * pow(2.0, -l);
  for (int64_t i = 0; i < n * p; i++) X[i] = (double)((i * 7919 + 13) % 1009) / 1009.0;
  for (int64_t i = 0; i < n; i++) y[i] = sin(6.0 * X[i]) + 0.1 * (double)(i % 5);
  double *Y = malloc(sizeof(double) * n * L), *lcol = malloc(sizeof(double) * L);
  for (int l = 0; l < L; l++) {
    memcpy(Y + (int64_t)l * n, y, sizeof(double) * n);
    lcol[l] = lams[l];
  }
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 0.5};
  tfit f;
  memset(&f, 0, sizeof f);
  f.ctx = ctx;
  krr_clear(ctx);
  krr_status st = krr_problem_create(ctx, KRR_DOUBLE, X, n, p, &f.pb);
  if (st == KRR_OK) st = krr_op_exact_create(ctx, &f.pb, k, &f.op);
  if (st == KRR_OK) st = krr_objective_init(ctx, f.op, krr_loss_lookup("squared"), 1.0, Y, L, &f.obj);
  if (st == KRR_OK) st = krr_objective_set_lambdas(ctx, &f.obj, lcol);
  double *w = malloc(sizeof(double) * n * L), *ref = malloc(sizeof(double) * n), rr = INFINITY;
  krr_diag dg;
  if (st == KRR_OK)
    st = trun(&f, "askotch", "block_solve=exact block_size=400 seed=5", 1e-11, 3200, 8, w, &rr, &dg, NULL);
  CHECK(st == KRR_OK && rr <= 1e-11, "SAP path: status %d (%s) crit %.3g", st, ctx->msg, rr);
  for (int l = 0; st == KRR_OK && l < L; l++) {
    st = chol_at(&f, lams[l], y, 1, ref);
    double e = rel_diff(w + (int64_t)l * n, ref, n);
    if (verbose) printf("SAP path lambda %g: err %.2e\n", lams[l], e);
    CHECK(st == KRR_OK && e <= 1e-8, "SAP path at lambda %g: err %.3g (%s)", lams[l], e, ctx->msg);
  }
  tfit_free(&f);
  free(X); free(y); free(Y); free(lcol); free(w); free(ref);
}

int main(int argc, char **argv) {
  krr_ctx ctx;
  int64_t n;
  double *X, *y;
  if (test_start(argc, argv, 400, &ctx, &n, &X, &y)) return 1;
  verbose = getenv("KRR_VERBOSE") != NULL;
  int p = 3, m = 2;
  test_nystrom(&ctx, X, y, n, p, m);
  test_path(&ctx, X, y, n, p, m);
  test_sap_path(&ctx, p);
  test_options(&ctx, X, y, n, p, m);
  free(X); free(y);
  krr_ctx_free(&ctx);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
