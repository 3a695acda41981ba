/* GPU benchmark of the askotch CUDA backend (no R, no CPU backend needed).
 *
 *   ./bench_cuda [--quick] [--device N]
 *
 * 1. cuBLAS SGEMM / DGEMM rate (n = 8192 / 4096) against the FP32 / FP64
 *    (non-tensor) roofline  SMs x lanes x 2 x clock.
 * 2. kernel_mv (q = 1) pairs/s for the five kernels, p in {3, 10, 28, 100, 784},
 *    float and double, as a fraction of the roofline.  Flop count per pair:
 *    3p + 10  (sub, mul, add per dimension; ~10 for the kernel evaluation and
 *    the K.V multiply-add).  The fused kernel issues 2 FP instructions per
 *    dimension (sub + fma), so at perfect issue this count reaches 75% of peak.
 * 3. kernel_mv with q = 8 and q = 100 (Nystrom sketch route) at p = 28.
 * 4. The two routes of the L2 kernels side by side (the fused direct loop and
 *    the GEMM route, src/cuda/kernels_mv.cu) over p, for the crossover that
 *    sets KCU_GEMM_MIN_P: one context per route (ASKOTCH_CUDA_GEMM_MIN_P).
 * Prints tables; timings are the best of 3 runs after a warm-up.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include <cublas_v2.h>
#include "../../../src/core/ops.h"

static int quick = 0;

#ifdef KRR_BENCH_STUB
/* ctx.c asks the CPU thread policy for a default; no CPU backend here */
int krr_cpu_threads_default(void) { return 1; }
/* ctx_init requires a host table; the kernel products timed here never call it */
const krr_ops *krr_cpu_ops(void) {
  static krr_ops none;
  return &none;
}
#endif

static double peak_lanes(int major, int minor, int fp64) {
  /* FP32 / FP64 lanes per SM (non-tensor) */
  if (major == 9 || (major == 8 && minor == 0) || major >= 10) {
    if (major == 8 && minor == 0) return fp64 ? 32 : 64;
    return fp64 ? 64 : 128;
  }
  if (major == 8) return fp64 ? 2 : 128; /* 8.6, 8.9 */
  if (major == 7) return fp64 ? (minor == 0 ? 32 : 2) : 64;
  return fp64 ? 2 : 64;
}

static double now(void) { return krr_now(); }

static void die(krr_ctx *ctx, const char *what) {
  fprintf(stderr, "bench_cuda: %s failed: %s\n", what, ctx ? ctx->msg : "");
  exit(1);
}

static void gemm_rate(int dbl, int n, double peak) {
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "cublasCreate failed\n"); return; }
  size_t es = dbl ? 8 : 4;
  void *A, *B, *C;
  if (cudaMalloc(&A, es * n * n) || cudaMalloc(&B, es * n * n) || cudaMalloc(&C, es * n * n)) {
    fprintf(stderr, "gemm: cudaMalloc failed\n");
    return;
  }
  cudaMemset(A, 0, es * n * n); cudaMemset(B, 0, es * n * n);
  double best = 1e30;
  for (int r = 0; r < 4; r++) {
    cudaDeviceSynchronize();
    double t0 = now();
    if (dbl) {
      double al = 1, be = 0;
      cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &al, A, n, B, n, &be, C, n);
    } else {
      float al = 1, be = 0;
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &al, A, n, B, n, &be, C, n);
    }
    cudaDeviceSynchronize();
    double t = now() - t0;
    if (r > 0 && t < best) best = t;
  }
  double fl = 2.0 * n * (double)n * n / best;
  printf("%-6s n=%-6d %9.2f ms  %8.2f TFLOP/s  %5.1f%% of %s roofline (%.1f TFLOP/s)\n",
         dbl ? "DGEMM" : "SGEMM", n, best * 1e3, fl / 1e12, 100 * fl / peak, dbl ? "FP64" : "FP32",
         peak / 1e12);
  cudaFree(A); cudaFree(B); cudaFree(C);
  cublasDestroy(h);
}

