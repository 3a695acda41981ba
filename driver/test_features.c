/* Tests of the random-feature operator (src/core/op/features.c) and the
 * shifted operator K + c 11^T (src/core/op/shift.c), no R:
 *   test_features [--backend cpu|cuda] [--threads T] [--n N]
 *  - Monte Carlo: max_ij |psi(x_i)^T psi(x_j) - k(x_i, x_j)| over 50 points
 *    for every kernel at M = 1e4 and 1e5.  Each entry is a mean of M
 *    independent terms 2 cos(a) cos(b) = cos(w d) + cos(w s + 2c) of
 *    variance var(cos(w d)) + 1/2 = (1 + k(2d))/2 - k(d)^2 + 1/2 <= 1.07
 *    (k(2d) <= k(d) for these kernels), so its error has standard deviation
 *    <= 1.03/sqrt(M): the bound is max <= 5/sqrt(M) (~5 sd over 1225
 *    entries: a false alarm ~1e-3 per case if Gaussian, <= 2e-2 by
 *    Bernstein; the seeds are fixed, so the outcome is reproducible), and
 *    the RMS error times sqrt(M), ~[0.71, 1.03] in expectation off the
 *    diagonal, is checked in [0.5, 1.3]: a wrong spectral scale gives an O(1)
 *    bias and fails both (observed: max 2.7-4.3, rms 0.8-1.1);
 *  - the features on the device equal a host evaluation from
 *    krr_features_draw (1e-12 double; 1e-5 relative single);
 *  - consistency, chunked (n = 1100 rows, chunk 1024 at M = 2048): mv
 *    equals mat times V for (block, all), (all, block), (block, block),
 *    (all, all) (1e-12 double, 1e-5 single, relative); mat equals Z_A Z_B^T
 *    from the host features; diag equals ||psi(x_i)||^2 (1e-12 / 1e-5
 *    absolute; values near 1); features of a block; the trace; a subset;
 *    gather;
 *  - determinism: the same seed gives the same bits with 1 and 2 threads (W,
 *    c on the host; every product chunked independently of threads);
 *  - krr_features_apply (1100 new points, two chunks) equals
 *    psi(xnew) theta from the host (1e-12);
 *  - a squared-loss solve (cholesky, pcg and random-feature BCD with and
 *    without the feature cache, to 1e-12) on the features
 *    operator equals ridge regression in the features,
 *    theta* = (Z^T Z + lambda I)^{-1} Z^T y, in predictions Z theta within
 *    1e-8 relative (cholesky; 1e-7 pcg), theta from krr_op_features_theta;
 *  - the shift operator over the exact and the features operators: mv, mat,
 *    diag against K + c 11^T on the host, features [Z, sqrt(c)], theta's
 *    last row sqrt(c) sum(alpha), a cholesky solve against the host solve of
 *    (K + c 11^T + lambda I) w = y;
 *  - the scale operator D K D (observation weights) over the exact and the
 *    features operators: mv, mat, diag, subset against the host D K D,
 *    features D Z, a cholesky solve against the host solve of
 *    (K + lambda W^{-1}) alpha = y (test_scale);
 *  - input errors.
 * Prints "N passed, N failed". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../src/core/ops.h"
#include "../src/core/kernel_math.h"
#include "../src/core/op/op.h"

#include "test_common.h"

static const char *be_name = "cpu";

/* naive host K(X1[i], X2[j]) for column-major X1 (n1 rows), X2 (n2 rows) */
static double kxy(const krr_kernel *k, const double *X1, int64_t n1, int64_t i, const double *X2,
                  int64_t n2, int64_t j, int p) {
  krr_kparams kp = krr_kparams_make(k);
  double t = 0;
  for (int d = 0; d < p; d++) {
    double dd = X1[i + d * n1] - X2[j + d * n2];
    t += krr_kernel_is_l1(k->type) ? fabs(dd) : dd * dd;
  }
  return krr_kernel_eval(kp, t);
}

/* host features Z (nr x M, column-major) of rows idx (NULL: 0..nr-1) of X */
static void host_features(const krr_kernel *k, const double *X, int64_t n, int p, const int64_t *idx,
                          int64_t nr, int64_t M, uint64_t seed, double *Z) {
  double *W = malloc(sizeof(double) * M * p), *c = malloc(sizeof(double) * M);
  if (krr_features_draw(NULL, k, p, M, seed, W, c) != KRR_OK) { n_fail++; printf("FAIL: draw\n"); }
  double sc = sqrt(2.0 / (double)M);
  for (int64_t j = 0; j < M; j++)
    for (int64_t i = 0; i < nr; i++) {
      int64_t r = idx ? idx[i] : i;
      double t = 0;
      for (int l = 0; l < p; l++) t += X[r + (int64_t)l * n] * W[j * p + l];
      Z[i + j * nr] = sc * cos(t + c[j]);
    }
  free(W); free(c);
}

/* C (m x n) = A (m x k) B^T (n x k), all column-major with leading dims = rows */
static void host_abt(const double *A, int64_t m, const double *B, int64_t n, int64_t k, double *C) {
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      double s = 0;
      for (int64_t l = 0; l < k; l++) s += A[i + l * m] * B[j + l * n];
      C[i + j * m] = s;
    }
}

/* C (m x q) = A (m x k) B (k x q, ld ldb) */
static void host_ab(const double *A, int64_t m, int64_t k, const double *B, int64_t ldb, int q, double *C) {
  for (int c = 0; c < q; c++)
    for (int64_t i = 0; i < m; i++) {
      double s = 0;
      for (int64_t l = 0; l < k; l++) s += A[i + l * m] * B[l + c * ldb];
      C[i + c * m] = s;
    }
}

static double max_abs_diff(const double *a, const double *b, int64_t len) {
  double e = 0;
  for (int64_t i = 0; i < len; i++) e = fmax(e, fabs(a[i] - b[i]));
  return e;
}

