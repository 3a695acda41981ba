/* The krr_ops table for CUDA: context, memory, vector ops, dense linear
 * algebra (cuBLAS / cuSOLVER 64-bit APIs), random numbers.  The two kernel
 * primitives live in kernels_mv.cu.
 *
 * Extern "C" entry points: krr_cuda_ops, krr_cuda_device_count,
 * krr_cuda_device_info.  Nothing here throws (no new, no STL), prints or
 * exits; every library call is checked (cuda_internal.cuh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "cuda_internal.cuh"
#include "../core/rng.h"
#include "../core/loss_math.h"
#include "../core/kcomp_math.h"

/* ===== errors ============================================================= */

krr_status kcu_fail_cuda(krr_ctx *ctx, const char *call, cudaError_t e) {
  (void)cudaGetLastError(); /* clear the non-sticky last error */
  return krr_fail(ctx, KRR_ERR_DEVICE, "%s: %s (%s)", call, cudaGetErrorString(e),
                  cudaGetErrorName(e));
}

krr_status kcu_fail_blas(krr_ctx *ctx, const char *call, cublasStatus_t s) {
  return krr_fail(ctx, KRR_ERR_DEVICE, "%s: %s", call, cublasGetStatusName(s));
}

static const char *solver_status_name(cusolverStatus_t s) {
  switch (s) {
    case CUSOLVER_STATUS_SUCCESS: return "CUSOLVER_STATUS_SUCCESS";
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_MAPPING_ERROR: return "CUSOLVER_STATUS_MAPPING_ERROR";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED: return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    case CUSOLVER_STATUS_ZERO_PIVOT: return "CUSOLVER_STATUS_ZERO_PIVOT";
    case CUSOLVER_STATUS_INVALID_LICENSE: return "CUSOLVER_STATUS_INVALID_LICENSE";
    case CUSOLVER_STATUS_INVALID_WORKSPACE: return "CUSOLVER_STATUS_INVALID_WORKSPACE";
    default: return "CUSOLVER_STATUS_UNKNOWN";
  }
}

krr_status kcu_fail_solver(krr_ctx *ctx, const char *call, cusolverStatus_t s) {
  return krr_fail(ctx, KRR_ERR_DEVICE, "%s: %s (%d)", call, solver_status_name(s), (int)s);
}

static double mib(size_t b) { return (double)b / 1048576.0; }

krr_status kcu_enter(krr_ctx *ctx) {
  if (!ctx) return KRR_ERR_INTERNAL;
  krr_cuda_state *st = kcu_state(ctx);
  if (!st) return krr_fail(ctx, KRR_ERR_INTERNAL, "CUDA backend: context not initialised");
  KCU_CHECK(ctx, "cudaSetDevice", cudaSetDevice(st->device));
  return KRR_OK;
}

/* raw device allocation with the contract's out-of-memory message */
static void *dev_malloc(krr_ctx *ctx, size_t bytes) {
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
  if (e == cudaSuccess) return p;
  (void)cudaGetLastError();
  if (e == cudaErrorMemoryAllocation) {
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) (void)cudaGetLastError();
    krr_fail(ctx, KRR_ERR_MEMORY, "CUDA out of memory allocating %.1f MiB (free %.1f MiB of %.1f MiB)",
             mib(bytes), mib(fr), mib(tot));
  } else {
    kcu_fail_cuda(ctx, "cudaMalloc", e);
  }
  return NULL;
}

void *kcu_ws(krr_ctx *ctx, int slot, size_t bytes) {
  krr_cuda_state *st = kcu_state(ctx);
  if (slot < 0 || slot >= KCU_WS_N) {
    krr_fail(ctx, KRR_ERR_INTERNAL, "CUDA backend: bad workspace slot %d", slot);
    return NULL;
  }
  if (bytes == 0) bytes = 16;
  if (st->ws[slot] && st->ws_size[slot] >= bytes) return st->ws[slot];
  if (st->ws[slot]) {
    /* cudaFree synchronises the device, so earlier users on the stream are done */
    cudaError_t e = cudaFree(st->ws[slot]);
    st->ws[slot] = NULL;
    st->ws_size[slot] = 0;
    if (e != cudaSuccess) {
      kcu_fail_cuda(ctx, "cudaFree", e);
      return NULL;
    }
  }
  /* grow by 25% to avoid reallocating on slowly growing requests; if that
   * does not fit, retry at the exact size (which reports the failure) */
  size_t want = bytes + bytes / 4;
  void *p = NULL;
  if (cudaMalloc(&p, want) != cudaSuccess) {
    (void)cudaGetLastError();
    p = dev_malloc(ctx, bytes);
    if (!p) return NULL;
    want = bytes;
  }
  st->ws[slot] = p;
  st->ws_size[slot] = want;
  return p;
}

void *kcu_host_ws(krr_ctx *ctx, size_t bytes) {
  krr_cuda_state *st = kcu_state(ctx);
  if (bytes == 0) return NULL;
  if (st->host_ws && st->host_ws_size >= bytes) return st->host_ws;
  free(st->host_ws);
  st->host_ws = malloc(bytes);
  st->host_ws_size = st->host_ws ? bytes : 0;
  if (!st->host_ws)
    krr_fail(ctx, KRR_ERR_MEMORY, "host out of memory allocating %.1f MiB for cuSOLVER", mib(bytes));
  return st->host_ws;
}

/* the work spaces of one cusolverDnX call: device (dws bytes), host (hws
 * bytes; none when 0) and the info word */
static krr_status kcu_solver_ws(krr_ctx *ctx, size_t dws, size_t hws, void **dw, void **hw,
                                int **dinfo) {
  *hw = NULL;
  *dinfo = NULL;
  if (!(*dw = kcu_ws(ctx, KCU_WS_SOLVER, dws))) return ctx->status;
  if (hws && !(*hw = kcu_host_ws(ctx, hws))) return ctx->status;
  *dinfo = (int *)kcu_ws(ctx, KCU_WS_INFO, sizeof(int));
  return *dinfo ? KRR_OK : ctx->status;
}

/* ===== context ============================================================ */

static void cuda_ctx_free(krr_ctx *ctx) {
  if (!ctx || !ctx->dev) return;
  krr_cuda_state *st = kcu_state(ctx);
  (void)cudaSetDevice(st->device);
  if (st->stream) (void)cudaStreamSynchronize(st->stream);
  for (int i = 0; i < KCU_WS_N; ++i)
    if (st->ws[i]) (void)cudaFree(st->ws[i]);
  if (st->params) (void)cusolverDnDestroyParams(st->params);
  if (st->solver) (void)cusolverDnDestroy(st->solver);
  if (st->blas) (void)cublasDestroy(st->blas);
  if (st->stream) (void)cudaStreamDestroy(st->stream);
  free(st->host_ws);
  (void)cudaGetLastError();
  free(st);
  ctx->dev = NULL;
}

