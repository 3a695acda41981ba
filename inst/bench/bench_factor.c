/* The polled factorisations against LAPACK's threaded calls, and the CPU
 * backend's GEMM on the shapes they issue; RESULTS.md, "Above 1e4 points".
 *   make -C inst/bench factor     then   inst/bench/build/bench_factor THREADS REPS N...
 * First the backend's gemm (fixed slices of C, one single-threaded BLAS call
 * each) on the products of a factorisation: the trailing update of the
 * polled Cholesky (m x 1024 x 256, A^T B), a column block of the
 * triangular product U U^T (m x 256 x m, A B^T), and a square product;
 * GFLOP/s, the best of REPS.  Then, for each n: the upper Cholesky of an
 * RBF kernel matrix of n standard normal points in p = 10 (bandwidth 3.2,
 * plus n 1e-3 on the diagonal) by krr_potrf_polled and by one LAPACK
 * potrf on the BLAS's threads, then U U^T of the factor by krr_uut_polled
 * and by LAPACK's lauum, double and single: seconds (best of REPS), the
 * rate at n^3 / 3 flops each, and the largest difference from LAPACK's
 * result relative to the largest entry.  Each call starts after a pause
 * (LAPACK's threads, spinning after a call, would slow the next). */
#include <time.h>
#include <cblas.h>
#include "../../driver/test_common.h"
#include "../../src/core/base/base.h"

static double upper_diff(krr_precision prec, const void *a, const void *b, int64_t n) {
  double md = 0, mx = 0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i <= j; i++) {
      const int64_t k = i + j * n;
      double x = prec == KRR_DOUBLE ? ((const double *)a)[k] : ((const float *)a)[k];
      double y = prec == KRR_DOUBLE ? ((const double *)b)[k] : ((const float *)b)[k];
      if (fabs(x - y) > md) md = fabs(x - y);
      if (fabs(y) > mx) mx = fabs(y);
    }
  return mx > 0 ? md / mx : md;
}

static void gemm_rates(krr_ctx *ctx, int reps) {
  const int shapes[][5] = {{1, 0, 3000, 1024, 256},
                           {0, 1, 3000, 256, 3000},
                           {0, 0, 3000, 3000, 3000},
                           {0, 0, 1000, 1000, 1000},
                           {0, 0, 400, 400, 400}};
  const int64_t N = 3000 * 3000;
  double *A = malloc(8 * N), *B = malloc(8 * N), *C = calloc(N, 8);
  float *Af = malloc(4 * N), *Bf = malloc(4 * N), *Cf = calloc(N, 4);
  for (int64_t i = 0; i < N; i++) Af[i] = (float)(A[i] = B[i] = krr_rng_normal(3, (uint64_t)i));
  memcpy(Bf, Af, 4 * N);
  for (int s = 0; s < 5; s++) {
    const int ta = shapes[s][0], tb = shapes[s][1], m = shapes[s][2], n = shapes[s][3],
              k = shapes[s][4];
    const int lda = ta ? k : m, ldb = tb ? n : k, inner = (int)(3e9 / (2.0 * m * n * k)) + 1;
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < reps; r++)
      for (int pr = 0; pr < 2; pr++) {
        double t = krr_now();
        for (int i = 0; i < inner; i++) {
          if (pr == 0)
            KOP(ctx, KRR_DOUBLE, gemm, ta, tb, m, n, k, 1.0, (void *)A, lda, (void *)B, ldb, 0.0,
                (void *)C, m);
          else
            KOP(ctx, KRR_FLOAT, gemm, ta, tb, m, n, k, 1.0, (void *)Af, lda, (void *)Bf, ldb, 0.0,
                (void *)Cf, m);
        }
        t = (krr_now() - t) / inner;
        if (t < best[pr]) best[pr] = t;
      }
    for (int pr = 0; pr < 2; pr++)
      printf("gemm%s,%dx%dx%d,%s,sliced,%.4f,%.1f,\n",
             ta   ? "_tn"
             : tb ? "_nt"
                  : "",
             m, n, k, pr ? "single" : "double", best[pr], 2.0 * m * n * k / best[pr] / 1e9);
  }
  free(A), free(B), free(C), free(Af), free(Bf), free(Cf);
}