/* ---- Monte Carlo kernel approximation --------------------------------------- */
static void test_monte_carlo(krr_ctx *ctx, const double *X, int64_t n, int p) {
  const int64_t np = 50;
  double *Xs = malloc(sizeof(double) * np * p), *K = malloc(sizeof(double) * np * np);
  for (int l = 0; l < p; l++)
    for (int64_t i = 0; i < np; i++) Xs[i + l * np] = X[i + l * n];
  for (int kt = 0; kt < KRR_N_KERNELS; kt++) {
    krr_kernel k = {.type = (krr_kernel_type)kt, .bandwidth = 1.5};
    krr_problem pb;
    krr_clear(ctx);
    if (krr_problem_create(ctx, KRR_DOUBLE, Xs, np, p, &pb) != KRR_OK) { n_fail++; continue; }
    double sm[2];
    for (int e = 0; e < 2; e++) {
      int64_t M = e ? 100000 : 10000;
      krr_op *op = NULL;
      void *dK = krr_dalloc(ctx, np * np, sizeof(double));
      krr_status st = krr_op_features_create(ctx, &pb, &k, M, 1234 + kt, &op);
      if (st == KRR_OK) st = krr_op_mat(op, NULL, NULL, dK, np);
      if (st == KRR_OK) st = krr_download_vec(ctx, KRR_DOUBLE, dK, np * np, K);
      double mx = 0, ss = 0;
      for (int64_t j = 0; j < np; j++)
        for (int64_t i = 0; i < np; i++) {
          double d = K[i + j * np] - kxy(&k, Xs, np, i, Xs, np, j, p);
          mx = fmax(mx, fabs(d));
          if (i != j) ss += d * d;
        }
      double rms = sqrt(ss / (double)(np * (np - 1)));
      sm[e] = mx * sqrt((double)M);
      CHECK(st == KRR_OK && sm[e] <= 5.0 && rms * sqrt((double)M) >= 0.5 &&
                rms * sqrt((double)M) <= 1.3,
            "Monte Carlo %s M = %lld: status %d (%s), max error %.3e = %.2f/sqrt(M) (bound 5), "
            "rms %.2f/sqrt(M) (expected in [0.5, 1.3])",
            krr_kernel_name(k.type), (long long)M, st, ctx->msg, mx, sm[e], rms * sqrt((double)M));
      if (getenv("KRR_VERBOSE"))
        printf("  MC %-8s M = %6lld: max %.3e (%.2f/sqrt(M)), rms %.2f/sqrt(M)\n",
               krr_kernel_name(k.type), (long long)M, mx, sm[e], rms * sqrt((double)M));
      krr_dfree(ctx, &dK);
      krr_op_free(op);
    }
    krr_problem_free(ctx, &pb);
  }
  free(Xs); free(K);
}

/* ---- consistency of mv / mat / diag / features --------------------------------- */
static void test_consistency(krr_ctx *ctx, const double *X, int64_t n, int p) {
  const int64_t M = 2048, b = 37, cb = 23;
  const int q = 2;
  int64_t *ia = malloc(sizeof(int64_t) * b), *ib = malloc(sizeof(int64_t) * cb);
  for (int64_t i = 0; i < b; i++) ia[i] = (i * 131 + 7) % n;
  for (int64_t i = 0; i < cb; i++) ib[i] = (i * 211 + 3) % n;
  double *V = malloc(sizeof(double) * n * q), *Zh = malloc(sizeof(double) * n * M),
         *Zd = malloc(sizeof(double) * n * M), *Kd = malloc(sizeof(double) * n * n),
         *o1 = malloc(sizeof(double) * n * q), *o2 = malloc(sizeof(double) * n * q),
         *Kh = malloc(sizeof(double) * n * n), *dg = malloc(sizeof(double) * n),
         *ZA = malloc(sizeof(double) * b * M), *ZB = malloc(sizeof(double) * cb * M);
  for (int64_t i = 0; i < n * q; i++) V[i] = krr_rng_normal(77, (uint64_t)i);
  for (int kt = 0; kt < KRR_N_KERNELS; kt++)
    for (int pr = 0; pr < 2; pr++) {
      krr_kernel k = {.type = (krr_kernel_type)kt, .bandwidth = 1.7};
      krr_precision prec = pr ? KRR_DOUBLE : KRR_FLOAT;
      const double tol = pr ? 1e-12 : 1e-5;
      const char *pn = pr ? "double" : "single";
      const char *kn = krr_kernel_name(k.type);
      uint64_t seed = 99 + kt;
      krr_problem pb;
      krr_op *op = NULL;
      krr_clear(ctx);
      if (krr_problem_create(ctx, prec, X, n, p, &pb) != KRR_OK) { n_fail++; continue; }
      krr_status st = krr_op_features_create(ctx, &pb, &k, M, seed, &op);
      CHECK(st == KRR_OK && op->nfeat == M, "features create %s %s: %s", kn, pn, ctx->msg);
      if (st != KRR_OK) { krr_problem_free(ctx, &pb); continue; }
      size_t es = op->es;
      krr_arena a;
      krr_arena_init(&a, ctx);
      krr_block A, B;
      st = krr_block_alloc(op, &a, b, &A);
      if (st == KRR_OK) st = krr_block_alloc(op, &a, cb, &B);
      if (st == KRR_OK) st = krr_block_set(op, &A, ia, b);
      if (st == KRR_OK) st = krr_block_set(op, &B, ib, cb);
      void *dV = NULL;
      void *dZ = krr_arena_dev(&a, n * M, es), *dK = krr_arena_dev(&a, n * n, es),
           *dO = krr_arena_dev(&a, n * q, es);
      if (st == KRR_OK) st = krr_upload_vec(ctx, prec, V, n * q, &dV);
      /* features of all rows against the host */
      host_features(&k, X, n, p, NULL, n, M, seed, Zh);
      if (st == KRR_OK) st = krr_op_features(op, NULL, dZ, n);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dZ, n * M, Zd);
      double ez = pr ? max_abs_diff(Zd, Zh, n * M) : rel_diff(Zd, Zh, n * M);
      CHECK(st == KRR_OK && ez <= tol, "features %s %s vs host: %.2e (%s)", kn, pn, ez, ctx->msg);
      /* features of a block */
      if (st == KRR_OK) st = krr_op_features(op, &A, dZ, b);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dZ, b * M, ZA);
      host_features(&k, X, n, p, ia, b, M, seed, Zh);
      double ezb = pr ? max_abs_diff(ZA, Zh, b * M) : rel_diff(ZA, Zh, b * M);
      /* a block's features with a larger leading dimension */
      if (st == KRR_OK) st = krr_op_features(op, &A, dZ, b + 5);
      double ezl = 0;
      if (st == KRR_OK) {
        double *t = malloc(sizeof(double) * (b + 5) * M);
        st = krr_download_vec(ctx, prec, dZ, (b + 5) * M, t);
        for (int64_t j = 0; j < M; j++)
          for (int64_t i = 0; i < b; i++) ezl = fmax(ezl, fabs(t[i + j * (b + 5)] - ZA[i + j * b]));
        free(t);
      }
      CHECK(st == KRR_OK && ezb <= tol && ezl == 0, "block features %s %s: %.2e, ld %.2e", kn, pn, ezb, ezl);
      /* mv against mat times V, four ways */
      struct { const krr_block *A, *B; const char *name; } cases[] = {
          {&A, NULL, "(A, all)"}, {NULL, &B, "(all, B)"}, {&A, &B, "(A, B)"}, {NULL, NULL, "(all, all)"}};
      for (int c = 0; c < 4 && st == KRR_OK; c++) {
        const krr_block *CA = cases[c].A, *CB = cases[c].B;
        int64_t na = CA ? CA->b : n, nb = CB ? CB->b : n;
        /* V_B: the first nb rows of V (ld n) */
        st = krr_op_mv(op, CA, CB, dV, n, q, dO, na);
        if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, na * q, o1);
        if (st == KRR_OK) st = krr_op_mat(op, CA, CB, dK, na);
        if (st == KRR_OK) st = krr_download_vec(ctx, prec, dK, na * nb, Kd);
        double *Vp = malloc(sizeof(double) * nb * q);
        for (int cc = 0; cc < q; cc++)
          for (int64_t i = 0; i < nb; i++) Vp[i + cc * nb] = pr ? V[i + cc * n] : (double)(float)V[i + cc * n];
        host_ab(Kd, na, nb, Vp, nb, q, o2);
        free(Vp);
        double e = rel_diff(o1, o2, na * q);
        CHECK(st == KRR_OK && e <= tol, "mv %s %s %s vs mat V: %.2e (%s)", kn, pn, cases[c].name, e, ctx->msg);
      }
      /* mat (A, B) and (all, all) against the host features */
      host_features(&k, X, n, p, ia, b, M, seed, ZA);
      host_features(&k, X, n, p, ib, cb, M, seed, ZB);
      host_abt(ZA, b, ZB, cb, M, Kh);
      if (st == KRR_OK) st = krr_op_mat(op, &A, &B, dK, b);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dK, b * cb, Kd);
      double em = rel_diff(Kd, Kh, b * cb);
      /* diag: ||psi(x_i)||^2, all rows and a block, and the trace */
      host_features(&k, X, n, p, NULL, n, M, seed, Zh);
      double ed = 0, eda = 0, tr = 0, trh = 0;
      if (st == KRR_OK) st = krr_op_diag(op, NULL, dg);
      for (int64_t i = 0; i < n; i++) {
        double s = 0;
        for (int64_t j = 0; j < M; j++) s += Zh[i + j * n] * Zh[i + j * n];
        ed = fmax(ed, fabs(dg[i] - s));
        trh += s;
      }
      if (st == KRR_OK) st = krr_op_diag(op, &A, dg);
      for (int64_t i = 0; i < b; i++) {
        double s = 0;
        for (int64_t j = 0; j < M; j++) s += Zh[ia[i] + j * n] * Zh[ia[i] + j * n];
        eda = fmax(eda, fabs(dg[i] - s));
      }
      if (st == KRR_OK) st = krr_op_trace(op, NULL, &tr);
      CHECK(st == KRR_OK && em <= tol && ed <= tol && eda <= tol && fabs(tr - trh) <= tol * n,
            "features %s %s: mat %.2e, diag %.2e, block diag %.2e, trace %.10g vs %.10g (%s)", kn, pn, em,
            ed, eda, tr, trh, ctx->msg);
      /* the diagonal is not 1 */
      CHECK(ed <= tol && fabs(dg[0] - 1.0) > 1e-6, "diag %s %s: %.17g must be ||psi||^2, not 1", kn, pn, dg[0]);
      /* subset: K(X_A, X_A) V_A */
      krr_op *sub = NULL;
      double es_ = INFINITY;
      if (st == KRR_OK) st = krr_op_subset(op, &A, &sub);
      if (st == KRR_OK) {
        CHECK(sub->n == b && sub->nfeat == M, "subset rows %lld", (long long)sub->n);
        double *h1 = malloc(sizeof(double) * b * q);
        st = krr_op_mv(sub, NULL, NULL, dV, n, q, dO, b);
        if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, b * q, h1);
        if (st == KRR_OK) st = krr_op_mv(op, &A, &A, dV, n, q, dO, b);
        if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, b * q, o1);
        es_ = rel_diff(h1, o1, b * q);
        free(h1);
      }
      krr_op_free(sub);
      /* gather */
      double eg = INFINITY;
      if (st == KRR_OK) st = krr_op_gather(op, &A, dV, q, dO, b);
      if (st == KRR_OK && (st = krr_download_vec(ctx, prec, dO, b * q, o1)) == KRR_OK) {
        eg = 0;
        for (int cc = 0; cc < q; cc++)
          for (int64_t i = 0; i < b; i++) {
            double v = V[ia[i] + cc * n];
            eg = fmax(eg, fabs(o1[i + cc * b] - (pr ? v : (double)(float)v)));
          }
      }
      CHECK(st == KRR_OK && es_ <= tol && eg == 0, "features %s %s: subset %.2e, gather %.2e (%s)", kn,
            pn, es_, eg, ctx->msg);
      krr_dfree(ctx, &dV);
      krr_arena_free(&a);
      krr_op_free(op);
      krr_problem_free(ctx, &pb);
    }
  free(ia); free(ib); free(V); free(Zh); free(Zd); free(Kd); free(o1); free(o2); free(Kh); free(dg);
  free(ZA); free(ZB);
}

