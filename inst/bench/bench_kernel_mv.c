/* Benchmark of krr_cpu_kernel_mv_{s,d} (q = 1): kernel pairs per second for
 * the five kernels, float and double, p in {3, 10, 100, 784}, beside this
 * machine's SGEMM / DGEMM rate through cblas (OpenBLAS), and the fraction of
 * the GEMM rate when a pair is counted as 2p flops.
 *   make -C inst/bench && inst/bench/build/bench_kernel_mv [threads [kernel [p]]]
 * (kernel: one name, e.g. rbf; p: one dimension; default all rows)
 * Prints a Markdown table.  Not a test: nothing is asserted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include "../../src/cpu/cpu.h"
#include "../../src/core/kernel_math.h"

#include <time.h>
void openblas_set_num_threads(int);

/* process CPU seconds (all threads): on a shared VM the wall clock includes
 * time other processes held the cores; rate * threads / cpu is the rate the
 * code reaches while it runs (an uncontended estimate, spin-waits included). */
static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static int g_threads = 2;

static double frand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return (double)((*s * 2685821657736338717ULL) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* best-of GFLOP/s of an n x n x n GEMM, repeated for >= 0.3 s per trial */
static double gemm_gflops(int dbl, int n, double *cpu_rate) {
  size_t nn = (size_t)n * n;
  uint64_t s = 42;
  void *A = malloc(nn * (dbl ? 8 : 4)), *B = malloc(nn * (dbl ? 8 : 4)),
       *C = malloc(nn * (dbl ? 8 : 4));
  for (size_t i = 0; i < nn; i++) {
    if (dbl) {
      ((double *)A)[i] = frand(&s);
      ((double *)B)[i] = frand(&s);
    } else {
      ((float *)A)[i] = (float)frand(&s);
      ((float *)B)[i] = (float)frand(&s);
    }
  }
  double best = 0, bestc = 0;
  for (int trial = 0; trial < 3; trial++) {
    int reps = 0;
    double t0 = krr_now(), c0 = cpu_now(), t;
    do {
      if (dbl)
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, B, n, 0.0, C,
                    n);
      else
        cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f,
                    C, n);
      reps++;
      t = krr_now() - t0;
    } while (t < 0.3);
    double g = 2.0 * n * (double)n * n * reps / t * 1e-9;
    double gc = 2.0 * n * (double)n * n * reps / ((cpu_now() - c0) / g_threads) * 1e-9;
    if (g > best) best = g;
    if (gc > bestc) bestc = gc;
  }
  *cpu_rate = bestc;
  free(A);
  free(B);
  free(C);
  return best;
}

#define KNAME_(K, name, ...) name,
static const char *kname[KRR_N_KERNELS] = {KRR_KERNEL_LIST(KNAME_)};
#undef KNAME_

/* pairs/s of one kernel_mv call shape; n2 calibrated so one call ~0.5 s */
static double time_mv(krr_ctx *ctx, int dbl, int type, int p, int64_t *n2_used, double *cpu_rate) {
  const int64_t n1 = 2048;
  krr_kernel k = {.type = (krr_kernel_type)type, .bandwidth = sqrt((double)p)};
  int64_t n2 = 4096;
  double rate = 0;
  for (int pass = 0; pass < 2; pass++) {
    size_t sz = dbl ? 8 : 4;
    void *X1 = malloc(sz * n1 * p), *X2 = malloc(sz * n2 * p), *V = malloc(sz * n2),
         *out = malloc(sz * n1);
    uint64_t s = 7;
    for (int64_t i = 0; i < n1 * p; i++) {
      if (dbl) ((double *)X1)[i] = frand(&s); else ((float *)X1)[i] = (float)frand(&s);
    }
    for (int64_t i = 0; i < n2 * p; i++) {
      if (dbl) ((double *)X2)[i] = frand(&s); else ((float *)X2)[i] = (float)frand(&s);
    }
    for (int64_t i = 0; i < n2; i++) {
      if (dbl) ((double *)V)[i] = frand(&s); else ((float *)V)[i] = (float)frand(&s);
    }
    double best = 1e300, bestc = 1e300;
    for (int rep = 0; rep < (pass ? 3 : 1); rep++) {
      double t0 = krr_now(), c0 = cpu_now();
      if (dbl)
        krr_cpu_kernel_mv_d(ctx, &k, X1, n1, X2, n2, p, V, n2, 1, out, n1);
      else
        krr_cpu_kernel_mv_s(ctx, &k, X1, n1, X2, n2, p, V, n2, 1, out, n1);
      double t = krr_now() - t0, c = (cpu_now() - c0) / ctx->threads;
      if (t < best) best = t;
      if (c < bestc) bestc = c;
    }
    rate = (double)n1 * n2 / best;
    *cpu_rate = (double)n1 * n2 / bestc;
    *n2_used = n2;
    free(X1);
    free(X2);
    free(V);
    free(out);
    if (pass == 0) { /* aim at 0.5 s per call */
      n2 = (int64_t)(rate * 0.5 / n1);
      if (n2 < 512) n2 = 512;
      if (n2 * p > 60000000) n2 = 60000000 / p; /* cap memory (~480 MB double) */
    }
  }
  return rate;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  if (threads < 1) threads = 1;
  g_threads = threads;
  openblas_set_num_threads(threads);
  double sgc, dgc;
  double sg = gemm_gflops(0, 3072, &sgc), dg = gemm_gflops(1, 3072, &dgc);
  printf("threads: %d; cblas (OpenBLAS) n=3072: SGEMM %.1f GFLOP/s (per-CPU-time %.1f), "
         "DGEMM %.1f GFLOP/s (per-CPU-time %.1f)\n\n", threads, sg, sgc, dg, dgc);
  printf("Rates: wall-clock pairs/s; in brackets pairs per (CPU-second / threads).  %% of GEMM:\n"
         "pairs/s x 2p flops over the GEMM rate measured the same way (wall / CPU-time).\n\n");
  krr_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.threads = threads;
  printf("| kernel | p | float pairs/s [CPU-time] | float %% SGEMM [CPU-time] | double pairs/s [CPU-time] | double %% DGEMM [CPU-time] | n1 x n2 (float) |\n");
  printf("|---|---:|---:|---:|---:|---:|---|\n");
  const int ps[4] = {3, 10, 100, 784};
  const char *only_k = argc > 2 ? argv[2] : NULL;
  const int only_p = argc > 3 ? atoi(argv[3]) : 0;
  for (int type = 0; type < KRR_N_KERNELS; type++)
    for (int pi = 0; pi < 4; pi++) {
      int p = ps[pi];
      if ((only_k && strcmp(only_k, kname[type]) != 0) || (only_p > 0 && p != only_p)) continue;
      int64_t n2s, n2d;
      double rsc, rdc;
      double rs = time_mv(&ctx, 0, type, p, &n2s, &rsc);
      double rd = time_mv(&ctx, 1, type, p, &n2d, &rdc);
      printf("| %s | %d | %.3g [%.3g] | %.0f%% [%.0f%%] | %.3g [%.3g] | %.0f%% [%.0f%%] | 2048 x %lld |\n",
             kname[type], p, rs, rsc, 100.0 * rs * 2.0 * p / (sg * 1e9),
             100.0 * rsc * 2.0 * p / (sgc * 1e9), rd, rdc, 100.0 * rd * 2.0 * p / (dg * 1e9),
             100.0 * rdc * 2.0 * p / (dgc * 1e9), (long long)n2s);
      fflush(stdout);
    }
  return 0;
}