static krr_status cuda_ctx_init_impl(krr_ctx *ctx) {
  krr_cuda_state *st = kcu_state(ctx);
  int ndev = 0;
  KCU_CHECK(ctx, "cudaGetDeviceCount", cudaGetDeviceCount(&ndev));
  if (ctx->device_id < 0 || ctx->device_id >= ndev)
    return krr_fail(ctx, KRR_ERR_INPUT, "CUDA device %d does not exist (%d device%s found)",
                    ctx->device_id, ndev, ndev == 1 ? "" : "s");
  st->device = ctx->device_id;
  KCU_CHECK(ctx, "cudaSetDevice", cudaSetDevice(st->device));
  KCU_CHECK(ctx, "cudaDeviceGetAttribute",
            cudaDeviceGetAttribute(&st->sm_count, cudaDevAttrMultiProcessorCount, st->device));
  KCU_CHECK(ctx, "cudaDeviceGetAttribute",
            cudaDeviceGetAttribute(&st->cc_major, cudaDevAttrComputeCapabilityMajor, st->device));
  KCU_CHECK(ctx, "cudaDeviceGetAttribute",
            cudaDeviceGetAttribute(&st->cc_minor, cudaDevAttrComputeCapabilityMinor, st->device));
  st->gemm_min_p[0] = KCU_GEMM_MIN_P_FLOAT;
  st->gemm_min_p[1] = KCU_GEMM_MIN_P_DOUBLE;
  const char *gp = getenv("ASKOTCH_CUDA_GEMM_MIN_P");
  if (gp && *gp) {
    char *end = NULL;
    long v = strtol(gp, &end, 10);
    if (end && *end == '\0' && v >= 1 && v <= 1000000000L)
      st->gemm_min_p[0] = st->gemm_min_p[1] = (int)v;
  }
  KCU_CHECK(ctx, "cudaStreamCreateWithFlags",
            cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking));
  KCU_BLAS(ctx, "cublasCreate", cublasCreate(&st->blas));
  KCU_BLAS(ctx, "cublasSetStream", cublasSetStream(st->blas, st->stream));
  KCU_BLAS(ctx, "cublasSetPointerMode", cublasSetPointerMode(st->blas, CUBLAS_POINTER_MODE_HOST));
  /* default math: SGEMM stays IEEE FP32 (TF32 is opt-in and not requested) */
  KCU_BLAS(ctx, "cublasSetMathMode", cublasSetMathMode(st->blas, CUBLAS_DEFAULT_MATH));
  KCU_SOLVER(ctx, "cusolverDnCreate", cusolverDnCreate(&st->solver));
  KCU_SOLVER(ctx, "cusolverDnSetStream", cusolverDnSetStream(st->solver, st->stream));
  KCU_SOLVER(ctx, "cusolverDnCreateParams", cusolverDnCreateParams(&st->params));
  return KRR_OK;
}

static krr_status cuda_ctx_init(krr_ctx *ctx) {
  if (!ctx) return KRR_ERR_INTERNAL;
  krr_cuda_state *st = (krr_cuda_state *)calloc(1, sizeof *st);
  if (!st) return krr_fail(ctx, KRR_ERR_MEMORY, "host out of memory (CUDA context)");
  ctx->dev = st;
  krr_status s = cuda_ctx_init_impl(ctx);
  if (s != KRR_OK) cuda_ctx_free(ctx);
  return s;
}

/* ===== memory ============================================================= */

static krr_status cuda_mem_info(krr_ctx *ctx, size_t *fr, size_t *tot) {
  KCU_TRY(kcu_enter(ctx));
  size_t f = 0, t = 0;
  KCU_CHECK(ctx, "cudaMemGetInfo", cudaMemGetInfo(&f, &t));
  if (fr) *fr = f;
  if (tot) *tot = t;
  return KRR_OK;
}

static void *cuda_alloc(krr_ctx *ctx, size_t bytes) {
  if (kcu_enter(ctx) != KRR_OK) return NULL;
  return dev_malloc(ctx, bytes);
}

static void cuda_dealloc(krr_ctx *ctx, void *p) {
  if (!p) return;
  if (ctx && ctx->dev) (void)cudaSetDevice(kcu_state(ctx)->device);
  if (cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
}

static krr_status cuda_upload(krr_ctx *ctx, void *dst, const void *src, size_t bytes) {
  KCU_TRY(kcu_enter(ctx));
  if (bytes == 0) return KRR_OK;
  /* pageable source: returns once the data is staged, so src may be reused */
  KCU_CHECK(ctx, "cudaMemcpyAsync (host to device)",
            cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, kcu_state(ctx)->stream));
  return KRR_OK;
}

static krr_status cuda_download(krr_ctx *ctx, void *dst, const void *src, size_t bytes) {
  KCU_TRY(kcu_enter(ctx));
  krr_cuda_state *st = kcu_state(ctx);
  if (bytes > 0)
    KCU_CHECK(ctx, "cudaMemcpyAsync (device to host)",
              cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, st->stream));
  KCU_CHECK(ctx, "cudaStreamSynchronize", cudaStreamSynchronize(st->stream));
  return KRR_OK;
}

static krr_status cuda_copy(krr_ctx *ctx, void *dst, const void *src, size_t bytes) {
  KCU_TRY(kcu_enter(ctx));
  if (bytes == 0 || dst == src) return KRR_OK;
  KCU_CHECK(ctx, "cudaMemcpyAsync (device to device)",
            cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, kcu_state(ctx)->stream));
  return KRR_OK;
}

static krr_status cuda_zero(krr_ctx *ctx, void *dst, size_t bytes) {
  KCU_TRY(kcu_enter(ctx));
  if (bytes == 0) return KRR_OK;
  KCU_CHECK(ctx, "cudaMemsetAsync", cudaMemsetAsync(dst, 0, bytes, kcu_state(ctx)->stream));
  return KRR_OK;
}

static krr_status cuda_sync(krr_ctx *ctx) {
  KCU_TRY(kcu_enter(ctx));
  KCU_CHECK(ctx, "cudaStreamSynchronize", cudaStreamSynchronize(kcu_state(ctx)->stream));
  return KRR_OK;
}

/* ===== elementwise kernels ================================================ */

#define KCU_FOR(i, n) \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

template <typename T>
__global__ void gather_points_k(const T *__restrict__ X, int p, const int64_t *__restrict__ idx,
                                int64_t b, T *__restrict__ dst) {
  KCU_FOR(e, b * (int64_t)p) {
    const int64_t i = e / p, k = e - i * p;
    dst[e] = X[idx[i] * (int64_t)p + k];
  }
}

template <typename T>
__global__ void gather_rows_k(const T *__restrict__ src, int64_t lds, int m,
                              const int64_t *__restrict__ idx, int64_t b, T *__restrict__ dst,
                              int64_t ldd) {
  KCU_FOR(e, b * (int64_t)m) {
    const int64_t j = e / b, i = e - j * b;
    dst[i + j * ldd] = src[idx[i] + j * lds];
  }
}

template <typename T>
__global__ void scatter_axpy_k(T alpha, const T *__restrict__ src, int64_t lds, int m,
                               const int64_t *__restrict__ idx, int64_t b, T *__restrict__ dst,
                               int64_t ldd) {
  KCU_FOR(e, b * (int64_t)m) {
    const int64_t j = e / b, i = e - j * b;
    T *d = dst + idx[i] + j * ldd;
    *d = *d + alpha * src[i + j * lds];
  }
}

/* a == 0 ignores x, b == 0 ignores y (BLAS conventions) */
template <typename T>
__global__ void axpby_k(int64_t n, T a, const T *__restrict__ x, T b, T *__restrict__ y) {
  if (a == T(0)) {
    KCU_FOR(i, n) y[i] = b * y[i];
  } else if (b == T(0)) {
    KCU_FOR(i, n) y[i] = a * x[i];
  } else {
    KCU_FOR(i, n) y[i] = a * x[i] + b * y[i];
  }
}

template <typename T>
__global__ void add_diag_k(int64_t n, T *__restrict__ A, int64_t lda, T alpha, const T *__restrict__ d) {
  KCU_FOR(i, n) A[i + i * lda] += alpha + (d ? d[i] : T(0));
}

template <typename T>
__global__ void scale_rows_k(int64_t m, int64_t n, const T *__restrict__ d, T *__restrict__ A,
                             int64_t lda) {
  KCU_FOR(e, m * n) {
    const int64_t j = e / m, i = e - j * m;
    A[i + j * lda] *= d[i];
  }
}

template <typename T>
__global__ void randn_k(int64_t n, uint64_t seed, uint64_t offset, T *__restrict__ out) {
  KCU_FOR(i, n) out[i] = (T)krr_rng_normal(seed, offset + (uint64_t)i);
}

/* set C (m x n, ldc) = beta C; beta == 0 writes zeros (BLAS semantics) */
template <typename T>
__global__ void scale_mat_k(int64_t m, int64_t n, T beta, T *__restrict__ C, int64_t ldc) {
  KCU_FOR(e, m * n) {
    const int64_t j = e / m, i = e - j * m;
    C[i + j * ldc] = beta == T(0) ? T(0) : beta * C[i + j * ldc];
  }
}