/* ---- determinism: 1 vs 2 threads, same seed -------------------------------- */
static int run_det(krr_ctx *ctx, const double *X, int64_t n, int p, uint64_t seed, int64_t M,
                   double *Z, double *o) {
  krr_problem pb;
  krr_op *op = NULL;
  krr_kernel k = {.type = KRR_MATERN32, .bandwidth = 1.3};
  double *V = malloc(sizeof(double) * n);
  for (int64_t i = 0; i < n; i++) V[i] = krr_rng_normal(5, (uint64_t)i);
  void *dZ = NULL, *dV = NULL, *dO = NULL;
  krr_status st = krr_problem_create(ctx, KRR_DOUBLE, X, n, p, &pb);
  if (st == KRR_OK) st = krr_op_features_create(ctx, &pb, &k, M, seed, &op);
  if (st == KRR_OK && !((dZ = krr_dalloc(ctx, n * M, 8)) && (dO = krr_dalloc(ctx, n, 8)))) st = ctx->status;
  if (st == KRR_OK) st = krr_upload_vec(ctx, KRR_DOUBLE, V, n, &dV);
  if (st == KRR_OK) st = krr_op_features(op, NULL, dZ, n);
  if (st == KRR_OK) st = krr_download_vec(ctx, KRR_DOUBLE, dZ, n * M, Z);
  if (st == KRR_OK) st = krr_op_mv(op, NULL, NULL, dV, n, 1, dO, n);
  if (st == KRR_OK) st = krr_download_vec(ctx, KRR_DOUBLE, dO, n, o);
  krr_dfree(ctx, &dZ); krr_dfree(ctx, &dV); krr_dfree(ctx, &dO);
  krr_op_free(op);
  krr_problem_free(ctx, &pb);
  free(V);
  return st == KRR_OK;
}

