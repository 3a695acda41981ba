/* The composed training-set operator (op/compose.c, krr_op_compose) and the
 * observation-weight helpers, as R's krr() uses them (no R):
 *   test_compose [--backend cpu|cuda] [--threads T] [--n N]
 * Prints "N passed, N failed".  Data: p = 3, m = 2, X ~ N(0, 1), y smooth +
 * noise (test_common.h), seed 42; n = 150 by default.
 *
 *  1. Products: for the exact kernel, every combination of an intercept
 *     (c = 0, 0.7) and observation weights (none, d in [0.3, 2]), in double
 *     and single precision, K_op V (all rows, and a block of rows) against
 *     the host matrix D (K + c 1 1^T) D V built from kernel_math.h: relative
 *     error 1e-12 in double (a few rounding errors per sum of n terms),
 *     1e-5 in single (float's 6e-8 times sums of n = 150 terms); the
 *     diagonal likewise.
 *  2. Random features: the composed operator is the chain of the
 *     constructors (features -> shift -> scale) made by hand: the same
 *     product bit for bit, and nfeat = M + 1 with an intercept.
 *  3. A communicator: with the serial communicator the exact kernel is
 *     sharded over one rank (the same product, 1e-12); features, an
 *     intercept or observation weights with a communicator are an input
 *     error naming the distributed fit, and nothing is returned.
 *  4. A weighted fit with an intercept, as R fits it: compose, targets D y
 *     (krr_obs_targets), the cholesky solver, alpha = D v
 *     (krr_obs_scale_rows) equals the host solve of
 *     (K + c 1 1^T + lambda W^{-1}) alpha = y, W = D^2 (1e-9: a Cholesky
 *     solve of a system whose condition number is below 1e4); dividing
 *     back (inverse = 1) gives v again (1e-15), and rows picked by an index
 *     list take the scalings of those rows.
 *  5. The linear operator (features code M < 0, K = X X^T): named
 *     "linear" with nfeat = p (p + 1 with an intercept); with an intercept
 *     and observation weights the product equals the hand-made chain
 *     linear -> shift -> scale bit for bit, and the host matrix
 *     D (X X^T + c 1 1^T) D V to 1e-12; refused with a communicator. */
#include "test_common.h"
#include "../src/core/dist/dist.h"
#include "../src/core/op/op.h"

static double kxy(const krr_kernel *k, const double *X, int64_t n, int64_t i, int64_t j, int p) {
  krr_kparams kp = krr_kparams_make(k);
  double t = 0;
  for (int d = 0; d < p; d++) {
    double dd = X[i + d * n] - X[j + d * n];
    t += krr_kernel_is_l1(k->type) ? fabs(dd) : dd * dd;
  }
  return krr_kernel_eval(kp, t);
}

/* host D (K + c 1 1^T) D (n x n, column-major); d NULL: D = I */
static void host_matrix(const krr_kernel *k, const double *X, int64_t n, int p, double c,
                        const double *d, double *K) {
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++)
      K[i + j * n] = (kxy(k, X, n, i, j, p) + c) * (d ? d[i] * d[j] : 1.0);
}

/* out (rows x q) = op's rows A (NULL: all) times V (n x q) on the device, downloaded */
static krr_status op_product(krr_ctx *ctx, krr_op *op, krr_precision prec, const int64_t *ia,
                             int64_t b, const double *V, int q, double *out) {
  int64_t n = op->n, rows = ia ? b : n;
  krr_arena a;
  krr_arena_init(&a, ctx);
  krr_block A;
  void *dV = NULL, *dO = krr_arena_dev(&a, rows * q, op->es);
  krr_status st = dO ? KRR_OK : KRR_ERR_MEMORY;
  if (st == KRR_OK && ia) st = krr_block_alloc(op, &a, b, &A);
  if (st == KRR_OK && ia) st = krr_block_set(op, &A, ia, b);
  if (st == KRR_OK) st = krr_upload_vec(ctx, prec, V, n * q, &dV);
  if (st == KRR_OK) st = krr_op_mv(op, ia ? &A : NULL, NULL, dV, n, q, dO, rows);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, rows * q, out);
  krr_dfree(ctx, &dV);
  krr_arena_free(&a);
  return st;
}