/* copy an m x n column-major block (lds) to (ldd) */
template <typename T>
__global__ void copy_mat_k(int64_t m, int64_t n, const T *__restrict__ S, int64_t lds,
                           T *__restrict__ D, int64_t ldd, int upper_only) {
  KCU_FOR(e, m * n) {
    const int64_t j = e / m, i = e - j * m;
    D[i + j * ldd] = (upper_only && i > j) ? T(0) : S[i + j * lds];
  }
}

/* double-accumulated reductions: stage 1 per-block partial, stage 2 one block */
constexpr int RED_NT = 256;
constexpr int RED_MAXB = 1024;

__device__ __forceinline__ double block_sum(double v) {
  __shared__ double sh[RED_NT / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (lane == 0) sh[w] = v;
  __syncthreads();
  v = (threadIdx.x < RED_NT / 32) ? sh[threadIdx.x] : 0.0;
  if (w == 0)
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v; /* valid in thread 0 */
}

template <typename T>
__global__ void __launch_bounds__(RED_NT) dot_stage1(int64_t n, const T *__restrict__ x,
                                                     const T *__restrict__ y, double *__restrict__ part) {
  double s = 0.0;
  KCU_FOR(i, n) s += (double)x[i] * (double)y[i];
  s = block_sum(s);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}

__global__ void __launch_bounds__(RED_NT) sum_stage2(int nb, const double *__restrict__ part,
                                                     double *__restrict__ out) {
  double s = 0.0;
  for (int i = threadIdx.x; i < nb; i += RED_NT) s += part[i];
  s = block_sum(s);
  if (threadIdx.x == 0) *out = s;
}

/* ===== typed ops ========================================================== */

template <typename T> struct cublas_t;
template <> struct cublas_t<float> {
  static constexpr cudaDataType dt = CUDA_R_32F;
  static const char *gemm_name() { return "cublasSgemm_64"; }
  static const char *trsm_name() { return "cublasStrsm_64"; }
  static const char *syrk_name() { return "cublasSsyrk_64"; }
  static cublasStatus_t syrk(cublasHandle_t h, int64_t n, int64_t k, const float *al,
                             const float *A, int64_t lda, const float *be, float *C, int64_t ldc) {
    return cublasSsyrk_64(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, n, k, al, A, lda, be, C, ldc);
  }
  static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                             int64_t m, int64_t n, int64_t k, const float *al, const float *A,
                             int64_t lda, const float *B, int64_t ldb, const float *be, float *C,
                             int64_t ldc) {
    return cublasSgemm_64(h, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc);
  }
  static cublasStatus_t trsm(cublasHandle_t h, cublasSideMode_t s, cublasOperation_t t, int64_t m,
                             int64_t n, const float *al, const float *A, int64_t lda, float *B,
                             int64_t ldb) {
    return cublasStrsm_64(h, s, CUBLAS_FILL_MODE_UPPER, t, CUBLAS_DIAG_NON_UNIT, m, n, al, A, lda, B, ldb);
  }
  static cusolverStatus_t orgqr_bs(cusolverDnHandle_t h, int m, int n, int k, const float *A,
                                   int lda, const float *tau, int *lw) {
    return cusolverDnSorgqr_bufferSize(h, m, n, k, A, lda, tau, lw);
  }
  static cusolverStatus_t orgqr(cusolverDnHandle_t h, int m, int n, int k, float *A, int lda,
                                const float *tau, float *w, int lw, int *info) {
    return cusolverDnSorgqr(h, m, n, k, A, lda, tau, w, lw, info);
  }
  static cusolverStatus_t sytrd_bs(cusolverDnHandle_t h, int n, const float *A, int lda, const float *d,
                                   const float *e, const float *tau, int *lw) {
    return cusolverDnSsytrd_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, A, lda, d, e, tau, lw);
  }
  static cusolverStatus_t sytrd(cusolverDnHandle_t h, int n, float *A, int lda, float *d, float *e,
                                float *tau, float *w, int lw, int *info) {
    return cusolverDnSsytrd(h, CUBLAS_FILL_MODE_LOWER, n, A, lda, d, e, tau, w, lw, info);
  }
  static cusolverStatus_t ormtr_bs(cusolverDnHandle_t h, cublasOperation_t t, int m, int n,
                                   const float *A, int lda, const float *tau, const float *C, int ldc,
                                   int *lw) {
    return cusolverDnSormtr_bufferSize(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, t, m, n, A, lda,
                                          tau, C, ldc, lw);
  }
  static cusolverStatus_t ormtr(cusolverDnHandle_t h, cublasOperation_t t, int m, int n, float *A,
                                int lda, float *tau, float *C, int ldc, float *w, int lw, int *info) {
    return cusolverDnSormtr(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, t, m, n, A, lda, tau, C,
                               ldc, w, lw, info);
  }
};
template <> struct cublas_t<double> {
  static constexpr cudaDataType dt = CUDA_R_64F;
  static const char *gemm_name() { return "cublasDgemm_64"; }
  static const char *trsm_name() { return "cublasDtrsm_64"; }
  static const char *syrk_name() { return "cublasDsyrk_64"; }
  static cublasStatus_t syrk(cublasHandle_t h, int64_t n, int64_t k, const double *al,
                             const double *A, int64_t lda, const double *be, double *C,
                             int64_t ldc) {
    return cublasDsyrk_64(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, n, k, al, A, lda, be, C, ldc);
  }
  static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                             int64_t m, int64_t n, int64_t k, const double *al, const double *A,
                             int64_t lda, const double *B, int64_t ldb, const double *be, double *C,
                             int64_t ldc) {
    return cublasDgemm_64(h, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc);
  }
  static cublasStatus_t trsm(cublasHandle_t h, cublasSideMode_t s, cublasOperation_t t, int64_t m,
                             int64_t n, const double *al, const double *A, int64_t lda, double *B,
                             int64_t ldb) {
    return cublasDtrsm_64(h, s, CUBLAS_FILL_MODE_UPPER, t, CUBLAS_DIAG_NON_UNIT, m, n, al, A, lda, B, ldb);
  }
  static cusolverStatus_t orgqr_bs(cusolverDnHandle_t h, int m, int n, int k, const double *A,
                                   int lda, const double *tau, int *lw) {
    return cusolverDnDorgqr_bufferSize(h, m, n, k, A, lda, tau, lw);
  }
  static cusolverStatus_t orgqr(cusolverDnHandle_t h, int m, int n, int k, double *A, int lda,
                                const double *tau, double *w, int lw, int *info) {
    return cusolverDnDorgqr(h, m, n, k, A, lda, tau, w, lw, info);
  }
  static cusolverStatus_t sytrd_bs(cusolverDnHandle_t h, int n, const double *A, int lda, const double *d,
                                   const double *e, const double *tau, int *lw) {
    return cusolverDnDsytrd_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, A, lda, d, e, tau, lw);
  }
  static cusolverStatus_t sytrd(cusolverDnHandle_t h, int n, double *A, int lda, double *d, double *e,
                                double *tau, double *w, int lw, int *info) {
    return cusolverDnDsytrd(h, CUBLAS_FILL_MODE_LOWER, n, A, lda, d, e, tau, w, lw, info);
  }
  static cusolverStatus_t ormtr_bs(cusolverDnHandle_t h, cublasOperation_t t, int m, int n,
                                   const double *A, int lda, const double *tau, const double *C, int ldc,
                                   int *lw) {
    return cusolverDnDormtr_bufferSize(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, t, m, n, A, lda,
                                          tau, C, ldc, lw);
  }
  static cusolverStatus_t ormtr(cusolverDnHandle_t h, cublasOperation_t t, int m, int n, double *A,
                                int lda, double *tau, double *C, int ldc, double *w, int lw, int *info) {
    return cusolverDnDormtr(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, t, m, n, A, lda, tau, C,
                               ldc, w, lw, info);
  }
};

