/* Tests of the core's seams (no R):
 *   test_seams [--backend cpu|cuda] [--threads T] [--n N]
 *  - options: defaults from the tables, setting by name, unknown names and
 *    out-of-range values are input errors naming the option;
 *  - registry: every solver by name, its option table and diagnostics;
 *  - the exact kernel operator against a naive host evaluation: block
 *    products, materialised blocks, the diagonal, gather / scatter, a subset
 *    operator;
 *  - the squared loss: block gradient, primal and dual objectives and the
 *    duality gap against host formulas (the gap vanishes at the solution);
 *  - every solver solving again: new targets from the kept setup give the
 *    same weights, bit for bit, as a fresh fit; a new lambda (then zero
 *    weights) gives the same weights as a fresh fit at that lambda; a warm
 *    start from converged weights is converged after one iteration; a
 *    different number of right-hand sides rebuilds and again matches a fresh
 *    fit; the memory held never exceeds the estimate;
 *  - a failed setup replays its error on every later call;
 *  - krr_overlap's side task (where it runs, what it sees, failures);
 *  - products and triangular solves in polled pieces against one call, and
 *    with one right-hand side against host loops;
 *  - Falkon's fused K(X_B, X) K(X, X_B) V against host sums;
 *  - the likelihood gradient's contraction on any thread count.
 * Prints "N passed, N failed". */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../src/core/ops.h"
#include "../src/core/kernel_math.h"
#include "../src/core/op/op.h"
#include "../src/core/linalg/linalg.h"

#include "test_common.h"
#include <sys/stat.h>
#include <unistd.h>
#include "../src/cpu/cpu.h"

static int verbose = 0;

/* naive host K(X[i], X[j]) for column-major X (n rows) */
static double kij(const krr_kernel *k, const double *X, int64_t n, int p, int64_t i, int64_t j) {
  krr_kparams kp = krr_kparams_make(k);
  double t = 0;
  for (int d = 0; d < p; d++) {
    double dd = X[i + d * n] - X[j + d * n];
    t += krr_kernel_is_l1(k->type) ? fabs(dd) : dd * dd;
  }
  return krr_kernel_eval(kp, t);
}

static void test_options(krr_ctx *ctx) {
  CHECK(krr_solver_count() >= 7, "registry holds %d solvers", krr_solver_count());
  const char *names[] = {"askotch", "askotch_v1", "pcg", "falkon", "eigenpro", "eigenpro3", "cholesky"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const krr_solver_def *d = krr_solver_lookup(names[i]);
    CHECK(d && strcmp(krr_solver_name(d), names[i]) == 0 && krr_solver_title(d)[0],
          "solver %s not registered", names[i]);
    if (!d) continue;
    CHECK(krr_solver_supports(d, krr_loss_lookup("squared")), "%s must support the squared loss", names[i]);
    int seen_seed = 0;
    for (int j = 0; j < krr_options_count(d); j++) {
      krr_optinfo in;
      krr_options_info(d, j, &in);
      seen_seed += strcmp(in.name, "seed") == 0;
      CHECK(in.name && in.doc && in.doc[0], "%s option %d has no name or doc", names[i], j);
      for (int k = 0; k < j; k++) {
        krr_optinfo o2;
        krr_options_info(d, k, &o2);
        CHECK(strcmp(in.name, o2.name) != 0, "%s: option %s declared twice", names[i], in.name);
      }
    }
    CHECK(seen_seed == 1, "%s: the common option seed is missing", names[i]);
  }
  CHECK(krr_solver_lookup("nope") == NULL && krr_loss_lookup("nope") == NULL, "unknown names must give NULL");
  CHECK(krr_loss_count() >= 1 && strcmp(krr_loss_name(krr_loss_get(0)), "squared") == 0,
        "the squared loss must be the first entry");

  krr_options *o = topts(ctx, "askotch", "");
  CHECK(o != NULL, "askotch options: %s", ctx->msg);
  if (!o) return;
  const krr_solver_def *d = krr_options_solver(o);
  for (int j = 0; j < krr_options_count(d); j++) {
    krr_optinfo in;
    krr_options_info(d, j, &in);
    double num;
    double v = krr_options_value(o, j, &num);
    if (strcmp(in.name, "power_iters") == 0) CHECK(v == 10, "power_iters default %g", v);
    if (strcmp(in.name, "accelerated") == 0) CHECK(v == 1, "accelerated default %g", v);
    if (strcmp(in.name, "rho") == 0) CHECK(v == 0, "rho default mode %g", v);
    if (in.type == KRR_OPT_INT || in.type == KRR_OPT_REAL) CHECK(v == in.def, "%s: value %g != default %g", in.name, v, in.def);
  }
  struct { const char *spec, *name; } bad[] = {
      {"rankk=3", "rankk"},       {"rank=0", "rank"},           {"rank=2.5", "rank"},
      {"rho=-1", "rho"},          {"rho=big", "rho"},           {"sampling=leverage", "sampling"},
      {"mem_limit=-1", "mem_limit"}, {"seed=-1", "seed"},       {"seed=1e300", "seed"},
      {"power_iters=1001", "power_iters"}, {"block_size=nan", "block_size"}, {"accelerated=2", "accelerated"},
      {"mu=0", "mu"},             {"rank", "rank"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    krr_clear(ctx);
    krr_status st = krr_options_parse(ctx, o, bad[i].spec);
    char want[64];
    snprintf(want, sizeof want, "`%s`", bad[i].name);
    CHECK(st == KRR_ERR_INPUT && (strstr(ctx->msg, want) || strstr(ctx->msg, bad[i].name)),
          "option \"%s\" must be an input error naming %s (got %d: %s)", bad[i].spec, want, st, ctx->msg);
  }
  krr_clear(ctx);
  CHECK(krr_options_parse(ctx, o, "rank=7 rho=regularization sampling=rls mu=0.5") == KRR_OK, "valid options: %s", ctx->msg);
  krr_options *c = NULL;
  CHECK(krr_options_copy(ctx, o, &c) == KRR_OK, "copy");
  for (int j = 0; c && j < krr_options_count(d); j++) {
    double a1, a2;
    CHECK(krr_options_value(o, j, &a1) == krr_options_value(c, j, &a2), "copy differs at %d", j);
  }
  krr_options_free(c);
  krr_options_free(o);
  /* index vectors are copied */
  o = topts(ctx, "falkon", "");
  int64_t idx[3] = {4, 1, 9};
  CHECK(o && krr_options_set_indices(ctx, o, "centers", idx, 3) == KRR_OK, "set centres");
  idx[0] = 99;
  krr_options *c2 = NULL;
  if (o) krr_options_copy(ctx, o, &c2);
  for (int j = 0; c2 && j < krr_options_count(d = krr_options_solver(c2)); j++) {
    int64_t len = 0;
    const int64_t *v = krr_options_indices(c2, j, &len);
    if (v) CHECK(len == 3 && v[0] == 4 && v[2] == 9, "centres not copied");
  }
  krr_clear(ctx);
  CHECK(o && krr_options_set_num(ctx, o, "centers", 3) == KRR_ERR_INPUT, "a number for centers must be an error");
  krr_options_free(c2);
  krr_options_free(o);
}

static void test_operator(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p, int m) {
  int64_t b = 37, c = 23;
  int64_t *ia = malloc(sizeof(int64_t) * b), *ib = malloc(sizeof(int64_t) * c);
  for (int64_t i = 0; i < b; i++) ia[i] = (i * 131 + 7) % n;
  for (int64_t i = 0; i < c; i++) ib[i] = (i * 211 + 3) % n;
  double *V = malloc(sizeof(double) * n * m), *out = malloc(sizeof(double) * n * m);
  double *ref = malloc(sizeof(double) * n * m), *Kh = malloc(sizeof(double) * b * c);
  for (int64_t i = 0; i < n * m; i++) V[i] = krr_rng_normal(77, (uint64_t)i);
  for (int kt = 0; kt < KRR_N_KERNELS; kt++)
    for (int pr = 0; pr < 2; pr++) {
      krr_kernel k = {.type = (krr_kernel_type)kt, .bandwidth = 1.7};
      krr_precision prec = pr ? KRR_DOUBLE : KRR_FLOAT;
      double tol = pr ? 1e-12 : 2e-5;
      tfit f;
      krr_clear(ctx);
      if (tfit_make(ctx, prec, X, n, p, y, m, k, 1.0, &f) != KRR_OK) return;
      krr_op *op = f.op;
      krr_arena a;
      krr_arena_init(&a, ctx);
      krr_block A, B;
      krr_status st = krr_block_alloc(op, &a, b, &A);
      if (st == KRR_OK) st = krr_block_alloc(op, &a, c, &B);
      if (st == KRR_OK) st = krr_block_set(op, &A, ia, b);
      if (st == KRR_OK) st = krr_block_set(op, &B, ib, c);
      void *dV = NULL, *dO = NULL, *dK = NULL;
      if (st == KRR_OK) st = krr_upload_vec(ctx, prec, V, n * m, &dV);
      dO = krr_arena_dev(&a, n * m, op->es);
      dK = krr_arena_dev(&a, b * c, op->es);
      /* K(X_A, X) V */
      if (st == KRR_OK) st = krr_op_mv(op, &A, NULL, dV, n, m, dO, b);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, b * m, out);
      for (int64_t i = 0; i < b; i++)
        for (int q = 0; q < m; q++) {
          double sum = 0;
          for (int64_t j = 0; j < n; j++) sum += kij(&k, X, n, p, ia[i], j) * V[j + q * n];
          ref[i + q * b] = sum;
        }
      double e1 = rel_diff(out, ref, b * m);
      /* K(X_A, X_B) materialised and K(X, X_B) V_B (n x m) */
      if (st == KRR_OK) st = krr_op_mat(op, &A, &B, dK, b);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dK, b * c, Kh);
      double e2 = 0;
      for (int64_t j = 0; j < c; j++)
        for (int64_t i = 0; i < b; i++) e2 = fmax(e2, fabs(Kh[i + j * b] - kij(&k, X, n, p, ia[i], ib[j])));
      if (st == KRR_OK) st = krr_op_mv(op, NULL, &B, dV, n, m, dO, n);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, n * m, out);
      for (int64_t i = 0; i < n; i++)
        for (int q = 0; q < m; q++) {
          double sum = 0;
          for (int64_t j = 0; j < c; j++) sum += kij(&k, X, n, p, i, ib[j]) * V[j + q * n];
          ref[i + q * n] = sum;
        }
      double e3 = rel_diff(out, ref, n * m);
      /* Falkon's K(X_B, X) K(X, X_B) V_B (fused on the CPU, two products on
       * a device); ref holds K(X, X_B) V_B */
      void *dG = krr_arena_dev(&a, c * m, op->es);
      void *dGw = krr_arena_dev(&a, (int64_t)krr_op_gram_bytes(op, c, m), 1);
      if (st == KRR_OK)
        st = dG && dGw ? krr_op_gram_mv(op, &B, dV, n, m, dG, c, dGw) : KRR_ERR_MEMORY;
      double *gh = malloc(sizeof(double) * c * m), *gref = malloc(sizeof(double) * c * m);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dG, c * m, gh);
      for (int64_t j = 0; j < c; j++)
        for (int q = 0; q < m; q++) {
          double sum = 0;
          for (int64_t i = 0; i < n; i++) sum += kij(&k, X, n, p, i, ib[j]) * ref[i + q * n];
          gref[j + q * c] = sum;
        }
      double e7 = rel_diff(gh, gref, c * m);
      free(gh);
      free(gref);
      /* diagonal and trace */
      double *dg = malloc(sizeof(double) * n), tr = 0, e4 = 0;
      if (st == KRR_OK) st = krr_op_diag(op, &A, dg);
      for (int64_t i = 0; i < b; i++) e4 = fmax(e4, fabs(dg[i] - kij(&k, X, n, p, ia[i], ia[i])));
      if (st == KRR_OK) st = krr_op_trace(op, NULL, &tr);
      double trh = 0;
      for (int64_t i = 0; i < n; i++) trh += kij(&k, X, n, p, i, i);
      /* gather rows of V, scatter them back doubled */
      if (st == KRR_OK) st = krr_op_gather(op, &A, dV, m, dO, b);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, b * m, out);
      double e5 = 0;
      for (int64_t i = 0; i < b; i++)
        for (int q = 0; q < m; q++) {
          double v = V[ia[i] + q * n];
          e5 = fmax(e5, fabs(out[i + q * b] - (pr ? v : (double)(float)v)));
        }
      /* a subset operator: K(X_A, X_A) V_A equals the parent's K(X_A, X_A) */
      krr_op *sub = NULL;
      if (st == KRR_OK) st = krr_op_subset(op, &A, &sub);
      double e6 = INFINITY;
      if (st == KRR_OK) {
        void *o1 = krr_arena_dev(&a, b * m, op->es), *o2 = krr_arena_dev(&a, b * m, op->es);
        double *h1 = malloc(sizeof(double) * b * m), *h2 = malloc(sizeof(double) * b * m);
        st = krr_op_mv(sub, NULL, NULL, dO, b, m, o1, b);
        if (st == KRR_OK) st = krr_op_mv(op, &A, &A, dO, b, m, o2, b);
        if (st == KRR_OK) st = krr_download_vec(ctx, prec, o1, b * m, h1);
        if (st == KRR_OK) st = krr_download_vec(ctx, prec, o2, b * m, h2);
        e6 = rel_diff(h1, h2, b * m);
        CHECK(sub->n == b, "subset rows %lld", (long long)sub->n);
        free(h1); free(h2);
      }
      krr_op_free(sub);
      CHECK(st == KRR_OK && e7 <= tol, "operator %s %s: Falkon's product error %.2e",
            krr_kernel_name(k.type), pr ? "double" : "single", e7);
      CHECK(st == KRR_OK && e1 <= tol && e2 <= tol && e3 <= tol && e4 == 0 &&
                fabs(tr - trh) <= 1e-12 * n && e5 == 0 && e6 <= 1e-14,
            "operator %s %s: status %d (%s) K_A: %.2e, K_AB: %.2e, K_:B: %.2e, diag %.2e, trace %.6g vs %.6g, "
            "gather %.2e, subset %.2e", krr_kernel_name(k.type), pr ? "double" : "single", st, ctx->msg,
            e1, e2, e3, e4, tr, trh, e5, e6);
      free(dg);
      krr_dfree(ctx, &dV);
      krr_arena_free(&a);
      CHECK(a.bytes == 0 && a.items == NULL, "arena not empty after free");
      tfit_free(&f);
    }
  free(ia); free(ib); free(V); free(out); free(ref); free(Kh);
}