static void test_determinism(const krr_ops *ops, const double *X, int64_t n, int p) {
  const int64_t M = 4096; /* chunks of 512 rows: the GEMMs and the map split over 2 threads */
  double *Z1 = malloc(sizeof(double) * n * M), *Z2 = malloc(sizeof(double) * n * M),
         *o1 = malloc(sizeof(double) * n), *o2 = malloc(sizeof(double) * n);
  krr_ctx c1, c2;
  int ok = krr_ctx_init(&c1, ops, krr_cpu_ops(), 1, 0) == KRR_OK &&
           krr_ctx_init(&c2, ops, krr_cpu_ops(), 2, 0) == KRR_OK;
  ok = ok && run_det(&c1, X, n, p, 17, M, Z1, o1) && run_det(&c2, X, n, p, 17, M, Z2, o2);
  CHECK(ok && memcmp(Z1, Z2, sizeof(double) * n * M) == 0 && memcmp(o1, o2, sizeof(double) * n) == 0,
        "features and mv must be bitwise equal with 1 and 2 threads (threads %d, %d)", c1.threads, c2.threads);
  ok = ok && run_det(&c2, X, n, p, 17, M, Z2, o2);
  CHECK(ok && memcmp(Z1, Z2, sizeof(double) * n * M) == 0, "same seed twice must give the same bits");
  ok = ok && run_det(&c2, X, n, p, 18, M, Z2, o2);
  CHECK(ok && memcmp(Z1, Z2, sizeof(double) * n * M) != 0, "another seed must give other features");
  krr_ctx_free(&c1);
  krr_ctx_free(&c2);
  free(Z1); free(Z2); free(o1); free(o2);
}

/* ---- prediction: krr_features_apply ---------------------------------------- */
static void test_apply(krr_ctx *ctx, const double *X, int64_t n, int p) {
  const int64_t M = 2048;
  const int m = 2;
  for (int kt = 0; kt < KRR_N_KERNELS; kt++) {
    krr_kernel k = {.type = (krr_kernel_type)kt, .bandwidth = 0.9};
    double *th = malloc(sizeof(double) * M * m), *Zh = malloc(sizeof(double) * n * M),
           *o = malloc(sizeof(double) * n * m), *r = malloc(sizeof(double) * n * m);
    for (int64_t i = 0; i < M * m; i++) th[i] = krr_rng_normal(8, (uint64_t)i);
    krr_clear(ctx);
    krr_status st = krr_features_apply(ctx, &k, p, M, 31, X, n, th, m, o);
    host_features(&k, X, n, p, NULL, n, M, 31, Zh);
    host_ab(Zh, n, M, th, M, m, r);
    double e = rel_diff(o, r, n * m);
    CHECK(st == KRR_OK && e <= 1e-12, "apply %s: status %d (%s), %.2e", krr_kernel_name(k.type), st, ctx->msg, e);
    free(th); free(Zh); free(o); free(r);
  }
}

/* ---- a squared-loss solve against ridge regression in the features -------------- */
static void test_solve(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p) {
  const int64_t M = 100;
  const int m = 2;
  const char *solvers[] = {"cholesky", "pcg", "bcd_features", "bcd_features"};
  const char *specs[] = {"", "rank=150", "block_size=32", "block_size=25 cache=no"};
  /* cholesky and pcg at lambda = 1e-3; random-feature BCD (plain block
   * Gauss-Seidel, whose rate degrades with cond(Z^T Z + lambda I)) at
   * lambda = 1, where it converges in a few hundred epochs on these
   * strongly correlated features (p = 3) */
  for (int run = 0; run < 2 * KRR_N_KERNELS; run++) {
    const int kt = run % KRR_N_KERNELS, bcd = run >= KRR_N_KERNELS;
    const double lambda = bcd ? 1.0 : 1e-3;
    krr_kernel k = {.type = (krr_kernel_type)kt, .bandwidth = 1.1};
    double *Zh = malloc(sizeof(double) * n * M), *H = malloc(sizeof(double) * M * M),
           *ts = malloc(sizeof(double) * M * m), *th = malloc(sizeof(double) * M * m),
           *w = malloc(sizeof(double) * n * m), *f1 = malloc(sizeof(double) * n * m),
           *f2 = malloc(sizeof(double) * n * m);
    host_features(&k, X, n, p, NULL, n, M, 4242, Zh);
    for (int64_t j = 0; j < M; j++)
      for (int64_t i = 0; i < M; i++) {
        double s = 0;
        for (int64_t l = 0; l < n; l++) s += Zh[l + i * n] * Zh[l + j * n];
        H[i + j * M] = s + (i == j ? lambda : 0);
      }
    for (int c = 0; c < m; c++)
      for (int64_t i = 0; i < M; i++) {
        double s = 0;
        for (int64_t l = 0; l < n; l++) s += Zh[l + i * n] * y[l + c * n];
        ts[i + c * M] = s;
      }
    int info = LAPACKE_dposv(LAPACK_COL_MAJOR, 'U', (lapack_int)M, m, H, (lapack_int)M, ts, (lapack_int)M);
    host_ab(Zh, n, M, ts, M, m, f2);
    tfit f;
    memset(&f, 0, sizeof f);
    f.ctx = ctx;
    krr_clear(ctx);
    krr_status st = krr_problem_create(ctx, KRR_DOUBLE, X, n, p, &f.pb);
    if (st == KRR_OK) st = krr_op_features_create(ctx, &f.pb, &k, M, 4242, &f.op);
    if (st == KRR_OK) st = krr_objective_init(ctx, f.op, krr_loss_lookup("squared"), lambda, y, m, &f.obj);
    for (int s = bcd ? 2 : 0; s < (bcd ? 4 : 2) && st == KRR_OK; s++) {
      double crit;
      krr_diag dg;
      krr_solver *sv = NULL;
      st = trun(&f, solvers[s], specs[s], 1e-12, 4000, 10, w, &crit, &dg, &sv);
      if (s >= 2 && sv)
        CHECK(textra(sv, "cached") == (s == 2 ? 1.0 : 0.0), "bcd_features cache: %g", textra(sv, "cached"));
      /* theta from the device weights */
      if (st == KRR_OK) st = krr_op_features_theta(f.op, f.obj.y, m, th); /* y as alpha: API smoke */
      void *dw = NULL;
      if (st == KRR_OK) st = krr_upload_vec(ctx, KRR_DOUBLE, w, n * m, &dw);
      if (st == KRR_OK) st = krr_op_features_theta(f.op, dw, m, th);
      krr_dfree(ctx, &dw);
      host_ab(Zh, n, M, th, M, m, f1);
      double e = rel_diff(f1, f2, n * m), et = rel_diff(th, ts, M * m);
      double tol = s == 1 ? 1e-7 : 1e-8;
      CHECK(st == KRR_OK && info == 0 && e <= tol, "solve %s %s on features: status %d (%s), predictions %.2e "
            "(theta %.2e, crit %.2e) vs ridge in the features", solvers[s], krr_kernel_name(k.type), st,
            ctx->msg, e, et, crit);
      if (getenv("KRR_VERBOSE"))
        printf("  solve %-8s %-8s: predictions %.2e theta %.2e crit %.2e iters %lld\n", solvers[s],
               krr_kernel_name(k.type), e, et, crit, (long long)dg.iter);
      if (bcd && sv && st == KRR_OK) {
        /* solving again at 3 lambda: the cached block factors must be dropped */
        double *G3 = malloc(sizeof(double) * M * M), *t3 = malloc(sizeof(double) * M * m);
        for (int64_t j = 0; j < M; j++)
          for (int64_t i = 0; i < M; i++) {
            double g = 0;
            for (int64_t l = 0; l < n; l++) g += Zh[l + i * n] * Zh[l + j * n];
            G3[i + j * M] = g + (i == j ? 3 * lambda : 0);
          }
        for (int c = 0; c < m; c++)
          for (int64_t i = 0; i < M; i++) {
            double g = 0;
            for (int64_t l = 0; l < n; l++) g += Zh[l + i * n] * y[l + c * n];
            t3[i + c * M] = g;
          }
        int i3 = LAPACKE_dposv(LAPACK_COL_MAJOR, 'U', (lapack_int)M, m, G3, (lapack_int)M, t3, (lapack_int)M);
        krr_status s3 = krr_solver_set_lambda(sv, 3 * lambda);
        for (int it = 0; s3 == KRR_OK && it < 400; it++) {
          if ((s3 = krr_solver_step(sv, 10)) != KRR_OK) break;
          if ((s3 = krr_solver_residual(sv, &crit)) != KRR_OK || crit <= 1e-12) break;
        }
        if (s3 == KRR_OK) s3 = krr_solver_weights(sv, w);
        if (s3 == KRR_OK) s3 = krr_upload_vec(ctx, KRR_DOUBLE, w, n * m, &dw);
        if (s3 == KRR_OK) s3 = krr_op_features_theta(f.op, dw, m, th);
        krr_dfree(ctx, &dw);
        CHECK(s3 == KRR_OK && i3 == 0 && rel_diff(th, t3, M * m) <= 1e-8,
              "bcd_features %s after set_lambda: theta %.2e (crit %.2e)", krr_kernel_name(k.type),
              rel_diff(th, t3, M * m), crit);
        f.obj.lambda = lambda;
        free(G3); free(t3);
      }
      krr_solver_free(sv);
    }
    tfit_free(&f);
    free(Zh); free(H); free(ts); free(th); free(w); free(f1); free(f2);
  }
}