template <typename T>
static krr_status op_gather_points(krr_ctx *ctx, const T *X, int p, const int64_t *idx, int64_t b,
                                   T *dst) {
  KCU_TRY(kcu_enter(ctx));
  if (b < 0 || p < 1) return krr_fail(ctx, KRR_ERR_INPUT, "gather_points: b = %lld, p = %d", (long long)b, p);
  if (b == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  gather_points_k<T><<<kcu_grid(st, b * (int64_t)p), KCU_NT, 0, st->stream>>>(X, p, idx, b, dst);
  KCU_LAUNCHED(ctx, "gather_points (kernel launch)");
  return KRR_OK;
}

template <typename T>
static krr_status op_gather_rows(krr_ctx *ctx, const T *src, int64_t lds, int m, const int64_t *idx,
                                 int64_t b, T *dst, int64_t ldd) {
  KCU_TRY(kcu_enter(ctx));
  if (b < 0 || m < 0 || ldd < b)
    return krr_fail(ctx, KRR_ERR_INPUT, "gather_rows: b = %lld, m = %d, ldd = %lld", (long long)b, m, (long long)ldd);
  if (b == 0 || m == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  gather_rows_k<T><<<kcu_grid(st, b * (int64_t)m), KCU_NT, 0, st->stream>>>(src, lds, m, idx, b, dst, ldd);
  KCU_LAUNCHED(ctx, "gather_rows (kernel launch)");
  return KRR_OK;
}

template <typename T>
static krr_status op_scatter_axpy(krr_ctx *ctx, double alpha, const T *src, int64_t lds, int m,
                                  const int64_t *idx, int64_t b, T *dst, int64_t ldd) {
  KCU_TRY(kcu_enter(ctx));
  if (b < 0 || m < 0 || lds < b)
    return krr_fail(ctx, KRR_ERR_INPUT, "scatter_axpy: b = %lld, m = %d, lds = %lld", (long long)b, m, (long long)lds);
  if (b == 0 || m == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  scatter_axpy_k<T><<<kcu_grid(st, b * (int64_t)m), KCU_NT, 0, st->stream>>>((T)alpha, src, lds, m, idx, b, dst, ldd);
  KCU_LAUNCHED(ctx, "scatter_axpy (kernel launch)");
  return KRR_OK;
}

template <typename T>
__global__ void momentum_k(int64_t n, T a, T b, T *__restrict__ z, T *__restrict__ v,
                           T *__restrict__ w) {
  const T a1 = T(1) - a, b1 = T(1) - b;
  KCU_FOR(i, n) {
    const T zi = z[i], vi = b1 * zi + b * v[i];
    w[i] = zi;
    v[i] = vi;
    z[i] = a * vi + a1 * zi;
  }
}

template <typename T>
static krr_status op_momentum(krr_ctx *ctx, int64_t n, double alpha, double beta, T *z, T *v, T *w) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "momentum: n = %lld", (long long)n);
  if (n == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  momentum_k<T><<<kcu_grid(st, n), KCU_NT, 0, st->stream>>>(n, (T)alpha, (T)beta, z, v, w);
  KCU_LAUNCHED(ctx, "momentum (kernel launch)");
  return KRR_OK;
}

template <typename T>
static krr_status op_axpby(krr_ctx *ctx, int64_t n, double a, const T *x, double b, T *y) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "axpby: n = %lld", (long long)n);
  if (n == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  axpby_k<T><<<kcu_grid(st, n), KCU_NT, 0, st->stream>>>(n, (T)a, x, (T)b, y);
  KCU_LAUNCHED(ctx, "axpby (kernel launch)");
  return KRR_OK;
}

/* own double-accumulated reduction (used for float; double uses cuBLAS) */
template <typename T>
static krr_status reduce_dot(krr_ctx *ctx, int64_t n, const T *x, const T *y, double *out) {
  krr_cuda_state *st = kcu_state(ctx);
  int64_t nb = (n + RED_NT - 1) / RED_NT;
  if (nb > RED_MAXB) nb = RED_MAXB;
  if (nb < 1) nb = 1;
  double *part = (double *)kcu_ws(ctx, KCU_WS_RED, (size_t)(nb + 1) * sizeof(double));
  if (!part) return ctx->status;
  dot_stage1<T><<<(unsigned)nb, RED_NT, 0, st->stream>>>(n, x, y, part);
  KCU_LAUNCHED(ctx, "dot (reduction launch)");
  sum_stage2<<<1, RED_NT, 0, st->stream>>>((int)nb, part, part + nb);
  KCU_LAUNCHED(ctx, "dot (reduction launch)");
  KCU_CHECK(ctx, "cudaMemcpyAsync (device to host)",
            cudaMemcpyAsync(out, part + nb, sizeof(double), cudaMemcpyDeviceToHost, st->stream));
  KCU_CHECK(ctx, "cudaStreamSynchronize", cudaStreamSynchronize(st->stream));
  return KRR_OK;
}

static krr_status op_dot_s(krr_ctx *ctx, int64_t n, const float *x, const float *y, double *out) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "dot: n = %lld", (long long)n);
  if (n == 0) { *out = 0.0; return KRR_OK; }
  return reduce_dot<float>(ctx, n, x, y, out);
}
static krr_status op_nrm2_s(krr_ctx *ctx, int64_t n, const float *x, double *out) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "nrm2: n = %lld", (long long)n);
  if (n == 0) { *out = 0.0; return KRR_OK; }
  double s = 0.0;
  KCU_TRY(reduce_dot<float>(ctx, n, x, x, &s));
  *out = sqrt(s);
  return KRR_OK;
}
static krr_status op_dot_d(krr_ctx *ctx, int64_t n, const double *x, const double *y, double *out) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "dot: n = %lld", (long long)n);
  if (n == 0) { *out = 0.0; return KRR_OK; }
  /* host pointer mode: returns after the result is on the host */
  KCU_BLAS(ctx, "cublasDdot_64", cublasDdot_64(kcu_state(ctx)->blas, n, x, 1, y, 1, out));
  return KRR_OK;
}
static krr_status op_nrm2_d(krr_ctx *ctx, int64_t n, const double *x, double *out) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "nrm2: n = %lld", (long long)n);
  if (n == 0) { *out = 0.0; return KRR_OK; }
  KCU_BLAS(ctx, "cublasDnrm2_64", cublasDnrm2_64(kcu_state(ctx)->blas, n, x, 1, out));
  return KRR_OK;
}

template <typename T>
static krr_status op_gemm(krr_ctx *ctx, int ta, int tb, int64_t m, int64_t n, int64_t k,
                          double alpha, const T *A, int64_t lda, const T *B, int64_t ldb,
                          double beta, T *C, int64_t ldc) {
  KCU_TRY(kcu_enter(ctx));
  if (m < 0 || n < 0 || k < 0 || ldc < (m > 1 ? m : 1))
    return krr_fail(ctx, KRR_ERR_INPUT, "gemm: invalid sizes m = %lld, n = %lld, k = %lld, ldc = %lld",
                    (long long)m, (long long)n, (long long)k, (long long)ldc);
  if (m == 0 || n == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  if (k == 0) { /* C = beta C */
    scale_mat_k<T><<<kcu_grid(st, m * n), KCU_NT, 0, st->stream>>>(m, n, (T)beta, C, ldc);
    KCU_LAUNCHED(ctx, "gemm (scale launch)");
    return KRR_OK;
  }
  const T al = (T)alpha, be = (T)beta;
  KCU_BLAS(ctx, cublas_t<T>::gemm_name(),
           cublas_t<T>::gemm(st->blas, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                             m, n, k, &al, A, lda, B, ldb, &be, C, ldc));
  return KRR_OK;
}

template <typename T>
static krr_status op_syrk(krr_ctx *ctx, int64_t n, int64_t k, double alpha, const T *A, int64_t lda,
                          double beta, T *C, int64_t ldc) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0 || k < 0 || ldc < (n > 1 ? n : 1) || lda < (k > 1 ? k : 1))
    return krr_fail(ctx, KRR_ERR_INPUT, "syrk: invalid sizes n = %lld, k = %lld", (long long)n,
                    (long long)k);
  if (n == 0) return KRR_OK;
  const T al = (T)alpha, be = (T)beta;
  KCU_BLAS(ctx, cublas_t<T>::syrk_name(),
           cublas_t<T>::syrk(kcu_state(ctx)->blas, n, k, &al, A, lda, &be, C, ldc));
  return KRR_OK;
}

