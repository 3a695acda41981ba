/* CUDA kernel primitives: kernel_mv (fused, matrix-free) and kernel_block.
 *
 * Tiling (both primitives share it)
 *   block = 256 threads as 16 (tx) x 16 (ty); a block owns BM = 64 rows of X1;
 *   it walks X2 in tiles of BN = 64 points.  Thread (tx, ty) owns the 4 x 4
 *   micro-tile of pairs  rows ty*4 .. ty*4+3  x  points tx*4 .. tx*4+3.
 *   Points are staged in shared memory dimension-major (S[k][point], padded
 *   by 4 so float4/double2 reads stay aligned), KC dimensions at a time
 *   (32 float / 16 double).  When p <= KC the X1 tile is loaded once per block.
 *   Per dimension a thread reads 4 + 4 values (2 float4 loads, one of them a
 *   broadcast) and issues 16 x (sub, fma) = 32 FP instructions, so the loop is
 *   issue bound, not shared-memory bound.
 *
 * Distances are formed directly (x_k - x'_k), so t = 0 exactly for identical
 * points and K(x, x) = 1 -- except on the GEMM route below.
 *
 * GEMM route (L2 kernels, p >= the context's gemm_min_p, by default
 * KCU_GEMM_MIN_P_FLOAT / _DOUBLE): the direct loop issues 2 FP instructions per dimension and
 * pair without tensor-core or cuBLAS-grade blocking, so at large p the
 * product X1 X2^T runs faster through cuBLAS (2 flops per dimension at GEMM
 * efficiency).  kernel_block then forms t = |x|^2 + |x'|^2 - 2 x.x' per
 * tile: cuBLAS writes -2 X1 X2^T into the output, and one elementwise pass
 * adds the squared row norms and applies the kernel.  Cancellation guard:
 * where t <= |x|^2 + |x'|^2 divided by GEMM_GUARD_INV (near-duplicate points,
 * where the rounding of the three terms is no longer small against t) the
 * pair's distance is recomputed directly, so identical points still give
 * t = 0 and K = 1; elsewhere the relative error of t is at most about
 * GEMM_GUARD_INV times that of the GEMM's dot products.  kernel_mv takes the
 * tile + gemm route with such tiles.  The L1 (Laplace) kernel always runs
 * the direct loop.
 *
 * kernel_mv epilogue per X2 tile: kernel values (float: ex2.approx /
 * sqrt.approx with log2(e) folded into the scale; double: exp / sqrt), then
 * a float (or double) partial K.V over the thread's 4 points, added into a
 * double accumulator: float accumulation within a tile, double across tiles.
 * At the end the 16 tx lanes of a row are reduced with shuffles (double).
 *
 * Parallelism when n1 is small: X2 is split over gridDim.y ("split-K"); each
 * split writes double partial sums to a scratch buffer and a second kernel
 * adds them in a fixed order (deterministic result).
 *
 * q: templated Q in {1, 2, 4, 8} (columns padded with zeros); q <= 16 runs
 * the fused kernel once per 8-column chunk; q > 16 (the Nystrom sketch, q ~
 * 100) goes through bounded tiles: kernel_block into a T1 x T2 tile (<= 2^24
 * entries) then cuBLAS gemm with V, float products accumulated in double.
 *
 * Flop count used in the benchmarks (per pair, q = 1): 3p (sub, mul, add per
 * dimension) + 10 (kernel evaluation and the K.V multiply-add).  The hardware
 * issues 2 instructions per dimension (sub + fma), i.e. the count is 1.5x the
 * FMA-as-2 work: at perfect issue the count reaches 75% of the FP32 peak.
 */
#include "cuda_internal.cuh"
#include "../core/kernel_math.h"

namespace {

constexpr int TXN = 16, TYN = 16, NTH = TXN * TYN; /* 256 threads */
constexpr int RM = 4, RN = 4;                        /* micro-tile */
constexpr int BM = TYN * RM;                         /* 64 X1 rows per block */
constexpr int BN = TXN * RN;                         /* 64 X2 points per tile */
constexpr int PADS = 4;                              /* smem row padding */
constexpr int QFUSED_MAX = 16;                       /* q above this: tile + gemm */
constexpr double LOG2E = 1.4426950408889634;
constexpr int GEMM_GUARD_INV = 32; /* recompute t directly below (|x|^2+|x'|^2)/32 */

template <typename T> struct kc_of { static constexpr int v = 32; };
template <> struct kc_of<double> { static constexpr int v = 16; };

/* ---- small device helpers -------------------------------------------------*/
__device__ __forceinline__ void ld4(float (&r)[4], const float *p) {
  float4 v = *reinterpret_cast<const float4 *>(p);
  r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w;
}
__device__ __forceinline__ void ld4(double (&r)[4], const double *p) {
  double2 v0 = *reinterpret_cast<const double2 *>(p);
  double2 v1 = *reinterpret_cast<const double2 *>(p + 2);
  r[0] = v0.x; r[1] = v0.y; r[2] = v1.x; r[3] = v1.y;
}

__device__ __forceinline__ float ex2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float sqrt_approx(float x) {
  float y;
  asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float kexp(float x) { return expf(x); }
__device__ __forceinline__ double kexp(double x) { return exp(x); }
__device__ __forceinline__ float ksqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double ksqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float kabs(float x) { return fabsf(x); }
__device__ __forceinline__ double kabs(double x) { return fabs(x); }

/* Kernel values, generated from KRR_KERNEL_LIST (kernel_math.h): u = a t or
 * a sqrt(t), value POLY(u) exp(-u).  KT is a template constant, so each
 * instantiation keeps only its own case; an unlisted KT does not compile and
 * the default is unreachable (launch_mv / launch_block reject unlisted codes
 * on the host). */

/* accurate kernel value from the statistic t (kernel_block, double mv) */
template <typename T, int KT>
__device__ __forceinline__ T keval_acc(T t, T a) {
  static_assert(KRR_KERNEL_LISTED(KT), "kernel code not in KRR_KERNEL_LIST");
  T v = T(0);
  switch (KT) {
#define KCU_ACC_CASE(K, n, A, L1, ROOT, POLY, ...)      \
  case KRR_##K: {                                       \
    const T u = a * ((ROOT) ? ksqrt(t) : t);            \
    v = (POLY) * kexp(-u);                              \
    break;                                              \
  }
    KRR_KERNEL_LIST(KCU_ACC_CASE)
#undef KCU_ACC_CASE
    default: __builtin_unreachable();
  }
  return t == T(0) ? T(1) : v;
}

/* fast float kernel value: a2 = a * log2(e), exp(-u) = ex2(-a2 d) */
template <int KT>
__device__ __forceinline__ float keval_fast(float t, float a, float a2) {
  static_assert(KRR_KERNEL_LISTED(KT), "kernel code not in KRR_KERNEL_LIST");
  typedef float T; /* POLY's type */
  switch (KT) {
#define KCU_FAST_CASE(K, n, A, L1, ROOT, POLY, ...)     \
  case KRR_##K: {                                       \
    const float d = (ROOT) ? sqrt_approx(t) : t;        \
    const float u = a * d;                              \
    (void)u;                                            \
    return (POLY) * ex2_approx(-a2 * d);                \
  }
    KRR_KERNEL_LIST(KCU_FAST_CASE)
#undef KCU_FAST_CASE
    default: __builtin_unreachable();
  }
  return 0.0f;
}