/* ---- the shift operator ------------------------------------------------------------ */
static void test_shift(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p) {
  const double cc = 0.7;
  const int q = 2;
  const int64_t b = 29, M = 300;
  int64_t *ia = malloc(sizeof(int64_t) * b);
  for (int64_t i = 0; i < b; i++) ia[i] = (i * 97 + 11) % n;
  double *V = malloc(sizeof(double) * n * q), *Kh = malloc(sizeof(double) * n * n),
         *Kd = malloc(sizeof(double) * n * n), *o1 = malloc(sizeof(double) * n * q),
         *o2 = malloc(sizeof(double) * n * q), *dg = malloc(sizeof(double) * n),
         *Z = malloc(sizeof(double) * n * (M + 1)), *Zh = malloc(sizeof(double) * n * M);
  for (int64_t i = 0; i < n * q; i++) V[i] = krr_rng_normal(78, (uint64_t)i);
  krr_kernel k = {.type = KRR_MATERN52, .bandwidth = 1.4};
  for (int inner = 0; inner < 2; inner++)
    for (int pr = 0; pr < 2; pr++) {
      krr_precision prec = pr ? KRR_DOUBLE : KRR_FLOAT;
      const double tol = pr ? 1e-12 : 1e-5;
      const char *what = inner ? "features" : "exact";
      krr_problem pb;
      krr_op *in = NULL, *op = NULL;
      krr_clear(ctx);
      krr_status st = krr_problem_create(ctx, prec, X, n, p, &pb);
      if (st == KRR_OK)
        st = inner ? krr_op_features_create(ctx, &pb, &k, M, 7, &in) : krr_op_exact_create(ctx, &pb, k, &in);
      if (st == KRR_OK) st = krr_op_shift_create(in, cc, &op);
      CHECK(st == KRR_OK && op->nfeat == (inner ? M + 1 : 0), "shift over %s: %s", what, ctx->msg);
      if (st != KRR_OK) { krr_problem_free(ctx, &pb); continue; }
      /* the host K of the inner operator */
      if (inner) {
        host_features(&k, X, n, p, NULL, n, M, 7, Zh);
        host_abt(Zh, n, Zh, n, M, Kh);
      } else {
        for (int64_t j = 0; j < n; j++)
          for (int64_t i = 0; i < n; i++) Kh[i + j * n] = kxy(&k, X, n, i, X, n, j, p);
      }
      krr_arena a;
      krr_arena_init(&a, ctx);
      krr_block A;
      size_t es = op->es;
      void *dV = NULL, *dK = krr_arena_dev(&a, n * n, es), *dO = krr_arena_dev(&a, n * q, es);
      st = krr_block_alloc(op, &a, b, &A);
      if (st == KRR_OK) st = krr_block_set(op, &A, ia, b);
      if (st == KRR_OK) st = krr_upload_vec(ctx, prec, V, n * q, &dV);
      /* mv (A, all) and (all, all); mat (A, A) and (all, all); diag */
      double e1 = INFINITY, e2 = INFINITY, e3 = INFINITY, e4 = INFINITY, e5 = INFINITY;
      if (st == KRR_OK) st = krr_op_mv(op, &A, NULL, dV, n, q, dO, b);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, b * q, o1);
      if (st == KRR_OK) {
        for (int c = 0; c < q; c++)
          for (int64_t i = 0; i < b; i++) {
            double s = 0;
            for (int64_t j = 0; j < n; j++) s += (Kh[ia[i] + j * n] + cc) * V[j + c * n];
            o2[i + c * b] = s;
          }
        e1 = rel_diff(o1, o2, b * q);
      }
      if (st == KRR_OK) st = krr_op_mv(op, NULL, NULL, dV, n, q, dO, n);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, n * q, o1);
      if (st == KRR_OK) {
        for (int c = 0; c < q; c++)
          for (int64_t i = 0; i < n; i++) {
            double s = 0;
            for (int64_t j = 0; j < n; j++) s += (Kh[i + j * n] + cc) * V[j + c * n];
            o2[i + c * n] = s;
          }
        e2 = rel_diff(o1, o2, n * q);
      }
      if (st == KRR_OK) st = krr_op_mat(op, &A, &A, dK, b);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dK, b * b, Kd);
      if (st == KRR_OK) {
        e3 = 0;
        for (int64_t j = 0; j < b; j++)
          for (int64_t i = 0; i < b; i++) e3 = fmax(e3, fabs(Kd[i + j * b] - Kh[ia[i] + ia[j] * n] - cc));
      }
      if (st == KRR_OK) st = krr_op_mat(op, NULL, NULL, dK, n);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dK, n * n, Kd);
      if (st == KRR_OK) {
        e4 = 0;
        for (int64_t i = 0; i < n * n; i++) e4 = fmax(e4, fabs(Kd[i] - Kh[i] - cc));
      }
      if (st == KRR_OK) st = krr_op_diag(op, &A, dg);
      if (st == KRR_OK) {
        e5 = 0;
        for (int64_t i = 0; i < b; i++) e5 = fmax(e5, fabs(dg[i] - Kh[ia[i] + ia[i] * n] - cc));
      }
      CHECK(st == KRR_OK && e1 <= tol && e2 <= tol && e3 <= 10 * tol && e4 <= 10 * tol && e5 <= 10 * tol,
            "shift over %s %s: status %d (%s) mv(A,:) %.2e, mv(:,:) %.2e, mat(A,A) %.2e, mat %.2e, diag %.2e",
            what, pr ? "double" : "single", st, ctx->msg, e1, e2, e3, e4, e5);
      /* a subset of the shift is K_AA + c */
      krr_op *sub = NULL;
      double e6 = INFINITY;
      if (st == KRR_OK) st = krr_op_subset(op, &A, &sub);
      if (st == KRR_OK) st = krr_op_mat(sub, NULL, NULL, dK, b);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dK, b * b, Kd);
      if (st == KRR_OK) {
        e6 = 0;
        for (int64_t j = 0; j < b; j++)
          for (int64_t i = 0; i < b; i++) e6 = fmax(e6, fabs(Kd[i + j * b] - Kh[ia[i] + ia[j] * n] - cc));
      }
      krr_op_free(sub);
      CHECK(st == KRR_OK && e6 <= 10 * tol, "shift subset over %s: %.2e (%s)", what, e6, ctx->msg);
      if (inner && st == KRR_OK) {
        /* features [Z, sqrt(c)] and theta's last row sqrt(c) sum(alpha) */
        void *dZ = krr_arena_dev(&a, n * (M + 1), es);
        double *th = malloc(sizeof(double) * (M + 1) * q);
        st = krr_op_features(op, NULL, dZ, n);
        if (st == KRR_OK) st = krr_download_vec(ctx, prec, dZ, n * (M + 1), Z);
        double ez = 0, ec = 0, et = 0;
        for (int64_t i = 0; i < n * M; i++) ez = fmax(ez, fabs(Z[i] - Zh[i]));
        for (int64_t i = 0; i < n; i++) ec = fmax(ec, fabs(Z[n * M + i] - sqrt(cc)));
        if (st == KRR_OK) st = krr_op_features_theta(op, dV, q, th);
        for (int c = 0; c < q; c++) {
          double s = 0;
          for (int64_t i = 0; i < n; i++) s += pr ? V[i + c * n] : (double)(float)V[i + c * n];
          et = fmax(et, fabs(th[M + c * (M + 1)] - sqrt(cc) * s) / (1 + fabs(s)));
        }
        CHECK(st == KRR_OK && ez <= tol && ec <= tol && et <= tol,
              "shift features %s: Z %.2e, constant column %.2e, theta intercept %.2e (%s)",
              pr ? "double" : "single", ez, ec, et, ctx->msg);
        free(th);
      }
      if (!inner && pr && st == KRR_OK) {
        /* cholesky on K + c 11^T against the host solve */
        krr_objective obj;
        double *w = malloc(sizeof(double) * n * q), *H = malloc(sizeof(double) * n * n),
               *ws = malloc(sizeof(double) * n * q);
        const double lambda = 0.05;
        memcpy(ws, y, sizeof(double) * n * q);
        for (int64_t i = 0; i < n * n; i++) H[i] = Kh[i] + cc;
        for (int64_t i = 0; i < n; i++) H[i + i * n] += lambda;
        int info = LAPACKE_dposv(LAPACK_COL_MAJOR, 'U', (lapack_int)n, q, H, (lapack_int)n, ws, (lapack_int)n);
        st = krr_objective_init(ctx, op, krr_loss_lookup("squared"), lambda, y, q, &obj);
        krr_solver *sv = NULL;
        krr_options *o = topts(ctx, "cholesky", "");
        if (st == KRR_OK && o) st = krr_solver_init(ctx, op, &obj, o, &sv);
        if (st == KRR_OK) st = krr_solver_step(sv, 1);
        if (st == KRR_OK) st = krr_solver_weights(sv, w);
        double e = rel_diff(w, ws, n * q);
        CHECK(st == KRR_OK && info == 0 && e <= 1e-9, "cholesky on the shift: %.2e (%s)", e, ctx->msg);
        krr_solver_free(sv);
        krr_options_free(o);
        krr_objective_free(ctx, &obj);
        free(w); free(H); free(ws);
      }
      krr_dfree(ctx, &dV);
      krr_arena_free(&a);
      krr_op_free(op); /* frees the inner */
      krr_problem_free(ctx, &pb);
    }
  free(ia); free(V); free(Kh); free(Kd); free(o1); free(o2); free(dg); free(Z); free(Zh);
}