template <typename T>
static krr_status op_potrf(krr_ctx *ctx, int64_t n, T *A, int64_t lda, int *info) {
  KCU_TRY(kcu_enter(ctx));
  if (info) *info = 0;
  if (n < 0 || lda < (n > 1 ? n : 1))
    return krr_fail(ctx, KRR_ERR_INPUT, "potrf: n = %lld, lda = %lld", (long long)n, (long long)lda);
  if (n == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  const cudaDataType dt = cublas_t<T>::dt;
  size_t dws = 0, hws = 0;
  KCU_SOLVER(ctx, "cusolverDnXpotrf_bufferSize",
             cusolverDnXpotrf_bufferSize(st->solver, st->params, CUBLAS_FILL_MODE_UPPER, n, dt, A,
                                         lda, dt, &dws, &hws));
  void *dw, *hw;
  int *dinfo;
  KCU_TRY(kcu_solver_ws(ctx, dws, hws, &dw, &hw, &dinfo));
  KCU_SOLVER(ctx, "cusolverDnXpotrf",
             cusolverDnXpotrf(st->solver, st->params, CUBLAS_FILL_MODE_UPPER, n, dt, A, lda, dt, dw,
                              dws, hw, hws, dinfo));
  int h = 0;
  KCU_CHECK(ctx, "cudaMemcpyAsync (device to host)",
            cudaMemcpyAsync(&h, dinfo, sizeof(int), cudaMemcpyDeviceToHost, st->stream));
  KCU_CHECK(ctx, "cudaStreamSynchronize", cudaStreamSynchronize(st->stream));
  if (h < 0) return krr_fail(ctx, KRR_ERR_INTERNAL, "cusolverDnXpotrf: argument %d invalid", -h);
  if (info) *info = h;
  return KRR_OK;
}

template <typename T>
static krr_status op_trsm(krr_ctx *ctx, int right, int trans, int64_t m, int64_t n, double alpha,
                          const T *A, int64_t lda, T *B, int64_t ldb) {
  KCU_TRY(kcu_enter(ctx));
  if (m < 0 || n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "trsm: m = %lld, n = %lld", (long long)m, (long long)n);
  if (m == 0 || n == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  const T al = (T)alpha;
  KCU_BLAS(ctx, cublas_t<T>::trsm_name(),
           cublas_t<T>::trsm(st->blas, right ? CUBLAS_SIDE_RIGHT : CUBLAS_SIDE_LEFT,
                             trans ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, &al, A, lda, B, ldb));
  return KRR_OK;
}

static int fits_int(int64_t v) { return v >= 0 && v <= 2147483647LL; }

/* geqrf (64-bit API), tau -> KCU_WS_TAU; A holds R (upper) and reflectors */
template <typename T>
static krr_status geqrf(krr_ctx *ctx, int64_t m, int64_t n, T *A, int64_t lda, T **tau_out) {
  krr_cuda_state *st = kcu_state(ctx);
  const cudaDataType dt = cublas_t<T>::dt;
  T *tau = (T *)kcu_ws(ctx, KCU_WS_TAU, (size_t)n * sizeof(T));
  if (!tau) return ctx->status;
  size_t dws = 0, hws = 0;
  KCU_SOLVER(ctx, "cusolverDnXgeqrf_bufferSize",
             cusolverDnXgeqrf_bufferSize(st->solver, st->params, m, n, dt, A, lda, dt, tau, dt, &dws, &hws));
  void *dw, *hw;
  int *dinfo;
  KCU_TRY(kcu_solver_ws(ctx, dws, hws, &dw, &hw, &dinfo));
  KCU_SOLVER(ctx, "cusolverDnXgeqrf",
             cusolverDnXgeqrf(st->solver, st->params, m, n, dt, A, lda, dt, tau, dt, dw, dws, hw, hws, dinfo));
  *tau_out = tau;
  return KRR_OK;
}

/* A <- Q from the reflectors in A and tau (orgqr has only a 32-bit API) */
template <typename T>
static krr_status orgqr(krr_ctx *ctx, int64_t m, int64_t n, T *A, int64_t lda, const T *tau) {
  krr_cuda_state *st = kcu_state(ctx);
  int lw = 0;
  KCU_SOLVER(ctx, "cusolverDn<t>orgqr_bufferSize",
             cublas_t<T>::orgqr_bs(st->solver, (int)m, (int)n, (int)n, A, (int)lda, tau, &lw));
  T *w = (T *)kcu_ws(ctx, KCU_WS_SOLVER, (size_t)(lw > 0 ? lw : 1) * sizeof(T));
  if (!w) return ctx->status;
  int *dinfo = (int *)kcu_ws(ctx, KCU_WS_INFO, sizeof(int));
  if (!dinfo) return ctx->status;
  KCU_SOLVER(ctx, "cusolverDn<t>orgqr",
             cublas_t<T>::orgqr(st->solver, (int)m, (int)n, (int)n, A, (int)lda, tau, w, lw, dinfo));
  return KRR_OK;
}

template <typename T>
static krr_status check_info(krr_ctx *ctx, const char *call) {
  krr_cuda_state *st = kcu_state(ctx);
  int h = 0;
  KCU_CHECK(ctx, "cudaMemcpyAsync (device to host)",
            cudaMemcpyAsync(&h, st->ws[KCU_WS_INFO], sizeof(int), cudaMemcpyDeviceToHost, st->stream));
  KCU_CHECK(ctx, "cudaStreamSynchronize", cudaStreamSynchronize(st->stream));
  if (h < 0) return krr_fail(ctx, KRR_ERR_INTERNAL, "%s: argument %d invalid", call, -h);
  if (h > 0) return krr_fail(ctx, KRR_ERR_NUMERIC, "%s: did not converge (info = %d)", call, h);
  return KRR_OK;
}

template <typename T>
static krr_status op_qr_q(krr_ctx *ctx, int64_t m, int64_t n, T *A, int64_t lda) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0 || m < n || lda < (m > 1 ? m : 1))
    return krr_fail(ctx, KRR_ERR_INPUT, "qr_q: need m >= n >= 0, got m = %lld, n = %lld, lda = %lld",
                    (long long)m, (long long)n, (long long)lda);
  if (n == 0) return KRR_OK;
  if (!fits_int(m) || !fits_int(lda))
    return krr_fail(ctx, KRR_ERR_INPUT, "qr_q: m = %lld exceeds the 32-bit limit of cusolverDn orgqr", (long long)m);
  T *tau = NULL;
  KCU_TRY(geqrf<T>(ctx, m, n, A, lda, &tau));
  KCU_TRY(orgqr<T>(ctx, m, n, A, lda, tau));
  return check_info<T>(ctx, "qr_q (geqrf/orgqr)");
}

/* thin SVD, A (m x n, m >= n) <- U, S descending.  Tall inputs (m >= 2n)
 * are first reduced by QR (A = Q R, R = Ur S V^T, U = Q Ur): LAPACK's own
 * strategy for tall matrices; cuSOLVER's gesvd is slow on tall-skinny. */
