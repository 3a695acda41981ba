/* Shared pieces of the standalone C test programs (askotch_driver,
 * test_solvers, test_solvers2, test_seams): pass/fail counting, synthetic
 * data, errors, and a fit through the public API (problem -> exact operator
 * -> squared-loss objective -> solver by name with "name=value" options). */
#ifndef ASKOTCH_TEST_COMMON_H
#define ASKOTCH_TEST_COMMON_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../src/core/krr.h"
#include "../src/core/rng.h"
#include "../src/core/kernel_math.h"
#include <lapacke.h>
#include "../src/core/ops.h"

static int n_pass __attribute__((unused)) = 0, n_fail __attribute__((unused)) = 0;
#define CHECK(cond, ...)                          \
  do {                                            \
    if (cond) { n_pass++; } else {                \
      n_fail++;                                   \
      printf("FAIL: " __VA_ARGS__);               \
      printf("\n");                               \
    }                                             \
  } while (0)

/* X ~ N(0,1) (n x p column-major), y = smooth f(X) + noise (n x m) */
static void make_data(int64_t n, int p, int m, uint64_t seed, double *X, double *y) {
  for (int64_t i = 0; i < n * p; i++) X[i] = krr_rng_normal(seed, (uint64_t)i);
  for (int c = 0; c < m; c++)
    for (int64_t i = 0; i < n; i++) {
      double s = 0;
      for (int j = 0; j < p; j++) s += sin((1.0 + c + 0.5 * j) * X[i + (int64_t)j * n]);
      y[i + c * n] = s + 0.1 * krr_rng_normal(seed + 7, (uint64_t)(i + c * n));
    }
}

/* ||a - b|| / ||b|| */
static inline double rel_diff(const double *a, const double *b, int64_t len) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < len; i++) { num += (a[i] - b[i]) * (a[i] - b[i]); den += b[i] * b[i]; }
  return sqrt(num / (den > 0 ? den : 1));
}
/* the backend named on the command line; exits with 2 when CUDA is unavailable */
static const krr_ops *backend(const char *name) {
  if (strcmp(name, "cuda") == 0) {
    const char *why = NULL;
    const krr_ops *ops = krr_cuda_ops(&why);
    if (!ops) { printf("CUDA backend unavailable: %s\n", why ? why : "?"); exit(2); }
    return ops;
  }
  return krr_cpu_ops();
}
/* [--backend cpu|cuda] [--threads T] [--n N] of the test programs */
static inline void parse_test_args(int argc, char **argv, const char **be, int *threads, int64_t *n) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--backend")) *be = argv[i + 1];
    else if (!strcmp(argv[i], "--threads")) *threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--n")) *n = atoll(argv[i + 1]);
  }
}

/* the common start of a test program: arguments, context, data (p = 3,
 * m = 2, seed 42; the caller frees X and y) */
static inline int test_start(int argc, char **argv, int64_t n_default, krr_ctx *ctx, int64_t *n,
                             double **X, double **y) {
  const char *be = "cpu";
  int threads = 0;
  *n = n_default;
  parse_test_args(argc, argv, &be, &threads, n);
  const krr_ops *ops = backend(be);
  if (krr_ctx_init(ctx, ops, krr_cpu_ops(), threads, 0) != KRR_OK) {
    printf("ctx: %s\n", ctx->msg);
    return 1;
  }
  *X = malloc(sizeof(double) * *n * 3);
  *y = malloc(sizeof(double) * *n * 2);
  make_data(*n, 3, 2, 42, *X, *y);
  return 0;
}

