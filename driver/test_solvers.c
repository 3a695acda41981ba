/* Tests of the PCG and Falkon solvers against exact solutions (no R):
 *   test_solvers [--backend cpu|cuda] [--threads T] [--n N]
 * PCG (nystrom damped / regularization, rpcholesky, greedy, none) x {double,
 * single} x {rbf, matern52}: converge to the double Cholesky oracle.
 * Falkon: coefficients vs an exact inducing-point solve with the same centres
 * formed naively on the host in double (LAPACKE).  Invalid options must be
 * KRR_ERR_INPUT.  Prints "N passed, N failed"; KRR_VERBOSE=1 prints each run,
 * TRACE=1 the residual every 10 iterations, PLAM=x sets the PCG lambda to x n.
 *
 * Tolerances:
 *  - double PCG: exact relres <= 1e-10 (the target); weights within 1e-8 of the
 *    oracle (cond(K + lambda I) <= n / lambda = 1e4 here (lambda = 1e-4 n), so relres 1e-10 bounds
 *    the weight error by ~1e-6 in the worst case and ~1e-11 in practice; we run
 *    to 1e-11 to keep a margin).
 *  - single PCG: exact relres <= 1e-4 (float kernel sums over n = 500 terms
 *    carry ~1e-6 relative error; 1e-4 leaves room for the CG floor).
 *  - Falkon double: normal-equation relres <= 1e-11 and coefficients within
 *    1e-8 of the host solve (both see the same H up to kernel rounding 1e-15).
 *  - Falkon single: normal-equation relres <= 1e-4 (float kernel products). */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../src/core/ops.h"
#include "../src/core/kernel_math.h"
#include "../src/core/rng.h"

#include "test_common.h"

static int verbose = 0;


/* run in slices of 10 iterations until the exact residual <= tol */
static krr_status run_solver(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                             double tol, int64_t max_iters, double *w, double *relres,
                             krr_diag *dg) {
  krr_solver *s = NULL;
  krr_status st = krr_solver_init(ctx, pb, o, &s);
  if (st != KRR_OK) return st;
  *relres = INFINITY;
  for (int64_t done = 0; done < max_iters; done += 10) {
    if ((st = krr_solver_step(s, 10)) != KRR_OK) break;
    if ((st = krr_solver_residual(s, relres)) != KRR_OK) break;
    krr_solver_diag(s, dg);
    if (getenv("TRACE")) printf("  it %lld relres %.3e est %.3e\n", (long long)dg->iter, *relres, dg->resid_est);
    if (*relres <= tol || dg->done) break;
  }
  if (st == KRR_OK && w) st = krr_solver_weights(s, w);
  krr_solver_diag(s, dg);
  krr_solver_free(s);
  return st;
}

static const char *kname(int kt) { return kt == KRR_RBF ? "rbf" : "matern52"; }

typedef struct { const char *name; krr_precond pc; krr_rho_mode rho; } pcg_cfg;

static void test_pcg(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p, int m) {
  static const pcg_cfg cfg[] = {{"nystrom/damped", KRR_PRECOND_NYSTROM, KRR_RHO_DAMPED},
                                {"nystrom/regularization", KRR_PRECOND_NYSTROM, KRR_RHO_REGULARIZATION},
                                {"rpcholesky", KRR_PRECOND_RPCHOLESKY, KRR_RHO_DAMPED},
                                {"greedy_cholesky", KRR_PRECOND_GREEDY, KRR_RHO_DAMPED},
                                {"none", KRR_PRECOND_NONE, KRR_RHO_DAMPED}};
  double *w_ref = malloc(sizeof(double) * n * m), *w = malloc(sizeof(double) * n * m);
  int kernels[] = {KRR_RBF, KRR_MATERN52};
  for (int ki = 0; ki < 2; ki++) {
    krr_kernel k = {(krr_kernel_type)kernels[ki], 2.0};
    double lambda = (getenv("PLAM") ? atof(getenv("PLAM")) : 1e-4) * n, rr;
    krr_problem pbd;
    krr_diag dg;
    krr_problem_create(ctx, KRR_DOUBLE, X, n, p, y, m, k, lambda, &pbd);
    krr_solver_opts o;
    krr_solver_opts_default(&o);
    o.kind = KRR_SOLVER_CHOLESKY;
    krr_status st = run_solver(ctx, &pbd, &o, 1e-13, 1, w_ref, &rr, &dg);
    CHECK(st == KRR_OK && rr < 1e-12, "cholesky oracle %s: %s", kname(kernels[ki]), ctx->msg);
    krr_problem_free(ctx, &pbd);
    for (int pr = 0; pr < 2; pr++) {
      krr_problem pb;
      krr_problem_create(ctx, pr ? KRR_DOUBLE : KRR_FLOAT, X, n, p, y, m, k, lambda, &pb);
      for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        krr_solver_opts_default(&o);
        o.kind = KRR_SOLVER_PCG;
        o.precond = cfg[c].pc;
        o.rho_mode = cfg[c].rho;
        o.rank = 40;
        o.seed = 3;
        double tol = pr ? 1e-11 : 1e-4;
        st = run_solver(ctx, &pb, &o, tol, 3000, w, &rr, &dg);
        double err = rel_diff(w, w_ref, n * m);
        if (verbose)
          printf("pcg %-22s %-8s %s: %4lld iters %6.1f passes relres %.2e est %.2e err %.2e rank %d rho %.3g\n",
                 cfg[c].name, kname(kernels[ki]), pr ? "double" : "single", (long long)dg.iter,
                 dg.passes, rr, dg.resid_est, err, dg.rank, dg.rho);
        CHECK(st == KRR_OK && rr <= (pr ? 1e-10 : 1e-4) && (!pr || err <= 1e-8),
              "pcg %s %s %s: status %d (%s) relres %.3g weights err %.3g after %lld iters",
              cfg[c].name, kname(kernels[ki]), pr ? "double" : "single", st, st ? ctx->msg : "",
              rr, err, (long long)dg.iter);
      }
      krr_problem_free(ctx, &pb);
    }
  }
  free(w_ref); free(w);
}