template <typename T, int KT> struct kfun;
template <int KT> struct kfun<float, KT> {
  __device__ __forceinline__ static float mv(float t, float a, float a2) { return keval_fast<KT>(t, a, a2); }
};
template <int KT> struct kfun<double, KT> {
  __device__ __forceinline__ static double mv(double t, double a, double) { return keval_acc<double, KT>(t, a); }
};

/* Load points j0 .. j0+63, dimensions k0 .. k0+kc-1 of X (n x p row-major)
 * into S[k][point] (zero beyond n).  Consecutive threads read consecutive
 * addresses (the chunk of a point is contiguous). */
template <typename T, int KC>
__device__ __forceinline__ void load_tile(T (*S)[BM + PADS], const T *__restrict__ X, int64_t n,
                                          int p, int64_t j0, int k0, int kc, int tid) {
  const int total = BM * kc;
  int pt = tid / kc, d = tid - pt * kc;
  const int spt = NTH / kc, sd = NTH - spt * kc;
  for (int e = tid; e < total; e += NTH) {
    int64_t g = j0 + pt;
    T v = T(0);
    if (g < n) v = X[g * (int64_t)p + k0 + d];
    S[d][pt] = v;
    pt += spt;
    d += sd;
    if (d >= kc) { d -= kc; ++pt; }
  }
}

/* t[r][c] += sum_k f(A[k][ty*4+r] - B[k][tx*4+c]) */
template <typename T, bool L1>
__device__ __forceinline__ void accum_dist(T (&t)[RM][RN], const T (*A)[BM + PADS],
                                           const T (*B)[BM + PADS], int kc, int tx, int ty) {
#pragma unroll 4
  for (int k = 0; k < kc; ++k) {
    T a[RM], b[RN];
    ld4(a, &A[k][ty * RM]);
    ld4(b, &B[k][tx * RN]);
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int c = 0; c < RN; ++c) {
        T df = a[r] - b[c];
        if (L1) t[r][c] += kabs(df);
        else t[r][c] = fma(df, df, t[r][c]);
      }
  }
}

/* ---- kernel_mv: fused kernel ---------------------------------------------*/
template <typename T, int KT, int Q>
__global__ void __launch_bounds__(NTH)
kmv_kernel(const T *__restrict__ X1, int64_t n1, const T *__restrict__ X2, int64_t n2, int p,
           const T *__restrict__ V, int64_t ldv, int q, T *__restrict__ out, int64_t ldo,
           double *__restrict__ split_ws, int64_t tiles_per_split, T a, T a2) {
  constexpr int KC = kc_of<T>::v;
  constexpr bool L1 = KRR_KERNEL_IS_L1(KT);
  __shared__ __align__(16) T As[KC][BM + PADS];
  __shared__ __align__(16) T Bs[KC][BN + PADS];
  __shared__ __align__(16) T Vs[Q][BN];

  const int tid = threadIdx.x;
  const int tx = tid % TXN, ty = tid / TXN;
  const int64_t i0 = (int64_t)blockIdx.x * BM;
  const int64_t s = blockIdx.y;
  const int64_t ntiles2 = (n2 + BN - 1) / BN;
  const int64_t jt0 = s * tiles_per_split;
  const int64_t jt1 = jt0 + tiles_per_split < ntiles2 ? jt0 + tiles_per_split : ntiles2;
  const bool one_chunk = p <= KC;

  double acc[RM][Q];
#pragma unroll
  for (int r = 0; r < RM; ++r)
#pragma unroll
    for (int j = 0; j < Q; ++j) acc[r][j] = 0.0;

  if (one_chunk) load_tile<T, KC>(As, X1, n1, p, i0, 0, p, tid);

  for (int64_t jt = jt0; jt < jt1; ++jt) {
    const int64_t j0 = jt * BN;
    T t[RM][RN];
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int c = 0; c < RN; ++c) t[r][c] = T(0);

    for (int k0 = 0; k0 < p; k0 += KC) {
      const int kc = p - k0 < KC ? p - k0 : KC;
      __syncthreads(); /* previous readers of As/Bs/Vs are done */
      if (!one_chunk) load_tile<T, KC>(As, X1, n1, p, i0, k0, kc, tid);
      load_tile<T, KC>(Bs, X2, n2, p, j0, k0, kc, tid);
      if (k0 == 0) {
        for (int e = tid; e < Q * BN; e += NTH) {
          const int j = e / BN, c = e - j * BN;
          const int64_t g = j0 + c;
          Vs[j][c] = (j < q && g < n2) ? V[g + (int64_t)j * ldv] : T(0);
        }
      }
      __syncthreads();
      accum_dist<T, L1>(t, As, Bs, kc, tx, ty);
    }

    /* epilogue: kernel values, K.V over this thread's 4 points */
    T kv[RM][RN];
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int c = 0; c < RN; ++c) kv[r][c] = kfun<T, KT>::mv(t[r][c], a, a2);
#pragma unroll
    for (int j = 0; j < Q; ++j) {
      T v[RN];
      ld4(v, &Vs[j][tx * RN]);
#pragma unroll
      for (int r = 0; r < RM; ++r) {
        T part = kv[r][0] * v[0];
        part = fma(kv[r][1], v[1], part);
        part = fma(kv[r][2], v[2], part);
        part = fma(kv[r][3], v[3], part);
        acc[r][j] += (double)part;
      }
    }
  }

  /* reduce over the 16 tx lanes that share a row (xor < 16 stays in the
   * half-warp), then lane tx == 0 writes */