/* ---- the scale (observation weights) operator ------------------------------------ */
/* D K D with D = diag(d) over the exact and features operators: mv (block,
 * all), (all, all), (block, block); mat (block, block) and (all, all); diag;
 * a subset; features D Z; and a cholesky solve of (D K D + lambda I) v = D y
 * whose alpha = D v equals the host solve of (K + lambda W^{-1}) alpha = y,
 * W = D^2 (1e-9). */
static void test_scale(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p) {
  const int q = 2;
  const int64_t b = 31, M = 200;
  int64_t *ia = malloc(sizeof(int64_t) * b), *ib = malloc(sizeof(int64_t) * b);
  for (int64_t i = 0; i < b; i++) { ia[i] = (i * 97 + 11) % n; ib[i] = (i * 53 + 5) % n; }
  double *d = malloc(sizeof(double) * n), *V = malloc(sizeof(double) * n * q),
         *Kh = malloc(sizeof(double) * n * n), *Kd = malloc(sizeof(double) * n * n),
         *o1 = malloc(sizeof(double) * n * q), *o2 = malloc(sizeof(double) * n * q),
         *dg = malloc(sizeof(double) * n), *Z = malloc(sizeof(double) * n * M),
         *Zh = malloc(sizeof(double) * n * M);
  for (int64_t i = 0; i < n; i++) d[i] = 0.3 + 1.7 * krr_rng_unif(91, (uint64_t)i);
  for (int64_t i = 0; i < n * q; i++) V[i] = krr_rng_normal(79, (uint64_t)i);
  krr_kernel k = {.type = KRR_MATERN32, .bandwidth = 1.2};
  for (int inner = 0; inner < 2; inner++)
    for (int pr = 0; pr < 2; pr++) {
      krr_precision prec = pr ? KRR_DOUBLE : KRR_FLOAT;
      const double tol = pr ? 1e-12 : 1e-5;
      const char *what = inner ? "features" : "exact";
      krr_problem pb;
      krr_op *in = NULL, *op = NULL;
      krr_clear(ctx);
      krr_status st = krr_problem_create(ctx, prec, X, n, p, &pb);
      if (st == KRR_OK)
        st = inner ? krr_op_features_create(ctx, &pb, &k, M, 9, &in) : krr_op_exact_create(ctx, &pb, k, &in);
      if (st == KRR_OK) st = krr_op_scale_create(in, d, &op);
      CHECK(st == KRR_OK && op->nfeat == (inner ? M : 0), "scale over %s: %s", what, ctx->msg);
      if (st != KRR_OK) { krr_problem_free(ctx, &pb); continue; }
      /* the host D K D */
      if (inner) {
        host_features(&k, X, n, p, NULL, n, M, 9, Zh);
        host_abt(Zh, n, Zh, n, M, Kh);
      } else {
        for (int64_t j = 0; j < n; j++)
          for (int64_t i = 0; i < n; i++) Kh[i + j * n] = kxy(&k, X, n, i, X, n, j, p);
      }
      for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) Kh[i + j * n] *= d[i] * d[j];
      krr_arena a;
      krr_arena_init(&a, ctx);
      krr_block A, B;
      size_t es = op->es;
      void *dV = NULL, *dK = krr_arena_dev(&a, n * n, es), *dO = krr_arena_dev(&a, n * q, es);
      st = krr_block_alloc(op, &a, b, &A);
      if (st == KRR_OK) st = krr_block_alloc(op, &a, b, &B);
      if (st == KRR_OK) st = krr_block_set(op, &A, ia, b);
      if (st == KRR_OK) st = krr_block_set(op, &B, ib, b);
      if (st == KRR_OK) st = krr_upload_vec(ctx, prec, V, n * q, &dV);
      /* mv against the host D K D; rows ra of A (NULL: all), columns of B (NULL: all) */
      double e[7] = {INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY};
      const krr_block *As[3] = {&A, NULL, &A}, *Bs[3] = {NULL, NULL, &B};
      for (int c3 = 0; c3 < 3 && st == KRR_OK; c3++) {
        int64_t na = As[c3] ? b : n, nb = Bs[c3] ? b : n;
        /* V restricted to the rows of B (a b x q matrix, ld b) for a block B */
        double *Vb = malloc(sizeof(double) * nb * q);
        for (int c = 0; c < q; c++)
          for (int64_t j = 0; j < nb; j++) Vb[j + c * nb] = V[(Bs[c3] ? ib[j] : j) + c * n];
        void *dVb = NULL;
        st = krr_upload_vec(ctx, prec, Vb, nb * q, &dVb);
        if (st == KRR_OK) st = krr_op_mv(op, As[c3], Bs[c3], dVb, nb, q, dO, na);
        if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, na * q, o1);
        if (st == KRR_OK) {
          for (int c = 0; c < q; c++)
            for (int64_t i = 0; i < na; i++) {
              double sum = 0;
              int64_t r = As[c3] ? ia[i] : i;
              for (int64_t j = 0; j < nb; j++) sum += Kh[r + (Bs[c3] ? ib[j] : j) * n] * Vb[j + c * nb];
              o2[i + c * na] = sum;
            }
          e[c3] = rel_diff(o1, o2, na * q);
        }
        krr_dfree(ctx, &dVb);
        free(Vb);
      }
      if (st == KRR_OK) st = krr_op_mat(op, &A, &B, dK, b);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dK, b * b, Kd);
      if (st == KRR_OK) {
        e[3] = 0;
        for (int64_t j = 0; j < b; j++)
          for (int64_t i = 0; i < b; i++) e[3] = fmax(e[3], fabs(Kd[i + j * b] - Kh[ia[i] + ib[j] * n]));
      }
      if (st == KRR_OK) st = krr_op_mat(op, NULL, NULL, dK, n);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dK, n * n, Kd);
      if (st == KRR_OK) {
        e[4] = 0;
        for (int64_t i = 0; i < n * n; i++) e[4] = fmax(e[4], fabs(Kd[i] - Kh[i]));
      }
      if (st == KRR_OK) st = krr_op_diag(op, &A, dg);
      if (st == KRR_OK) {
        e[5] = 0;
        for (int64_t i = 0; i < b; i++) e[5] = fmax(e[5], fabs(dg[i] - Kh[ia[i] + ia[i] * n]));
      }
      /* a subset of the scale is D_A K_AA D_A */
      krr_op *sub = NULL;
      if (st == KRR_OK) st = krr_op_subset(op, &A, &sub);
      if (st == KRR_OK) st = krr_op_mat(sub, NULL, NULL, dK, b);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dK, b * b, Kd);
      if (st == KRR_OK) {
        e[6] = 0;
        for (int64_t j = 0; j < b; j++)
          for (int64_t i = 0; i < b; i++) e[6] = fmax(e[6], fabs(Kd[i + j * b] - Kh[ia[i] + ia[j] * n]));
      }
      krr_op_free(sub);
      CHECK(st == KRR_OK && e[0] <= tol && e[1] <= tol && e[2] <= tol && e[3] <= 10 * tol &&
                e[4] <= 10 * tol && e[5] <= 10 * tol && e[6] <= 10 * tol,
            "scale over %s %s: status %d (%s) mv(A,:) %.2e, mv(:,:) %.2e, mv(A,B) %.2e, mat(A,B) %.2e, "
            "mat %.2e, diag %.2e, subset %.2e", what, pr ? "double" : "single", st, ctx->msg, e[0], e[1],
            e[2], e[3], e[4], e[5], e[6]);
      if (inner && st == KRR_OK) {
        /* features D Z */
        void *dZ = krr_arena_dev(&a, n * M, es);
        st = krr_op_features(op, NULL, dZ, n);
        if (st == KRR_OK) st = krr_download_vec(ctx, prec, dZ, n * M, Z);
        double ez = 0;
        for (int64_t j = 0; j < M; j++)
          for (int64_t i = 0; i < n; i++) ez = fmax(ez, fabs(Z[i + j * n] - d[i] * Zh[i + j * n]));
        CHECK(st == KRR_OK && ez <= tol, "scale features %s: D Z %.2e (%s)", pr ? "double" : "single", ez,
              ctx->msg);
      }
      if (!inner && pr && st == KRR_OK) {
        /* cholesky on D K D with targets D y: alpha = D v solves (K + lambda W^-1) alpha = y */
        krr_objective obj;
        double *w = malloc(sizeof(double) * n * q), *H = malloc(sizeof(double) * n * n),
               *ws = malloc(sizeof(double) * n * q), *yd = malloc(sizeof(double) * n * q);
        const double lambda = 0.05;
        for (int c = 0; c < q; c++)
          for (int64_t i = 0; i < n; i++) { ws[i + c * n] = y[i + c * n]; yd[i + c * n] = d[i] * y[i + c * n]; }
        for (int64_t j = 0; j < n; j++)
          for (int64_t i = 0; i < n; i++) H[i + j * n] = Kh[i + j * n] / (d[i] * d[j]);
        for (int64_t i = 0; i < n; i++) H[i + i * n] += lambda / (d[i] * d[i]);
        int info = LAPACKE_dposv(LAPACK_COL_MAJOR, 'U', (lapack_int)n, q, H, (lapack_int)n, ws, (lapack_int)n);
        st = krr_objective_init(ctx, op, krr_loss_lookup("squared"), lambda, yd, q, &obj);
        krr_solver *sv = NULL;
        krr_options *o = topts(ctx, "cholesky", "");
        if (st == KRR_OK && o) st = krr_solver_init(ctx, op, &obj, o, &sv);
        if (st == KRR_OK) st = krr_solver_step(sv, 1);
        if (st == KRR_OK) st = krr_solver_weights(sv, w);
        for (int c = 0; c < q; c++)
          for (int64_t i = 0; i < n; i++) w[i + c * n] *= d[i];
        double err = rel_diff(w, ws, n * q);
        CHECK(st == KRR_OK && info == 0 && err <= 1e-9, "cholesky on the scale: %.2e (%s)", err, ctx->msg);
        krr_solver_free(sv);
        krr_options_free(o);
        krr_objective_free(ctx, &obj);
        free(w); free(H); free(ws); free(yd);
      }
      krr_dfree(ctx, &dV);
      krr_arena_free(&a);
      krr_op_free(op); /* frees the inner */
      krr_problem_free(ctx, &pb);
    }
  /* a non-positive scaling is an input error (the inner is freed) */
  krr_problem pb;
  krr_op *ex = NULL, *op = NULL;
  krr_clear(ctx);
  if (krr_problem_create(ctx, KRR_DOUBLE, X, n, p, &pb) == KRR_OK && krr_op_exact_create(ctx, &pb, k, &ex) == KRR_OK) {
    d[3] = 0;
    CHECK(krr_op_scale_create(ex, d, &op) == KRR_ERR_INPUT && !op && strstr(ctx->msg, "weights"),
          "scale with d = 0 must be an input error: %s", ctx->msg);
    krr_problem_free(ctx, &pb);
  } else {
    n_fail++;
  }
  free(ia); free(ib); free(d); free(V); free(Kh); free(Kd); free(o1); free(o2); free(dg); free(Z); free(Zh);
}