/* squared loss: P, D and the gap against host formulas; zero gap at the solution */
static void test_loss(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p, int m) {
  krr_kernel k = {.type = KRR_MATERN32, .bandwidth = 2.0};
  double lambda = 0.3 * n / 100.0;
  double *w = malloc(sizeof(double) * n * m), *F = malloc(sizeof(double) * n * m);
  tfit f;
  if (tfit_make(ctx, KRR_DOUBLE, X, n, p, y, m, k, lambda, &f) != KRR_OK) return;
  const krr_objective *obj = &f.obj;
  CHECK(obj->loss == krr_loss_lookup("squared") && obj->lambda == lambda && obj->m == m, "objective fields");
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 0) { /* an arbitrary point */
      for (int64_t i = 0; i < n * m; i++) w[i] = 0.01 * krr_rng_normal(31, (uint64_t)i);
    } else { /* the solution */
      double rr;
      krr_diag dg;
      trun(&f, "cholesky", "", 0, 1, 1, w, &rr, &dg, NULL);
    }
    krr_kernel_apply_host(ctx, KRR_DOUBLE, &k, X, n, X, n, p, w, m, F);
    double aKa = 0, ls = 0, cs = 0;
    for (int64_t i = 0; i < n * m; i++) {
      aKa += w[i] * F[i];
      ls += 0.5 * (F[i] - y[i]) * (F[i] - y[i]);
      cs += 0.5 * lambda * lambda * w[i] * w[i] - lambda * w[i] * y[i];
    }
    double P_h = 0.5 * aKa + ls / lambda, D_h = 0.5 * aKa + cs / lambda;
    /* the criterion: the worst column's relative residual (Frobenius for m = 1) */
    double crit_h = 0;
    for (int c = 0; c < m; c++) {
      double rc = 0, yc = 0;
      for (int64_t i = c * n; i < (c + 1) * n; i++) {
        double r = F[i] + lambda * w[i] - y[i];
        rc += r * r;
        yc += y[i] * y[i];
      }
      crit_h = fmax(crit_h, sqrt(rc / yc));
    }
    void *dw = NULL, *dF = NULL, *work = NULL;
    krr_upload_vec(ctx, KRR_DOUBLE, w, n * m, &dw);
    krr_upload_vec(ctx, KRR_DOUBLE, F, n * m, &dF);
    krr_upload_vec(ctx, KRR_DOUBLE, F, n * m, &work);
    double P = 0, D = 0, crit = 0;
    krr_status st = krr_objective_values(f.op, obj, dw, dF, work, &P, &D);
    if (st == KRR_OK) st = krr_objective_criterion(f.op, obj, dw, dF, work, &crit);
    if (verbose) printf("loss %s: P %.10g (%.10g) D %.10g (%.10g) gap %.3g crit %.3g\n", pass ? "solution" : "point", P, P_h, D, D_h, P + D, crit);
    CHECK(st == KRR_OK && fabs(P - P_h) <= 1e-10 * fabs(P_h) && fabs(D - D_h) <= 1e-10 * fmax(1, fabs(D_h)) &&
              fabs(crit - crit_h) <= 1e-10 * crit_h + 1e-15,
          "squared loss at the %s: P %.12g vs %.12g, D %.12g vs %.12g, crit %.3g vs %.3g (%s)",
          pass ? "solution" : "point", P, P_h, D, D_h, crit, crit_h, ctx->msg);
    if (pass == 0) CHECK(P + D > 1e-6 * fabs(P), "the duality gap at a non-optimal point must be positive: %g", P + D);
    else CHECK(fabs(P + D) <= 1e-9 * fabs(P), "the duality gap at the solution must vanish: %g (P %g)", P + D, P);
    /* the block gradient on a block = the residual rows */
    krr_arena a;
    krr_arena_init(&a, ctx);
    krr_block B;
    int64_t bi[5] = {0, 3, 17, 40, n - 1};
    void *g = krr_arena_dev(&a, 5 * m, 8), *gb = krr_arena_dev(&a, 5 * m, 8), *wk = krr_arena_dev(&a, 5 * m, 8);
    double gn = 0, ybn = 0, gh[64];
    st = krr_block_alloc(f.op, &a, 5, &B);
    if (st == KRR_OK) st = krr_block_set(f.op, &B, bi, 5);
    if (st == KRR_OK) st = krr_block_gradient(f.op, obj, &B, dw, g, gb, wk, &gn, &ybn);
    if (st == KRR_OK) st = krr_download_vec(ctx, KRR_DOUBLE, g, 5 * m, gh);
    double e = 0;
    for (int q = 0; q < m; q++)
      for (int i = 0; i < 5; i++) {
        int64_t r = bi[i] + q * n;
        e = fmax(e, fabs(gh[i + q * 5] - (F[r] + lambda * w[r] - y[r])));
      }
    CHECK(st == KRR_OK && e <= 1e-10, "block gradient error %.3g (%s)", e, ctx->msg);
    krr_arena_free(&a);
    krr_dfree(ctx, &dw); krr_dfree(ctx, &dF); krr_dfree(ctx, &work);
  }
  tfit_free(&f);
  free(w); free(F);
}