/* 1. exact kernel x intercept x observation weights x precision */
static void test_products(krr_ctx *ctx, const double *X, int64_t n, int p, const double *d) {
  const int q = 2;
  const int64_t b = 17;
  krr_kernel k = {.type = KRR_MATERN52, .bandwidth = 1.3};
  int64_t *ia = malloc(sizeof(int64_t) * b);
  for (int64_t i = 0; i < b; i++) ia[i] = (i * 37 + 5) % n;
  double *V = malloc(sizeof(double) * n * q), *K = malloc(sizeof(double) * n * n),
         *o1 = malloc(sizeof(double) * n * q), *o2 = malloc(sizeof(double) * n * q),
         *dg = malloc(sizeof(double) * n), *dh = malloc(sizeof(double) * n);
  for (int64_t i = 0; i < n * q; i++) V[i] = krr_rng_normal(83, (uint64_t)i);
  for (int pr = 0; pr < 2; pr++)
    for (int ci = 0; ci < 2; ci++)
      for (int wi = 0; wi < 2; wi++) {
        krr_precision prec = pr ? KRR_DOUBLE : KRR_FLOAT;
        const double tol = pr ? 1e-12 : 1e-5, c = ci ? 0.7 : 0.0;
        const double *dd = wi ? d : NULL;
        krr_problem pb;
        krr_op *op = NULL;
        krr_clear(ctx);
        krr_status st = krr_problem_create(ctx, prec, X, n, p, &pb);
        if (st == KRR_OK) st = krr_op_compose(ctx, &pb, k, 0, 0, c, dd, NULL, &op);
        CHECK(st == KRR_OK && op && op->n == n && op->nfeat == 0,
              "compose (prec %d, c %g, weights %d): %s", pr, c, wi, ctx->msg);
        if (st != KRR_OK) {
          krr_problem_free(ctx, &pb);
          continue;
        }
        host_matrix(&k, X, n, p, c, dd, K);
        double e[3] = {INFINITY, INFINITY, INFINITY};
        if (op_product(ctx, op, prec, NULL, 0, V, q, o1) == KRR_OK) {
          for (int cc = 0; cc < q; cc++)
            for (int64_t i = 0; i < n; i++) {
              double s = 0;
              for (int64_t j = 0; j < n; j++) s += K[i + j * n] * V[j + cc * n];
              o2[i + cc * n] = s;
            }
          e[0] = rel_diff(o1, o2, n * q);
        }
        if (op_product(ctx, op, prec, ia, b, V, q, o1) == KRR_OK) {
          for (int cc = 0; cc < q; cc++)
            for (int64_t i = 0; i < b; i++) {
              double s = 0;
              for (int64_t j = 0; j < n; j++) s += K[ia[i] + j * n] * V[j + cc * n];
              o2[i + cc * b] = s;
            }
          e[1] = rel_diff(o1, o2, b * q);
        }
        if (krr_op_diag(op, NULL, dg) == KRR_OK) {
          for (int64_t i = 0; i < n; i++) dh[i] = K[i + i * n];
          e[2] = rel_diff(dg, dh, n);
        }
        CHECK(e[0] <= tol && e[1] <= tol && e[2] <= tol,
              "compose (prec %d, c %g, weights %d): K V %.2e, K_B: V %.2e, diag %.2e (tol %g)", pr,
              c, wi, e[0], e[1], e[2], tol);
        krr_op_free(op);
        krr_problem_free(ctx, &pb);
      }
  free(ia);
  free(V);
  free(K);
  free(o1);
  free(o2);
  free(dg);
  free(dh);
}