/* time one kernel_mv configuration; returns seconds (best of 3) */
static double time_mv(krr_ctx *ctx, krr_precision prec, int kt, int64_t n1, int64_t n2, int p,
                      int q) {
  size_t es = krr_sizeof(prec);
  void *X1 = ctx->ops->alloc(ctx, es * (size_t)(n1 * p));
  void *X2 = ctx->ops->alloc(ctx, es * (size_t)(n2 * p));
  void *V = ctx->ops->alloc(ctx, es * (size_t)(n2 * q));
  void *O = ctx->ops->alloc(ctx, es * (size_t)(n1 * q));
  if (!X1 || !X2 || !V || !O) die(ctx, "alloc");
  /* random data through the backend's own randn */
  if (prec == KRR_FLOAT) {
    ctx->ops->randn_s(ctx, n1 * p, 1, 0, X1);
    ctx->ops->randn_s(ctx, n2 * p, 2, 0, X2);
    ctx->ops->randn_s(ctx, n2 * q, 3, 0, V);
  } else {
    ctx->ops->randn_d(ctx, n1 * p, 1, 0, X1);
    ctx->ops->randn_d(ctx, n2 * p, 2, 0, X2);
    ctx->ops->randn_d(ctx, n2 * q, 3, 0, V);
  }
  krr_kernel k = {.type = (krr_kernel_type)kt, .bandwidth = sqrt((double)p)};
  double best = 1e30;
  for (int r = 0; r < 4; r++) {
    if (ctx->ops->sync(ctx) != KRR_OK) die(ctx, "sync");
    double t0 = now();
    krr_status st = prec == KRR_FLOAT
                        ? ctx->ops->kernel_mv_s(ctx, &k, X1, n1, X2, n2, p, V, n2, q, O, n1)
                        : ctx->ops->kernel_mv_d(ctx, &k, X1, n1, X2, n2, p, V, n2, q, O, n1);
    if (st != KRR_OK || ctx->ops->sync(ctx) != KRR_OK) die(ctx, "kernel_mv");
    double t = now() - t0;
    if (r > 0 && t < best) best = t;
  }
  ctx->ops->dealloc(ctx, X1); ctx->ops->dealloc(ctx, X2);
  ctx->ops->dealloc(ctx, V); ctx->ops->dealloc(ctx, O);
  return best;
}