static void test_falkon(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p, int m) {
  int64_t mc = 50;
  int64_t *cen = malloc(sizeof(int64_t) * mc), *got = malloc(sizeof(int64_t) * n);
  for (int64_t i = 0; i < mc; i++) cen[i] = (i * 7919) % n; /* distinct: 7919 prime, n < 7919 */
  double *a_ref = malloc(sizeof(double) * n * m), *a = malloc(sizeof(double) * n * m);
  int kernels[] = {KRR_RBF, KRR_MATERN52};
  for (int ki = 0; ki < 2; ki++) {
    krr_kernel k = {(krr_kernel_type)kernels[ki], 1.0};
    double lambda = 1e-3 * n, rr;
    krr_diag dg;
    int info = inducing_oracle(&k, X, n, p, y, m, lambda, cen, mc, a_ref);
    CHECK(info == 0, "falkon oracle %s: dposv info %d", kname(kernels[ki]), info);
    for (int pr = 0; pr < 2; pr++) {
      krr_problem pb;
      krr_problem_create(ctx, pr ? KRR_DOUBLE : KRR_FLOAT, X, n, p, y, m, k, lambda, &pb);
      krr_solver_opts o;
      krr_solver_opts_default(&o);
      o.kind = KRR_SOLVER_FALKON;
      o.centers = cen;
      o.n_centers = mc;
      double tol = pr ? 1e-11 : 1e-4;
      krr_status st = run_solver(ctx, &pb, &o, tol, 500, a, &rr, &dg);
      double err = rel_diff(a, a_ref, mc * m);
      if (verbose)
        printf("falkon %-8s %s: %4lld iters %6.2f passes relres %.2e est %.2e coef err %.2e\n",
               kname(kernels[ki]), pr ? "double" : "single", (long long)dg.iter, dg.passes, rr,
               dg.resid_est, err);
      CHECK(st == KRR_OK && rr <= tol && (!pr || err <= 1e-8),
            "falkon %s %s: status %d (%s) relres %.3g coef err %.3g after %lld iters",
            kname(kernels[ki]), pr ? "double" : "single", st, st ? ctx->msg : "", rr, err,
            (long long)dg.iter);
      /* the centres API; sampled centres are distinct and in range */
      krr_solver *s = NULL;
      if (krr_solver_init(ctx, &pb, &o, &s) == KRR_OK) {
        CHECK(krr_solver_ncenters(s) == mc, "falkon ncenters %lld", (long long)krr_solver_ncenters(s));
        krr_solver_centers(s, got);
        CHECK(memcmp(got, cen, sizeof(int64_t) * mc) == 0, "falkon centers differ from the given ones");
        krr_solver_free(s);
      }
      o.centers = NULL;
      o.n_centers = 0;
      o.seed = 5;
      if (krr_solver_init(ctx, &pb, &o, &s) == KRR_OK) {
        int64_t nc = krr_solver_ncenters(s), ok = nc >= 1 && nc <= n;
        krr_solver_centers(s, got);
        for (int64_t i = 0; ok && i < nc; i++) ok = got[i] >= 0 && got[i] < n && (i == 0 || got[i] > got[i - 1]);
        CHECK(ok, "falkon sampled centres invalid (%lld)", (long long)nc);
        st = krr_solver_step(s, 30);
        krr_solver_diag(s, &dg);
        if (verbose) printf("falkon default centres (%lld) %s: 30 iters est %.3g\n", (long long)nc, pr ? "double" : "single", dg.resid_est);
        CHECK(st == KRR_OK && dg.resid_est < (pr ? 1e-6 : 1.0), "falkon default centres: status %d est %.3g", st, dg.resid_est);
        krr_solver_free(s);
      } else {
        CHECK(0, "falkon default init: %s", ctx->msg);
      }
      krr_problem_free(ctx, &pb);
    }
  }
  free(cen); free(got); free(a_ref); free(a);
}