/* 2. random features: the composed operator is the hand-made chain */
static void test_features_chain(krr_ctx *ctx, const double *X, int64_t n, int p, const double *d) {
  const int q = 2;
  const int64_t M = 64;
  const uint64_t seed = 11;
  const double c = 0.5;
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 1.1};
  double *V = malloc(sizeof(double) * n * q), *o1 = malloc(sizeof(double) * n * q),
         *o2 = malloc(sizeof(double) * n * q);
  for (int64_t i = 0; i < n * q; i++) V[i] = krr_rng_normal(89, (uint64_t)i);
  krr_problem pb;
  krr_op *op = NULL, *f = NULL, *sh = NULL, *hand = NULL;
  krr_clear(ctx);
  krr_status st = krr_problem_create(ctx, KRR_DOUBLE, X, n, p, &pb);
  if (st == KRR_OK) st = krr_op_compose(ctx, &pb, k, M, seed, c, d, NULL, &op);
  CHECK(st == KRR_OK && op && op->nfeat == M + 1, "compose features + intercept: nfeat %lld: %s",
        (long long)(op ? op->nfeat : -1), ctx->msg);
  if (st == KRR_OK) st = krr_op_features_create(ctx, &pb, &k, M, seed, &f);
  if (st == KRR_OK) st = krr_op_shift_create(f, c, &sh);
  if (st == KRR_OK) st = krr_op_scale_create(sh, d, &hand);
  int same = 0;
  if (st == KRR_OK && op_product(ctx, op, KRR_DOUBLE, NULL, 0, V, q, o1) == KRR_OK &&
      op_product(ctx, hand, KRR_DOUBLE, NULL, 0, V, q, o2) == KRR_OK)
    same = memcmp(o1, o2, sizeof(double) * n * q) == 0;
  CHECK(same, "compose features + intercept + weights: not the hand-made chain's product: %s",
        ctx->msg);
  krr_op_free(op);
  krr_op_free(hand);
  krr_problem_free(ctx, &pb);
  free(V);
  free(o1);
  free(o2);
}

/* 3. a communicator: sharded over one rank; the distributed fit's limits */
static void test_comm(krr_ctx *ctx, const double *X, int64_t n, int p, const double *d) {
  const int q = 1;
  krr_kernel k = {.type = KRR_LAPLACE, .bandwidth = 2.0};
  double *V = malloc(sizeof(double) * n), *K = malloc(sizeof(double) * n * n),
         *o1 = malloc(sizeof(double) * n), *o2 = malloc(sizeof(double) * n);
  for (int64_t i = 0; i < n; i++) V[i] = krr_rng_normal(97, (uint64_t)i);
  krr_comm *comm = krr_comm_serial();
  krr_problem pb;
  krr_op *op = NULL;
  krr_clear(ctx);
  krr_status st = krr_problem_create(ctx, KRR_DOUBLE, X, n, p, &pb);
  if (st == KRR_OK) st = krr_op_compose(ctx, &pb, k, 0, 0, 0.0, NULL, comm, &op);
  int64_t row0 = -1;
  CHECK(st == KRR_OK && op && krr_op_comm(op, &row0) == comm && row0 == 0,
        "compose with a communicator: not sharded: %s", ctx->msg);
  double e = INFINITY;
  if (st == KRR_OK && op_product(ctx, op, KRR_DOUBLE, NULL, 0, V, q, o1) == KRR_OK) {
    host_matrix(&k, X, n, p, 0.0, NULL, K);
    for (int64_t i = 0; i < n; i++) {
      double s = 0;
      for (int64_t j = 0; j < n; j++) s += K[i + j * n] * V[j];
      o2[i] = s;
    }
    e = rel_diff(o1, o2, n);
  }
  CHECK(e <= 1e-12, "compose sharded over one rank: K V %.2e", e);
  krr_op_free(op);
  /* features, an intercept, observation weights: refused with a communicator */
  const char *what[3] = {"features", "intercept", "observation weights"};
  for (int t = 0; t < 3 && st == KRR_OK; t++) {
    krr_clear(ctx);
    op = (krr_op *)&pb; /* not NULL: compose must reset it on failure */
    krr_status s2 = krr_op_compose(ctx, &pb, k, t == 0 ? 32 : 0, 3, t == 1 ? 1.0 : 0.0,
                                   t == 2 ? d : NULL, comm, &op);
    CHECK(s2 == KRR_ERR_INPUT && op == NULL && strstr(ctx->msg, "distributed fit"),
          "compose with a communicator and %s: status %d, msg \"%s\"", what[t], (int)s2, ctx->msg);
  }
  krr_clear(ctx);
  krr_problem_free(ctx, &pb);
  free(V);
  free(K);
  free(o1);
  free(o2);
}

