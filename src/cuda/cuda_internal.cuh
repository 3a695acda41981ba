/* CUDA backend internals: private to src/cuda (never included by src/core).
 *
 * One krr_cuda_state per krr_ctx (ctx->dev): device ordinal, one stream, a
 * cuBLAS and a cuSOLVER handle bound to that stream, and a pool of growable
 * scratch buffers (one per purpose, reused across calls, freed in ctx_free).
 *
 * Error policy: every CUDA / cuBLAS / cuSOLVER call goes through one of the
 * KCU_* macros, which record "<call>: <reason>" with krr_fail(ctx,
 * KRR_ERR_DEVICE, ...) and return the status.  Kernel launches are followed by
 * KCU_LAUNCHED (cudaGetLastError).  Nothing here throws, prints or exits.
 */
#ifndef KRR_CUDA_INTERNAL_CUH
#define KRR_CUDA_INTERNAL_CUH

/* shared headers (rng.h, kernel_math.h) become host+device code */
#ifndef KRR_HD
#define KRR_HD static __host__ __device__ __forceinline__
#endif

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cusolverDn.h>

#include "../core/ops.h"

/* scratch pool slots: each purpose owns one growable device buffer, so two
 * live uses never share memory within one op */
enum {
  KCU_WS_SOLVER = 0, /* cuSOLVER device workspace */
  KCU_WS_INFO,       /* devInfo (int) */
  KCU_WS_SPLIT,      /* kernel_mv split-K partial sums (double) */
  KCU_WS_TILE,       /* kernel_mv large-q route: materialised K tile */
  KCU_WS_PTILE,      /* kernel_mv large-q route: float gemm product tile */
  KCU_WS_ACC,        /* kernel_mv large-q route: double accumulator */
  KCU_WS_RED,        /* reduction partials (double) */
  KCU_WS_TAU,        /* geqrf tau */
  KCU_WS_U,          /* svd U / R scratch */
  KCU_WS_U2,         /* svd second scratch */
  KCU_WS_NORM,       /* kernel_block GEMM route: squared row norms */
  KCU_WS_N
};

typedef struct krr_cuda_state {
  int device;
  cudaStream_t stream;
  cublasHandle_t blas;
  cusolverDnHandle_t solver;
  cusolverDnParams_t params;
  int sm_count;
  int cc_major, cc_minor;
  int gemm_min_p[2]; /* L2 kernel products take the GEMM route from this p: [float, double] */
  void *ws[KCU_WS_N];
  size_t ws_size[KCU_WS_N];
  void *host_ws; /* cuSOLVER 64-bit API host workspace */
  size_t host_ws_size;
} krr_cuda_state;

static inline krr_cuda_state *kcu_state(krr_ctx *ctx) { return (krr_cuda_state *)ctx->dev; }

/* record failures (return KRR_ERR_DEVICE); the cuda one also clears the
 * runtime's last-error so a later launch check does not report it again */
krr_status kcu_fail_cuda(krr_ctx *ctx, const char *call, cudaError_t e);
krr_status kcu_fail_blas(krr_ctx *ctx, const char *call, cublasStatus_t s);
krr_status kcu_fail_solver(krr_ctx *ctx, const char *call, cusolverStatus_t s);

/* device scratch of at least `bytes` in slot; NULL after krr_fail */
void *kcu_ws(krr_ctx *ctx, int slot, size_t bytes);
/* host scratch for the cuSOLVER 64-bit API; NULL after krr_fail */
void *kcu_host_ws(krr_ctx *ctx, size_t bytes);
/* check ctx->dev and make its device current; KRR_OK or a failure */
krr_status kcu_enter(krr_ctx *ctx);

#define KCU_CHECK(ctx, name, call)                                    \
  do {                                                                \
    cudaError_t kcu_e_ = (call);                                      \
    if (kcu_e_ != cudaSuccess) return kcu_fail_cuda((ctx), (name), kcu_e_); \
  } while (0)

#define KCU_LAUNCHED(ctx, name)                                       \
  do {                                                                \
    cudaError_t kcu_e_ = cudaGetLastError();                          \
    if (kcu_e_ != cudaSuccess) return kcu_fail_cuda((ctx), (name), kcu_e_); \
  } while (0)

#define KCU_BLAS(ctx, name, call)                                     \
  do {                                                                \
    cublasStatus_t kcu_s_ = (call);                                   \
    if (kcu_s_ != CUBLAS_STATUS_SUCCESS) return kcu_fail_blas((ctx), (name), kcu_s_); \
  } while (0)

#define KCU_SOLVER(ctx, name, call)                                   \
  do {                                                                \
    cusolverStatus_t kcu_s_ = (call);                                 \
    if (kcu_s_ != CUSOLVER_STATUS_SUCCESS) return kcu_fail_solver((ctx), (name), kcu_s_); \
  } while (0)

#define KCU_TRY(expr)                 \
  do {                                \
    krr_status kcu_t_ = (expr);       \
    if (kcu_t_ != KRR_OK) return kcu_t_; \
  } while (0)

/* The smallest p at which the L2 kernels' products take the GEMM route
 * (kernels_mv.cu), at the crossover of the two routes measured on an H200
 * (src/cuda/NOTES.md): in float the routes tie at p = 64, in double the GEMM
 * route (FP64 tensor cores) ties at p = 32 and is 1.3x faster at 48.  The
 * environment variable ASKOTCH_CUDA_GEMM_MIN_P overrides both for a context
 * (benchmarks and tests of either route). */
#define KCU_GEMM_MIN_P_FLOAT 64
#define KCU_GEMM_MIN_P_DOUBLE 40

/* threads per block and a grid for an elementwise grid-stride loop over n */
#define KCU_NT 256
static inline unsigned kcu_grid(const krr_cuda_state *st, int64_t n) {
  int64_t b = (n + KCU_NT - 1) / KCU_NT;
  int64_t cap = (int64_t)(st->sm_count > 0 ? st->sm_count : 16) * 32;
  if (b > cap) b = cap;
  if (b < 1) b = 1;
  return (unsigned)b;
}

/* kernels_mv.cu: the two kernel primitives (C++ linkage, backend-internal) */
krr_status krr_cuda_kernel_mv_s(krr_ctx *ctx, const krr_kernel *k, const float *X1, int64_t n1,
                                const float *X2, int64_t n2, int p, const float *V, int64_t ldv,
                                int q, float *out, int64_t ldo);
krr_status krr_cuda_kernel_mv_d(krr_ctx *ctx, const krr_kernel *k, const double *X1, int64_t n1,
                                const double *X2, int64_t n2, int p, const double *V,
                                int64_t ldv, int q, double *out, int64_t ldo);
krr_status krr_cuda_kernel_block_s(krr_ctx *ctx, const krr_kernel *k, const float *X1,
                                   int64_t n1, const float *X2, int64_t n2, int p, float *out,
                                   int64_t ldo);
krr_status krr_cuda_kernel_block_d(krr_ctx *ctx, const krr_kernel *k, const double *X1,
                                   int64_t n1, const double *X2, int64_t n2, int p, double *out,
                                   int64_t ldo);

#endif
