/* CPU backend internals (OpenBLAS/cblas, LAPACKE, OpenMP). */
#ifndef KRR_CPU_H
#define KRR_CPU_H
#include <math.h>
#include "../core/ops.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* y = sin(x) / x for |x| <= pi / 2 from w = x^2, y and w of one scalar or
 * vector type with elements R (DBL: double): the Taylor series to degree
 * 21 in double (truncation below 1.3e-18), 13 in float (below 6.7e-10).
 * The periodic factor of the kernel tiles (kernels_t.c.inc) and the random
 * features' cosine (features_t.c.inc) use it without a library call, so
 * that their loops vectorise. */
#define KRR_SIN_OVER_X(y, w, R, DBL)                                     \
  do {                                                                   \
    if (DBL) {                                                           \
      (y) = (w) * (R)1.9572941063391263e-20 - (R)8.2206352466243295e-18; \
      (y) = (y) * (w) + (R)2.8114572543455206e-15;                       \
      (y) = (y) * (w) - (R)7.6471637318198165e-13;                       \
      (y) = (y) * (w) + (R)1.6059043836821615e-10;                       \
      (y) = (y) * (w) - (R)2.5052108385441719e-8;                        \
    } else {                                                             \
      (y) = (w) * (R)1.6059043836821615e-10 - (R)2.5052108385441719e-8;  \
    }                                                                    \
    (y) = (y) * (w) + (R)2.7557319223985891e-6;                          \
    (y) = (y) * (w) - (R)1.9841269841269841e-4;                          \
    (y) = (y) * (w) + (R)8.3333333333333333e-3;                          \
    (y) = (y) * (w) - (R)1.6666666666666667e-1;                          \
    (y) = (y) * (w) + (R)1;                                              \
  } while (0)

/* this thread's number in the current OpenMP team (0 without OpenMP) */
static inline int krr_cpu_thread_num(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

#define KRR_CPU_DECL(real, S)                                                                      \
  krr_status krr_cpu_kernel_mv_##S(krr_ctx *ctx, const krr_kernel *k, const real *X1, int64_t n1,  \
                                   const real *X2, int64_t n2, int p, const real *V, int64_t ldv,  \
                                   int q, real *out, int64_t ldo);                                 \
  krr_status krr_cpu_kernel_block_##S(krr_ctx *ctx, const krr_kernel *k, const real *X1,           \
                                      int64_t n1, const real *X2, int64_t n2, int p, real *out,    \
                                      int64_t ldo);                                                \
  krr_status krr_cpu_kernel_gram_##S(krr_ctx *ctx, const krr_kernel *k, const real *X1,            \
                                     int64_t n1, const real *X2, int64_t n2, int p, const real *V, \
                                     int64_t ldv, int q, double *acc);                             \
  krr_status krr_cpu_kprod_mv_##S(krr_ctx *ctx, const krr_kprod *pr, const real *X1, int64_t n1,   \
                                  const real *X2, int64_t n2, int p, const real *V, int64_t ldv,   \
                                  int q, real *out, int64_t ldo);                                  \
  krr_status krr_cpu_kprod_block_##S(krr_ctx *ctx, const krr_kprod *pr, const real *X1,            \
                                     int64_t n1, const real *X2, int64_t n2, int p, real *out,     \
                                     int64_t ldo);
KRR_CPU_DECL(double, d)
KRR_CPU_DECL(float, s)
struct krr_ddot;
/* kernel_deriv_dot (ops.h), kderiv.c */
krr_status krr_cpu_kernel_deriv_dot(krr_ctx *ctx, const struct krr_ddot *d, int64_t b0, int64_t b1,
                                    double *part);

/* Run BLAS single-threaded inside our own OpenMP regions, multi-threaded
 * outside: the one place that talks to the BLAS thread pool. */
void krr_cpu_blas_threads(int n);

/* LAPACK calls inside solver iterations (QR, SVD, Cholesky of r x r or b x b
 * blocks) stay single-threaded: a multithreaded BLAS pool left spinning after
 * them competes with our OpenMP threads.  Only one-shot factorisations of a
 * large matrix (the exact Cholesky solver) use the BLAS's threads.  A side
 * task (krr_overlap) of this size runs inside a kernel product's region. */
static inline int krr_cpu_lapack_serial(double flops) { return flops < 2e9; }