/* 5. the linear operator: M < 0 */
static void test_linear(krr_ctx *ctx, const double *X, int64_t n, int p, const double *d) {
  const int q = 2;
  const double c = 0.3;
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 1.0}; /* not used by the linear operator */
  double *V = malloc(sizeof(double) * n * q), *o1 = malloc(sizeof(double) * n * q),
         *o2 = malloc(sizeof(double) * n * q), *o3 = malloc(sizeof(double) * n * q);
  for (int64_t i = 0; i < n * q; i++) V[i] = krr_rng_normal(101, (uint64_t)i);
  krr_problem pb;
  krr_op *op = NULL, *lin = NULL, *sh = NULL, *hand = NULL, *plain = NULL;
  krr_clear(ctx);
  krr_status st = krr_problem_create(ctx, KRR_DOUBLE, X, n, p, &pb);
  if (st == KRR_OK) st = krr_op_compose(ctx, &pb, k, -1, 0, 0.0, NULL, NULL, &plain);
  CHECK(st == KRR_OK && plain && !strcmp(plain->vt->name, "linear") && plain->nfeat == p,
        "compose linear: operator %s, nfeat %lld: %s", plain ? plain->vt->name : "none",
        (long long)(plain ? plain->nfeat : -1), ctx->msg);
  if (st == KRR_OK) st = krr_op_compose(ctx, &pb, k, -1, 0, c, d, NULL, &op);
  CHECK(st == KRR_OK && op && op->nfeat == p + 1, "compose linear + intercept: nfeat %lld: %s",
        (long long)(op ? op->nfeat : -1), ctx->msg);
  if (st == KRR_OK) st = krr_op_linear_create(ctx, &pb, &lin);
  if (st == KRR_OK) st = krr_op_shift_create(lin, c, &sh);
  if (st == KRR_OK) st = krr_op_scale_create(sh, d, &hand);
  int same = 0;
  double e = INFINITY;
  if (st == KRR_OK && op_product(ctx, op, KRR_DOUBLE, NULL, 0, V, q, o1) == KRR_OK &&
      op_product(ctx, hand, KRR_DOUBLE, NULL, 0, V, q, o2) == KRR_OK) {
    same = memcmp(o1, o2, sizeof(double) * n * q) == 0;
    for (int j = 0; j < q; j++)
      for (int64_t i = 0; i < n; i++) {
        double s = 0;
        for (int64_t l = 0; l < n; l++) {
          double t = c;
          for (int a = 0; a < p; a++) t += X[i + a * n] * X[l + a * n];
          s += d[i] * t * d[l] * V[l + j * n];
        }
        o3[i + j * n] = s;
      }
    e = rel_diff(o1, o3, n * q);
  }
  CHECK(same && e <= 1e-12,
        "compose linear + intercept + weights: hand-made chain %s, host matrix %.2e: %s",
        same ? "equal" : "differs", e, ctx->msg);
  krr_op_free(op);
  krr_op_free(hand);
  krr_op_free(plain);
  /* a communicator: refused */
  krr_clear(ctx);
  op = (krr_op *)&pb;
  krr_status s2 = krr_op_compose(ctx, &pb, k, -1, 0, 0.0, NULL, krr_comm_serial(), &op);
  CHECK(s2 == KRR_ERR_INPUT && op == NULL && strstr(ctx->msg, "distributed fit"),
        "compose linear with a communicator: status %d, msg \"%s\"", (int)s2, ctx->msg);
  krr_clear(ctx);
  krr_problem_free(ctx, &pb);
  free(V);
  free(o1);
  free(o2);
  free(o3);
}