/* ---- input errors --------------------------------------------------------------- */
static void test_errors(krr_ctx *ctx, const double *X, int64_t n, int p) {
  krr_problem pb;
  krr_op *op = NULL, *ex = NULL;
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 1.0}, k0 = {.type = KRR_RBF, .bandwidth = 0.0},
             kbad = {.type = (krr_kernel_type)42, .bandwidth = 1.0};
  krr_clear(ctx);
  if (krr_problem_create(ctx, KRR_DOUBLE, X, n, p, &pb) != KRR_OK) { n_fail++; return; }
  krr_clear(ctx);
  CHECK(krr_op_features_create(ctx, &pb, &k, 0, 1, &op) == KRR_ERR_INPUT && !op, "M = 0 must be an input error");
  krr_clear(ctx);
  CHECK(krr_op_features_create(ctx, &pb, &k0, 10, 1, &op) == KRR_ERR_INPUT, "bandwidth 0 must be an input error");
  krr_clear(ctx);
  CHECK(krr_op_features_create(ctx, &pb, &kbad, 10, 1, &op) == KRR_ERR_INPUT, "unknown kernel: input error");
  double th = 1, out;
  krr_clear(ctx);
  CHECK(krr_features_apply(ctx, &k0, p, 1, 1, X, 1, &th, 1, &out) == KRR_ERR_INPUT, "apply: bandwidth 0");
  krr_clear(ctx);
  krr_status st = krr_op_exact_create(ctx, &pb, k, &ex);
  double t[4];
  krr_clear(ctx);
  CHECK(st == KRR_OK && krr_op_features_theta(ex, pb.X, 1, t) == KRR_ERR_INPUT && strstr(ctx->msg, "feature"),
        "theta of the exact operator must be an input error: %s", ctx->msg);
  krr_clear(ctx);
  CHECK(krr_op_shift_create(ex, -1.0, &op) == KRR_ERR_INPUT && !op, "shift c < 0 must be an input error");
  /* ex was freed by the failed shift_create (ownership) */
  krr_problem_free(ctx, &pb);
}

