/* CPU backend internals (OpenBLAS/cblas, LAPACKE, OpenMP). */
#ifndef KRR_CPU_H
#define KRR_CPU_H
#include "../core/ops.h"

#define KRR_CPU_DECL(real, S)                                                               \
  krr_status krr_cpu_kernel_mv_##S(krr_ctx *ctx, const krr_kernel *k, const real *X1,        \
                                   int64_t n1, const real *X2, int64_t n2, int p,             \
                                   const real *V, int64_t ldv, int q, real *out, int64_t ldo); \
  krr_status krr_cpu_kernel_block_##S(krr_ctx *ctx, const krr_kernel *k, const real *X1,     \
                                      int64_t n1, const real *X2, int64_t n2, int p,          \
                                      real *out, int64_t ldo);
KRR_CPU_DECL(double, d)
KRR_CPU_DECL(float, s)

/* Run BLAS single-threaded inside our own OpenMP regions, multi-threaded
 * outside: the one place that talks to the BLAS thread pool. */
void krr_cpu_blas_threads(int n);
#endif