typedef struct {
  const char *label, *solver, *spec; /* spec: "%lld" is replaced by min(size, n) */
  int64_t size;
  double tol;       /* converged criterion for the warm start (0: not a converging method) */
  int64_t iters;    /* iterations of the bitwise comparisons */
} rcase;

static const rcase rcases[] = {
    {"askotch", "askotch", "block_size=%lld rank=30 seed=3", 100, 1e-10, 12},
    /* the rank by the spectrum (chosen again at a new lambda), and all defaults */
    {"askotch/rank", "askotch", "block_size=%lld seed=3", 100, 1e-10, 12},
    {"askotch/dflt", "askotch", "seed=%lld", 3, 1e-10, 12},
    {"skotch", "askotch", "accelerated=0 block_size=%lld rank=30 seed=3", 100, 1e-10, 12},
    {"nsap", "askotch", "block_solve=exact block_size=%lld seed=3", 100, 1e-10, 12},
    {"askotch/rls", "askotch", "sampling=rls rls_subsample=%lld block_size=100 rank=30 seed=3", 200, 1e-10, 12},
    {"askotch_v1", "askotch_v1", "block_size=%lld rank=30 seed=3", 100, 1e-10, 12},
    {"pcg/nystrom", "pcg", "rank=%lld seed=3", 40, 1e-11, 6},
    {"pcg/rpcholesky", "pcg", "preconditioner=rpcholesky rank=%lld seed=3", 40, 1e-11, 6},
    {"falkon", "falkon", "n_centers=%lld seed=3", 60, 1e-11, 6},
    {"eigenpro", "eigenpro", "subsample=%lld rank=30 seed=3", 300, 1e-8, 20},
    {"eigenpro3", "eigenpro3", "n_centers=%lld rank=20 seed=3", 80, 0, 6},
    {"cholesky", "cholesky", "seed=%lld", 3, 1e-12, 1},
};

/* k iterations from the current state */
static krr_status steps(krr_solver *s, int64_t k, double *w) {
  krr_status st = krr_solver_step(s, k);
  return st == KRR_OK ? krr_solver_weights(s, w) : st;
}

static void test_resolve(krr_ctx *ctx, const double *X, const double *y, int64_t n, int p, int m) {
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 2.0};
  double lam1 = 1e-2 * n, lam2 = 3e-3 * n;
  int64_t len = n * (m + 1);
  double *y2 = malloc(sizeof(double) * n * (m + 1)), *y3 = malloc(sizeof(double) * n * (m + 1));
  for (int64_t i = 0; i < n * m; i++) y2[i] = y[i] * 0.5 + 0.3 * krr_rng_normal(5, (uint64_t)i);
  for (int64_t i = 0; i < n * (m + 1); i++) y3[i] = i < n * m ? y[i] : sin((double)(i - n * m));
  double *wa = malloc(sizeof(double) * len), *wb = malloc(sizeof(double) * len);
  double *zero = calloc((size_t)len, sizeof(double));
  for (size_t c = 0; c < sizeof rcases / sizeof rcases[0]; c++) {
    rcase r0 = rcases[c];
    char spec[160];
    snprintf(spec, sizeof spec, r0.spec, (long long)(r0.size < n / 2 ? r0.size : n / 2));
    r0.spec = spec;
    const rcase *rc = &r0;
    tfit f1, f2;
    if (tfit_make(ctx, KRR_DOUBLE, X, n, p, y, m, k, lam1, &f1) != KRR_OK) return;
    if (tfit_make(ctx, KRR_DOUBLE, X, n, p, y2, m, k, lam1, &f2) != KRR_OK) return;
    krr_solver *s = NULL, *fresh = NULL;
    krr_status st = tinit(&f1, rc->solver, rc->spec, &s);
    CHECK(st == KRR_OK, "%s init: %s", rc->label, ctx->msg);
    if (st != KRR_OK) { tfit_free(&f1); tfit_free(&f2); continue; }
    int64_t rows = krr_solver_weights_rows(s), wl = rows * m;
    /* 1. new targets: same weights as a fresh fit on them */
    st = steps(s, rc->iters, wa);
    if (st == KRR_OK) st = krr_solver_set_targets(s, y2, m);
    if (st == KRR_OK) st = steps(s, rc->iters, wa);
    krr_status st2 = tinit(&f2, rc->solver, rc->spec, &fresh);
    if (st2 == KRR_OK) st2 = steps(fresh, rc->iters, wb);
    krr_solver_free(fresh);
    CHECK(st == KRR_OK && st2 == KRR_OK && memcmp(wa, wb, sizeof(double) * wl) == 0,
          "%s: new targets differ from a fresh fit (%d %d, %s; rel diff %.3g)", rc->label, st, st2, ctx->msg,
          rel_diff(wa, wb, wl));
    /* 2. a new lambda, then zero weights: same as a fresh fit at that lambda */
    krr_diag d0;
    if (st == KRR_OK) st = krr_solver_set_lambda(s, lam2);
    if (st == KRR_OK) st = krr_solver_set_weights(s, zero);
    krr_solver_diag(s, &d0);
    CHECK(d0.iter == 0 && d0.passes == 0, "%s: the counters must restart (iter %lld)", rc->label, (long long)d0.iter);
    if (st == KRR_OK) st = steps(s, rc->iters, wa);
    f2.obj.lambda = lam2;
    fresh = NULL;
    st2 = tinit(&f2, rc->solver, rc->spec, &fresh);
    if (st2 == KRR_OK) st2 = steps(fresh, rc->iters, wb);
    CHECK(st == KRR_OK && st2 == KRR_OK && memcmp(wa, wb, sizeof(double) * wl) == 0,
          "%s: a new lambda differs from a fresh fit (%d %d, %s; rel diff %.3g)", rc->label, st, st2, ctx->msg,
          rel_diff(wa, wb, wl));
    /* 3. warm start from converged weights: converged after one iteration */
    if (rc->tol > 0 && st2 == KRR_OK) {
      double crit = INFINITY, c1 = INFINITY;
      krr_diag dg;
      for (int it = 0; it < 3000 && crit > rc->tol; it++) {
        if (krr_solver_step(fresh, rc->iters) != KRR_OK || krr_solver_residual(fresh, &crit) != KRR_OK) break;
        krr_solver_diag(fresh, &dg);
        if (dg.done) break;
      }
      krr_solver_weights(fresh, wb);
      krr_solver *w2 = NULL;
      st2 = tinit(&f2, rc->solver, rc->spec, &w2);
      if (st2 == KRR_OK) st2 = krr_solver_set_weights(w2, wb);
      if (st2 == KRR_OK) st2 = krr_solver_step(w2, 1);
      if (st2 == KRR_OK) st2 = krr_solver_residual(w2, &c1);
      krr_solver_diag(w2, &dg);
      if (verbose)
        printf("%-14s warm start: criterion %.2e -> %.2e after 1 iteration (estimate %.2e)\n", rc->label, crit, c1, dg.resid_est);
      CHECK(st2 == KRR_OK && crit <= rc->tol && c1 <= 10 * rc->tol && (dg.done || dg.resid_est <= 100 * rc->tol),
            "%s: warm start from converged weights (criterion %.3g) gives %.3g after one iteration (estimate %.3g): %s",
            rc->label, crit, c1, dg.resid_est, ctx->msg);
      krr_solver_free(w2);
    }
    krr_solver_free(fresh);
    /* 4. another number of right-hand sides rebuilds; again a fresh fit's weights */
    tfit f3;
    if (tfit_make(ctx, KRR_DOUBLE, X, n, p, y3, m + 1, k, lam2, &f3) != KRR_OK) return;
    if (st == KRR_OK) st = krr_solver_set_targets(s, y3, m + 1);
    if (st == KRR_OK) st = steps(s, rc->iters, wa);
    fresh = NULL;
    st2 = tinit(&f3, rc->solver, rc->spec, &fresh);
    if (st2 == KRR_OK) st2 = steps(fresh, rc->iters, wb);
    CHECK(st == KRR_OK && st2 == KRR_OK && memcmp(wa, wb, sizeof(double) * rows * (m + 1)) == 0,
          "%s: %d right-hand sides differ from a fresh fit (%d %d, %s)", rc->label, m + 1, st, st2, ctx->msg);
    /* 5. the memory held stays within the estimate */
    double used = krr_solver_memory_used(s), est = krr_solver_memory_estimate(s);
    if (verbose) printf("%-14s memory: held %.0f bytes, estimate %.0f\n", rc->label, used, est);
    CHECK(used <= est, "%s: holds %.0f bytes, more than its estimate %.0f", rc->label, used, est);
    krr_solver_free(fresh);
    krr_solver_free(s);
    tfit_free(&f3);
    tfit_free(&f1);
    tfit_free(&f2);
  }
  free(y2); free(y3); free(wa); free(wb); free(zero);
}