template <typename T>
static krr_status op_svd_thin(krr_ctx *ctx, int64_t m, int64_t n, T *A, int64_t lda, T *S) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0 || m < n || lda < (m > 1 ? m : 1))
    return krr_fail(ctx, KRR_ERR_INPUT, "svd_thin: need m >= n >= 0, got m = %lld, n = %lld, lda = %lld",
                    (long long)m, (long long)n, (long long)lda);
  if (n == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  const cudaDataType dt = cublas_t<T>::dt;
  const bool tall = m >= 2 * n;
  if (tall && (!fits_int(m) || !fits_int(lda)))
    return krr_fail(ctx, KRR_ERR_INPUT, "svd_thin: m = %lld exceeds the 32-bit limit of cusolverDn orgqr", (long long)m);
  /* the matrix to decompose: R (n x n) for tall input, else A itself (copy) */
  const int64_t mm = tall ? n : m;
  T *W = (T *)kcu_ws(ctx, KCU_WS_U2, (size_t)mm * (size_t)n * sizeof(T)); /* input, destroyed */
  if (!W) return ctx->status;
  T *U = (T *)kcu_ws(ctx, KCU_WS_U, (size_t)mm * (size_t)n * sizeof(T));  /* left vectors */
  if (!U) return ctx->status;
  if (tall) {
    T *tau = NULL;
    KCU_TRY(geqrf<T>(ctx, m, n, A, lda, &tau));
    copy_mat_k<T><<<kcu_grid(st, n * n), KCU_NT, 0, st->stream>>>(n, n, A, lda, W, n, 1);
    KCU_LAUNCHED(ctx, "svd_thin (copy R launch)");
    KCU_TRY(orgqr<T>(ctx, m, n, A, lda, tau)); /* A <- Q */
    KCU_TRY(check_info<T>(ctx, "svd_thin (geqrf/orgqr)"));
  } else {
    copy_mat_k<T><<<kcu_grid(st, m * n), KCU_NT, 0, st->stream>>>(m, n, A, lda, W, m, 0);
    KCU_LAUNCHED(ctx, "svd_thin (copy launch)");
  }
  size_t dws = 0, hws = 0;
  KCU_SOLVER(ctx, "cusolverDnXgesvd_bufferSize",
             cusolverDnXgesvd_bufferSize(st->solver, st->params, 'S', 'N', mm, n, dt, W, mm, dt, S, dt,
                                         U, mm, dt, NULL, 1, dt, &dws, &hws));
  void *dw, *hw;
  int *dinfo;
  KCU_TRY(kcu_solver_ws(ctx, dws, hws, &dw, &hw, &dinfo));
  KCU_SOLVER(ctx, "cusolverDnXgesvd",
             cusolverDnXgesvd(st->solver, st->params, 'S', 'N', mm, n, dt, W, mm, dt, S, dt, U, mm, dt,
                              NULL, 1, dt, dw, dws, hw, hws, dinfo));
  KCU_TRY(check_info<T>(ctx, "cusolverDnXgesvd"));
  if (tall) {
    /* A <- Q Ur: product into W (reuse: needs m x n), then copy back */
    T *P = (T *)kcu_ws(ctx, KCU_WS_U2, (size_t)m * (size_t)n * sizeof(T));
    if (!P) return ctx->status;
    const T one = T(1), zero = T(0);
    KCU_BLAS(ctx, cublas_t<T>::gemm_name(),
             cublas_t<T>::gemm(st->blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, n, &one, A, lda, U, n, &zero, P, m));
    copy_mat_k<T><<<kcu_grid(st, m * n), KCU_NT, 0, st->stream>>>(m, n, P, m, A, lda, 0);
    KCU_LAUNCHED(ctx, "svd_thin (copy U launch)");
  } else {
    copy_mat_k<T><<<kcu_grid(st, m * n), KCU_NT, 0, st->stream>>>(m, n, U, m, A, lda, 0);
    KCU_LAUNCHED(ctx, "svd_thin (copy U launch)");
  }
  return KRR_OK;
}

/* flag = 1 when the upper (upper = 1) or lower triangle of the n x n A has a
 * NaN or an infinity (all writers store the same value) */
template <typename T>
__global__ void nonfinite_tri_k(int64_t n, const T *__restrict__ A, int64_t lda, int upper,
                                int *__restrict__ flag) {
  KCU_FOR(e, n * n) {
    const int64_t j = e / n, i = e - j * n;
    if ((upper ? i <= j : i >= j) && !isfinite(A[i + j * lda])) *flag = 1;
  }
}

/* cuSOLVER's eigensolvers and reductions, like LAPACK's, leave their result
 * undefined for a NaN or infinite operand: the triangle they read is
 * checked first (one pass over n^2 entries and one synchronisation, beside
 * their O(n^3)), with the CPU backend's message */
template <typename T>
static krr_status check_finite_tri(krr_ctx *ctx, int64_t n, const T *A, int64_t lda, int upper,
                                   const char *what) {
  krr_cuda_state *st = kcu_state(ctx);
  int *flag = (int *)kcu_ws(ctx, KCU_WS_INFO, sizeof(int));
  if (!flag) return ctx->status;
  KCU_CHECK(ctx, "cudaMemsetAsync", cudaMemsetAsync(flag, 0, sizeof(int), st->stream));
  nonfinite_tri_k<T><<<kcu_grid(st, n * n), KCU_NT, 0, st->stream>>>(n, A, lda, upper, flag);
  KCU_LAUNCHED(ctx, "non-finite check launch");
  int h = 0;
  KCU_CHECK(ctx, "cudaMemcpyAsync (device to host)",
            cudaMemcpyAsync(&h, flag, sizeof(int), cudaMemcpyDeviceToHost, st->stream));
  KCU_CHECK(ctx, "cudaStreamSynchronize", cudaStreamSynchronize(st->stream));
  if (h) return krr_fail(ctx, KRR_ERR_NUMERIC, "%s: the matrix has non-finite entries", what);
  return KRR_OK;
}

template <typename T>
static krr_status op_syev(krr_ctx *ctx, int64_t n, T *A, int64_t lda, T *W) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0 || lda < (n > 1 ? n : 1))
    return krr_fail(ctx, KRR_ERR_INPUT, "syev: n = %lld, lda = %lld", (long long)n, (long long)lda);
  if (n == 0) return KRR_OK;
  KCU_TRY(check_finite_tri<T>(ctx, n, A, lda, 1, "eigen"));
  krr_cuda_state *st = kcu_state(ctx);
  const cudaDataType dt = cublas_t<T>::dt;
  size_t dws = 0, hws = 0;
  KCU_SOLVER(ctx, "cusolverDnXsyevd_bufferSize",
             cusolverDnXsyevd_bufferSize(st->solver, st->params, CUSOLVER_EIG_MODE_VECTOR,
                                         CUBLAS_FILL_MODE_UPPER, n, dt, A, lda, dt, W, dt, &dws, &hws));
  void *dw, *hw;
  int *dinfo;
  KCU_TRY(kcu_solver_ws(ctx, dws, hws, &dw, &hw, &dinfo));
  KCU_SOLVER(ctx, "cusolverDnXsyevd",
             cusolverDnXsyevd(st->solver, st->params, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER,
                              n, dt, A, lda, dt, W, dt, dw, dws, hw, hws, dinfo));
  return check_info<T>(ctx, "cusolverDnXsyevd");
}

/* the k largest eigenpairs (cusolverDn syevdx, index range n-k+1 .. n): the
 * vectors come back in A's first k columns and are copied to Z */
template <typename T>
static krr_status op_syev_top(krr_ctx *ctx, int64_t n, T *A, int64_t lda, int64_t k, T *W, T *Z,
                              int64_t ldz) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0 || k < 0 || k > n || lda < (n > 1 ? n : 1) || ldz < (n > 1 ? n : 1))
    return krr_fail(ctx, KRR_ERR_INPUT, "syev_top: n = %lld, k = %lld, lda = %lld, ldz = %lld",
                    (long long)n, (long long)k, (long long)lda, (long long)ldz);
  if (n == 0 || k == 0) return KRR_OK;
  KCU_TRY(check_finite_tri<T>(ctx, n, A, lda, 1, "eigen"));
  krr_cuda_state *st = kcu_state(ctx);
  const cudaDataType dt = cublas_t<T>::dt;
  T vl = 0, vu = 0;
  int64_t found = 0;
  size_t dws = 0, hws = 0;
  KCU_SOLVER(ctx, "cusolverDnXsyevdx_bufferSize",
             cusolverDnXsyevdx_bufferSize(st->solver, st->params, CUSOLVER_EIG_MODE_VECTOR,
                                          CUSOLVER_EIG_RANGE_I, CUBLAS_FILL_MODE_UPPER, n, dt, A, lda,
                                          &vl, &vu, n - k + 1, n, &found, dt, W, dt, &dws, &hws));
  void *dw, *hw;
  int *dinfo;
  KCU_TRY(kcu_solver_ws(ctx, dws, hws, &dw, &hw, &dinfo));
  KCU_SOLVER(ctx, "cusolverDnXsyevdx",
             cusolverDnXsyevdx(st->solver, st->params, CUSOLVER_EIG_MODE_VECTOR, CUSOLVER_EIG_RANGE_I,
                               CUBLAS_FILL_MODE_UPPER, n, dt, A, lda, &vl, &vu, n - k + 1, n, &found,
                               dt, W, dt, dw, dws, hw, hws, dinfo));
  KCU_TRY(check_info<T>(ctx, "cusolverDnXsyevdx"));
  if (found != k)
    return krr_fail(ctx, KRR_ERR_NUMERIC, "cusolverDnXsyevdx found %lld of %lld eigenvalues",
                    (long long)found, (long long)k);
  copy_mat_k<T><<<kcu_grid(st, n * k), KCU_NT, 0, st->stream>>>(n, k, A, lda, Z, ldz, 0);
  KCU_LAUNCHED(ctx, "syev_top (copy launch)");
  return KRR_OK;
}