#pragma unroll
  for (int r = 0; r < RM; ++r)
#pragma unroll
    for (int j = 0; j < Q; ++j) {
      double v = acc[r][j];
      v += __shfl_xor_sync(0xffffffffu, v, 8);
      v += __shfl_xor_sync(0xffffffffu, v, 4);
      v += __shfl_xor_sync(0xffffffffu, v, 2);
      v += __shfl_xor_sync(0xffffffffu, v, 1);
      acc[r][j] = v;
    }
  if (tx == 0) {
#pragma unroll
    for (int r = 0; r < RM; ++r) {
      const int64_t row = i0 + ty * RM + r;
      if (row >= n1) continue;
#pragma unroll
      for (int j = 0; j < Q; ++j) {
        if (j >= q) continue;
        if (split_ws) split_ws[(s * q + j) * n1 + row] = acc[r][j];
        else out[row + (int64_t)j * ldo] = (T)acc[r][j];
      }
    }
  }
}

/* out[row + j ldo] = sum_s ws[(s q + j) n1 + row], fixed order */
template <typename T>
__global__ void split_reduce_kernel(const double *__restrict__ ws, int64_t n1, int q, int nsplit,
                                    T *__restrict__ out, int64_t ldo) {
  const int64_t total = n1 * (int64_t)q;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t j = e / n1, row = e - j * n1;
    double sum = 0.0;
    for (int s = 0; s < nsplit; ++s) sum += ws[((int64_t)s * q + j) * n1 + row];
    out[row + j * ldo] = (T)sum;
  }
}

/* ---- kernel_block ---------------------------------------------------------*/
template <typename T, int KT>
__global__ void __launch_bounds__(NTH)
kblock_kernel(const T *__restrict__ X1, int64_t n1, const T *__restrict__ X2, int64_t n2, int p,
              T *__restrict__ out, int64_t ldo, T a) {
  constexpr int KC = kc_of<T>::v;
  constexpr bool L1 = KRR_KERNEL_IS_L1(KT);
  __shared__ __align__(16) T As[KC][BM + PADS];
  __shared__ __align__(16) T Bs[KC][BN + PADS];
  const int tid = threadIdx.x;
  const int tx = tid % TXN, ty = tid / TXN;
  const int64_t i0 = (int64_t)blockIdx.x * BM;
  const int64_t ntiles2 = (n2 + BN - 1) / BN;
  const bool one_chunk = p <= KC;
  if (one_chunk) load_tile<T, KC>(As, X1, n1, p, i0, 0, p, tid);

  for (int64_t jt = blockIdx.y; jt < ntiles2; jt += gridDim.y) {
    const int64_t j0 = jt * BN;
    T t[RM][RN];
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int c = 0; c < RN; ++c) t[r][c] = T(0);
    for (int k0 = 0; k0 < p; k0 += KC) {
      const int kc = p - k0 < KC ? p - k0 : KC;
      __syncthreads();
      if (!one_chunk) load_tile<T, KC>(As, X1, n1, p, i0, k0, kc, tid);
      load_tile<T, KC>(Bs, X2, n2, p, j0, k0, kc, tid);
      __syncthreads();
      accum_dist<T, L1>(t, As, Bs, kc, tx, ty);
    }
#pragma unroll
    for (int c = 0; c < RN; ++c) {
      const int64_t col = j0 + tx * RN + c;
      if (col >= n2) continue;
#pragma unroll
      for (int r = 0; r < RM; ++r) {
        const int64_t row = i0 + ty * RM + r;
        if (row < n1) out[row + col * ldo] = keval_acc<T, KT>(t[r][c], a);
      }
    }
  }
}

/* ---- GEMM route: squared row norms and the elementwise epilogue ------------*/
/* nrm[i] = sum_k X[i, k]^2 (X n x p row-major), one warp per row, summed in
 * double */
template <typename T>
__global__ void rownorm2_kernel(const T *__restrict__ X, int64_t n, int p, T *__restrict__ nrm) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
  for (int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
    const T *x = X + i * (int64_t)p;
    double sum = 0.0;
    for (int k = lane; k < p; k += 32) sum += (double)x[k] * (double)x[k];
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) nrm[i] = (T)sum;
  }
}

/* out[i + j ldo] holds -2 x_i.x'_j on entry and K(x_i, x'_j) on exit; t by
 * the norms, or directly where the guard says the norms' form lost t */
