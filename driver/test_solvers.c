/* Tests of the PCG and Falkon solvers against exact solutions (no R):
 *   test_solvers [--backend cpu|cuda] [--threads T] [--n N]
 * PCG (nystrom damped / regularization / damped with its products in small polled
 * pieces, rpcholesky, greedy at rank 40 and at
 * its automatic rank, none) x {double, single} x {rbf, matern52}: converge
 * to the double Cholesky oracle.
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

static const char *kname(int kt) { return kt == KRR_RBF ? "rbf" : "matern52"; }

typedef struct { const char *name, *spec; } pcg_cfg;

static void test_pcg(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p, int m) {
  static const pcg_cfg cfg[] = {{"nystrom/damped", "preconditioner=nystrom rho=damped"},
                                {"nystrom/regularization", "preconditioner=nystrom rho=regularization"},
                                /* its products and solves in small polled pieces */
                                {"nystrom/pieces", "preconditioner=nystrom rho=damped"},
                                {"rpcholesky", "preconditioner=rpcholesky"},
                                {"greedy_cholesky", "preconditioner=greedy_cholesky"},
                                {"greedy_cholesky/auto", "preconditioner=greedy_cholesky"},
                                {"none", "preconditioner=none"}};
  double *w_ref = malloc(sizeof(double) * n * m), *w = malloc(sizeof(double) * n * m);
  int kernels[] = {KRR_RBF, KRR_MATERN52};
  for (int ki = 0; ki < 2; ki++) {
    krr_kernel k = {.type = (krr_kernel_type)kernels[ki], .bandwidth = 2.0};
    double lambda = (getenv("PLAM") ? atof(getenv("PLAM")) : 1e-4) * n, rr;
    krr_diag dg;
    tfit fd;
    if (tfit_make(ctx, KRR_DOUBLE, X, n, p, y, m, k, lambda, &fd) != KRR_OK) return;
    krr_status st = trun(&fd, "cholesky", "", 1e-13, 1, 1, w_ref, &rr, &dg, NULL);
    CHECK(st == KRR_OK && rr < 1e-12, "cholesky oracle %s: %s", kname(kernels[ki]), ctx->msg);
    tfit_free(&fd);
    for (int pr = 0; pr < 2; pr++) {
      tfit f;
      if (tfit_make(ctx, pr ? KRR_DOUBLE : KRR_FLOAT, X, n, p, y, m, k, lambda, &f) != KRR_OK) return;
      for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        char spec[160];
        /* "/auto": the automatic rank (at most ceil(sqrt(3 n (2 p + 44 + 2.5 (m - 1)) / 3.4))) */
        int autor = strstr(cfg[c].name, "/auto") != NULL;
        snprintf(spec, sizeof spec, "%s%s seed=3", cfg[c].spec, autor ? "" : " rank=40");
        double tol = pr ? 1e-11 : 1e-4;
        krr_solver *s = NULL;
        ctx->piece_flops = strstr(cfg[c].name, "/pieces") ? 1e4 : 0;
        st = trun(&f, "pcg", spec, tol, 3000, 10, w, &rr, &dg, &s);
        ctx->piece_flops = 0;
        double err = rel_diff(w, w_ref, n * m);
        if (autor && st == KRR_OK) {
          double rk = textra(s, "rank_effective"),
                 cap = ceil(sqrt(3.0 * n * (2.0 * p + 44.0 + 2.5 * (m - 1)) / 3.4));
          CHECK(rk >= 1 && rk <= cap, "pcg greedy automatic rank %.0f outside [1, %.0f]", rk, cap);
        }
        if (verbose)
          printf("pcg %-22s %-8s %s: %4lld iters %6.1f passes relres %.2e est %.2e err %.2e rank %.0f rho %.3g\n",
                 cfg[c].name, kname(kernels[ki]), pr ? "double" : "single", (long long)dg.iter,
                 dg.passes, rr, dg.resid_est, err, s ? textra(s, "rank_effective") : NAN,
                 s ? textra(s, "rho") : NAN);
        krr_solver_free(s);
        CHECK(st == KRR_OK && rr <= (pr ? 1e-10 : 1e-4) && (!pr || err <= 1e-8),
              "pcg %s %s %s: status %d (%s) relres %.3g weights err %.3g after %lld iters",
              cfg[c].name, kname(kernels[ki]), pr ? "double" : "single", st, st ? ctx->msg : "",
              rr, err, (long long)dg.iter);
      }
      tfit_free(&f);
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
    krr_kernel k = {.type = (krr_kernel_type)kernels[ki], .bandwidth = 1.0};
    double lambda = 1e-3 * n, rr;
    krr_diag dg;
    int info = inducing_oracle(&k, X, n, p, y, m, lambda, cen, mc, a_ref);
    CHECK(info == 0, "falkon oracle %s: dposv info %d", kname(kernels[ki]), info);
    /* pr 2: double with the CG's residual replaced every third step (the
     * weights and the residual estimate are formed afresh there, updated
     * from the CG's steps in between) */
    for (int pr = 0; pr < 3; pr++) {
      tfit f;
      if (tfit_make(ctx, pr ? KRR_DOUBLE : KRR_FLOAT, X, n, p, y, m, k, lambda, &f) != KRR_OK) return;
      krr_options *o = topts(ctx, "falkon", pr == 2 ? "resid_every=3" : "");
      krr_options_set_indices(ctx, o, "centers", cen, mc);
      double tol = pr ? 1e-11 : 1e-4;
      krr_solver *s = NULL;
      krr_status st = krr_solver_init(ctx, f.op, &f.obj, o, &s);
      rr = INFINITY;
      for (int it = 0; st == KRR_OK && it < 50; it++) {
        if ((st = krr_solver_step(s, 10)) != KRR_OK) break;
        if ((st = krr_solver_residual(s, &rr)) != KRR_OK) break;
        krr_solver_diag(s, &dg);
        if (rr <= tol || dg.done) break;
      }
      if (st == KRR_OK) st = krr_solver_weights(s, a);
      if (s) krr_solver_diag(s, &dg);
      double err = rel_diff(a, a_ref, mc * m);
      const char *what = pr == 2 ? "double, resid_every 3" : pr ? "double" : "single";
      if (verbose)
        printf("falkon %-8s %s: %4lld iters %6.2f passes relres %.2e est %.2e coef err %.2e\n",
               kname(kernels[ki]), what, (long long)dg.iter, dg.passes, rr, dg.resid_est, err);
      CHECK(st == KRR_OK && rr <= tol && (!pr || err <= 1e-8),
            "falkon %s %s: status %d (%s) relres %.3g coef err %.3g after %lld iters",
            kname(kernels[ki]), what, st, st ? ctx->msg : "", rr, err, (long long)dg.iter);
      /* the centres API */
      if (s) {
        CHECK(krr_solver_ncenters(s) == mc && krr_solver_weights_rows(s) == mc, "falkon ncenters %lld",
              (long long)krr_solver_ncenters(s));
        krr_solver_centers(s, got);
        CHECK(memcmp(got, cen, sizeof(int64_t) * mc) == 0, "falkon centers differ from the given ones");
      }
      krr_solver_free(s);
      krr_options_free(o);
      /* sampled centres are distinct and in range */
      s = NULL;
      if (tinit(&f, "falkon", "seed=5", &s) == KRR_OK) {
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
      if (pr == 1) {
        /* eight steps with the weights and the residual estimate updated from
         * the CG's steps (the default replaces the residual every 50) against
         * eight where they are formed afresh at every step (resid_every=1) */
        double *w1 = malloc(sizeof(double) * mc * m), *w50 = malloc(sizeof(double) * mc * m);
        double est[2] = {NAN, NAN};
        for (int v = 0; v < 2; v++) {
          krr_options *ov = topts(ctx, "falkon", v ? "" : "resid_every=1");
          krr_options_set_indices(ctx, ov, "centers", cen, mc);
          krr_solver *sv = NULL;
          krr_status sv_st = krr_solver_init(ctx, f.op, &f.obj, ov, &sv);
          if (sv_st == KRR_OK) sv_st = krr_solver_step(sv, 8);
          if (sv_st == KRR_OK) sv_st = krr_solver_weights(sv, v ? w50 : w1);
          if (sv_st == KRR_OK) {
            krr_solver_diag(sv, &dg);
            est[v] = dg.resid_est;
          }
          CHECK(sv_st == KRR_OK, "falkon eight steps: status %d (%s)", sv_st, ctx->msg);
          krr_solver_free(sv);
          krr_options_free(ov);
        }
        double dw = rel_diff(w50, w1, mc * m);
        CHECK(dw <= 1e-9 && fabs(est[1] - est[0]) <= 1e-6 * est[0],
              "falkon %s: weights updated from the CG steps differ from B beta by %.3g, residual "
              "estimate %.6g against %.6g",
              kname(kernels[ki]), dw, est[1], est[0]);
        free(w1);
        free(w50);
      }
      tfit_free(&f);
    }
  }
  free(cen); free(got); free(a_ref); free(a);
}

