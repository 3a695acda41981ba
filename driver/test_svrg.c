/* test_svrg: the sketched preconditioned SVRG and plain SVRG of
 * src/core/solvers/svrg.c against the exact ridge solution (LAPACKE Cholesky
 * of Z'Z + lambda I), its random Fourier features against the operator's
 * (krr_features_apply with theta = I), reproducibility by seed, input errors. */
#include "test_common.h"
#include "../src/core/solvers/svrg.h"

static int exact_ridge(const double *Zt, int64_t n, int64_t d, int m, const double *Y, double lambda,
                       double *W) {
  double *A = calloc((size_t)(d * d), sizeof(double));
  for (int64_t a = 0; a < d; a++)
    for (int64_t b = 0; b < d; b++) {
      double s = 0;
      for (int64_t i = 0; i < n; i++) s += Zt[a + i * d] * Zt[b + i * d];
      A[a + b * d] = s + (a == b ? lambda : 0);
    }
  for (int j = 0; j < m; j++)
    for (int64_t a = 0; a < d; a++) {
      double s = 0;
      for (int64_t i = 0; i < n; i++) s += Zt[a + i * d] * Y[i + j * n];
      W[a + j * d] = s;
    }
  int info = LAPACKE_dposv(LAPACK_COL_MAJOR, 'U', (int)d, m, A, (int)d, W, (int)d);
  free(A);
  return info;
}

static krr_status run(krr_ctx *ctx, const double *Zt, int64_t n, int64_t d, int m, const double *Y,
                      double lambda, int pc, int sampling, uint64_t seed, int epochs, double *W,
                      krr_svrg_info *info, double *s2, double *obj, double *grd, double *sec) {
  krr_svrg_opts o = {3, 0, epochs, 2 * (n + d), 0.25, pc, sampling, 1e-12, seed};
  memset(W, 0, sizeof(double) * (size_t)(d * m));
  memset(info, 0, sizeof *info);
  info->sigma2 = s2;
  info->objective = obj;
  info->gradient = grd;
  info->seconds = sec;
  return krr_svrg_solve(ctx, Zt, n, d, m, Y, lambda, &o, W, info);
}