template <typename T, int KT>
__global__ void gemm_epilogue_kernel(const T *__restrict__ X1, const T *__restrict__ X2, int p,
                                     const T *__restrict__ n1v, const T *__restrict__ n2v,
                                     int64_t m, int64_t nn, T *__restrict__ out, int64_t ldo, T a) {
  for (int64_t j = blockIdx.y; j < nn; j += gridDim.y) {
    const T nj = n2v[j];
    const T *y = X2 + j * (int64_t)p;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < m;
         i += (int64_t)gridDim.x * blockDim.x) {
      T *o = out + i + j * ldo;
      const T s = n1v[i] + nj;
      T t = *o + s;
      if (!(t * (T)GEMM_GUARD_INV > s)) {
        const T *x = X1 + i * (int64_t)p;
        T d2 = T(0);
        for (int k = 0; k < p; ++k) {
          const T df = x[k] - y[k];
          d2 = fma(df, df, d2);
        }
        t = d2;
      }
      *o = keval_acc<T, KT>(t, a);
    }
  }
}

/* GEMM route of kernel_mv (q <= QFUSED_MAX, columns c0 .. c0+q-1 of V):
 * G (m x nn, ld ldg) holds -2 X1 X2^T of one tile; block (x, s) forms the K
 * entries of rows x*256 .. and of the s-th chunk of columns from G and the
 * norms (guarded as in gemm_epilogue_kernel) and writes that chunk's K V
 * to part[(s q + c) m + i] in double.  The K tile itself is never stored. */
template <typename T, int KT, int Q>
__global__ void __launch_bounds__(KCU_NT)
    gemm_mv_epilogue_kernel(const T *__restrict__ X1, const T *__restrict__ X2, int p,
                            const T *__restrict__ n1v, const T *__restrict__ n2v, int64_t m,
                            int64_t nn, const T *__restrict__ G, int64_t ldg,
                            const T *__restrict__ V, int64_t ldv, int q, int64_t chunk,
                            double *__restrict__ part, T a) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t s = blockIdx.y;
  if (i >= m) return;
  const int64_t j0 = s * chunk, j1 = j0 + chunk < nn ? j0 + chunk : nn;
  const T ni = n1v[i];
  double acc[Q];
#pragma unroll
  for (int c = 0; c < Q; ++c) acc[c] = 0.0;
  for (int64_t jb = j0; jb < j1; jb += 32) {
    const int64_t je = jb + 32 < j1 ? jb + 32 : j1;
    T pa[Q];
#pragma unroll
    for (int c = 0; c < Q; ++c) pa[c] = T(0);
    for (int64_t j = jb; j < je; ++j) {
      const T sn = ni + n2v[j];
      T t = G[i + j * ldg] + sn;
      if (!(t * (T)GEMM_GUARD_INV > sn)) {
        const T *x = X1 + i * (int64_t)p, *y = X2 + j * (int64_t)p;
        T d2 = T(0);
        for (int k = 0; k < p; ++k) {
          const T df = x[k] - y[k];
          d2 = fma(df, df, d2);
        }
        t = d2;
      }
      const T kv = keval_acc<T, KT>(t, a);
#pragma unroll
      for (int c = 0; c < Q; ++c)
        if (c < q) pa[c] = fma(kv, V[j + c * ldv], pa[c]);
    }
#pragma unroll
    for (int c = 0; c < Q; ++c) acc[c] += (double)pa[c];
  }
#pragma unroll
  for (int c = 0; c < Q; ++c)
    if (c < q) part[(s * q + c) * m + i] = acc[c];
}

/* acc[i + c m] (+)= sum_s part[(s q + c) m + i], s in order (deterministic) */
__global__ void part_acc_kernel(const double *__restrict__ part, int64_t m, int q, int64_t ns,
                                double *__restrict__ acc, int first) {
  const int64_t total = m * (int64_t)q;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    double sum = first ? 0.0 : acc[e];
    for (int64_t s = 0; s < ns; ++s) sum += part[s * total + e];
    acc[e] = sum;
  }
}

/* acc (m x q, ld m) (+)= P (m x q, ld m) */
__global__ void acc_add_kernel(double *__restrict__ acc, const float *__restrict__ P, int64_t len,
                               int first) {
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < len;
       e += (int64_t)gridDim.x * blockDim.x)
    acc[e] = first ? (double)P[e] : acc[e] + (double)P[e];
}
/* out[i + j ldo] = acc[i + j m] */
template <typename T>
__global__ void acc_store_kernel(const double *__restrict__ acc, int64_t m, int q,
                                 T *__restrict__ out, int64_t ldo) {
  const int64_t total = m * (int64_t)q;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t j = e / m, i = e - j * m;
    out[i + j * ldo] = (T)acc[e];
  }
}

/* ---- host side ------------------------------------------------------------*/
template <typename T>
krr_status check_args(krr_ctx *ctx, const char *op, const krr_kernel *k, int64_t n1, int64_t n2,
                      int p) {
  if (!k) return krr_fail(ctx, KRR_ERR_INPUT, "%s: kernel is NULL", op);
  if (!KRR_KERNEL_LISTED((int)k->type))
    return krr_fail(ctx, KRR_ERR_INPUT, "%s: unknown kernel code %d", op, (int)k->type);
  if (!(k->bandwidth > 0) || !(k->bandwidth < HUGE_VAL))
    return krr_fail(ctx, KRR_ERR_INPUT, "%s: bandwidth must be finite and > 0, got %g", op,
                    k->bandwidth);
  if (n1 < 0 || n2 < 0 || p < 1)
    return krr_fail(ctx, KRR_ERR_INPUT, "%s: invalid sizes n1 = %lld, n2 = %lld, p = %d", op,
                    (long long)n1, (long long)n2, p);
  return KRR_OK;
}

