/* test_svrg: the sketched preconditioned SVRG and plain SVRG of
 * src/core/solvers/svrg.c against the exact ridge solution (LAPACKE Cholesky
 * of Z'Z + lambda I), its random Fourier features against the operator's
 * (krr_features_apply with theta = I), reproducibility by seed, input errors;
 * and the registry entry "svrg" on the random-feature operator, driven by the
 * generic loop: the same oracles, krr_svrg_solve's epochs, solving again,
 * options, single precision, the host context; on the linear operator (linear
 * ridge) and on Nystrom features through it (the inducing-point oracle). */
#include "test_common.h"
#include "../src/core/solvers/svrg.h"
#include "../src/core/op/op.h"

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

/* B (rows x cols) <- B R^{-1} (right) or R^{-1} B (left), R upper triangular
 * mc x mc, column-major: a host back substitution */
static void trsolve(int right, const double *R, int64_t mc, double *B, int64_t rows, int64_t cols) {
  if (right) {
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < mc; j++) {
        double t = B[i + j * rows];
        for (int64_t l = 0; l < j; l++) t -= B[i + l * rows] * R[l + j * mc];
        B[i + j * rows] = t / R[j + j * mc];
      }
  } else {
    for (int64_t c = 0; c < cols; c++)
      for (int64_t j = mc - 1; j >= 0; j--) {
        double t = B[j + c * mc];
        for (int64_t l = j + 1; l < mc; l++) t -= R[j + l * mc] * B[l + c * mc];
        B[j + c * mc] = t / R[j + j * mc];
      }
  }
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
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 1.5};
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
  /* the registry entry "svrg": the same method on the features of the
   * random-feature operator (the draws of seed 9, equal to Zr up to
   * rounding), driven by the generic solver loop, one epoch per step */
  {
    tfit f;
    double *th = malloc(sizeof(double) * M * m), *th2 = malloc(sizeof(double) * M * m),
           *a = malloc(sizeof(double) * (size_t)(n * m)), *Wl = malloc(sizeof(double) * M * m),
           *W4 = malloc(sizeof(double) * M * m);
    char spec[200];
    if (tfit_make_features(&ctx, KRR_DOUBLE, X, n, p, y, m, k, lambda, M, 9, &f) == KRR_OK) {
      for (int pc = 0; pc < 2; pc++)
        for (int smp = 0; smp < 2; smp++) {
          snprintf(spec, sizeof spec,
                   "rank=3 epoch_length=%lld step=0.25 precondition=%d "
                   "sampling=%s seed=3",
                   (long long)(2 * (n + M)), pc, smp ? "smoothness" : "uniform");
          krr_solver *sv = NULL;
          krr_status st = tinit(&f, "svrg", spec, &sv);
          if (st == KRR_OK) st = krr_solver_step_until(sv, epochs, 1e-13, 0);
          krr_diag dg = {0};
          double crit = INFINITY;
          if (st == KRR_OK) {
            krr_solver_diag(sv, &dg);
            st = krr_solver_theta(sv, th);
          }
          if (st == KRR_OK) st = krr_solver_residual(sv, &crit);
          double e = st == KRR_OK ? rel_diff(th, Wrx, M * m) : INFINITY;
          CHECK(st == KRR_OK && e < 1e-9,
                "registry pc=%d sampling=%d: relative error %g after %lld "
                "epochs (%s)",
                pc, smp, e, (long long)dg.iter, ctx.msg);
          CHECK(crit <= 1e-12 && dg.resid_est <= 1e-13,
                "registry pc=%d sampling=%d: estimate %g, exact criterion %g", pc, smp,
                dg.resid_est, crit);
          /* the dual weights a: theta = Z'a */
          if (st == KRR_OK) st = krr_solver_weights(sv, a);
          if (st == KRR_OK) st = krr_op_features_theta_host(f.op, a, m, th2);
          e = st == KRR_OK ? rel_diff(th2, th, M * m) : INFINITY;
          CHECK(e < 1e-9, "registry pc=%d sampling=%d: Z'a differs from theta by %g", pc, smp, e);
          CHECK(krr_solver_memory_used(sv) <= krr_solver_memory_estimate(sv),
                "registry: memory held %.0f > estimate %.0f", krr_solver_memory_used(sv),
                krr_solver_memory_estimate(sv));
          /* the same seed and epochs: the same weights, bit for bit, also by slices */
          krr_solver_free(sv);
          sv = NULL;
          st = tinit(&f, "svrg", spec, &sv);
          for (int64_t i = 0; st == KRR_OK && i < dg.iter; i += 3)
            st = krr_solver_step(sv, dg.iter - i < 3 ? dg.iter - i : 3);
          if (st == KRR_OK) st = krr_solver_theta(sv, th2);
          CHECK(st == KRR_OK && memcmp(th, th2, sizeof(double) * M * m) == 0,
                "registry reproducible pc=%d sampling=%d (%s)", pc, smp, ctx.msg);
          krr_solver_free(sv);
          /* five epochs: krr_svrg_solve's five epochs on Zr (the same draws) */
          krr_svrg_opts o = {3, 0, 5, 2 * (n + M), 0.25, pc, smp, 0.0, 3};
          memset(Wl, 0, sizeof(double) * M * m);
          memset(&info, 0, sizeof info);
          info.sigma2 = s2;
          info.objective = obj;
          info.gradient = grd;
          info.seconds = sec;
          st = krr_svrg_solve(&ctx, Zr, n, M, m, y, lambda, &o, Wl, &info);
          krr_solver *s5 = NULL;
          if (st == KRR_OK) st = tinit(&f, "svrg", spec, &s5);
          if (st == KRR_OK) st = krr_solver_step(s5, 5);
          if (st == KRR_OK) st = krr_solver_theta(s5, th2);
          e = st == KRR_OK ? rel_diff(th2, Wl, M * m) : INFINITY;
          CHECK(st == KRR_OK && info.epochs_run == 5 && e < 1e-9 &&
                    fabs(textra(s5, "gradient") - grd[5]) <= 1e-6 * grd[5],
                "registry pc=%d sampling=%d: 5 epochs differ from krr_svrg_solve's by %g (%s)", pc,
                smp, e, ctx.msg);
          /* the estimate is the exact criterion of the dual weights at an epoch's end */
          if (st == KRR_OK) {
            krr_solver_diag(s5, &dg);
            st = krr_solver_residual(s5, &crit);
          }
          CHECK(st == KRR_OK && fabs(dg.resid_est - crit) <= 1e-6 * crit,
                "registry pc=%d sampling=%d: after 5 epochs estimate %g, exact criterion %g", pc,
                smp, dg.resid_est, crit);
          krr_solver_free(s5);
        }
      /* solving again: a new lambda (the preconditioner is retuned, the sketch kept) */
      {
        krr_solver *sv = NULL;
        CHECK(exact_ridge(Zr, n, M, m, y, 2 * lambda, W4) == 0, "oracle rff, 2 lambda");
        krr_status st = tinit(&f, "svrg", "rank=3 step=0.25 seed=3", &sv);
        if (st == KRR_OK) st = krr_solver_step(sv, 3);
        if (st == KRR_OK) st = krr_solver_set_lambda(sv, 2 * lambda);
        if (st == KRR_OK) st = krr_solver_step_until(sv, epochs, 1e-13, 0);
        if (st == KRR_OK) st = krr_solver_theta(sv, th);
        double e = st == KRR_OK ? rel_diff(th, W4, M * m) : INFINITY;
        CHECK(e < 1e-9, "registry, a new lambda: relative error %g (%s)", e, ctx.msg);
        krr_solver_free(sv);
      }
      /* options: the table's ranges and the resolved defaults */
      {
        krr_solver *sv = NULL;
        krr_status st = tinit(&f, "svrg", "seed=3", &sv);
        CHECK(st == KRR_OK && topt(sv, "rank") == 30 && topt(sv, "epoch_length") == 2 * (n + M) &&
                  topt(sv, "lanczos_iters") == ceil(log((double)M) / sqrt(0.5)) &&
                  textra(sv, "rank") == M && textra(sv, "features") == M,
              "registry defaults: rank %g epoch_length %g lanczos_iters %g, rank used %g",
              sv ? topt(sv, "rank") : NAN, sv ? topt(sv, "epoch_length") : NAN,
              sv ? topt(sv, "lanczos_iters") : NAN, sv ? textra(sv, "rank") : NAN);
        krr_solver_free(sv);
        const char *bad[] = {"rank=0", "step=0", "precondition=2", "sampling=other", "epochs=3"};
        for (int i = 0; i < 5; i++) {
          krr_options *op = topts(&ctx, "svrg", bad[i]);
          CHECK(op == NULL && ctx.status == KRR_ERR_INPUT, "svrg option \"%s\" must be refused",
                bad[i]);
          krr_options_free(op);
          krr_clear(&ctx);
        }
      }
      tfit_free(&f);
    }
    /* single precision: the features in float, the epochs in double */
    if (tfit_make_features(&ctx, KRR_FLOAT, X, n, p, y, m, k, lambda, M, 9, &f) == KRR_OK) {
      krr_solver *sv = NULL;
      krr_status st = tinit(&f, "svrg", "rank=3 step=0.25 seed=3", &sv);
      if (st == KRR_OK) st = krr_solver_step_until(sv, epochs, 1e-6, 0);
      if (st == KRR_OK) st = krr_solver_theta(sv, th);
      double e = st == KRR_OK ? rel_diff(th, Wrx, M * m) : INFINITY;
      CHECK(e < 1e-5, "registry, float: relative error %g (%s)", e, ctx.msg);
      krr_solver_free(sv);
      tfit_free(&f);
    }
    /* the exact operator has no features: an input error naming the need */
    if (tfit_make(&ctx, KRR_DOUBLE, X, n, p, y, m, k, lambda, &f) == KRR_OK) {
      krr_solver *sv = NULL;
      krr_status st = tinit(&f, "svrg", "", &sv);
      CHECK(st == KRR_ERR_INPUT && strstr(ctx.msg, "feature"),
            "svrg on the exact operator: %d (%s)", st, ctx.msg);
      krr_solver_free(sv);
      krr_clear(&ctx);
      tfit_free(&f);
    }
    /* on a context whose table is not its host table the epochs run on a
     * host context: the direct path's weights bit for bit */
    if (ctx.ops == krr_cpu_ops()) {
      krr_ops alt = *krr_cpu_ops();
      krr_ctx actx;
      tfit g;
      if (krr_ctx_init(&actx, &alt, krr_cpu_ops(), ctx.threads, 0) == KRR_OK &&
          tfit_make_features(&ctx, KRR_DOUBLE, X, n, p, y, m, k, lambda, M, 9, &f) == KRR_OK) {
        if (tfit_make_features(&actx, KRR_DOUBLE, X, n, p, y, m, k, lambda, M, 9, &g) == KRR_OK) {
          krr_solver *s1 = NULL, *s2v = NULL;
          krr_status a1 = tinit(&f, "svrg", "rank=3 step=0.25 seed=3", &s1);
          krr_status a2 = tinit(&g, "svrg", "rank=3 step=0.25 seed=3", &s2v);
          if (a1 == KRR_OK) a1 = krr_solver_step(s1, 10);
          if (a2 == KRR_OK) a2 = krr_solver_step(s2v, 10);
          if (a1 == KRR_OK) a1 = krr_solver_theta(s1, th);
          if (a2 == KRR_OK) a2 = krr_solver_theta(s2v, th2);
          CHECK(a1 == KRR_OK && a2 == KRR_OK && memcmp(th, th2, sizeof(double) * M * m) == 0,
                "registry, host context: the direct path's weights (%d, %d: %s)", a1, a2, actx.msg);
          /* the caller's deadline reaches the host context */
          krr_solver_free(s2v);
          s2v = NULL;
          a2 = tinit(&g, "svrg", "rank=3 step=0.25 seed=3", &s2v);
          actx.deadline = krr_now() - 1;
          if (a2 == KRR_OK) a2 = krr_solver_step(s2v, 3);
          CHECK(a2 == KRR_ERR_TIME_LIMIT && actx.status == KRR_ERR_TIME_LIMIT,
                "registry, host context: the caller's deadline (%d: %s)", a2, actx.msg);
          actx.deadline = 0;
          krr_clear(&actx);
          krr_solver_free(s1);
          krr_solver_free(s2v);
          tfit_free(&g);
        }
        tfit_free(&f);
      }
      krr_ctx_free(&actx);
    }
    free(th);
    free(th2);
    free(a);
    free(Wl);
    free(W4);
  }
  /* the registry entry on the linear operator (K = X X^T, features x
   * itself): the linear ridge oracle, and krr_svrg_solve's iterates on
   * Zt = X' bit for bit (the same features, targets, streams and steps) */
  {
    krr_problem pb;
    krr_op *lop = NULL;
    krr_objective lobj;
    krr_status st = krr_problem_create(&ctx, KRR_DOUBLE, X, n, p, &pb);
    if (st == KRR_OK) st = krr_op_linear_create(&ctx, &pb, &lop);
    if (st == KRR_OK)
      st = krr_objective_init(&ctx, lop, krr_loss_lookup("squared"), lambda, y, m, &lobj);
    CHECK(st == KRR_OK, "linear operator: %s", ctx.msg);
    if (st == KRR_OK) {
      /* the operator: K = X X^T, its diagonal, products and features */
      double *K = malloc(sizeof(double) * (size_t)(n * n)),
             *dg = malloc(sizeof(double) * (size_t)n),
             *Kv = malloc(sizeof(double) * (size_t)(n * m)),
             *Zl = malloc(sizeof(double) * (size_t)(n * p));
      void *dK = NULL, *dy = NULL, *dKv = NULL, *dZ = NULL;
      st = krr_upload_vec(&ctx, KRR_DOUBLE, y, n * m, &dy);
      dK = krr_dalloc(&ctx, n * n, sizeof(double));
      dKv = krr_dalloc(&ctx, n * m, sizeof(double));
      dZ = krr_dalloc(&ctx, n * p, sizeof(double));
      if (st == KRR_OK) st = krr_op_mat(lop, NULL, NULL, dK, n);
      if (st == KRR_OK) st = krr_op_mv(lop, NULL, NULL, dy, n, m, dKv, n);
      if (st == KRR_OK) st = krr_op_feature_cols(lop, 1, 2, dZ, n);
      if (st == KRR_OK) st = krr_op_diag(lop, NULL, dg);
      if (st == KRR_OK) st = krr_download_vec(&ctx, KRR_DOUBLE, dK, n * n, K);
      if (st == KRR_OK) st = krr_download_vec(&ctx, KRR_DOUBLE, dKv, n * m, Kv);
      if (st == KRR_OK) st = krr_download_vec(&ctx, KRR_DOUBLE, dZ, n * 2, Zl);
      double ek = 0, ev = 0, ed = 0, ez = 0;
      for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < n; j++) {
          double t = 0;
          for (int c = 0; c < p; c++) t += X[i + c * n] * X[j + c * n];
          ek = fmax(ek, fabs(K[i + j * n] - t));
          if (i == j) ed = fmax(ed, fabs(dg[i] - t));
        }
        for (int c = 0; c < m; c++) {
          double t = 0;
          for (int64_t j = 0; j < n; j++) t += K[i + j * n] * y[j + c * n];
          ev = fmax(ev, fabs(Kv[i + c * n] - t) / (1 + fabs(t)));
        }
        for (int c = 0; c < 2; c++) ez = fmax(ez, fabs(Zl[i + c * n] - X[i + (c + 1) * n]));
      }
      CHECK(st == KRR_OK && ek < 1e-12 && ed < 1e-12 && ev < 1e-12 && ez == 0,
            "linear operator: K %g, diag %g, K y %g, feature columns %g (%s)", ek, ed, ev, ez,
            ctx.msg);
      krr_dfree(&ctx, &dK);
      krr_dfree(&ctx, &dy);
      krr_dfree(&ctx, &dKv);
      krr_dfree(&ctx, &dZ);
      free(K);
      free(dg);
      free(Kv);
      free(Zl);
      double *th = malloc(sizeof(double) * p * m);
      for (int pc = 0; pc < 2; pc++)
        for (int smp = 0; smp < 2; smp++) {
          char spec[200];
          snprintf(spec, sizeof spec,
                   "rank=3 epoch_length=%lld step=0.25 precondition=%d "
                   "sampling=%s seed=5",
                   (long long)(2 * (n + p)), pc, smp ? "smoothness" : "uniform");
          krr_options *o = topts(&ctx, "svrg", spec);
          krr_solver *sv = NULL;
          st = o ? krr_solver_init(&ctx, lop, &lobj, o, &sv) : ctx.status;
          krr_options_free(o);
          if (st == KRR_OK) st = krr_solver_step(sv, 5);
          if (st == KRR_OK) st = krr_solver_theta(sv, th);
          run(&ctx, Zt, n, p, m, y, lambda, pc, smp, 5, 5, W, &info, s2, obj, grd, sec);
          CHECK(
              st == KRR_OK && memcmp(th, W, sizeof(double) * p * m) == 0,
              "registry, linear pc=%d sampling=%d: krr_svrg_solve's 5 epochs bit for bit (%g; %s)",
              pc, smp, rel_diff(th, W, p * m), ctx.msg);
          if (st == KRR_OK) st = krr_solver_step_until(sv, epochs, 1e-13, 0);
          if (st == KRR_OK) st = krr_solver_theta(sv, th);
          double e = st == KRR_OK ? rel_diff(th, Wx, p * m) : INFINITY;
          CHECK(e < 1e-9, "registry, linear ridge pc=%d sampling=%d: relative error %g (%s)", pc,
                smp, e, ctx.msg);
          krr_solver_free(sv);
        }
      free(th);
      krr_objective_free(&ctx, &lobj);
    }
    krr_op_free(lop);
    krr_problem_free(&ctx, &pb);
  }
  /* Nystrom features phi(x) = R^{-T} k(X_I, x), K_II = R^T R, map onto the
   * linear operator over a problem whose points are the features: svrg in
   * them solves the inducing-point problem (K_nI^T K_nI + lambda K_II) a =
   * K_nI^T y with a = R^{-1} w (what R's svrg(features = "nystrom") fits) */
  {
    const int64_t mc = 12;
    int64_t cidx[12];
    for (int64_t j = 0; j < mc; j++) cidx[j] = j * (n / mc);
    double *Xc = malloc(sizeof(double) * (size_t)(mc * p)),
           *Knm = malloc(sizeof(double) * (size_t)(n * mc)),
           *Rm = malloc(sizeof(double) * (size_t)(mc * mc)),
           *wn = malloc(sizeof(double) * (size_t)(mc * m)),
           *ao = malloc(sizeof(double) * (size_t)(mc * m));
    for (int64_t j = 0; j < mc; j++)
      for (int c = 0; c < p; c++) Xc[j + c * mc] = X[cidx[j] + c * n];
    krr_status st = krr_kernel_matrix_host(&ctx, KRR_DOUBLE, &k, X, n, Xc, mc, p, Knm);
    for (int64_t i = 0; i < mc; i++)
      for (int64_t j = 0; j < mc; j++) Rm[i + j * mc] = Knm[cidx[i] + j * n];
    int info = st == KRR_OK ? LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (int)mc, Rm, (int)mc) : -1;
    /* phi = K_nI R^{-1} (n x mc), in place */
    if (info == 0) trsolve(1, Rm, mc, Knm, n, mc);
    CHECK(info == 0 && inducing_oracle(&k, X, n, p, y, m, lambda, cidx, mc, ao) == 0,
          "Nystrom features: setup (%d, %s)", info, ctx.msg);
    krr_problem pb;
    krr_op *nop = NULL;
    krr_objective nobj;
    if (info == 0) st = krr_problem_create(&ctx, KRR_DOUBLE, Knm, n, (int)mc, &pb);
    if (info == 0 && st == KRR_OK) st = krr_op_linear_create(&ctx, &pb, &nop);
    if (nop) st = krr_objective_init(&ctx, nop, krr_loss_lookup("squared"), lambda, y, m, &nobj);
    if (nop && st == KRR_OK) {
      krr_options *o = topts(&ctx, "svrg", "rank=5 step=0.25 seed=2");
      krr_solver *sv = NULL;
      st = o ? krr_solver_init(&ctx, nop, &nobj, o, &sv) : ctx.status;
      krr_options_free(o);
      if (st == KRR_OK) st = krr_solver_step_until(sv, 200, 1e-12, 0);
      if (st == KRR_OK) st = krr_solver_theta(sv, wn);
      if (st == KRR_OK) trsolve(0, Rm, mc, wn, mc, m); /* a = R^{-1} w */
      double e = st == KRR_OK ? rel_diff(wn, ao, mc * m) : INFINITY;
      CHECK(e < 1e-8,
            "registry, Nystrom features: the inducing-point oracle, relative error %g (%s)", e,
            ctx.msg);
      krr_solver_free(sv);
      krr_objective_free(&ctx, &nobj);
    }
    krr_op_free(nop);
    if (info == 0) krr_problem_free(&ctx, &pb);
    free(Xc);
    free(Knm);
    free(Rm);
    free(wn);
    free(ao);
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
