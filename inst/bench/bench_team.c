/* How much work must an OpenMP region carry before a second thread pays?
 * The measurement behind KRR_WORK_PER_THREAD (src/cpu/cpu.h).
 *   make -C inst/bench team && inst/bench/build/bench_team [reps]
 * Built with -DKRR_WORK_PER_THREAD=0 (no threshold: a call with ctx->threads
 * = 2 always opens a 2-thread team), so it times each op at 1 and 2 threads:
 *   - per-region overhead of an empty `omp parallel` of 2 threads when the
 *     second thread is still spinning (back-to-back regions, "warm") and when
 *     it has gone to sleep (20 ms since the last region, "cold": libgomp spins
 *     for about GOMP_SPINCOUNT = 300000 iterations, then blocks on a futex);
 *   - kernel_mv (q = 1), kernel_block, gemm, axpby, dot and randn over a range
 *     of sizes, median of `reps` calls, warm and cold; "work" is the estimate
 *     the thread policy uses (krr_cpu_work_* in cpu.h, flop-equivalents).
 * Run it on a quiet machine (`uptime` before and after).  Not a test. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../../src/cpu/cpu.h"

static double now(void) { return krr_now(); }
static void sleep_ms(double ms) {
  struct timespec ts = {0, (long)(ms * 1e6)};
  nanosleep(&ts, NULL);
}
static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmpd);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static volatile double sink;
static void empty_region(int nt) {
#pragma omp parallel num_threads(nt)
  { sink += 1.0; }
}

typedef struct {
  const krr_ops *ops;
  krr_kernel k;
  double *X, *V, *out, *A, *B, *C;
  int64_t n, m;
  int p, kind; /* 0 mv, 1 block, 2 gemm, 3 axpby, 4 dot, 5 randn */
} job;

static void run_job(krr_ctx *ctx, job *j) {
  double d;
  switch (j->kind) {
    case 0: j->ops->kernel_mv_d(ctx, &j->k, j->X, j->m, j->X, j->n, j->p, j->V, j->n, 1, j->out, j->m); break;
    case 1: j->ops->kernel_block_d(ctx, &j->k, j->X, j->m, j->X, j->m, j->p, j->out, j->m); break;
    case 2: j->ops->gemm_d(ctx, 0, 0, j->m, j->m, j->n, 1.0, j->A, j->m, j->B, j->n, 0.0, j->C, j->m); break;
    case 3: j->ops->axpby_d(ctx, j->n, 0.5, j->A, 0.9, j->B); break;
    case 4: j->ops->dot_d(ctx, j->n, j->A, j->B, &d); sink += d; break;
    case 5: j->ops->randn_d(ctx, j->n, 1, 0, j->A); break;
  }
}
static double work_of(job *j) {
  switch (j->kind) {
    case 0: return krr_cpu_work_kernel(j->m, j->n, j->p, 1);
    case 1: return krr_cpu_work_kernel(j->m, j->m, j->p, 0);
    case 2: return krr_cpu_work_gemm(j->m, j->m, j->n, sizeof(double));
    case 3: case 4: return krr_cpu_work_stream(j->n);
    default: return krr_cpu_work_randn(j->n);
  }
}