/* a setup that fails replays its error; nothing crashes */
static void test_failures(krr_ctx *ctx, const double *X, int64_t n, int p) {
  /* duplicated points in single precision with a tiny lambda: K + lambda I is singular in float */
  double *Xd = malloc(sizeof(double) * n * p), *yd = malloc(sizeof(double) * n);
  for (int64_t i = 0; i < n; i++) {
    for (int d = 0; d < p; d++) Xd[i + d * n] = X[(i / 2) + d * n];
    yd[i] = (double)(i % 7);
  }
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 50.0};
  tfit f;
  if (tfit_make(ctx, KRR_FLOAT, Xd, n, p, yd, 1, k, 1e-30, &f) != KRR_OK) return;
  krr_solver *s = NULL;
  krr_status st = tinit(&f, "cholesky", "", &s);
  krr_status s1 = st == KRR_OK ? krr_solver_step(s, 1) : st;
  char m1[1024];
  memcpy(m1, ctx->msg, sizeof m1);
  krr_status s2 = s ? krr_solver_step(s, 1) : st;
  double r = 0;
  krr_status s3 = s ? krr_solver_residual(s, &r) : st;
  CHECK(s1 == KRR_ERR_NUMERIC && s2 == s1 && s3 == s1 && strcmp(m1, ctx->msg) == 0,
        "a failed setup must replay its error: %d %d %d (%s / %s)", s1, s2, s3, m1, ctx->msg);
  /* a change can cure it: a larger lambda refactors and solves */
  krr_status s4 = s ? krr_solver_set_lambda(s, 1.0) : st;
  if (s4 == KRR_OK) s4 = krr_solver_step(s, 1);
  if (s4 == KRR_OK) s4 = krr_solver_residual(s, &r);
  CHECK(s4 == KRR_OK && r < 1e-4, "a new lambda must cure the failed factorisation: %d (%s) residual %.3g",
        s4, ctx->msg, r);
  krr_solver_free(s);
  tfit_free(&f);
  free(Xd); free(yd);
  /* a context needs both tables: the device's and the host's (the core
   * never names a backend) */
  krr_ctx c0;
  CHECK(krr_ctx_init(&c0, ctx->ops, NULL, 1, 0) == KRR_ERR_INPUT && c0.status == KRR_ERR_INPUT &&
            strstr(c0.msg, "host_ops"),
        "a context without a host table must be an input error (%d: %s)", c0.status, c0.msg);
  krr_ctx_free(&c0);
  CHECK(krr_ctx_init(&c0, NULL, krr_cpu_ops(), 1, 0) == KRR_ERR_NOT_BUILT,
        "a context without a device table must be not-built (%s)", c0.msg);
  krr_ctx_free(&c0);
}

/* krr_overlap: a side task runs inside the first kernel product of `main`
 * when that product's team has other threads (CPU), else after main; it
 * sees one thread and no polling; the product is the same bit for bit; a
 * failing side or main is reported, a failing main skips the side task. */
typedef struct {
  int ran, threads, poll_ok;
  krr_status ret;
} side_rec;
static krr_status side_task(krr_ctx *ctx, void *arg) {
  side_rec *r = (side_rec *)arg;
  r->ran = 1;
  r->threads = ctx->threads;
  r->poll_ok = krr_poll(ctx) == KRR_OK; /* the deadline below has passed */
  return r->ret == KRR_OK ? KRR_OK : krr_fail(ctx, r->ret, "side task failed on purpose");
}
typedef struct {
  const void *X, *V;
  void *out;
  int64_t n;
  int p;
  const side_rec *side;
  int side_seen; /* the side task had run when the product returned */
  krr_status ret;
} main_rec;
static krr_status main_task(krr_ctx *ctx, void *arg) {
  main_rec *m = (main_rec *)arg;
  if (m->ret != KRR_OK) return krr_fail(ctx, m->ret, "main task failed on purpose");
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 1.0};
  KTRY(ctx->ops->kernel_mv_d(ctx, &k, m->X, m->n, m->X, m->n, m->p, m->V, m->n, 1, m->out, m->n));
  m->side_seen = m->side->ran;
  return KRR_OK;
}
static void test_overlap(krr_ctx *ctx) {
  const int p = 3;
  const int64_t sizes[2] = {40, 1500}; /* a team of one; of two when ctx->threads >= 2 */
  int cpu = ctx->ops == krr_cpu_ops();
  for (int c = 0; c < 2; c++) {
    int64_t n = sizes[c];
    double *Xh = malloc(sizeof(double) * n * p), *Vh = malloc(sizeof(double) * n);
    double *o1 = malloc(sizeof(double) * n), *o2 = malloc(sizeof(double) * n);
    for (int64_t i = 0; i < n * p; i++) Xh[i] = 0.37 * (double)((i * 7919) % 101) / 101.0;
    for (int64_t i = 0; i < n; i++) Vh[i] = (double)(i % 13) - 6.0;
    void *X = ctx->ops->alloc(ctx, sizeof(double) * n * p), *V = ctx->ops->alloc(ctx, sizeof(double) * n);
    void *out = ctx->ops->alloc(ctx, sizeof(double) * n);
    if (!X || !V || !out || ctx->ops->upload(ctx, X, Xh, sizeof(double) * n * p) != KRR_OK ||
        ctx->ops->upload(ctx, V, Vh, sizeof(double) * n) != KRR_OK) {
      CHECK(0, "overlap: setup failed (%s)", ctx->msg);
    } else {
      krr_kernel k = {.type = KRR_RBF, .bandwidth = 1.0};
      krr_status s0 = ctx->ops->kernel_mv_d(ctx, &k, X, n, X, n, p, V, n, 1, out, n);
      if (s0 == KRR_OK) s0 = ctx->ops->download(ctx, o1, out, sizeof(double) * n);
      int threads = ctx->threads;
      side_rec sr = {0, 0, 0, KRR_OK};
      main_rec mr = {X, V, out, n, p, &sr, 0, KRR_OK};
      ctx->deadline = 1e-9; /* long past: only the side task polls */
      krr_status st = krr_overlap(ctx, side_task, &sr, 1e6, main_task, &mr);
      ctx->deadline = 0;
      if (st == KRR_OK) st = ctx->ops->download(ctx, o2, out, sizeof(double) * n);
      int inside = cpu && c == 1 && threads >= 2;
      CHECK(s0 == KRR_OK && st == KRR_OK && sr.ran && mr.side_seen == inside,
            "overlap n = %lld: status %d/%d (%s), side ran %d, ran inside the product %d (expected %d)",
            (long long)n, s0, st, ctx->msg, sr.ran, mr.side_seen, inside);
      CHECK(sr.threads == 1 && sr.poll_ok && ctx->threads == threads && !ctx->side,
            "overlap n = %lld: the side task saw %d threads, poll ok %d; threads after %d (was %d)",
            (long long)n, sr.threads, sr.poll_ok, ctx->threads, threads);
      CHECK(st == KRR_OK && memcmp(o1, o2, sizeof(double) * n) == 0,
            "overlap n = %lld: the product changed beside a side task", (long long)n);
      /* failures: the side's is returned; a failing main skips the side */
      krr_clear(ctx);
      side_rec sf = {0, 0, 0, KRR_ERR_NUMERIC};
      main_rec mf = {X, V, out, n, p, &sf, 0, KRR_OK};
      st = krr_overlap(ctx, side_task, &sf, 1e6, main_task, &mf);
      CHECK(st == KRR_ERR_NUMERIC && sf.ran && strstr(ctx->msg, "side task"),
            "overlap n = %lld: a failing side task must be reported: %d (%s)", (long long)n, st, ctx->msg);
      krr_clear(ctx);
      side_rec sm = {0, 0, 0, KRR_OK};
      main_rec mm = {X, V, out, n, p, &sm, 0, KRR_ERR_INPUT};
      st = krr_overlap(ctx, side_task, &sm, 1e6, main_task, &mm);
      CHECK(st == KRR_ERR_INPUT && !sm.ran && !ctx->side,
            "overlap n = %lld: a failing main must skip the side task: %d, ran %d", (long long)n, st, sm.ran);
      krr_clear(ctx);
    }
    ctx->ops->dealloc(ctx, X); ctx->ops->dealloc(ctx, V); ctx->ops->dealloc(ctx, out);
    free(Xh); free(Vh); free(o1); free(o2);
  }
}