static krr_status init_status(tfit *f, const char *name, const char *spec) {
  krr_solver *s = NULL;
  krr_status st = tinit(f, name, spec, &s);
  krr_solver_free(s);
  return st;
}

static void test_misc(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p, int m) {
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 2.0};
  tfit f;
  if (tfit_make(ctx, KRR_DOUBLE, X, n, p, y, m, k, 1e-3 * n, &f) != KRR_OK) return;
  char spec[96];
  snprintf(spec, sizeof spec, "rank=%lld", (long long)n + 1);
  CHECK(init_status(&f, "pcg", spec) == KRR_ERR_INPUT, "pcg rank > n must be an input error");
  CHECK(init_status(&f, "pcg", "preconditioner=ichol") == KRR_ERR_INPUT, "unknown preconditioner must be an input error");
  CHECK(init_status(&f, "pcg", "rho=-1") == KRR_ERR_INPUT, "negative rho must be an input error");
  snprintf(spec, sizeof spec, "n_centers=%lld", (long long)n + 1);
  CHECK(init_status(&f, "falkon", spec) == KRR_ERR_INPUT, "centers > n must be an input error");
  int64_t dup[3] = {1, 5, 1};
  krr_options *o = topts(ctx, "falkon", "");
  krr_options_set_indices(ctx, o, "centers", dup, 3);
  krr_solver *s = NULL;
  CHECK(krr_solver_init(ctx, f.op, &f.obj, o, &s) == KRR_ERR_INPUT, "repeated centres must be an input error");
  dup[2] = n;
  krr_options_set_indices(ctx, o, "centers", dup, 3);
  CHECK(krr_solver_init(ctx, f.op, &f.obj, o, &s) == KRR_ERR_INPUT, "out-of-range centre must be an input error");
  krr_options_free(o);
  CHECK(init_status(&f, "pcg2", "") == KRR_ERR_INPUT, "unknown solver must be an input error");

  /* slices: 20 x step(1) == step(20), and full-KRR solvers report 0 centres */
  double *w1 = malloc(sizeof(double) * n * m), *w2 = malloc(sizeof(double) * n * m);
  const char *pcs[] = {"preconditioner=nystrom rank=20 seed=4 resid_every=7",
                       "preconditioner=rpcholesky rank=20 seed=4 resid_every=7"};
  for (int i = 0; i < 2; i++) {
    s = NULL;
    tinit(&f, "pcg", pcs[i], &s);
    CHECK(s && krr_solver_ncenters(s) == 0, "pcg must report 0 centres");
    for (int it = 0; s && it < 20; it++) krr_solver_step(s, 1);
    if (s) krr_solver_weights(s, w1);
    krr_solver_free(s);
    s = NULL;
    tinit(&f, "pcg", pcs[i], &s);
    krr_diag dg = {0};
    if (s) {
      krr_solver_step(s, 20);
      krr_solver_diag(s, &dg);
      krr_solver_weights(s, w2);
    }
    krr_solver_free(s);
    CHECK(memcmp(w1, w2, sizeof(double) * n * m) == 0 && dg.iter == 20,
          "pcg %d: slices differ from one step (iter %lld)", i, (long long)dg.iter);
  }
  free(w1); free(w2);
  tfit_free(&f);
}