/* median seconds per call; cold: sleep between calls so the worker blocks */
static double time_job(job *j, int threads, int cold, int reps) {
  krr_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.threads = threads;
  double *t = malloc(sizeof(double) * (size_t)reps);
  run_job(&ctx, j);
  for (int r = 0; r < reps; r++) {
    if (cold) sleep_ms(20);
    else run_job(&ctx, j); /* keeps the team warm */
    double t0 = now();
    run_job(&ctx, j);
    t[r] = now() - t0;
  }
  double m = median(t, reps);
  free(t);
  return m;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 41;
  if (reps < 3) reps = 3;
  /* region overheads */
  {
    double w[2001], c[201];
    for (int r = 0; r < 2001; r++) {
      double t0 = now();
      empty_region(2);
      w[r] = now() - t0;
    }
    for (int r = 0; r < 201; r++) {
      sleep_ms(20);
      double t0 = now();
      empty_region(2);
      c[r] = now() - t0;
    }
    double w1[2001];
    for (int r = 0; r < 2001; r++) {
      double t0 = now();
      empty_region(1);
      w1[r] = now() - t0;
    }
    printf("empty omp parallel: 1 thread %.2f us; 2 threads warm %.2f us, cold (after 20 ms) %.1f us "
           "(medians)\n\n", 1e6 * median(w1, 2001), 1e6 * median(w, 2001), 1e6 * median(c, 201));
  }
  const krr_ops *ops = krr_cpu_ops();
  const int64_t NMAX = 1 << 22;
  job j;
  memset(&j, 0, sizeof j);
  j.ops = ops;
  j.X = malloc(sizeof(double) * NMAX);
  j.V = malloc(sizeof(double) * NMAX);
  j.out = malloc(sizeof(double) * NMAX);
  j.A = malloc(sizeof(double) * NMAX);
  j.B = malloc(sizeof(double) * NMAX);
  j.C = malloc(sizeof(double) * NMAX);
  srand(1);
  for (int64_t i = 0; i < NMAX; i++) {
    j.X[i] = rand() / (double)RAND_MAX;
    j.V[i] = j.A[i] = j.B[i] = rand() / (double)RAND_MAX - 0.5;
  }
  j.k.type = KRR_RBF;
  j.k.bandwidth = 1.0;
  printf("| op | size | work (flop-eq) | 1 thread us | 2 threads warm us | 2 threads cold us | warm 2/1 | cold 2/1 |\n");
  printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
  struct { int kind; int64_t m, n; int p; } cases[] = {
      {0, 32, 32, 10, }, {0, 64, 256, 5}, {0, 64, 1024, 5}, {0, 128, 1024, 5}, {0, 128, 2048, 5},
      {0, 256, 2048, 5}, {0, 256, 5000, 5}, {0, 256, 20000, 5}, {0, 64, 512, 40}, {0, 256, 1024, 40},
      {1, 32, 0, 10}, {1, 64, 0, 5}, {1, 128, 0, 5}, {1, 256, 0, 5}, {1, 512, 0, 5}, {1, 1024, 0, 5},
      {1, 256, 0, 40}, {1, 512, 0, 40},
      {2, 32, 32, 0}, {2, 64, 64, 0}, {2, 100, 100, 0}, {2, 128, 100, 0}, {2, 256, 100, 0},
      {2, 256, 256, 0}, {2, 512, 100, 0},
      {3, 0, 4096, 0}, {3, 0, 16384, 0}, {3, 0, 65536, 0}, {3, 0, 262144, 0}, {3, 0, 1048576, 0},
      {4, 0, 32768, 0}, {4, 0, 65536, 0}, {4, 0, 262144, 0}, {4, 0, 1048576, 0},
      {5, 0, 4096, 0}, {5, 0, 16384, 0}, {5, 0, 65536, 0}, {5, 0, 262144, 0}};
  const char *names[] = {"kernel_mv q=1", "kernel_block", "gemm m=n, k", "axpby", "dot", "randn"};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    j.kind = cases[c].kind;
    j.m = cases[c].m;
    j.n = cases[c].n;
    j.p = cases[c].p;
    char size[64];
    if (j.kind == 0) snprintf(size, sizeof size, "%lld x %lld, p = %d", (long long)j.m, (long long)j.n, j.p);
    else if (j.kind == 1) snprintf(size, sizeof size, "%lld x %lld, p = %d", (long long)j.m, (long long)j.m, j.p);
    else if (j.kind == 2) snprintf(size, sizeof size, "%lld x %lld x %lld", (long long)j.m, (long long)j.m, (long long)j.n);
    else snprintf(size, sizeof size, "n = %lld", (long long)j.n);
    double t1 = time_job(&j, 1, 0, reps), t2w = time_job(&j, 2, 0, reps),
           t2c = time_job(&j, 2, 1, reps > 21 ? 21 : reps);
    printf("| %s | %s | %.3g | %.1f | %.1f | %.1f | %.2f | %.2f |\n", names[j.kind], size, work_of(&j),
           1e6 * t1, 1e6 * t2w, 1e6 * t2c, t2w / t1, t2c / t1);
    fflush(stdout);
  }
  return 0;
}