/* the cgroup memory limit, read from fake cgroup trees (v2, v1, a container
 * whose group path is not visible, no limit) */
static void put(const char *dir, const char *name, const char *text) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  if (f) { fputs(text, f); fclose(f); }
}
static void test_cgroup(void) {
  char root[] = "/tmp/askotch_cgXXXXXX", d[1024], self[1024];
  if (!mkdtemp(root)) { CHECK(0, "cgroup: mkdtemp"); return; }
  snprintf(self, sizeof self, "%s/self", root);
  size_t lim = 0, used = 0;
  /* v2, the job's own group */
  put(root, "self", "0::/job.slice\n");
  snprintf(d, sizeof d, "%s/job.slice", root);
  mkdir(d, 0700);
  put(d, "memory.max", "1073741824\n");
  put(d, "memory.current", "600000000\n");
  put(d, "memory.stat", "anon 1\ninactive_file 100000000\nactive_file 5\n");
  CHECK(krr_cpu_cgroup_memory(root, self, &lim, &used) == 1 && lim == 1073741824u &&
            used == 500000000u, "cgroup v2: limit %zu used %zu", lim, used);
  /* v2 without a limit: "max" */
  put(d, "memory.max", "max\n");
  CHECK(krr_cpu_cgroup_memory(root, self, &lim, &used) == 0, "cgroup v2 max: no limit");
  /* v2 in a container: the group's path is not there, the root's files are */
  put(root, "self", "0::/kubepods/pod1\n");
  put(root, "memory.max", "2000000000\n");
  put(root, "memory.current", "1000\n");
  CHECK(krr_cpu_cgroup_memory(root, self, &lim, &used) == 1 && lim == 2000000000u && used == 1000,
        "cgroup v2 container: limit %zu used %zu", lim, used);
  /* v1 (Slurm's memory controller) */
  put(root, "self", "4:cpu,cpuacct:/\n3:memory:/slurm/job1\n1:name=systemd:/\n");
  snprintf(d, sizeof d, "%s/memory", root);
  mkdir(d, 0700);
  snprintf(d, sizeof d, "%s/memory/slurm", root);
  mkdir(d, 0700);
  snprintf(d, sizeof d, "%s/memory/slurm/job1", root);
  mkdir(d, 0700);
  put(d, "memory.limit_in_bytes", "4294967296\n");
  put(d, "memory.usage_in_bytes", "3000000000\n");
  put(d, "memory.stat", "cache 7\ntotal_inactive_file 1000000000\n");
  CHECK(krr_cpu_cgroup_memory(root, self, &lim, &used) == 1 && lim == 4294967296u &&
            used == 2000000000u, "cgroup v1: limit %zu used %zu", lim, used);
  /* v1 without a limit (the kernel's "unlimited" page-rounded 2^63) */
  put(d, "memory.limit_in_bytes", "9223372036854771712\n");
  CHECK(krr_cpu_cgroup_memory(root, self, &lim, &used) == 0, "cgroup v1 unlimited: no limit");
  /* no cgroup file at all */
  CHECK(krr_cpu_cgroup_memory(root, "/nonexistent/self", &lim, &used) == 0, "cgroup: none");
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) CHECK(0, "cgroup: cleanup");
}

/* products and triangular solves in polled pieces (base/factor.c) against
 * one ops call: every transpose combination, shapes that split the rows,
 * the columns and the inner dimension, both precisions; a deadline in the
 * past stops them */
static void *up(krr_ctx *ctx, krr_precision prec, const double *h, int64_t len) {
  void *d = NULL;
  return krr_upload_vec(ctx, prec, h, len, &d) == KRR_OK ? d : NULL;
}
/* max |a - b| over two device arrays (when *st is KRR_OK), *big = max |a| */
static double dev_maxdiff(krr_ctx *ctx, krr_precision prec, const void *a, const void *b,
                          int64_t len, krr_status *st, double *big) {
  double *ha = malloc(sizeof(double) * len), *hb = malloc(sizeof(double) * len), err = 0;
  *big = 0;
  if (*st == KRR_OK) *st = ha && hb ? krr_download_vec(ctx, prec, a, len, ha) : KRR_ERR_MEMORY;
  if (*st == KRR_OK) *st = krr_download_vec(ctx, prec, b, len, hb);
  for (int64_t i = 0; *st == KRR_OK && i < len; i++) {
    err = fmax(err, fabs(ha[i] - hb[i]));
    *big = fmax(*big, fabs(ha[i]));
  }
  free(ha); free(hb);
  return err;
}
/* The upper triangles of symmetric products against the full GEMM, in
 * pieces (the caller's small pieces, 2e6 flops): A^T A
 * (krr_gram_upper_polled; 520 x 520) from 40 rows and from 600 (block
 * columns 256, 256, 8, syrk on the diagonal blocks in 4 pieces of the inner
 * dimension), from 600 rows with pieces of 1e8 (one syrk block, 2 pieces),
 * with B a copy of A (block columns of products), and 1.5 U U^T for an
 * upper triangular U (krr_uut_polled; 600 x 600); nothing written below the
 * diagonal (A^T A) or below the diagonal blocks */
static void test_triangles(krr_ctx *ctx, krr_precision prec, double tol) {
  const double pf = ctx->piece_flops;
  for (int v = 0; v < 5; v++) {
    const int uut = v == 4, copy = v == 3;
    const int64_t r = uut ? 600 : 520, k = uut || v == 1 || v == 2 ? 600 : 40;
    ctx->piece_flops = v == 2 ? 1e8 : pf;
    double *Ah = calloc((size_t)(k * r), sizeof(double)), *Gh = malloc(sizeof(double) * r * r);
    double *Th = calloc((size_t)(r * r), sizeof(double));
    for (int64_t j = 0; j < r; j++)
      for (int64_t i = 0; i < k; i++)
        if (!uut || i <= j) Ah[i + j * k] = (double)((i * 31 + j * 17) % 13) / 13.0 - 0.4;
    void *A = up(ctx, prec, Ah, k * r), *G = krr_dalloc(ctx, r * r, krr_sizeof(prec));
    void *B = copy ? up(ctx, prec, Ah, k * r) : A;
    void *T = up(ctx, prec, Th, r * r); /* zeros */
    krr_status st = A && B && G && T && Gh ? KRR_OK : KRR_ERR_MEMORY;
    if (st == KRR_OK)
      st = uut ? KOP(ctx, prec, gemm, 0, 1, r, r, r, 1.5, A, r, A, r, 0.0, G, r)
               : KOP(ctx, prec, gemm, 1, 0, r, r, k, 1.0, A, k, A, k, 0.0, G, r);
    if (st == KRR_OK) st = krr_download_vec(ctx, prec, G, r * r, Gh);
    if (st == KRR_OK)
      st = uut ? krr_uut_polled(ctx, prec, r, 1.5, A, r, T, r)
               : krr_gram_upper_polled(ctx, prec, r, k, A, k, B, k, T, r);
    if (st == KRR_OK) st = krr_download_vec(ctx, prec, T, r * r, Th);
    double err = 0, big = 0, other = 0;
    for (int64_t j = 0; st == KRR_OK && j < r; j++)
      for (int64_t i = 0; i < r; i++) {
        big = fmax(big, fabs(Gh[i + j * r]));
        if (i <= j) err = fmax(err, fabs(Th[i + j * r] - Gh[i + j * r]));
        else if (v < 3 || i / 256 != j / 256) other = fmax(other, fabs(Th[i + j * r]));
      }
    CHECK(st == KRR_OK && err <= tol * big && other == 0,
          "%s upper triangle %s: status %d (%s), "
          "max difference %.3g of %.3g, written outside %.3g",
          uut      ? "U U^T"
          : copy   ? "A^T B"
          : v == 0 ? "A^T A"
          : v == 1 ? "A^T A, k 600"
                   : "A^T A, k 600, pieces 1e8",
          prec == KRR_FLOAT ? "single" : "double", st, ctx->msg, err, big, other);
    ctx->piece_flops = pf;
    if (copy) krr_dfree(ctx, &B);
    krr_dfree(ctx, &A);
    krr_dfree(ctx, &G);
    krr_dfree(ctx, &T);
    free(Ah);
    free(Gh);
    free(Th);
  }
}

/* The panel Cholesky (krr_potrf_polled) against one LAPACK potrf at
 * n = 600: three 256-wide panels, the last one ragged (2 x 256 + 88); the
 * same upper factor, and for a matrix indefinite at column 101, 301 or 551
 * (one in each panel) the same info from both.  Small, so that valgrind
 * (CI) runs it in a minute or two. */
