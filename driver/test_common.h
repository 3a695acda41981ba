/* Shared pieces of the standalone C test programs (askotch_driver,
 * test_solvers, test_solvers2): pass/fail counting, synthetic data, error. */
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

static int n_pass = 0, n_fail = 0;
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
static double rel_diff(const double *a, const double *b, int64_t len) {
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

#endif