/* one factorisation or product, polled or LAPACK's, on a fresh copy of K */
static double run(krr_ctx *ctx, krr_precision prec, int what, int lapack, const void *K, void *W,
                  void *out, int64_t n, int threads) {
  const size_t es = krr_sizeof(prec), bytes = es * (size_t)(n * n);
  memcpy(W, K, bytes);
  int info = 0;
  /* OpenBLAS's threads spin for a while after a threaded call and would
   * take a core from the next polled call: let them go to sleep */
  struct timespec nap = {0, 300000000};
  nanosleep(&nap, NULL);
  double t = krr_now();
  if (what == 0 && lapack) {
    openblas_set_num_threads(threads);
    info = prec == KRR_DOUBLE ? LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', n, W, n)
                              : LAPACKE_spotrf(LAPACK_COL_MAJOR, 'U', n, W, n);
  } else if (what == 0) {
    krr_potrf_polled(ctx, prec, n, W, n, &info);
  } else if (lapack) {
    openblas_set_num_threads(threads);
    info = prec == KRR_DOUBLE ? LAPACKE_dlauum(LAPACK_COL_MAJOR, 'U', n, W, n)
                              : LAPACKE_slauum(LAPACK_COL_MAJOR, 'U', n, W, n);
  } else {
    krr_uut_polled(ctx, prec, n, 1.0, K, n, W, n);
  }
  t = krr_now() - t;
  openblas_set_num_threads(1);
  if (info != 0) printf("# info %d\n", info);
  memcpy(out, W, bytes);
  return t;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: bench_factor THREADS REPS N...\n");
    return 2;
  }
  const int threads = atoi(argv[1]), reps = atoi(argv[2]);
  krr_ctx c, *ctx = &c;
  if (krr_ctx_init(ctx, krr_cpu_ops(), krr_cpu_ops(), threads, 0) != KRR_OK) return 1;
  printf("what,shape,precision,route,seconds,gflops,rel_diff\n");
  gemm_rates(ctx, reps);
  for (int a = 3; a < argc; a++) {
    const int64_t n = atoll(argv[a]);
    const int p = 10;
    double *X = malloc(sizeof(double) * n * p), *K = malloc(sizeof(double) * n * n);
    for (int64_t i = 0; i < n * p; i++) X[i] = krr_rng_normal(7, (uint64_t)i);
    krr_kernel kr = {.type = KRR_RBF, .bandwidth = 3.2};
    if (krr_kernel_matrix_host(ctx, KRR_DOUBLE, &kr, X, n, X, n, p, K) != KRR_OK) return 1;
    for (int64_t i = 0; i < n; i++) K[i + i * n] += 1e-3 * (double)n;
    for (int pr = 0; pr < 2; pr++) {
      const krr_precision prec = pr == 0 ? KRR_DOUBLE : KRR_FLOAT;
      const size_t es = krr_sizeof(prec);
      void *Kp = malloc(es * n * n), *W = malloc(es * n * n),
           *R[2] = {malloc(es * n * n), malloc(es * n * n)};
      for (int64_t i = 0; i < n * n; i++) {
        if (prec == KRR_DOUBLE) ((double *)Kp)[i] = K[i];
        else ((float *)Kp)[i] = (float)K[i];
      }
      for (int what = 0; what < 2; what++) {
        double best[2] = {1e30, 1e30};
        for (int r = 0; r < reps; r++)
          for (int lapack = 0; lapack < 2; lapack++) {
            double t = run(ctx, prec, what, lapack, Kp, W, R[lapack], n, threads);
            if (t < best[lapack]) best[lapack] = t;
          }
        for (int lapack = 0; lapack < 2; lapack++)
          printf("%s,%lld,%s,%s,%.3f,%.1f,%.1e\n", what == 0 ? "potrf" : "uut", (long long)n,
                 pr == 0 ? "double" : "single", lapack ? "lapack" : "polled", best[lapack],
                 (double)n * n * n / 3 / best[lapack] / 1e9, upper_diff(prec, R[0], R[1], n));
        if (what == 0) { /* the factor (its lower triangle zeroed) is the product's input */
          for (int64_t j = 0; j < n; j++)
            for (int64_t i = j + 1; i < n; i++) memset((char *)R[1] + es * (i + j * n), 0, es);
          memcpy(Kp, R[1], es * n * n);
        }
      }
      free(Kp), free(W), free(R[0]), free(R[1]);
    }
    free(X), free(K);
  }
  return 0;
}