static void test_potrf_pieces(krr_ctx *ctx, krr_precision prec, double tol) {
  const int64_t n = 600, bads[] = {0, 100, 300, 550};
  double *Ah = malloc(sizeof(double) * n * n), *Ra = malloc(sizeof(double) * n * n),
         *Rb = malloc(sizeof(double) * n * n);
  for (int b = 0; b < 4; b++) {
    const int bad = b > 0;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i <= j; i++)
        Ah[i + j * n] = Ah[j + i * n] =
            i == j ? 0.5 * (double)n : (double)((i * 31 + j * 17) % 13) / 13.0 - 0.5;
    if (bad) Ah[bads[b] + bads[b] * n] = -1.0;
    void *A = up(ctx, prec, Ah, n * n), *B = up(ctx, prec, Ah, n * n);
    int ia = -1, ib = -1;
    krr_status st = A && B ? KOP(ctx, prec, potrf, n, A, n, &ia) : KRR_ERR_MEMORY;
    if (st == KRR_OK) st = krr_potrf_polled(ctx, prec, n, B, n, &ib);
    if (st == KRR_OK) st = krr_download_vec(ctx, prec, A, n * n, Ra);
    if (st == KRR_OK) st = krr_download_vec(ctx, prec, B, n * n, Rb);
    double err = 0, big = 0;
    for (int64_t j = 0; st == KRR_OK && !bad && j < n; j++)
      for (int64_t i = 0; i <= j; i++) {
        big = fmax(big, fabs(Ra[i + j * n]));
        err = fmax(err, fabs(Ra[i + j * n] - Rb[i + j * n]));
      }
    CHECK(st == KRR_OK && ia == (bad ? (int)bads[b] + 1 : 0) && ib == ia && err <= tol * big,
          "potrf in panels %s, bad column %d: status %d (%s), info %d and %d, max "
          "difference %.3g of %.3g",
          prec == KRR_FLOAT ? "single" : "double", bad ? (int)bads[b] + 1 : 0, st, ctx->msg, ia, ib,
          err, big);
    krr_dfree(ctx, &A);
    krr_dfree(ctx, &B);
  }
  free(Ah);
  free(Ra);
  free(Rb);
}

static void test_pieces(krr_ctx *ctx) {
  /* small, so that valgrind (CI) runs it in seconds: every dimension just
   * above the 256 below which pieces are not cut, and small pieces, so rows,
   * columns and the inner dimension are all split */
  const int64_t m = 270, n = 265, k = 260;
  const double pf = ctx->piece_flops;
  ctx->piece_flops = 2e6;
  for (int pr = 0; pr < 2; pr++) {
    krr_precision prec = pr ? KRR_FLOAT : KRR_DOUBLE;
    double tol = pr ? 1e-4 : 1e-12;
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        int64_t lda = ta ? k : m, ldb = tb ? n : k;
        double *Ah = malloc(sizeof(double) * m * k), *Bh = malloc(sizeof(double) * k * n);
        double *Ch = malloc(sizeof(double) * m * n);
        for (int64_t i = 0; i < m * k; i++) Ah[i] = (double)((i * 7919) % 1009) / 1009.0 - 0.5;
        for (int64_t i = 0; i < k * n; i++) Bh[i] = (double)((i * 104729) % 997) / 997.0 - 0.5;
        for (int64_t i = 0; i < m * n; i++) Ch[i] = (double)(i % 7) - 3.0;
        void *A = up(ctx, prec, Ah, m * k), *B = up(ctx, prec, Bh, k * n);
        void *Ca = up(ctx, prec, Ch, m * n), *Cb = up(ctx, prec, Ch, m * n);
        krr_status st = A && B && Ca && Cb ? KRR_OK : KRR_ERR_MEMORY;
        if (st == KRR_OK) st = KOP(ctx, prec, gemm, ta, tb, m, n, k, 0.5, A, lda, B, ldb, -2.0, Ca, m);
        if (st == KRR_OK)
          st = krr_gemm_polled(ctx, prec, ta, tb, m, n, k, 0.5, A, lda, B, ldb, -2.0, Cb, m);
        double big, err = dev_maxdiff(ctx, prec, Ca, Cb, m * n, &st, &big);
        CHECK(st == KRR_OK && err <= tol * big, "gemm in pieces %s %lldx%lldx%lld ta %d tb %d: "
              "status %d (%s), max difference %.3g of %.3g", pr ? "single" : "double",
              (long long)m, (long long)n, (long long)k, ta, tb, st, ctx->msg, err, big);
        if (ta == 0 && tb == 0 && pr == 0) {
          krr_clear(ctx);
          ctx->deadline = 1e-9; /* long past */
          st = krr_gemm_polled(ctx, prec, ta, tb, m, n, k, 1.0, A, lda, B, ldb, 0.0, Cb, m);
          ctx->deadline = 0;
          CHECK(st == KRR_ERR_TIME_LIMIT, "gemm in pieces: a past deadline must stop it (%d)", st);
          krr_clear(ctx);
        }
        krr_dfree(ctx, &A); krr_dfree(ctx, &B); krr_dfree(ctx, &Ca); krr_dfree(ctx, &Cb);
        free(Ah); free(Bh); free(Ch);
      }
    test_triangles(ctx, prec, tol);
    test_potrf_pieces(ctx, prec, tol);
    /* trsm: the triangle t x t, the free dimension f (split into pieces) */
    const int64_t t = 270, f = 520;
    double *Th = calloc((size_t)(t * t), sizeof(double)), *Bh = malloc(sizeof(double) * t * f);
    for (int64_t j = 0; j < t; j++)
      for (int64_t i = 0; i <= j; i++)
        Th[i + j * t] = i == j ? 2.0 + (double)(j % 5) : 0.3 * ((double)((i * 31 + j * 17) % 13) / 13.0 - 0.5);
    for (int64_t i = 0; i < t * f; i++) Bh[i] = (double)((i * 7919) % 1013) / 1013.0 - 0.5;
    for (int right = 0; right < 2; right++)
      for (int tr = 0; tr < 2; tr++) {
        int64_t bm = right ? f : t, bn = right ? t : f;
        void *T = up(ctx, prec, Th, t * t);
        void *Ba = up(ctx, prec, Bh, t * f), *Bb = up(ctx, prec, Bh, t * f);
        krr_status st = T && Ba && Bb ? KRR_OK : KRR_ERR_MEMORY;
        if (st == KRR_OK) st = KOP(ctx, prec, trsm, right, tr, bm, bn, 1.5, T, t, Ba, bm);
        if (st == KRR_OK) st = krr_trsm_polled(ctx, prec, right, tr, bm, bn, 1.5, T, t, Bb, bm);
        double big, err = dev_maxdiff(ctx, prec, Ba, Bb, t * f, &st, &big);
        CHECK(st == KRR_OK && err <= tol * big, "trsm in pieces %s right %d trans %d: status %d (%s), "
              "max difference %.3g of %.3g", pr ? "single" : "double", right, tr, st, ctx->msg, err, big);
        krr_dfree(ctx, &T); krr_dfree(ctx, &Ba); krr_dfree(ctx, &Bb);
      }
    free(Th); free(Bh);
  }
  ctx->piece_flops = pf;
}

/* Products and solves with one right-hand side (the CPU backend sends them
 * to gemv / trsv) against host loops: one column of C, one row of C, an
 * empty inner dimension (C = beta C), every transpose; a triangular solve
 * with one column (left) or one row (right), transposed or not, alpha != 1 */