int main(int argc, char **argv) {
  krr_ctx ctx;
  int64_t n;
  double *X, *y;
  (void)tfit_make;
  if (test_start(argc, argv, 400, &ctx, &n, &X, &y)) return 1;
  const int p = 3, m = 2, epochs = 100;
  const double lambda = 2.0;
  double s2[3], obj[101], grd[101], sec[101];
  krr_svrg_info info;
  /* linear features: Zt = X' */
  double *Zt = malloc(sizeof(double) * (size_t)(n * p)), *W = malloc(sizeof(double) * p * m),
         *Wx = malloc(sizeof(double) * p * m), *W2 = malloc(sizeof(double) * p * m);
  for (int64_t i = 0; i < n; i++)
    for (int j = 0; j < p; j++) Zt[j + i * p] = X[i + j * n];
  CHECK(exact_ridge(Zt, n, p, m, y, lambda, Wx) == 0, "oracle factorisation");
  for (int pc = 0; pc < 2; pc++)
    for (int smp = 0; smp < 2; smp++) {
      krr_status st = run(&ctx, Zt, n, p, m, y, lambda, pc, smp, 5, epochs, W, &info, s2, obj, grd, sec);
      CHECK(st == KRR_OK, "svrg pc=%d sampling=%d: %s", pc, smp, ctx.msg);
      double e = rel_diff(W, Wx, p * m);
      CHECK(e < 1e-9, "linear ridge pc=%d sampling=%d: relative error %g after %d epochs", pc, smp,
            e, info.epochs_run);
      CHECK(grd[info.epochs_run] <= 1e-12, "criterion at stop %g", grd[info.epochs_run]);
      /* the same seed: the same weights, bit for bit */
      run(&ctx, Zt, n, p, m, y, lambda, pc, smp, 5, epochs, W2, &info, s2, obj, grd, sec);
      CHECK(memcmp(W, W2, sizeof(double) * p * m) == 0, "reproducible pc=%d sampling=%d", pc, smp);
    }
  /* random features: the operator's features for the same seed */
  const int64_t M = 16;
  krr_kernel k = {KRR_RBF, 1.5};
  double *Zr = malloc(sizeof(double) * (size_t)(n * M)), *Id = calloc((size_t)(M * M), sizeof(double)),
         *Zo = malloc(sizeof(double) * (size_t)(n * M));
  for (int64_t j = 0; j < M; j++) Id[j + j * M] = 1;
  CHECK(krr_svrg_rff(&ctx, &k, X, n, p, M, 9, Zr) == KRR_OK, "rff: %s", ctx.msg);
  CHECK(krr_features_apply(&ctx, &k, p, M, 9, X, n, Id, (int)M, Zo) == KRR_OK, "apply: %s", ctx.msg);
  double md = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < M; j++) md = fmax(md, fabs(Zr[j + i * M] - Zo[i + j * n]));
  CHECK(md < 1e-12, "random features differ from the operator's by %g", md);
  double *Wr = malloc(sizeof(double) * M * m), *Wrx = malloc(sizeof(double) * M * m);
  CHECK(exact_ridge(Zr, n, M, m, y, lambda, Wrx) == 0, "oracle rff");
  {
    krr_svrg_opts o = {3, 0, epochs, 2 * (n + M), 0.25, 1, 1, 1e-12, 3};
    memset(Wr, 0, sizeof(double) * M * m);
    memset(&info, 0, sizeof info);
    info.sigma2 = s2; info.objective = obj; info.gradient = grd; info.seconds = sec;
    CHECK(krr_svrg_solve(&ctx, Zr, n, M, m, y, lambda, &o, Wr, &info) == KRR_OK, "rff svrg");
    double e = rel_diff(Wr, Wrx, M * m);
    CHECK(e < 1e-9, "random-feature ridge: relative error %g", e);
  }
  /* on a context whose table is not its host table (a device) the solver
   * runs on a host context (ctx->host_ops): a copy of the CPU table as the
   * device table, with the CPU table as host, takes that path on the CPU and must
   * give the direct path's weights bit for bit; its failures, deadline and
   * messages reach the caller's context */
  if (ctx.ops == krr_cpu_ops()) {
    krr_ops alt = *krr_cpu_ops();
    krr_ctx actx;
    if (krr_ctx_init(&actx, &alt, krr_cpu_ops(), ctx.threads, 0) == KRR_OK) {
      krr_status s1 = run(&ctx, Zt, n, p, m, y, lambda, 1, 1, 5, 20, W, &info, s2, obj, grd, sec);
      krr_status s2s = run(&actx, Zt, n, p, m, y, lambda, 1, 1, 5, 20, W2, &info, s2, obj, grd, sec);
      CHECK(s1 == KRR_OK && s2s == KRR_OK && memcmp(W, W2, sizeof(double) * p * m) == 0,
            "host context: the direct path's weights (%d, %d: %s)", s1, s2s, actx.msg);
      CHECK(krr_svrg_rff(&actx, &k, X, n, p, M, 9, Zo) == KRR_OK &&
                memcmp(Zo, Zr, sizeof(double) * (size_t)(n * M)) == 0,
            "host context: the direct path's random features (%s)", actx.msg);
      s2s = run(&actx, Zt, n, p, m, y, -1.0, 1, 1, 5, 3, W2, &info, s2, obj, grd, sec);
      CHECK(s2s == KRR_ERR_INPUT && actx.status == KRR_ERR_INPUT && strstr(actx.msg, "lambda"),
            "host context: its error on the caller's context (%d: %s)", s2s, actx.msg);
      krr_clear(&actx);
      actx.deadline = krr_now() - 1;
      s2s = run(&actx, Zt, n, p, m, y, lambda, 1, 1, 5, 20, W2, &info, s2, obj, grd, sec);
      CHECK(s2s == KRR_ERR_TIME_LIMIT && actx.status == KRR_ERR_TIME_LIMIT,
            "host context: the caller's deadline (%d: %s)", s2s, actx.msg);
      krr_ctx_free(&actx);
    } else {
      CHECK(0, "a context on a copy of the CPU table: %s", actx.msg);
    }
  }
  /* input errors */
  krr_clear(&ctx);
  CHECK(run(&ctx, Zt, n, p, m, y, 0.0, 1, 1, 5, 3, W, &info, s2, obj, grd, sec) == KRR_ERR_INPUT,
        "lambda = 0 refused");
  krr_clear(&ctx);
  free(Zt); free(W); free(Wx); free(W2); free(Zr); free(Id); free(Zo); free(Wr); free(Wrx);
  free(X); free(y);
  krr_ctx_free(&ctx);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