/* 4. a weighted fit with an intercept, end to end */
static void test_weighted_fit(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p,
                              const double *d) {
  const int m = 2;
  const double c = 0.7, lambda = 0.05 * (double)n;
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 1.5};
  double *ys = malloc(sizeof(double) * n * m), *v = malloc(sizeof(double) * n * m),
         *alpha = malloc(sizeof(double) * n * m), *H = malloc(sizeof(double) * n * n),
         *ref = malloc(sizeof(double) * n * m);
  krr_problem pb;
  krr_op *op = NULL;
  krr_objective obj;
  memset(&obj, 0, sizeof obj);
  krr_solver *s = NULL;
  krr_options *o = NULL;
  krr_clear(ctx);
  krr_obs_targets(d, y, n, m, ys);
  krr_status st = krr_problem_create(ctx, KRR_DOUBLE, X, n, p, &pb);
  if (st == KRR_OK) st = krr_op_compose(ctx, &pb, k, 0, 0, c, d, NULL, &op);
  if (st == KRR_OK)
    st = krr_objective_init(ctx, op, krr_loss_lookup("squared"), lambda, ys, m, &obj);
  if (st == KRR_OK) st = krr_options_new(ctx, krr_solver_lookup("cholesky"), &o);
  if (st == KRR_OK) st = krr_solver_init(ctx, op, &obj, o, &s);
  if (st == KRR_OK) st = krr_solver_step(s, 1);
  if (st == KRR_OK) st = krr_solver_weights(s, v);
  CHECK(st == KRR_OK, "weighted fit: %s", ctx->msg);
  if (st == KRR_OK) {
    memcpy(alpha, v, sizeof(double) * n * m);
    krr_obs_scale_rows(d, NULL, n, m, alpha, 0);
    /* host (K + c 1 1^T + lambda W^{-1}) alpha = y, W = D^2 */
    host_matrix(&k, X, n, p, c, NULL, H);
    for (int64_t i = 0; i < n; i++) H[i + i * n] += lambda / (d[i] * d[i]);
    memcpy(ref, y, sizeof(double) * n * m);
    int info = LAPACKE_dposv(LAPACK_COL_MAJOR, 'U', (lapack_int)n, m, H, (lapack_int)n, ref,
                             (lapack_int)n);
    double e = info == 0 ? rel_diff(alpha, ref, n * m) : INFINITY;
    CHECK(e <= 1e-9, "weighted fit with an intercept: alpha vs the host solve %.2e (info %d)", e,
          info);
    /* back to v (a warm start's direction) */
    krr_obs_scale_rows(d, NULL, n, m, alpha, 1);
    double eb = rel_diff(alpha, v, n * m);
    CHECK(eb <= 1e-15, "krr_obs_scale_rows inverse: %.2e", eb);
    /* rows named by an index list (an inducing-point solver's centres) */
    int64_t idx[3] = {n - 1, 0, n / 2};
    double W[6] = {1, 2, 3, 4, 5, 6}, Wr[6];
    memcpy(Wr, W, sizeof W);
    krr_obs_scale_rows(d, idx, 3, 2, W, 0);
    int ok = 1;
    for (int j = 0; j < 2; j++)
      for (int i = 0; i < 3; i++) ok = ok && W[i + 3 * j] == Wr[i + 3 * j] * d[idx[i]];
    CHECK(ok, "krr_obs_scale_rows with an index list: not the scalings of the listed rows");
  }
  krr_solver_free(s);
  krr_options_free(o);
  krr_objective_free(ctx, &obj);
  krr_op_free(op);
  krr_problem_free(ctx, &pb);
  free(ys);
  free(v);
  free(alpha);
  free(H);
  free(ref);
}

int main(int argc, char **argv) {
  krr_ctx ctx;
  int64_t n;
  double *X, *y;
  (void)tfit_make;
  (void)trun;
  if (test_start(argc, argv, 150, &ctx, &n, &X, &y)) return 1;
  int p = 3;
  double *d = malloc(sizeof(double) * n);
  for (int64_t i = 0; i < n; i++) d[i] = 0.3 + 1.7 * krr_rng_unif(91, (uint64_t)i);
  test_products(&ctx, X, n, p, d);
  test_features_chain(&ctx, X, n, p, d);
  test_comm(&ctx, X, n, p, d);
  test_weighted_fit(&ctx, X, y, n, p, d);
  test_linear(&ctx, X, n, p, d);
  free(d);
  free(X);
  free(y);
  krr_ctx_free(&ctx);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