template <typename T, int KT, int Q>
krr_status launch_mv_q(krr_ctx *ctx, const T *X1, int64_t n1, const T *X2, int64_t n2, int p,
                       const T *V, int64_t ldv, int q, T *out, int64_t ldo, double a) {
  krr_cuda_state *st = kcu_state(ctx);
  const int64_t n1tiles = (n1 + BM - 1) / BM;
  const int64_t ntiles2 = (n2 + BN - 1) / BN;
  if (n1tiles > 2147483647LL)
    return krr_fail(ctx, KRR_ERR_INPUT, "kernel_mv: n1 = %lld too large", (long long)n1);
  int bpsm = 0;
  KCU_CHECK(ctx, "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bpsm, kmv_kernel<T, KT, Q>, NTH, 0));
  if (bpsm < 1) bpsm = 1;
  /* two waves of resident blocks; split X2 when the X1 tiles alone are fewer */
  const int64_t target = (int64_t)st->sm_count * bpsm * 2;
  int64_t nsplit = 1;
  if (n1tiles < target) {
    nsplit = (target + n1tiles - 1) / n1tiles;
    int64_t min_tiles = 4; /* keep >= 256 points per split */
    int64_t cap = (ntiles2 + min_tiles - 1) / min_tiles;
    if (nsplit > cap) nsplit = cap;
    if (nsplit > 65535) nsplit = 65535;
    if (nsplit < 1) nsplit = 1;
  }
  int64_t tps = (ntiles2 + nsplit - 1) / nsplit;
  if (tps < 1) tps = 1;
  nsplit = (ntiles2 + tps - 1) / tps;
  if (nsplit < 1) nsplit = 1;
  double *ws = NULL;
  if (nsplit > 1) {
    ws = (double *)kcu_ws(ctx, KCU_WS_SPLIT, (size_t)nsplit * (size_t)q * (size_t)n1 * sizeof(double));
    if (!ws) return ctx->status;
  }
  dim3 grid((unsigned)n1tiles, (unsigned)nsplit);
  kmv_kernel<T, KT, Q><<<grid, NTH, 0, st->stream>>>(X1, n1, X2, n2, p, V, ldv, q, out, ldo, ws,
                                                    tps, (T)a, (T)(a * LOG2E));
  KCU_LAUNCHED(ctx, "kernel_mv (fused kernel launch)");
  if (nsplit > 1) {
    split_reduce_kernel<T><<<kcu_grid(st, n1 * (int64_t)q), KCU_NT, 0, st->stream>>>(
        ws, n1, q, (int)nsplit, out, ldo);
    KCU_LAUNCHED(ctx, "kernel_mv (split reduce launch)");
  }
  return KRR_OK;
}

template <typename T, int KT>
krr_status launch_mv_kt(krr_ctx *ctx, const T *X1, int64_t n1, const T *X2, int64_t n2, int p,
                        const T *V, int64_t ldv, int q, T *out, int64_t ldo, double a) {
  if (q <= 1) return launch_mv_q<T, KT, 1>(ctx, X1, n1, X2, n2, p, V, ldv, q, out, ldo, a);
  if (q <= 2) return launch_mv_q<T, KT, 2>(ctx, X1, n1, X2, n2, p, V, ldv, q, out, ldo, a);
  if (q <= 4) return launch_mv_q<T, KT, 4>(ctx, X1, n1, X2, n2, p, V, ldv, q, out, ldo, a);
  return launch_mv_q<T, KT, 8>(ctx, X1, n1, X2, n2, p, V, ldv, q, out, ldo, a);
}

template <typename T>
krr_status launch_mv(krr_ctx *ctx, int kt, const T *X1, int64_t n1, const T *X2, int64_t n2,
                     int p, const T *V, int64_t ldv, int q, T *out, int64_t ldo, double a) {
  switch (kt) {
#define KCU_MV_CASE(K, ...) \
  case KRR_##K: return launch_mv_kt<T, KRR_##K>(ctx, X1, n1, X2, n2, p, V, ldv, q, out, ldo, a);
    KRR_KERNEL_LIST(KCU_MV_CASE)
#undef KCU_MV_CASE
    default: return krr_fail(ctx, KRR_ERR_INPUT, "kernel_mv: unknown kernel code %d", kt);
  }
}

/* cuBLAS gemm (64-bit API), C (m x n) = alpha op(A) B + beta C, column-major;
 * op(A) = A (CUBLAS_OP_N, A m x k) or A^T (CUBLAS_OP_T, A k x m: for
 * row-major X1 (m x p) and X2 (n x p), A = X1, B = X2 give X1 X2^T) */
inline cublasStatus_t gemm_xn(cublasHandle_t h, cublasOperation_t opa, int64_t m, int64_t n,
                              int64_t k, const float *al, const float *A, int64_t lda,
                              const float *B, int64_t ldb, const float *be, float *C, int64_t ldc) {
  return cublasSgemm_64(h, opa, CUBLAS_OP_N, m, n, k, al, A, lda, B, ldb, be, C, ldc);
}
inline cublasStatus_t gemm_xn(cublasHandle_t h, cublasOperation_t opa, int64_t m, int64_t n,
                              int64_t k, const double *al, const double *A, int64_t lda,
                              const double *B, int64_t ldb, const double *be, double *C,
                              int64_t ldc) {
  return cublasDgemm_64(h, opa, CUBLAS_OP_N, m, n, k, al, A, lda, B, ldb, be, C, ldc);
}

/* The kernel a GEMM-route instantiation is made for: the L1 kernels never
 * take the route (use_gemm_route), so they map to RBF's instantiation and
 * compile none of their own. */
template <int KT>
constexpr int gemm_kt() {
  return KRR_KERNEL_IS_L1(KT) ? (int)KRR_RBF : KT;
}

/* the GEMM route applies: an L2 kernel and p at or above the precision's threshold */
template <typename T>
inline bool use_gemm_route(krr_ctx *ctx, int kt, int p) {
  return !krr_kernel_is_l1(kt) && p >= kcu_state(ctx)->gemm_min_p[sizeof(T) == sizeof(double)];
}

/* the squared row norms of X1 then X2 (n1 + n2 numbers) in KCU_WS_NORM;
 * NULL after krr_fail */
template <typename T>
T *row_norms(krr_ctx *ctx, const T *X1, int64_t n1, const T *X2, int64_t n2, int p) {
  krr_cuda_state *st = kcu_state(ctx);
  T *nv = (T *)kcu_ws(ctx, KCU_WS_NORM, (size_t)(n1 + n2) * sizeof(T));
  if (!nv) return NULL;
  rownorm2_kernel<T><<<kcu_grid(st, 32 * n1), KCU_NT, 0, st->stream>>>(X1, n1, p, nv);
  rownorm2_kernel<T><<<kcu_grid(st, 32 * n2), KCU_NT, 0, st->stream>>>(X2, n2, p, nv + n1);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    kcu_fail_cuda(ctx, "row norms (kernel launch)", e);
    return NULL;
  }
  return nv;
}