/* A = Q T Q^T from the lower triangle (cusolverDn sytrd: 32-bit sizes) */
template <typename T>
static krr_status op_sytrd(krr_ctx *ctx, int64_t n, T *A, int64_t lda, T *d, T *e, T *tau) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0 || lda < (n > 1 ? n : 1) || !fits_int(n) || !fits_int(lda))
    return krr_fail(ctx, KRR_ERR_INPUT, "sytrd: n = %lld, lda = %lld", (long long)n, (long long)lda);
  if (n == 0) return KRR_OK;
  KCU_TRY(check_finite_tri<T>(ctx, n, A, lda, 0, "tridiagonal reduction"));
  krr_cuda_state *st = kcu_state(ctx);
  int lw = 0;
  KCU_SOLVER(ctx, "cusolverDn<t>sytrd_bufferSize",
             cublas_t<T>::sytrd_bs(st->solver, (int)n, A, (int)lda, d, e, tau, &lw));
  T *w = (T *)kcu_ws(ctx, KCU_WS_SOLVER, (size_t)(lw > 0 ? lw : 1) * sizeof(T));
  if (!w) return ctx->status;
  int *dinfo = (int *)kcu_ws(ctx, KCU_WS_INFO, sizeof(int));
  if (!dinfo) return ctx->status;
  KCU_SOLVER(ctx, "cusolverDn<t>sytrd",
             cublas_t<T>::sytrd(st->solver, (int)n, A, (int)lda, d, e, tau, w, lw, dinfo));
  return check_info<T>(ctx, "cusolverDn<t>sytrd");
}

template <typename T>
static krr_status op_ormtr(krr_ctx *ctx, int trans, int64_t n, int64_t m, const T *A, int64_t lda,
                           const T *tau, T *C, int64_t ldc) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0 || m < 0 || lda < (n > 1 ? n : 1) || ldc < (n > 1 ? n : 1) || !fits_int(n) ||
      !fits_int(m) || !fits_int(lda) || !fits_int(ldc))
    return krr_fail(ctx, KRR_ERR_INPUT, "ormtr: n = %lld, m = %lld, lda = %lld, ldc = %lld",
                    (long long)n, (long long)m, (long long)lda, (long long)ldc);
  if (n == 0 || m == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  const cublasOperation_t t = trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  int lw = 0;
  KCU_SOLVER(ctx, "cusolverDn<t>ormtr_bufferSize",
             cublas_t<T>::ormtr_bs(st->solver, t, (int)n, (int)m, A, (int)lda, tau, C, (int)ldc, &lw));
  T *w = (T *)kcu_ws(ctx, KCU_WS_SOLVER, (size_t)(lw > 0 ? lw : 1) * sizeof(T));
  if (!w) return ctx->status;
  int *dinfo = (int *)kcu_ws(ctx, KCU_WS_INFO, sizeof(int));
  if (!dinfo) return ctx->status;
  /* cuSOLVER declares A and tau non-const; ormtr only reads them */
  KCU_SOLVER(ctx, "cusolverDn<t>ormtr",
             cublas_t<T>::ormtr(st->solver, t, (int)n, (int)m, const_cast<T *>(A), (int)lda,
                                const_cast<T *>(tau), C, (int)ldc, w, lw, dinfo));
  return check_info<T>(ctx, "cusolverDn<t>ormtr");
}

/* one thread per column: forward with L, scale by 1 / D, back with L^T
 * (the factor is shared; each column is an O(n) sweep) */
template <typename T>
__global__ void pttrs_k(int64_t n, int64_t m, const T *D, const T *l, T *C, int64_t ldc) {
  int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= m) return;
  T *x = C + c * ldc;
  for (int64_t i = 1; i < n; i++) x[i] -= l[i - 1] * x[i - 1];
  for (int64_t i = 0; i < n; i++) x[i] /= D[i];
  for (int64_t i = n - 2; i >= 0; i--) x[i] -= l[i] * x[i + 1];
}

template <typename T>
static krr_status op_pttrs(krr_ctx *ctx, int64_t n, int64_t m, const T *D, const T *l, T *C,
                           int64_t ldc) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0 || m < 0 || ldc < (n > 1 ? n : 1))
    return krr_fail(ctx, KRR_ERR_INPUT, "pttrs: n = %lld, m = %lld, ldc = %lld", (long long)n,
                    (long long)m, (long long)ldc);
  if (n == 0 || m == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  pttrs_k<T><<<kcu_grid(st, m), KCU_NT, 0, st->stream>>>(n, m, D, l, C, ldc);
  KCU_LAUNCHED(ctx, "pttrs (kernel launch)");
  return KRR_OK;
}

template <typename T>
static krr_status op_add_diag(krr_ctx *ctx, int64_t n, T *A, int64_t lda, double alpha, const T *d) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "add_diag: n = %lld", (long long)n);
  if (n == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  add_diag_k<T><<<kcu_grid(st, n), KCU_NT, 0, st->stream>>>(n, A, lda, (T)alpha, d);
  KCU_LAUNCHED(ctx, "add_diag (kernel launch)");
  return KRR_OK;
}

template <typename T>
static krr_status op_scale_rows(krr_ctx *ctx, int64_t m, int64_t n, const T *d, T *A, int64_t lda) {
  KCU_TRY(kcu_enter(ctx));
  if (m < 0 || n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "scale_rows: m = %lld, n = %lld", (long long)m, (long long)n);
  if (m == 0 || n == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  scale_rows_k<T><<<kcu_grid(st, m * n), KCU_NT, 0, st->stream>>>(m, n, d, A, lda);
  KCU_LAUNCHED(ctx, "scale_rows (kernel launch)");
  return KRR_OK;
}

template <typename T>
static krr_status op_randn(krr_ctx *ctx, int64_t n, uint64_t seed, uint64_t offset, T *out) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "randn: n = %lld", (long long)n);
  if (n == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  randn_k<T><<<kcu_grid(st, n), KCU_NT, 0, st->stream>>>(n, seed, offset, out);
  KCU_LAUNCHED(ctx, "randn (kernel launch)");
  return KRR_OK;
}

/* ===== random features (ops.h KRR_OPS_FEATURES_TYPED) ===================== */

/* Z(n x M, ld ldz) <- scale cos(Z + c_j), grid-stride over the n M entries;
 * the cosine in the precision of T (cos is overloaded for float). */
template <typename T>
__global__ void rff_map_k(int64_t n, int64_t M, const T *__restrict__ c, T scale,
                          T *__restrict__ Z, int64_t ldz) {
  KCU_FOR(e, n * M) {
    const int64_t j = e / n, i = e - j * n;
    T *z = Z + i + j * ldz;
    *z = scale * cos(*z + c[j]);
  }
}