static void test_vectors(krr_ctx *ctx) {
  const int64_t M = 37, K = 29, LDC = 3; /* a row of C in a matrix of LDC rows */
  for (int pr = 0; pr < 2; pr++) {
    krr_precision prec = pr ? KRR_FLOAT : KRR_DOUBLE;
    double tol = pr ? 1e-5 : 1e-13;
    for (int shape = 0; shape < 3; shape++)
      for (int tt = 0; tt < 4; tt++) {
        const int ta = tt & 1, tb = tt >> 1;
        const int64_t m = shape == 1 ? 1 : M, n = shape == 1 ? M : 1, k = shape == 2 ? 0 : K;
        const int64_t lda = ta ? (k > 0 ? k : 1) : m, ldb = tb ? n : (k > 0 ? k : 1);
        const int64_t ldc = shape == 1 ? LDC : m, clen = LDC * M;
        double *Ah = malloc(sizeof(double) * (M * K + 1)),
               *Bh = malloc(sizeof(double) * (M * K + 1));
        double *Ch = malloc(sizeof(double) * clen), *ref = malloc(sizeof(double) * clen);
        for (int64_t i = 0; i < M * K + 1; i++) {
          Ah[i] = (double)((i * 7919) % 1009) / 1009.0 - 0.5;
          Bh[i] = (double)((i * 104729) % 997) / 997.0 - 0.5;
        }
        for (int64_t i = 0; i < clen; i++) ref[i] = Ch[i] = (double)(i % 7) - 3.0;
        for (int64_t i = 0; i < m; i++)
          for (int64_t j = 0; j < n; j++) {
            double sum = 0;
            for (int64_t l = 0; l < k; l++)
              sum += (ta ? Ah[l + i * lda] : Ah[i + l * lda]) *
                     (tb ? Bh[j + l * ldb] : Bh[l + j * ldb]);
            ref[i + j * ldc] = 0.5 * sum - 2.0 * Ch[i + j * ldc];
          }
        void *A = up(ctx, prec, Ah, M * K + 1), *B = up(ctx, prec, Bh, M * K + 1);
        void *C = up(ctx, prec, Ch, clen);
        krr_status st = A && B && C ? KRR_OK : KRR_ERR_MEMORY;
        if (st == KRR_OK)
          st = KOP(ctx, prec, gemm, ta, tb, m, n, k, 0.5, A, lda, B, ldb, -2.0, C, ldc);
        if (st == KRR_OK) st = krr_download_vec(ctx, prec, C, clen, Ch);
        CHECK(st == KRR_OK && rel_diff(Ch, ref, clen) <= tol,
              "gemm %s %lldx%lldx%lld ta %d tb %d ldc %lld against loops: status %d, error %.3g",
              pr ? "single" : "double", (long long)m, (long long)n, (long long)k, ta, tb,
              (long long)ldc, st, rel_diff(Ch, ref, clen));
        krr_dfree(ctx, &A);
        krr_dfree(ctx, &B);
        krr_dfree(ctx, &C);
        free(Ah);
        free(Bh);
        free(Ch);
        free(ref);
      }
    /* trsm with one right-hand side: a column (left) or a row of a matrix of
     * two rows (right, ldb 2) */
    const int64_t t = 41;
    double *Th = calloc((size_t)(t * t), sizeof(double)), *bh = malloc(sizeof(double) * 2 * t);
    double *x = malloc(sizeof(double) * 2 * t), *back = malloc(sizeof(double) * t);
    for (int64_t j = 0; j < 2 * t; j++) bh[j] = (double)((j * 31) % 11) - 5.0;
    for (int64_t j = 0; j < t; j++)
      for (int64_t i = 0; i <= j; i++)
        Th[i + j * t] =
            i == j ? 2.0 + (double)(j % 5) : 0.3 * ((double)((i * 31 + j * 17) % 13) / 13.0 - 0.5);
    for (int right = 0; right < 2; right++)
      for (int tr = 0; tr < 2; tr++) {
        const int64_t inc = right ? 2 : 1;
        void *T = up(ctx, prec, Th, t * t), *b = up(ctx, prec, bh, 2 * t);
        krr_status st = T && b ? KRR_OK : KRR_ERR_MEMORY;
        /* left: op(T) x = 1.5 b; right: x op(T) = 1.5 b, i.e. op(T)^T x = 1.5 b */
        if (st == KRR_OK)
          st = KOP(ctx, prec, trsm, right, tr, right ? 1 : t, right ? t : 1, 1.5, T, t, b,
                   right ? 2 : t);
        if (st == KRR_OK) st = krr_download_vec(ctx, prec, b, 2 * t, x);
        const int eff = tr != right; /* the system solved is T^T x (eff) or T x */
        double untouched = 0, *bb = malloc(sizeof(double) * t);
        for (int64_t i = 0; i < t; i++) {
          double sum = 0;
          for (int64_t l = 0; l < t; l++) sum += (eff ? Th[l + i * t] : Th[i + l * t]) * x[l * inc];
          back[i] = sum / 1.5;
          bb[i] = bh[i * inc];
          if (right) untouched = fmax(untouched, fabs(x[i * 2 + 1] - bh[i * 2 + 1]));
        }
        CHECK(st == KRR_OK && rel_diff(back, bb, t) <= tol && untouched == 0,
              "trsm %s one right-hand side, right %d trans %d: status %d, residual %.3g, other row "
              "changed by %.3g",
              pr ? "single" : "double", right, tr, st, rel_diff(back, bb, t), untouched);
        free(bb);
        krr_dfree(ctx, &T);
        krr_dfree(ctx, &b);
      }
    free(Th);
    free(bh);
    free(x);
    free(back);
  }
}

/* Falkon's K(X2, X1) K(X1, X2) V with each pair once (krr_kernel_gram_mv,
 * the backend's kernel_gram) against host sums and the two products: enough
 * centres that the rows come in several stripes and groups, two right-hand
 * sides, both precisions, p = 3 (direct differences) and p = 40 (the GEMM
 * form); without the op (a device) it is not offered and krr_op_gram_mv
 * makes the two products (test_operator) */
static void test_gram_p(krr_ctx *ctx, int p, int64_t c) {
  const int64_t n = 300, q = 2;
  double *X = malloc(sizeof(double) * n * p), *C = malloc(sizeof(double) * c * p);
  double *V = malloc(sizeof(double) * c * q), *ref = malloc(sizeof(double) * c * q);
  double *out = malloc(sizeof(double) * c * q), *two = malloc(sizeof(double) * c * q);
  double *KV = calloc((size_t)(n * q), sizeof(double)), *Kh = malloc(sizeof(double) * n * c);
  for (int64_t i = 0; i < n * p; i++) X[i] = krr_rng_normal(5, (uint64_t)i) / sqrt((double)p);
  for (int64_t i = 0; i < c * p; i++) C[i] = krr_rng_normal(6, (uint64_t)i) / sqrt((double)p);
  for (int64_t i = 0; i < c * q; i++) V[i] = krr_rng_normal(7, (uint64_t)i);
  krr_kernel k = {.type = KRR_MATERN32, .bandwidth = 1.3};
  krr_kparams kp = krr_kparams_make(&k);
  for (int64_t i = 0; i < n; i++) /* X and C row-major (p coordinates per point) */
    for (int64_t j = 0; j < c; j++) {
      double t = 0;
      for (int d = 0; d < p; d++)
        t += (X[i * p + d] - C[j * p + d]) * (X[i * p + d] - C[j * p + d]);
      Kh[i + j * n] = krr_kernel_eval(kp, t);
      for (int64_t l = 0; l < q; l++) KV[i + l * n] += Kh[i + j * n] * V[j + l * c];
    }
  for (int64_t j = 0; j < c; j++)
    for (int64_t l = 0; l < q; l++) {
      double sum = 0;
      for (int64_t i = 0; i < n; i++) sum += Kh[i + j * n] * KV[i + l * n];
      ref[j + l * c] = sum;
    }
  for (int pr = 0; pr < 2; pr++) {
    krr_precision prec = pr ? KRR_FLOAT : KRR_DOUBLE;
    double tol = pr ? 1e-5 : 1e-12;
    size_t es = krr_sizeof(prec);
    if (!krr_kernel_gram_fused(ctx, prec, &k, c, (int)q)) {
      CHECK(ctx->ops != ctx->host_ops, "the CPU backend fuses Falkon's product");
      break;
    }
    void *dX = NULL, *dC = NULL, *dV = NULL, *dO = NULL, *dT = NULL, *dW = NULL;
    krr_status st = krr_upload_vec(ctx, prec, X, n * p, &dX);
    if (st == KRR_OK) st = krr_upload_vec(ctx, prec, C, c * p, &dC);
    if (st == KRR_OK) st = krr_upload_vec(ctx, prec, V, c * q, &dV);
    dO = krr_dalloc(ctx, c * q, es);
    dT = krr_dalloc(ctx, n * q, es);
    dW = krr_dalloc(ctx, (int64_t)krr_kernel_gram_work(c, (int)q), 1);
    if (st == KRR_OK && !(dO && dT && dW)) st = KRR_ERR_MEMORY;
    if (st == KRR_OK)
      st = krr_kernel_gram_mv(ctx, prec, &k, dX, n, dC, c, p, dV, c, (int)q, dO, c, dW);
    if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, c * q, out);
    if (st == KRR_OK) st = krr_kernel_mv_any(ctx, prec, &k, dX, n, dC, c, p, dV, c, (int)q, dT, n);
    if (st == KRR_OK) st = krr_kernel_mv_any(ctx, prec, &k, dC, c, dX, n, p, dT, n, (int)q, dO, c);
    if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, c * q, two);
    CHECK(st == KRR_OK && rel_diff(out, ref, c * q) <= tol && rel_diff(out, two, c * q) <= tol,
          "gram product %s, p = %d: status %d (%s), error %.3g against host sums, %.3g against "
          "two products",
          pr ? "single" : "double", p, st, ctx->msg, rel_diff(out, ref, c * q),
          rel_diff(out, two, c * q));
    /* no rows: zero */
    if (st == KRR_OK)
      st = krr_kernel_gram_mv(ctx, prec, &k, dX, 0, dC, c, p, dV, c, (int)q, dO, c, dW);
    if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, c * q, out);
    double mx = 0;
    for (int64_t i = 0; i < c * q; i++) mx = fmax(mx, fabs(out[i]));
    CHECK(st == KRR_OK && mx == 0, "gram product %s of no rows: status %d, max %.3g",
          pr ? "single" : "double", st, mx);
    krr_clear(ctx);
    krr_dfree(ctx, &dX);
    krr_dfree(ctx, &dC);
    krr_dfree(ctx, &dV);
    krr_dfree(ctx, &dO);
    krr_dfree(ctx, &dT);
    krr_dfree(ctx, &dW);
  }
  free(X);
  free(C);
  free(V);
  free(ref);
  free(out);
  free(two);
  free(KV);
  free(Kh);
}

static void test_gram(krr_ctx *ctx) {
  test_gram_p(ctx, 3, 20000);
  test_gram_p(ctx, 12, 3000); /* the norm form of the distances (tile_norm_t) */
  test_gram_p(ctx, 40, 3000);
}

