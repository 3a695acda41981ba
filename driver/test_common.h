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
#endif