/* K(X1, X2) into out (n1 x n2, ld ldo) by the GEMM route */
template <typename T>
krr_status block_via_gemm(krr_ctx *ctx, int kt, const T *X1, int64_t n1, const T *X2, int64_t n2,
                          int p, T *out, int64_t ldo, double a) {
  krr_cuda_state *st = kcu_state(ctx);
  T *nv = row_norms<T>(ctx, X1, n1, X2, n2, p);
  if (!nv) return ctx->status;
  const T m2 = T(-2), zero = T(0);
  KCU_BLAS(ctx, "cublas gemm (kernel_block GEMM route)",
           gemm_xn(st->blas, CUBLAS_OP_T, n1, n2, p, &m2, X1, p, X2, p, &zero, out, ldo));
  const T ta = (T)a;
  const int64_t gx = (n1 + KCU_NT - 1) / KCU_NT;
  const dim3 g((unsigned)(gx < 64 ? gx : 64), (unsigned)(n2 < 256 ? n2 : 256));
  switch (kt) {
#define KCU_EPI_CASE(K, ...)                                                          \
  case KRR_##K:                                                                       \
    gemm_epilogue_kernel<T, gemm_kt<KRR_##K>()>                                       \
        <<<g, KCU_NT, 0, st->stream>>>(X1, X2, p, nv, nv + n1, n1, n2, out, ldo, ta); \
    break;
    KRR_KERNEL_LIST(KCU_EPI_CASE)
#undef KCU_EPI_CASE
    default: return krr_fail(ctx, KRR_ERR_INPUT, "kernel_block: unknown kernel code %d", kt);
  }
  KCU_LAUNCHED(ctx, "kernel_block (GEMM epilogue launch)");
  return KRR_OK;
}

template <typename T>
krr_status launch_block(krr_ctx *ctx, int kt, const T *X1, int64_t n1, const T *X2, int64_t n2,
                        int p, T *out, int64_t ldo, double a) {
  krr_cuda_state *st = kcu_state(ctx);
  const int64_t n1tiles = (n1 + BM - 1) / BM;
  const int64_t ntiles2 = (n2 + BN - 1) / BN;
  if (n1tiles > 2147483647LL)
    return krr_fail(ctx, KRR_ERR_INPUT, "kernel_block: n1 = %lld too large", (long long)n1);
  if (use_gemm_route<T>(ctx, kt, p))
    return block_via_gemm<T>(ctx, kt, X1, n1, X2, n2, p, out, ldo, a);
  dim3 grid((unsigned)n1tiles, (unsigned)(ntiles2 < 65535 ? ntiles2 : 65535));
  const T ta = (T)a;
  switch (kt) {
#define KCU_BLOCK_CASE(K, ...)                                                            \
  case KRR_##K:                                                                          \
    kblock_kernel<T, KRR_##K><<<grid, NTH, 0, st->stream>>>(X1, n1, X2, n2, p, out, ldo, ta); \
    break;
    KRR_KERNEL_LIST(KCU_BLOCK_CASE)
#undef KCU_BLOCK_CASE
    default: return krr_fail(ctx, KRR_ERR_INPUT, "kernel_block: unknown kernel code %d", kt);
  }
  KCU_LAUNCHED(ctx, "kernel_block (kernel launch)");
  return KRR_OK;
}