/* the first ns rows of a column-major n x p matrix */
static double *head_rows(const double *X, int64_t n, int p, int64_t ns) {
  double *h = malloc(sizeof(double) * ns * p);
  for (int l = 0; l < p; l++) memcpy(h + l * ns, X + l * n, sizeof(double) * ns);
  return h;
}

int main(int argc, char **argv) {
  krr_ctx ctx;
  int64_t n;
  int threads = 0;
  double *X, *y;
  (void)tfit_make;
  parse_test_args(argc, argv, &be_name, &threads, &n);
  if (test_start(argc, argv, 1100, &ctx, &n, &X, &y)) return 1;
  int p = 3;
  const char *only = getenv("ONLY");
  if (!only || strstr(only, "mc")) test_monte_carlo(&ctx, X, n, p);
  if (!only || strstr(only, "cons")) test_consistency(&ctx, X, n, p);
  if (!only || strstr(only, "det")) test_determinism(ctx.ops, X, n, p);
  if (!only || strstr(only, "apply")) test_apply(&ctx, X, n, p);
  for (int t = 0; t < 2; t++) {
    int64_t ns = KRR_MIN(n, t ? 200 : 300);
    double *Xs = head_rows(X, n, p, ns), *ys = head_rows(y, n, 2, ns);
    if (t == 0 && (!only || strstr(only, "solve"))) test_solve(&ctx, Xs, ys, ns, p);
    if (t == 1 && (!only || strstr(only, "shift"))) test_shift(&ctx, Xs, ys, ns, p);
    if (t == 1 && (!only || strstr(only, "scale"))) test_scale(&ctx, Xs, ys, ns, p);
    free(Xs); free(ys);
  }
  if (!only || strstr(only, "err")) test_errors(&ctx, X, n, p);
  free(X); free(y);
  krr_ctx_free(&ctx);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