/* askotch's block size and rank when not given: defaults=paper is the
 * journal's (b = ceiling(n / 100), r = min(100, b)); by cost the block is at
 * least min(n, 256) and the rank, chosen by the spectrum at the first step,
 * lies between min(50, cap) and the cap min(b, max(100, b / 3)), and falls
 * to the floor when lambda is above every eigenvalue */
static void test_block_defaults(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p, int m) {
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 2.0};
  tfit f;
  if (tfit_make(ctx, KRR_DOUBLE, X, n, p, y, m, k, 1e-6 * n, &f) != KRR_OK) return;
  krr_solver *s = NULL;
  tinit(&f, "askotch", "defaults=paper seed=1", &s);
  double bp = (double)((n + 99) / 100);
  CHECK(s && topt(s, "block_size") == bp && topt(s, "rank") == (bp < 100 ? bp : 100),
        "defaults=paper: block %g rank %g, expected %g and %g", s ? topt(s, "block_size") : -1.0,
        s ? topt(s, "rank") : -1.0, bp, bp < 100 ? bp : 100);
  krr_solver_free(s);
  double lams[2] = {1e-6 * (double)n, 10.0 * (double)n}, rk[2] = {-1, -1};
  for (int i = 0; i < 2; i++) {
    f.obj.lambda = lams[i];
    s = NULL;
    tinit(&f, "askotch", "seed=1", &s);
    if (!s || krr_solver_step(s, 1) != KRR_OK) { CHECK(0, "askotch defaults: %s", ctx->msg); krr_solver_free(s); continue; }
    double b = topt(s, "block_size"), cap = ceil(b / 3) > 100 ? ceil(b / 3) : 100;
    if (cap > b) cap = b;
    rk[i] = textra(s, "rank_used"); /* (the option stays 0: chosen again on a rebuild) */
    CHECK(topt(s, "rank") == 0, "the rank option must stay 0 (auto), found %g", topt(s, "rank"));
    CHECK(b >= (n < 256 ? n : 256) && b <= n, "default block %g (n = %lld)", b, (long long)n);
    CHECK(rk[i] >= (cap < 50 ? cap : 50) && rk[i] <= cap, "default rank %g outside [50, %g]", rk[i], cap);
    if (verbose) printf("defaults at lambda %g: block %g, rank %g (cap %g)\n", lams[i], b, rk[i], cap);
    krr_solver_free(s);
  }
  CHECK(rk[1] == 50 && rk[0] > rk[1], "the rank by the spectrum: %g at lambda = 1e-6 n, %g (the floor) at 10 n",
        rk[0], rk[1]);
  tfit_free(&f);
}

int main(int argc, char **argv) {
  krr_ctx ctx;
  int64_t n;
  double *X, *y;
  if (test_start(argc, argv, 500, &ctx, &n, &X, &y)) return 1;
  verbose = getenv("KRR_VERBOSE") != NULL;
  int p = 3, m = 2;
  test_pcg(&ctx, X, y, n, p, m);
  test_falkon(&ctx, X, y, n, p, m);
  test_misc(&ctx, X, y, n, p, m);
  test_block_defaults(&ctx, X, y, n, p, m);
  free(X); free(y);
  krr_ctx_free(&ctx);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