/* exact inducing-point coefficients on the host: (K_nm^T K_nm + lambda K_mm) a = K_nm^T y */
static inline int inducing_oracle(const krr_kernel *k, const double *X, int64_t n, int p, const double *y,
                                  int m, double lambda, const int64_t *c, int64_t mc, double *a) {
  krr_kparams kp = krr_kparams_make(k);
  double *Knm = malloc(sizeof(double) * n * mc), *H = malloc(sizeof(double) * mc * mc);
  for (int64_t j = 0; j < mc; j++)
    for (int64_t i = 0; i < n; i++) {
      double t = 0;
      for (int d = 0; d < p; d++) {
        double dd = X[i + d * n] - X[c[j] + d * n];
        t += krr_kernel_is_l1(kp.type) ? fabs(dd) : dd * dd;
      }
      Knm[i + j * n] = krr_kernel_eval(kp, t);
    }
  for (int64_t j = 0; j < mc; j++)
    for (int64_t i = 0; i < mc; i++) {
      double s = 0;
      for (int64_t l = 0; l < n; l++) s += Knm[l + i * n] * Knm[l + j * n];
      H[i + j * mc] = s + lambda * Knm[c[i] + j * n]; /* K_mm[i, j] = K_nm[c_i, j] */
    }
  for (int q = 0; q < m; q++)
    for (int64_t i = 0; i < mc; i++) {
      double s = 0;
      for (int64_t l = 0; l < n; l++) s += Knm[l + i * n] * y[l + q * n];
      a[i + q * mc] = s;
    }
  int info = LAPACKE_dposv(LAPACK_COL_MAJOR, 'U', (lapack_int)mc, m, H, (lapack_int)mc, a, (lapack_int)mc);
  free(Knm); free(H);
  return info;
}

/* a problem with its exact operator and squared-loss objective */
typedef struct {
  krr_ctx *ctx;
  krr_problem pb;
  krr_op *op;
  krr_objective obj;
} tfit;

static void tfit_free(tfit *f) {
  krr_objective_free(f->ctx, &f->obj);
  krr_op_free(f->op);
  f->op = NULL;
  krr_problem_free(f->ctx, &f->pb);
}

/* the same on M random features of the kernel (seed fseed) */
static inline krr_status tfit_make_features(krr_ctx *ctx, krr_precision prec, const double *X, int64_t n,
                                            int p, const double *y, int m, krr_kernel k, double lambda,
                                            int64_t M, uint64_t fseed, tfit *f) {
  memset(f, 0, sizeof *f);
  f->ctx = ctx;
  krr_status st = krr_problem_create(ctx, prec, X, n, p, &f->pb);
  if (st == KRR_OK) st = M > 0 ? krr_op_features_create(ctx, &f->pb, &k, M, fseed, &f->op)
                               : krr_op_exact_create(ctx, &f->pb, k, &f->op);
  if (st == KRR_OK)
    st = krr_objective_init(ctx, f->op, krr_loss_lookup("squared"), lambda, y, m, &f->obj);
  if (st != KRR_OK) {
    printf("FAIL: problem setup: %s\n", ctx->msg);
    n_fail++;
    tfit_free(f);
  }
  return st;
}

static inline krr_status tfit_make(krr_ctx *ctx, krr_precision prec, const double *X, int64_t n, int p,
                            const double *y, int m, krr_kernel k, double lambda, tfit *f) {
  return tfit_make_features(ctx, prec, X, n, p, y, m, k, lambda, 0, 0, f);
}

/* the options of solver `name` from "name=value ..." (NULL on error, ctx has it) */
static krr_options *topts(krr_ctx *ctx, const char *name, const char *spec) {
  const krr_solver_def *def = krr_solver_lookup(name);
  krr_options *o = NULL;
  if (!def) {
    krr_fail(ctx, KRR_ERR_INPUT, "unknown solver %s", name);
    return NULL;
  }
  if (krr_options_new(ctx, def, &o) != KRR_OK) return NULL;
  if (krr_options_parse(ctx, o, spec) != KRR_OK) {
    krr_options_free(o);
    return NULL;
  }
  return o;
}

/* a solver by name and options; its status */
static krr_status tinit(tfit *f, const char *name, const char *spec, krr_solver **s) {
  *s = NULL;
  krr_clear(f->ctx);
  krr_options *o = topts(f->ctx, name, spec);
  if (!o) return f->ctx->status != KRR_OK ? f->ctx->status : KRR_ERR_INPUT;
  krr_status st = krr_solver_init(f->ctx, f->op, &f->obj, o, s);
  krr_options_free(o);
  return st;
}