/* The dense product gives the same bits for every thread count: its slices
 * of C are fixed by the sizes (the BLAS rounds an element by where it falls
 * in its slice).  Sizes above the one-thread work, so that the slices are
 * cut; a tall product too, whose rows are split instead of its columns. */
static void test_team_bits(krr_ctx *ctx) {
  const int64_t shapes[2][3] = {{300, 200, 700}, {20000, 8, 300}};
  const int thr0 = ctx->threads;
  for (int pr = 0; pr < 2; pr++)
    for (int sh = 0; sh < 2; sh++)
      for (int tt = 0; tt < 2; tt++) { /* A or A^T */
        krr_precision prec = pr ? KRR_FLOAT : KRR_DOUBLE;
        const int64_t m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2];
        const int ta = tt & 1, tb = tt >> 1;
        int64_t lda = ta ? k : m, ldb = tb ? n : k;
        double *Ah = malloc(sizeof(double) * m * k), *Bh = malloc(sizeof(double) * k * n);
        double *C1 = calloc((size_t)(m * n), sizeof(double)), *Ct = malloc(sizeof(double) * m * n);
        uint64_t r = 88172645463325252ULL; /* xorshift64: full-mantissa entries */
        for (int64_t i = 0; i < m * k + k * n; i++) {
          r ^= r << 13, r ^= r >> 7, r ^= r << 17;
          *(i < m * k ? Ah + i : Bh + (i - m * k)) = (double)(r >> 11) / 9007199254740992.0 - 0.5;
        }
        void *A = up(ctx, prec, Ah, m * k), *B = up(ctx, prec, Bh, k * n),
             *C = up(ctx, prec, C1, m * n);
        krr_status st = A && B && C ? KRR_OK : KRR_ERR_MEMORY;
        int same = 1;
        for (int thr = 1; thr <= 3 && st == KRR_OK; thr++) {
          ctx->threads = thr;
          st = KOP(ctx, prec, gemm, ta, tb, m, n, k, 1.0, A, lda, B, ldb, 0.0, C, m);
          if (st == KRR_OK) st = krr_download_vec(ctx, prec, C, m * n, thr == 1 ? C1 : Ct);
          if (st == KRR_OK && thr > 1 && memcmp(C1, Ct, sizeof(double) * m * n)) same = 0;
        }
        ctx->threads = thr0;
        CHECK(st == KRR_OK && same,
              "gemm %s %lldx%lldx%lld ta %d tb %d: the same bits for 1-3 "
              "threads (status %d, same %d)",
              pr ? "single" : "double", (long long)m, (long long)n, (long long)k, ta, tb, st, same);
        krr_dfree(ctx, &A);
        krr_dfree(ctx, &B);
        krr_dfree(ctx, &C);
        free(Ah);
        free(Bh);
        free(C1);
        free(Ct);
      }
}

/* The Gram matrix by syrk (column blocks fixed by the size, one thread
 * each) gives the same bits for every thread count */
static void test_syrk_bits(krr_ctx *ctx) {
  const int64_t r = 1100, k = 2000;
  const int thr0 = ctx->threads;
  for (int pr = 0; pr < 2; pr++) {
    krr_precision prec = pr ? KRR_FLOAT : KRR_DOUBLE;
    double *Ah = malloc(sizeof(double) * k * r), *C1 = calloc((size_t)(r * r), sizeof(double)),
           *Ct = malloc(sizeof(double) * r * r);
    uint64_t x = 88172645463325252ULL;
    for (int64_t i = 0; i < k * r; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      Ah[i] = (double)(x >> 11) / 9007199254740992.0 - 0.5;
    }
    void *A = up(ctx, prec, Ah, k * r), *C = up(ctx, prec, C1, r * r);
    krr_status st = A && C ? KRR_OK : KRR_ERR_MEMORY;
    int same = 1;
    for (int thr = 1; thr <= 3 && st == KRR_OK; thr++) {
      ctx->threads = thr;
      st = KOP(ctx, prec, syrk, r, k, 1.0, A, k, 0.0, C, r);
      if (st == KRR_OK) st = krr_download_vec(ctx, prec, C, r * r, thr == 1 ? C1 : Ct);
      if (st == KRR_OK && thr > 1 && memcmp(C1, Ct, sizeof(double) * r * r)) same = 0;
    }
    ctx->threads = thr0;
    CHECK(st == KRR_OK && same,
          "syrk %s %lldx%lld: the same bits for 1-3 threads (status %d, same %d)",
          pr ? "single" : "double", (long long)r, (long long)k, st, same);
    krr_dfree(ctx, &A);
    krr_dfree(ctx, &C);
    free(Ah);
    free(C1);
    free(Ct);
  }
}

/* The likelihood gradient's contraction (krr_kernel_deriv_dot_host): the
 * same bits on 1-3 threads and on the core's own loop (a host table without
 * kernel_deriv_dot), and the sums of a naive double loop over every pair to
 * 1e-12 relative, with W not symmetric, a rank-2 U and three codes. */
static void test_deriv_dot(krr_ctx *ctx) {
  const int64_t n = 1100; /* 35 blocks: several polled groups */
  const int p = 3, r = 2, nd = 3, codes[3] = {-1, 1, 3};
  const double s = -0.75;
  double *X = malloc(sizeof(double) * n * p), *W = malloc(sizeof(double) * n * n),
         *U = malloc(sizeof(double) * n * r);
  uint64_t x = 88172645463325252ULL;
  for (int64_t i = 0; i < n * n + n * p + n * r; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const double v = (double)(x >> 11) / 9007199254740992.0 - 0.5;
    if (i < n * n) W[i] = v;
    else if (i < n * n + n * p) X[i - n * n] = 2 * v;
    else U[i - n * n - n * p] = v;
  }
  krr_kernel k = {0};
  k.type = KRR_MATERN32;
  k.bandwidth = 0.8;
  const krr_kparams kp = krr_kparams_make(&k);
  double want[3] = {0, 0, 0}, got[3], ref[3];
  for (int64_t l = 0; l < n; l++)
    for (int64_t i = 0; i < n; i++) {
      double t = 0, w = s * W[l * n + i];
      for (int c = 0; c < p; c++)
        t += (X[c * n + i] - X[c * n + l]) * (X[c * n + i] - X[c * n + l]);
      for (int j = 0; j < r; j++) w += U[j * n + i] * U[j * n + l];
      want[0] += w * krr_kernel_dlog_s(kp, t);
      for (int c = 1; c < nd; c++) {
        const double dj = X[(codes[c] - 1) * n + i] - X[(codes[c] - 1) * n + l];
        want[c] += w * krr_kernel_dlog_ell(kp, t, dj * dj);
      }
    }
  const int thr0 = ctx->threads;
  const krr_ops *h0 = ctx->host_ops;
  krr_ops serial = *h0;
  serial.kernel_deriv_dot = NULL;
  krr_status st = KRR_OK;
  int same = 1;
  for (int run = 0; run < 4 && st == KRR_OK; run++) { /* threads 1, 2, 3; the core's loop */
    ctx->threads = run < 3 ? run + 1 : 1;
    if (run == 3) ctx->host_ops = &serial;
    st = krr_kernel_deriv_dot_host(ctx, &k, X, n, p, codes, nd, W, s, U, r, NULL, run ? got : ref);
    if (st == KRR_OK && run && memcmp(ref, got, sizeof ref)) same = 0;
  }
  ctx->threads = thr0;
  ctx->host_ops = h0;
  double err = 0;
  for (int c = 0; c < nd; c++) err = fmax(err, fabs(ref[c] - want[c]) / fabs(want[c]));
  CHECK(st == KRR_OK && same && err < 1e-12,
        "deriv_dot: the same bits on 1-3 threads and the core's loop, naive sums to %.1e "
        "(status %d, same %d)",
        err, st, same);
  free(X);
  free(W);
  free(U);
}

int main(int argc, char **argv) {
  krr_ctx ctx;
  int64_t n;
  double *X, *y;
  if (test_start(argc, argv, 400, &ctx, &n, &X, &y)) return 1;
  verbose = getenv("KRR_VERBOSE") != NULL;
  int p = 3, m = 2;
  const char *only = getenv("ONLY");
  if (!only || strstr(only, "options")) test_options(&ctx);
  if (!only || strstr(only, "operator")) test_operator(&ctx, X, y, n, p, m);
  if (!only || strstr(only, "loss")) test_loss(&ctx, X, y, n, p, m);
  if (!only || strstr(only, "resolve")) test_resolve(&ctx, X, y, n, p, m);
  if (!only || strstr(only, "fail")) test_failures(&ctx, X, n, p);
  if (!only || strstr(only, "cgroup")) test_cgroup();
  if (!only || strstr(only, "overlap")) test_overlap(&ctx);
  if (!only || strstr(only, "pieces")) test_pieces(&ctx);
  if (!only || strstr(only, "team")) test_team_bits(&ctx);
  if (!only || strstr(only, "team")) test_syrk_bits(&ctx);
  if (!only || strstr(only, "vectors")) test_vectors(&ctx);
  if (!only || strstr(only, "gram")) test_gram(&ctx);
  if (!only || strstr(only, "deriv")) test_deriv_dot(&ctx);
  free(X); free(y);
  krr_ctx_free(&ctx);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