/* The memory limit and use (bytes) of this process's cgroup (v2, else v1)
 * read under `root` (normally /sys/fs/cgroup) with the group's path from
 * `self` (normally /proc/self/cgroup): 1 when a limit is set, else 0. */
int krr_cpu_cgroup_memory(const char *root, const char *self, size_t *limit, size_t *used);

/* ---- threads per call: the one place ---------------------------------------
 * Every OpenMP region of the CPU backend opens a team of
 *     krr_cpu_team(ctx, work) = min(ctx->threads, ceil(work / KRR_WORK_PER_THREAD))
 * threads, `work` being the call's size in flop-equivalents (the estimates
 * below).  It depends on sizes only, never on timing or load, so a result is
 * bitwise reproducible for a given `threads` setting and problem.
 *
 * Why (per-op costs at 1 and 2 threads: inst/bench/bench_team.c, whose
 * numbers are in the benchmark log): an empty 2-thread region costs under a
 * microsecond while the second thread still spins from the previous region
 * (libgomp spins for milliseconds, GOMP_SPINCOUNT), but 30-120 us once it
 * has gone to sleep on its futex, and milliseconds when its virtual CPU was
 * idle long enough to be halted; on a machine whose cores are busy with other
 * jobs a region cannot end before a preempted thread has run its share (a
 * scheduler time slice, milliseconds), and a spinning thread takes CPU from
 * the others.  The weights below make one work unit take about the same time
 * on one thread whatever the op (~60 units per ns).  Warm, a second thread
 * pays from ~1e5-2e6 units; after a futex sleep it needs ~1e7 units to break
 * even on a 100 us wake-up.
 * Rule: a thread joins a team only for a share of at least 3x the worst
 * futex wake-up (120 us), i.e. ~0.36 ms; with the ceil above a thread's
 * share is >= W / 2, so W = 0.72 ms of one thread = 4e7 units.
 * Consequences (2 threads): a b x n kernel product (b = 256, p = 5) splits
 * from n ~ 4200, a GEMM from 4e7 flops (e.g. 256 x 256 x 320) or, memory-
 * bound, from 1e7 bytes streamed (a b x b matrix times a vector from b ~
 * 1100 in double: the powering of ASkotch with b = 2000 stays split); the calls of
 * small fits (mtcars n = 32, Boston n = 506 with b = 256,
 * r = 100) never wake a second thread; on an idle machine a fit at n = 5000
 * keeps its split kernel product and loses only the split of its b x r
 * Gaussian draws and b x b x r GEMM (a few percent).
 * Build with -DKRR_WORK_PER_THREAD=0 to switch the threshold off (benchmarks). */
#ifndef KRR_WORK_PER_THREAD
#define KRR_WORK_PER_THREAD 4e7
#endif
static inline int krr_cpu_team(const krr_ctx *ctx, double work) {
  int nth = ctx->threads > 0 ? ctx->threads : 1;
  if (nth == 1 || !(KRR_WORK_PER_THREAD > 0)) return nth;
  double want = ceil(work / (double)KRR_WORK_PER_THREAD);
  return want >= (double)nth ? nth : want >= 1.0 ? (int)want : 1;
}
/* work estimates (flop-equivalents; calibrated so that one unit takes about
 * the same time on one thread whatever the op, see above) */
static inline double krr_cpu_work_kernel(int64_t n1, int64_t n2, int p, int q) {
  return (double)n1 * (double)n2 * (3.0 * p + 20.0 + 2.0 * q); /* distance, exp, K.V */
}
/* GEMM: its flops, or the bytes it streams when it is memory-bound (a
 * matrix-vector product: ~4-5 units per byte on one thread for b x b times
 * one vector, b = 256 ... 4000, double and float) */
static inline double krr_cpu_work_gemm(int64_t m, int64_t n, int64_t k, size_t es) {
  double flops = 2.0 * (double)m * (double)n * (double)k;
  double bytes = (double)es * ((double)m * (double)k + (double)k * (double)n + (double)m * (double)n);
  return flops > 4.0 * bytes ? flops : 4.0 * bytes;
}
static inline double krr_cpu_work_stream(int64_t n) { return 40.0 * (double)n; }
static inline double krr_cpu_work_randn(int64_t n) { return 1400.0 * (double)n; } /* log, cos */
#endif