/* a per-solver diagnostic by name (NaN if the solver has none of that name) */
static inline double textra(const krr_solver *s, const char *name) {
  const krr_solver_def *def = krr_options_solver(krr_solver_options(s));
  for (int i = 0; i < krr_solver_extra_count(def); i++)
    if (strcmp(krr_solver_extra_name(def, i), name) == 0) return krr_solver_extra(s, i);
  return NAN;
}

/* a resolved option's value by name (NaN if absent) */
static inline double topt(const krr_solver *s, const char *name) {
  const krr_options *o = krr_solver_options(s);
  const krr_solver_def *def = krr_options_solver(o);
  for (int i = 0; i < krr_options_count(def); i++) {
    krr_optinfo in;
    krr_options_info(def, i, &in);
    if (strcmp(in.name, name) == 0) return krr_options_value(o, i, NULL);
  }
  return NAN;
}

/* Runs solver `name` in slices of `slice` iterations (0: one pass) until the
 * exact criterion is <= tol, the solver is done, or max_iters; the weights
 * into w (when not NULL), the solver kept in *keep (when not NULL). */
static inline krr_status trun(tfit *f, const char *name, const char *spec, double tol, int64_t max_iters,
                       int64_t slice, double *w, double *crit, krr_diag *dg, krr_solver **keep) {
  krr_solver *s = NULL;
  if (keep) *keep = NULL;
  *crit = INFINITY;
  memset(dg, 0, sizeof *dg);
  krr_status st = tinit(f, name, spec, &s);
  if (st != KRR_OK) return st;
  int64_t done = 0;
  while (done < max_iters) {
    int64_t k = slice;
    if (k <= 0) {
      double b = topt(s, "block_size");
      k = b > 0 ? (int64_t)ceil((double)f->pb.n / b) : 1;
    }
    if (k > max_iters - done) k = max_iters - done;
    if ((st = krr_solver_step(s, k)) != KRR_OK) break;
    done += k;
    krr_solver_diag(s, dg);
    if ((st = krr_solver_residual(s, crit)) != KRR_OK) break;
    if (getenv("TRACE"))
      printf("  %s it %lld passes %.2f crit %.3e est %.3e\n", name, (long long)dg->iter, dg->passes,
             *crit, dg->resid_est);
    if (*crit <= tol || dg->done) break;
  }
  if (st == KRR_OK && w) st = krr_solver_weights(s, w);
  krr_solver_diag(s, dg);
  if (keep && st == KRR_OK) *keep = s;
  else krr_solver_free(s);
  return st;
}

/* weights after k x step(1), step(k), and step(k) again: all identical */
static inline int same_by_slices(tfit *f, const char *name, const char *spec, int64_t len, int k) {
  double *w1 = malloc(sizeof(double) * len), *w2 = malloc(sizeof(double) * len),
         *w3 = malloc(sizeof(double) * len);
  krr_solver *s = NULL;
  int ok = tinit(f, name, spec, &s) == KRR_OK;
  for (int i = 0; ok && i < k; i++) ok = krr_solver_step(s, 1) == KRR_OK;
  ok = ok && krr_solver_weights(s, w1) == KRR_OK;
  krr_solver_free(s);
  s = NULL;
  ok = ok && tinit(f, name, spec, &s) == KRR_OK;
  ok = ok && krr_solver_step(s, k) == KRR_OK && krr_solver_weights(s, w2) == KRR_OK;
  krr_solver_free(s);
  s = NULL;
  ok = ok && tinit(f, name, spec, &s) == KRR_OK;
  ok = ok && krr_solver_step(s, k) == KRR_OK && krr_solver_weights(s, w3) == KRR_OK;
  krr_solver_free(s);
  ok = ok && memcmp(w1, w2, sizeof(double) * len) == 0 && memcmp(w2, w3, sizeof(double) * len) == 0;
  free(w1); free(w2); free(w3);
  return ok;
}

#endif