/* q > QFUSED_MAX, or the GEMM route: K tile (T1 x T2, <= 2^24 entries) + gemm */
template <typename T>
krr_status mv_via_gemm(krr_ctx *ctx, int kt, const T *X1, int64_t n1, const T *X2, int64_t n2,
                       int p, const T *V, int64_t ldv, int q, T *out, int64_t ldo, double a) {
  krr_cuda_state *st = kcu_state(ctx);
  constexpr bool is_float = sizeof(T) == sizeof(float);
  /* square tiles of 4096 at most; a few rows (prediction at few points)
   * take longer X2 tiles, so that each gemm stays large */
  const int64_t T1 = n1 < 4096 ? n1 : 4096;
  int64_t T2 = ((int64_t)1 << 24) / T1;
  if (T2 > n2) T2 = n2;
  T *Kt = (T *)kcu_ws(ctx, KCU_WS_TILE, (size_t)T1 * (size_t)T2 * sizeof(T));
  if (!Kt) return ctx->status;
  float *P = NULL;
  double *acc = NULL;
  if constexpr (is_float) {
    P = (float *)kcu_ws(ctx, KCU_WS_PTILE, (size_t)T1 * (size_t)q * sizeof(float));
    if (!P) return ctx->status;
    acc = (double *)kcu_ws(ctx, KCU_WS_ACC, (size_t)T1 * (size_t)q * sizeof(double));
    if (!acc) return ctx->status;
  }
  const T one = T(1), zero = T(0);
  for (int64_t i0 = 0; i0 < n1; i0 += T1) {
    const int64_t m = n1 - i0 < T1 ? n1 - i0 : T1;
    for (int64_t j0 = 0; j0 < n2; j0 += T2) {
      const int64_t nn = n2 - j0 < T2 ? n2 - j0 : T2;
      KCU_TRY(launch_block<T>(ctx, kt, X1 + i0 * (int64_t)p, m, X2 + j0 * (int64_t)p, nn, p, Kt, m, a));
      if constexpr (!is_float) {
        KCU_BLAS(ctx, "cublasDgemm_64",
                 gemm_xn(st->blas, CUBLAS_OP_N, m, q, nn, &one, Kt, m, V + j0, ldv,
                         j0 == 0 ? &zero : &one, out + i0, ldo));
      } else {
        KCU_BLAS(ctx, "cublasSgemm_64",
                 gemm_xn(st->blas, CUBLAS_OP_N, m, q, nn, &one, Kt, m, V + j0, ldv, &zero, P, m));
        acc_add_kernel<<<kcu_grid(st, m * (int64_t)q), KCU_NT, 0, st->stream>>>(acc, P, m * (int64_t)q,
                                                                              j0 == 0);
        KCU_LAUNCHED(ctx, "kernel_mv (accumulate launch)");
      }
    }
    if constexpr (is_float) {
      acc_store_kernel<float>
          <<<kcu_grid(st, m * (int64_t)q), KCU_NT, 0, st->stream>>>(acc, m, q, out + i0, ldo);
      KCU_LAUNCHED(ctx, "kernel_mv (store launch)");
    }
  }
  return KRR_OK;
}

/* GEMM route of kernel_mv for q <= QFUSED_MAX: per tile of T1 x T2 pairs,
 * G = -2 X1 X2^T by cuBLAS, then gemm_mv_epilogue_kernel per chunk of <= 8
 * columns of V; double sums across chunks of columns and tiles */
template <typename T, int KT>
krr_status mv_gemm_fused_kt(krr_ctx *ctx, const T *X1, int64_t n1, const T *X2, int64_t n2, int p,
                            const T *V, int64_t ldv, int q, T *out, int64_t ldo, double a) {
  krr_cuda_state *st = kcu_state(ctx);
  const int64_t T1 = n1 < 4096 ? n1 : 4096;
  int64_t T2 = ((int64_t)1 << 24) / T1;
  if (T2 > n2) T2 = n2;
  /* column chunks: >= 8 resident blocks per SM over the tile, >= 32 columns each */
  const int64_t bx = (T1 + KCU_NT - 1) / KCU_NT;
  int64_t ns = ((int64_t)st->sm_count * 8 + bx - 1) / bx;
  if (ns > (T2 + 31) / 32) ns = (T2 + 31) / 32;
  if (ns > 65535) ns = 65535;
  if (ns < 1) ns = 1;
  const int64_t chunk = (T2 + ns - 1) / ns;
  T *nv = row_norms<T>(ctx, X1, n1, X2, n2, p);
  if (!nv) return ctx->status;
  T *G = (T *)kcu_ws(ctx, KCU_WS_TILE, (size_t)T1 * (size_t)T2 * sizeof(T));
  if (!G) return ctx->status;
  double *part =
      (double *)kcu_ws(ctx, KCU_WS_SPLIT, (size_t)ns * (size_t)q * (size_t)T1 * sizeof(double));
  if (!part) return ctx->status;
  double *acc = (double *)kcu_ws(ctx, KCU_WS_ACC, (size_t)T1 * (size_t)q * sizeof(double));
  if (!acc) return ctx->status;
  const T m2 = T(-2), zero = T(0), ta = (T)a;
  for (int64_t i0 = 0; i0 < n1; i0 += T1) {
    const int64_t m = n1 - i0 < T1 ? n1 - i0 : T1;
    for (int64_t j0 = 0; j0 < n2; j0 += T2) {
      const int64_t nn = n2 - j0 < T2 ? n2 - j0 : T2;
      const int64_t nsj = (nn + chunk - 1) / chunk;
      KCU_BLAS(ctx, "cublas gemm (kernel_mv GEMM route)",
               gemm_xn(st->blas, CUBLAS_OP_T, m, nn, p, &m2, X1 + i0 * (int64_t)p, p,
                       X2 + j0 * (int64_t)p, p, &zero, G, m));
      const dim3 g((unsigned)((m + KCU_NT - 1) / KCU_NT), (unsigned)nsj);
      for (int c0 = 0; c0 < q; c0 += 8) {
        const int qc = q - c0 < 8 ? q - c0 : 8;
        const T *Vc = V + j0 + (int64_t)c0 * ldv;
        const T *Xa = X1 + i0 * (int64_t)p, *Xb = X2 + j0 * (int64_t)p;
        const T *na = nv + i0, *nb = nv + n1 + j0;
        double *pc = part, *ac = acc + (int64_t)c0 * m;
        /* one column (the usual case) or up to 8 (multi-output fits) */
        if (qc == 1)
          gemm_mv_epilogue_kernel<T, KT, 1><<<g, KCU_NT, 0, st->stream>>>(
              Xa, Xb, p, na, nb, m, nn, G, m, Vc, ldv, qc, chunk, pc, ta);
        else
          gemm_mv_epilogue_kernel<T, KT, 8><<<g, KCU_NT, 0, st->stream>>>(
              Xa, Xb, p, na, nb, m, nn, G, m, Vc, ldv, qc, chunk, pc, ta);
        KCU_LAUNCHED(ctx, "kernel_mv (GEMM route epilogue launch)");
        part_acc_kernel<<<kcu_grid(st, m * (int64_t)qc), KCU_NT, 0, st->stream>>>(pc, m, qc, nsj,
                                                                                  ac, j0 == 0);
        KCU_LAUNCHED(ctx, "kernel_mv (GEMM route sum launch)");
      }
    }
    acc_store_kernel<T>
        <<<kcu_grid(st, m * (int64_t)q), KCU_NT, 0, st->stream>>>(acc, m, q, out + i0, ldo);
    KCU_LAUNCHED(ctx, "kernel_mv (GEMM route store launch)");
  }
  return KRR_OK;
}