int main(int argc, char **argv) {
  int dev = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--device") && i + 1 < argc) dev = atoi(argv[++i]);
  }
  const char *why = NULL;
  const krr_ops *ops = krr_cuda_ops(&why);
  if (!ops) { printf("SKIP: %s\n", why); return 77; }
  char name[256];
  size_t mem;
  int ma, mi, sms = 0, clk = 0;
  krr_cuda_device_info(dev, name, sizeof name, &mem, &ma, &mi);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev); /* kHz */
  double p32 = sms * peak_lanes(ma, mi, 0) * 2.0 * clk * 1e3;
  double p64 = sms * peak_lanes(ma, mi, 1) * 2.0 * clk * 1e3;
  printf("device %d: %s, cc %d.%d, %d SMs, %.0f MHz, %.1f GiB\n", dev, name, ma, mi, sms, clk / 1e3,
         mem / 1073741824.0);
  printf("roofline (non-tensor): FP32 %.1f TFLOP/s, FP64 %.1f TFLOP/s\n\n", p32 / 1e12, p64 / 1e12);
  cudaSetDevice(dev);

  printf("== cuBLAS GEMM ==\n");
  gemm_rate(0, quick ? 4096 : 8192, p32);
  gemm_rate(1, quick ? 2048 : 4096, p64);

  krr_ctx ctx;
  if (krr_ctx_init(&ctx, ops, krr_cpu_ops(), 1, dev) != KRR_OK) die(&ctx, "ctx_init");
  static const char *kn[] = {"rbf", "laplace", "matern12", "matern32", "matern52"};
  const int ps[] = {3, 10, 28, 100, 784};
  printf("\n== kernel_mv, q = 1, n1 = n2 = N (flops/pair = 3p + 10) ==\n");
  printf("%-6s %-9s %5s %7s %10s %12s %10s %8s\n", "prec", "kernel", "p", "N", "ms", "Gpairs/s",
         "TFLOP/s", "%peak");
  for (int pr = 0; pr < 2; pr++) {
    krr_precision prec = pr ? KRR_DOUBLE : KRR_FLOAT;
    for (int kt = 0; kt < 5; kt++)
      for (int ip = 0; ip < 5; ip++) {
        int p = ps[ip];
        /* keep each run around 10-100 ms */
        int64_t N = p <= 10 ? 65536 : p <= 28 ? 49152 : p <= 100 ? 32768 : 12288;
        if (prec == KRR_DOUBLE) N /= 2;
        if (quick) N /= 2;
        double t = time_mv(&ctx, prec, kt, N, N, p, 1);
        double pairs = (double)N * N / t, fl = pairs * (3.0 * p + 10);
        double pk = prec == KRR_DOUBLE ? p64 : p32;
        printf("%-6s %-9s %5d %7lld %10.2f %12.2f %10.2f %7.1f%%\n", pr ? "double" : "float", kn[kt], p,
               (long long)N, t * 1e3, pairs / 1e9, fl / 1e12, 100 * fl / pk);
        fflush(stdout);
      }
  }
  printf("\n== kernel_mv, rbf, p = 28, larger q (pairs/s counts each (i, j) once) ==\n");
  printf("%-6s %5s %7s %7s %10s %12s\n", "prec", "q", "n1", "n2", "ms", "Gpairs/s");
  const int qs[] = {1, 8, 100};
  for (int pr = 0; pr < 2; pr++)
    for (int iq = 0; iq < 3; iq++) {
      krr_precision prec = pr ? KRR_DOUBLE : KRR_FLOAT;
      int64_t n1 = quick ? 8192 : 16384, n2 = quick ? 32768 : 65536;
      double t = time_mv(&ctx, prec, 0, n1, n2, 28, qs[iq]);
      printf("%-6s %5d %7lld %7lld %10.2f %12.2f\n", pr ? "double" : "float", qs[iq], (long long)n1,
             (long long)n2, t * 1e3, (double)n1 * n2 / t / 1e9);
    }
  printf("\n== kernel_mv routes, q = 1, n1 = n2 = N: direct loop vs GEMM route ==\n");
  printf("%-6s %-9s %5s %7s %12s %12s %8s %9s\n", "prec", "kernel", "p", "N", "direct Gp/s",
         "GEMM Gp/s", "ratio", "GEMM %pk");
  {
    krr_ctx cd, cg;
    setenv("ASKOTCH_CUDA_GEMM_MIN_P", "1000000000", 1);
    if (krr_ctx_init(&cd, ops, krr_cpu_ops(), 1, dev) != KRR_OK) die(&cd, "ctx_init (direct)");
    setenv("ASKOTCH_CUDA_GEMM_MIN_P", "1", 1);
    if (krr_ctx_init(&cg, ops, krr_cpu_ops(), 1, dev) != KRR_OK) die(&cg, "ctx_init (GEMM)");
    unsetenv("ASKOTCH_CUDA_GEMM_MIN_P");
    const int rp[] = {10, 16, 24, 32, 48, 64, 100, 200, 784};
    const int rk[] = {0, 3};
    for (int pr = 0; pr < 2; pr++) {
      krr_precision prec = pr ? KRR_DOUBLE : KRR_FLOAT;
      for (int ik = 0; ik < 2; ik++)
        for (int ip = 0; ip < 9; ip++) {
          int p = rp[ip];
          int64_t N = p <= 32 ? 32768 : p <= 100 ? 24576 : 12288;
          if (quick) N /= 2;
          double td = time_mv(&cd, prec, rk[ik], N, N, p, 1);
          double tg = time_mv(&cg, prec, rk[ik], N, N, p, 1);
          double pk = prec == KRR_DOUBLE ? p64 : p32;
          double gp = (double)N * N / tg;
          printf("%-6s %-9s %5d %7lld %12.2f %12.2f %8.2f %8.1f%%\n", pr ? "double" : "float",
                 kn[rk[ik]], p, (long long)N, (double)N * N / td / 1e9, gp / 1e9, td / tg,
                 100 * gp * (3.0 * p + 10) / pk);
          fflush(stdout);
        }
    }
    krr_ctx_free(&cd);
    krr_ctx_free(&cg);
  }
  printf("\n== kernel_mv, small n1 (split over X2): rbf float p = 10, q = 1 ==\n");
  printf("%7s %8s %10s %12s\n", "n1", "n2", "ms", "Gpairs/s");
  const int64_t n1s[] = {100, 1000, 10000};
  for (int i = 0; i < 3; i++) {
    int64_t n2 = quick ? 500000 : 2000000;
    double t = time_mv(&ctx, KRR_FLOAT, 0, n1s[i], n2, 10, 1);
    printf("%7lld %8lld %10.2f %12.2f\n", (long long)n1s[i], (long long)n2, t * 1e3,
           (double)n1s[i] * n2 / t / 1e9);
  }
  krr_ctx_free(&ctx);
  return 0;
}