template <typename T>
static krr_status op_rff_map(krr_ctx *ctx, int64_t n, int64_t M, const T *c, double scale, T *Z,
                             int64_t ldz) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0 || M < 0 || (M > 0 && ldz < n))
    return krr_fail(ctx, KRR_ERR_INPUT, "rff_map: n = %lld, M = %lld, ldz = %lld", (long long)n,
                    (long long)M, (long long)ldz);
  if (n == 0 || M == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  rff_map_k<T><<<kcu_grid(st, n * M), KCU_NT, 0, st->stream>>>(n, M, c, (T)scale, Z, ldz);
  KCU_LAUNCHED(ctx, "rff_map (kernel launch)");
  return KRR_OK;
}

/* the elementwise loss maps (loss_math.h): a grid-stride kernel, double arithmetic */
template <typename T>
__global__ void loss_map_k(int loss, int kind, int64_t n, double lambda, double param, double e,
                           const T *y, const T *a, T *out) {
  KCU_FOR(i, n)
    out[i] = (T)krr_loss_elem(loss, kind, lambda, param, e, y ? (double)y[i] : 0.0,
                              a ? (double)a[i] : 0.0, (double)out[i]);
}

template <typename T>
static krr_status op_loss_map(krr_ctx *ctx, int loss, int kind, int64_t n, double lambda,
                              double param, const T *y, const T *a, T *out) {
  KCU_TRY(kcu_enter(ctx));
  if (n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "loss_map: n = %lld", (long long)n);
  if (n == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  const double e = sizeof(T) == sizeof(float) ? 0x1p-24 : 0x1p-53;
  loss_map_k<T><<<kcu_grid(st, n), KCU_NT, 0, st->stream>>>(loss, kind, n, lambda, param, e, y, a, out);
  KCU_LAUNCHED(ctx, "loss_map (kernel launch)");
  return KRR_OK;
}

/* ===== composite-kernel components (ops.h KRR_OPS_KCOMP_TYPED) =========== */

__device__ __forceinline__ double kc_stat(int kind, const double *x, const double *y, int p) {
  return krr_kc_stat_d(kind, x, 1, y, 1, p);
}
__device__ __forceinline__ double kc_stat(int kind, const float *x, const float *y, int p) {
  return krr_kc_stat_s(kind, x, 1, y, 1, p);
}

/* one entry (or one pair) per thread, grid-stride; double arithmetic as on
 * the CPU (kcomp_math.h).  Not the throughput path: composites of listed
 * kernels use the fused kernel products (data/kcomp.c). */
template <typename T>
__global__ void kcomp_map_k(krr_kcomp c, const T *__restrict__ X1, int64_t n1,
                            const T *__restrict__ X2, int64_t n2, int p, int pairs,
                            T *__restrict__ out, int64_t ldo) {
  const int kind = krr_kc_stat_kind(&c);
  KCU_FOR(e, pairs ? n1 : n1 * n2) {
    const int64_t j = pairs ? e : e / n1, i = pairs ? e : e - j * n1;
    const double st = kc_stat(kind, X1 + i * p, X2 + j * p, p);
    out[pairs ? i : i + j * ldo] = (T)krr_kc_eval(&c, st, -1);
  }
}

template <typename T>
static krr_status op_kcomp_map(krr_ctx *ctx, const krr_kcomp *c, const T *X1, int64_t n1,
                               const T *X2, int64_t n2, int p, int pairs, T *out, int64_t ldo) {
  KCU_TRY(kcu_enter(ctx));
  if (!c || n1 < 0 || n2 < 0 || p < 1 || (!pairs && n2 > 0 && ldo < n1) || (pairs && n2 != n1))
    return krr_fail(ctx, KRR_ERR_INPUT, "kcomp_map: n1 = %lld, n2 = %lld, p = %d, ldo = %lld",
                    (long long)n1, (long long)n2, p, (long long)ldo);
  const int64_t work = pairs ? n1 : n1 * n2;
  if (work == 0) return KRR_OK;
  krr_cuda_state *st = kcu_state(ctx);
  kcomp_map_k<T>
      <<<kcu_grid(st, work), KCU_NT, 0, st->stream>>>(*c, X1, n1, X2, n2, p, pairs, out, ldo);
  KCU_LAUNCHED(ctx, "kcomp_map (kernel launch)");
  return KRR_OK;
}

/* ===== the table ========================================================== */

#define KCU_TYPED(real, S)                                                                      \
  krr_cuda_kernel_mv_##S, krr_cuda_kernel_block_##S,                                            \
      NULL, /* kernel_gram: Falkon makes two kernel_mv products */                              \
      op_gather_points<real>, op_gather_rows<real>, op_scatter_axpy<real>, op_axpby<real>,      \
      op_momentum<real>, op_dot_##S, op_nrm2_##S, op_gemm<real>, op_syrk<real>, op_potrf<real>, \
      op_trsm<real>, op_qr_q<real>, op_svd_thin<real>, op_syev<real>, op_syev_top<real>,        \
      op_sytrd<real>, op_ormtr<real>, op_pttrs<real>, op_add_diag<real>, op_scale_rows<real>,   \
      op_randn<real>, op_loss_map<real>

static const krr_ops kcu_ops = {
    "cuda",
    cuda_ctx_init,
    cuda_ctx_free,
    cuda_mem_info,
    cuda_alloc,
    cuda_dealloc,
    cuda_upload,
    cuda_download,
    cuda_copy,
    cuda_zero,
    cuda_sync,
    KCU_TYPED(double, d),
    KCU_TYPED(float, s),
    /* random features (positional: the order of struct krr_ops) */
    op_rff_map<double>,
    op_rff_map<float>,
    /* composite-kernel components; no fused products (kprod_mv,
     * kprod_block): data/kcomp.c forms product terms in tiles */
    op_kcomp_map<double>,
    NULL,
    NULL,
    op_kcomp_map<float>,
    NULL,
    NULL,
    /* kernel_deriv_dot: a host table's entry */
    NULL,
};

/* ===== extern "C" entry points ============================================ */

extern "C" {

int krr_cuda_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

krr_status krr_cuda_device_info(int dev, char *name, size_t len, size_t *mem_total, int *cc_major,
                                int *cc_minor) {
  int n = krr_cuda_device_count();
  if (dev < 0 || dev >= n) return n == 0 ? KRR_ERR_DEVICE : KRR_ERR_INPUT;
  cudaDeviceProp prop;
  memset(&prop, 0, sizeof prop);
  if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return KRR_ERR_DEVICE;
  }
  if (name && len > 0) {
    strncpy(name, prop.name, len - 1);
    name[len - 1] = '\0';
  }
  if (mem_total) *mem_total = prop.totalGlobalMem;
  if (cc_major) *cc_major = prop.major;
  if (cc_minor) *cc_minor = prop.minor;
  return KRR_OK;
}

const krr_ops *krr_cuda_ops(const char **why) {
  static char msg[256];
  int drv = 0, rt = 0;
  if (cudaDriverGetVersion(&drv) != cudaSuccess) { (void)cudaGetLastError(); drv = 0; }
  if (cudaRuntimeGetVersion(&rt) != cudaSuccess) { (void)cudaGetLastError(); rt = 0; }
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess && n > 0) {
    if (why) *why = NULL;
    return &kcu_ops;
  }
  (void)cudaGetLastError();
  if (why) {
    if (drv == 0) {
      *why = "no CUDA driver found (libcuda.so could not be loaded)";
    } else if (e == cudaErrorInsufficientDriver || (rt > 0 && drv < rt)) {
      snprintf(msg, sizeof msg,
               "CUDA driver too old for this build (driver %d.%d < runtime %d.%d)", drv / 1000,
               (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10);
      *why = msg;
    } else if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) {
      *why = "no CUDA device found";
    } else {
      snprintf(msg, sizeof msg, "CUDA initialisation failed: %s (%s)", cudaGetErrorString(e),
               cudaGetErrorName(e));
      *why = msg;
    }
  }
  return NULL;
}

krr_status krr_cuda_status(const char **why) { return krr_cuda_ops(why) ? KRR_OK : KRR_ERR_DEVICE; }

} /* extern "C" */