template <typename T>
krr_status mv_gemm_fused(krr_ctx *ctx, int kt, const T *X1, int64_t n1, const T *X2, int64_t n2,
                         int p, const T *V, int64_t ldv, int q, T *out, int64_t ldo, double a) {
  switch (kt) {
#define KCU_MVG_CASE(K, ...) \
  case KRR_##K:              \
    return mv_gemm_fused_kt<T, gemm_kt<KRR_##K>()>(ctx, X1, n1, X2, n2, p, V, ldv, q, out, ldo, a);
    KRR_KERNEL_LIST(KCU_MVG_CASE)
#undef KCU_MVG_CASE
    default: return krr_fail(ctx, KRR_ERR_INPUT, "kernel_mv: unknown kernel code %d", kt);
  }
}

template <typename T>
krr_status kernel_mv_impl(krr_ctx *ctx, const krr_kernel *k, const T *X1, int64_t n1, const T *X2,
                          int64_t n2, int p, const T *V, int64_t ldv, int q, T *out, int64_t ldo) {
  KCU_TRY(kcu_enter(ctx));
  KCU_TRY(check_args<T>(ctx, "kernel_mv", k, n1, n2, p));
  if (q < 0) return krr_fail(ctx, KRR_ERR_INPUT, "kernel_mv: q = %d < 0", q);
  if (n1 == 0 || q == 0) return KRR_OK;
  if (ldo < n1) return krr_fail(ctx, KRR_ERR_INPUT, "kernel_mv: ldo = %lld < n1 = %lld", (long long)ldo, (long long)n1);
  krr_cuda_state *st = kcu_state(ctx);
  if (n2 == 0) {
    KCU_CHECK(ctx, "cudaMemset2DAsync",
              cudaMemset2DAsync(out, (size_t)ldo * sizeof(T), 0, (size_t)n1 * sizeof(T), (size_t)q, st->stream));
    return KRR_OK;
  }
  if (ldv < n2) return krr_fail(ctx, KRR_ERR_INPUT, "kernel_mv: ldv = %lld < n2 = %lld", (long long)ldv, (long long)n2);
  if (!X1 || !X2 || !V || !out) return krr_fail(ctx, KRR_ERR_INPUT, "kernel_mv: NULL array");
  const krr_kparams kp = krr_kparams_make(k);
  if (q > QFUSED_MAX) return mv_via_gemm<T>(ctx, kp.type, X1, n1, X2, n2, p, V, ldv, q, out, ldo, kp.a);
  if (use_gemm_route<T>(ctx, kp.type, p))
    return mv_gemm_fused<T>(ctx, kp.type, X1, n1, X2, n2, p, V, ldv, q, out, ldo, kp.a);
  for (int c0 = 0; c0 < q; c0 += 8) {
    const int qc = q - c0 < 8 ? q - c0 : 8;
    KCU_TRY(launch_mv<T>(ctx, kp.type, X1, n1, X2, n2, p, V + (int64_t)c0 * ldv, ldv, qc,
                         out + (int64_t)c0 * ldo, ldo, kp.a));
  }
  return KRR_OK;
}

template <typename T>
krr_status kernel_block_impl(krr_ctx *ctx, const krr_kernel *k, const T *X1, int64_t n1,
                             const T *X2, int64_t n2, int p, T *out, int64_t ldo) {
  KCU_TRY(kcu_enter(ctx));
  KCU_TRY(check_args<T>(ctx, "kernel_block", k, n1, n2, p));
  if (n1 == 0 || n2 == 0) return KRR_OK;
  if (ldo < n1) return krr_fail(ctx, KRR_ERR_INPUT, "kernel_block: ldo = %lld < n1 = %lld", (long long)ldo, (long long)n1);
  if (!X1 || !X2 || !out) return krr_fail(ctx, KRR_ERR_INPUT, "kernel_block: NULL array");
  const krr_kparams kp = krr_kparams_make(k);
  return launch_block<T>(ctx, kp.type, X1, n1, X2, n2, p, out, ldo, kp.a);
}

} /* namespace */

krr_status krr_cuda_kernel_mv_s(krr_ctx *ctx, const krr_kernel *k, const float *X1, int64_t n1,
                                const float *X2, int64_t n2, int p, const float *V, int64_t ldv,
                                int q, float *out, int64_t ldo) {
  return kernel_mv_impl<float>(ctx, k, X1, n1, X2, n2, p, V, ldv, q, out, ldo);
}
krr_status krr_cuda_kernel_mv_d(krr_ctx *ctx, const krr_kernel *k, const double *X1, int64_t n1,
                                const double *X2, int64_t n2, int p, const double *V,
                                int64_t ldv, int q, double *out, int64_t ldo) {
  return kernel_mv_impl<double>(ctx, k, X1, n1, X2, n2, p, V, ldv, q, out, ldo);
}
krr_status krr_cuda_kernel_block_s(krr_ctx *ctx, const krr_kernel *k, const float *X1,
                                   int64_t n1, const float *X2, int64_t n2, int p, float *out,
                                   int64_t ldo) {
  return kernel_block_impl<float>(ctx, k, X1, n1, X2, n2, p, out, ldo);
}
krr_status krr_cuda_kernel_block_d(krr_ctx *ctx, const krr_kernel *k, const double *X1,
                                   int64_t n1, const double *X2, int64_t n2, int p, double *out,
                                   int64_t ldo) {
  return kernel_block_impl<double>(ctx, k, X1, n1, X2, n2, p, out, ldo);
}