static krr_status init_status(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o) {
  krr_solver *s = NULL;
  ctx->status = KRR_OK;
  krr_status st = krr_solver_init(ctx, pb, o, &s);
  if (s) krr_solver_free(s);
  return st;
}

static void test_misc(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p, int m) {
  krr_kernel k = {KRR_RBF, 2.0};
  krr_problem pb;
  krr_problem_create(ctx, KRR_DOUBLE, X, n, p, y, m, k, 1e-3 * n, &pb);
  krr_solver_opts o;
  krr_solver_opts_default(&o);
  o.kind = KRR_SOLVER_PCG;
  o.rank = (int)n + 1;
  CHECK(init_status(ctx, &pb, &o) == KRR_ERR_INPUT, "pcg rank > n must be an input error");
  o.rank = 10;
  o.precond = (krr_precond)9;
  CHECK(init_status(ctx, &pb, &o) == KRR_ERR_INPUT, "unknown preconditioner must be an input error");
  o.precond = KRR_PRECOND_NYSTROM;
  o.rho_mode = KRR_RHO_VALUE;
  o.rho_value = -1;
  CHECK(init_status(ctx, &pb, &o) == KRR_ERR_INPUT, "negative rho must be an input error");
  krr_solver_opts_default(&o);
  o.kind = KRR_SOLVER_FALKON;
  o.n_centers = n + 1;
  CHECK(init_status(ctx, &pb, &o) == KRR_ERR_INPUT, "centers > n must be an input error");
  int64_t dup[3] = {1, 5, 1};
  o.centers = dup;
  o.n_centers = 3;
  CHECK(init_status(ctx, &pb, &o) == KRR_ERR_INPUT, "repeated centres must be an input error");
  dup[2] = n;
  CHECK(init_status(ctx, &pb, &o) == KRR_ERR_INPUT, "out-of-range centre must be an input error");
  o.kind = (krr_solver_kind)99;
  CHECK(init_status(ctx, &pb, &o) == KRR_ERR_INPUT, "unknown solver kind must be an input error");

  /* slices: 20 x step(1) == step(20), and full-KRR solvers report 0 centres */
  double *w1 = malloc(sizeof(double) * n * m), *w2 = malloc(sizeof(double) * n * m);
  krr_precond pcs[] = {KRR_PRECOND_NYSTROM, KRR_PRECOND_RPCHOLESKY};
  for (int i = 0; i < 2; i++) {
    krr_solver_opts_default(&o);
    o.kind = KRR_SOLVER_PCG; o.precond = pcs[i]; o.rank = 20; o.seed = 4; o.resid_every = 7;
    krr_solver *s = NULL;
    krr_solver_init(ctx, &pb, &o, &s);
    CHECK(krr_solver_ncenters(s) == 0, "pcg must report 0 centres");
    for (int it = 0; it < 20; it++) krr_solver_step(s, 1);
    krr_solver_weights(s, w1);
    krr_solver_free(s);
    krr_solver_init(ctx, &pb, &o, &s);
    krr_solver_step(s, 20);
    krr_diag dg;
    krr_solver_diag(s, &dg);
    krr_solver_weights(s, w2);
    krr_solver_free(s);
    CHECK(memcmp(w1, w2, sizeof(double) * n * m) == 0 && dg.iter == 20,
          "pcg %d: slices differ from one step (iter %lld)", i, (long long)dg.iter);
  }
  free(w1); free(w2);
  krr_problem_free(ctx, &pb);
}

int main(int argc, char **argv) {
  const char *be = "cpu";
  int threads = 0;
  int64_t n = 500;
  parse_test_args(argc, argv, &be, &threads, &n);
  verbose = getenv("KRR_VERBOSE") != NULL;
  const krr_ops *ops = backend(be);
  krr_ctx ctx;
  if (krr_ctx_init(&ctx, ops, threads, 0) != KRR_OK) { printf("ctx: %s\n", ctx.msg); return 1; }
  int p = 3, m = 2;
  double *X = malloc(sizeof(double) * n * p), *y = malloc(sizeof(double) * n * m);
  make_data(n, p, m, 42, X, y);
  test_pcg(&ctx, X, y, n, p, m);
  test_falkon(&ctx, X, y, n, p, m);
  test_misc(&ctx, X, y, n, p, m);
  free(X); free(y);
  krr_ctx_free(&ctx);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
