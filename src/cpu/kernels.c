/* CPU kernel primitives: kernel_mv (matrix-free K(X1, X2) V) and kernel_block
 * (materialised K(X1, X2)) for the five kernels, float and double.
 *
 * Layout: X1 (n1 x p), X2 (n2 x p) row-major; V, OUT column-major with
 * leading dimensions.  Work is split in tiles of KRR_TI (KRR_TI_GEMM on the
 * GEMM path, KRR_TI_FUSED on the direct path with one right-hand side) rows
 * of X1 by KRR_TJ points of X2.  A work item is a tile of whole output rows
 * (or, when there are few row tiles, one of G fixed column groups of it,
 * whose partial sums are reduced in a fixed order afterwards); each item is
 * computed whole by one thread and written to its own place, so which thread
 * takes which item (dynamic schedule) does not change a bit.  The team size
 * and G come from krr_cpu_team (cpu.h), which depends only on the sizes and
 * ctx->threads: results are bitwise reproducible for a given `threads`
 * setting, problem and instruction set.  Scratch is per thread and
 * tile-sized: nothing n1 x n2.
 *
 * Paths (the math is in kernels_t.c.inc, written once for REAL = float and
 * double):
 *   - p <= KRR_P_DIRECT, or the Laplace kernel (L1 distance): distances from
 *     direct differences, register-blocked 4 rows x 2 vectors over a packed,
 *     transposed X2 tile, kernel function applied in registers (vector exp).
 *     From KRR_P_NORM on, the squared-L2 kernels take the same tiles in the
 *     norm form |a'|^2 + |b'|^2 - 2 a'.b' of points centred on the tile's X1
 *     rows (one multiply-add per coordinate instead of two operations), with
 *     the direct differences wherever that form may have cancelled.
 *   - p > KRR_P_DIRECT, squared-L2 kernels: cross products from a BLAS GEMM
 *     per tile (BLAS pinned to one thread inside our OpenMP region via
 *     krr_cpu_blas_threads(1), restored to ctx->threads afterwards), then
 *     t = max(0, |a|^2 + |b|^2 - 2 a.b); entries where cancellation is severe
 *     (t <= KRR_TAU (|a|^2 + |b|^2)) are recomputed from direct differences
 *     in double, which makes K(x, x) exactly 1 and near pairs accurate.
 *     Measured accuracy vs krr_kernel_eval on direct double distances: see
 *     driver/test_kernels.c (double: a few 1e-15 relative per entry).
 *   - q <= KRR_Q_DOT right-hand sides: vector dot products of the kernel tile
 *     with V; q > KRR_Q_DOT: one GEMM per tile (single-threaded BLAS).
 *   - Summation: every output entry accumulates across tiles in double.
 *     Inside one tile (<= KRR_TJ terms) the float version sums in float
 *     vector lanes (dot path) or a float SGEMM (q > KRR_Q_DOT) and adds the
 *     tile total in double.
 *
 * Instruction sets: on x86-64 with GCC/clang the template is compiled three
 * times (AVX-512F, AVX2+FMA, baseline SSE2) with `#pragma GCC target` and the
 * variant is picked at run time with __builtin_cpu_supports.  Elsewhere one
 * portable variant (GCC vector extensions, 16-byte vectors) is built; a plain
 * scalar fallback serves compilers without vector extensions.  The
 * environment variable ASKOTCH_CPU_ISA = avx512 | avx2 | generic caps the
 * choice (used by tests and benchmarks).  No -march flags are needed.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include "cpu.h"
#include "../core/kcomp_math.h"

#ifndef KRR_P_DIRECT
#define KRR_P_DIRECT 32 /* direct path (differences or tile_norm_t) up to this p */
#endif
#define KRR_TI 64       /* X1 rows per tile (direct path) */
#ifndef KRR_TI_FUSED
#define KRR_TI_FUSED 256 /* X1 rows per work item (direct path, q = 1: one pack per X2 tile) */
#endif
#ifndef KRR_TI_GEMM
#define KRR_TI_GEMM 256 /* X1 rows per tile (GEMM path) */
#endif
#ifndef KRR_TJ
#define KRR_TJ 512      /* X2 points per tile (direct path); a multiple of 32 */
#endif
#ifndef KRR_TJ_GEMM
#define KRR_TJ_GEMM 512 /* X2 points per tile (GEMM path) */
#endif
/* up to this many right-hand sides without BLAS (GEMM path, large p):
 * up to there tile_dot's four-column register blocks are as fast as a BLAS
 * call per tile, without its per-call overhead */
#define KRR_Q_DOT 16
/* up to this many right-hand sides the direct path (p <= KRR_P_DIRECT) fuses
 * the products into the kernel evaluation (kernels_t.c.inc, tile_direct_t and
 * tile_norm_t):
 * no kernel tile is stored, and the kernel values are used while they are in
 * registers, which is faster than a stored tile times the columns (times in
 * inst/bench/RESULTS.md, "Kernel product throughput") */
#define KRR_Q_FUSED 16
/* kernel_mv splits the columns of a product with fewer row tiles than this
 * into groups, so that it has about this many work items for the threads;
 * the groups' double partial sums take at most KRR_MV_PART_BYTES */
#define KRR_MV_ITEMS 128
#define KRR_MV_PART_BYTES ((int64_t)64 << 20)
/* kernel_gram: a stripe of X1 rows against all of X2 takes about this many
 * bytes (4 to 64 rows), so that it stays in L2 between its two products;
 * the stripes are summed in this many groups */
#define KRR_GRAM_STRIPE_BYTES (1 << 20)
#define KRR_GRAM_GROUPS 16
#define KRR_TAU 0.015625 /* recompute t directly when t <= TAU (|a|^2+|b|^2) */
/* the squared-L2 kernels take their distances in the norm form (kernels_t.c.inc,
 * tile_norm_t: p multiply-adds a pair instead of 2p operations) from this p
 * on, on tiles of at least KRR_NORM_ROWS rows of A; its scratch in REALs
 * (FN(normws)): A's mean, rows and norms, then B shifted and its norms */
#ifndef KRR_P_NORM
#define KRR_P_NORM 10
#endif
#define KRR_NORM_ROWS 16
#define KRR_NORM_WS(p) \
  (KRR_P_DIRECT + (size_t)((p) + 2) * KRR_TJ + (size_t)((p) + 1) * KRR_TI_FUSED)
_Static_assert(KRR_TI <= KRR_TI_FUSED && 64 <= KRR_TI_FUSED,
               "KRR_NORM_WS: tiles have at most KRR_TI_FUSED rows");

#if defined(__GNUC__)
#define KRR_HAVE_VEC 1
#if defined(__x86_64__)
#define KRR_X86_DISPATCH 1
#include <immintrin.h>
#endif
#endif

#ifdef KRR_HAVE_VEC

#ifdef KRR_X86_DISPATCH
/* ---- AVX-512F ---- */
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#define ISA avx512
#define VBYTES 64
#define REAL float
#define IREAL int32_t
#define SFX s
#define IS_FLOAT 1
#define KRR_VSQRT(v) ((__typeof__(v))_mm512_sqrt_ps((__m512)(v)))
#define KRR_VMAX(a, b) ((__typeof__(a))_mm512_max_ps((__m512)(a), (__m512)(b)))
#define KRR_VMIN(a, b) ((__typeof__(a))_mm512_min_ps((__m512)(a), (__m512)(b)))
#define KRR_VANY_LE(a, b) (_mm512_cmp_ps_mask((__m512)(a), (__m512)(b), _CMP_LE_OQ) != 0)
#define KRR_VROUND(v) \
  ((__typeof__(v))_mm512_roundscale_ps((__m512)(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
#define KRR_VSCALEF_GE(y, n, x, lo)       \
  ((__typeof__(y))_mm512_maskz_scalef_ps( \
      _mm512_cmp_ps_mask((__m512)(x), _mm512_set1_ps(lo), _CMP_GE_OQ), (__m512)(y), (__m512)(n)))
#include "kernels_t.c.inc"
#undef REAL
#undef IREAL
#undef SFX
#undef IS_FLOAT
#undef KRR_VSQRT
#undef KRR_VMAX
#undef KRR_VMIN
#undef KRR_VANY_LE
#undef KRR_VROUND
#undef KRR_VSCALEF_GE
#define REAL double
#define IREAL int64_t
#define SFX d
#define IS_FLOAT 0
#define KRR_VSQRT(v) ((__typeof__(v))_mm512_sqrt_pd((__m512d)(v)))
#define KRR_VMAX(a, b) ((__typeof__(a))_mm512_max_pd((__m512d)(a), (__m512d)(b)))
#define KRR_VMIN(a, b) ((__typeof__(a))_mm512_min_pd((__m512d)(a), (__m512d)(b)))
#define KRR_VANY_LE(a, b) (_mm512_cmp_pd_mask((__m512d)(a), (__m512d)(b), _CMP_LE_OQ) != 0)
#define KRR_VROUND(v) \
  ((__typeof__(v))_mm512_roundscale_pd((__m512d)(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
#define KRR_VSCALEF_GE(y, n, x, lo)                                                   \
  ((__typeof__(y))_mm512_maskz_scalef_pd(                                             \
      _mm512_cmp_pd_mask((__m512d)(x), _mm512_set1_pd(lo), _CMP_GE_OQ), (__m512d)(y), \
      (__m512d)(n)))
#include "kernels_t.c.inc"
#undef REAL
#undef IREAL
#undef SFX
#undef IS_FLOAT
#undef KRR_VSQRT
#undef KRR_VMAX
#undef KRR_VMIN
#undef KRR_VANY_LE
#undef KRR_VROUND
#undef KRR_VSCALEF_GE
#undef ISA
#undef VBYTES
#pragma GCC pop_options

/* ---- AVX2 + FMA ---- */
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define ISA avx2
#define VBYTES 32
#define REAL float
#define IREAL int32_t
#define SFX s
#define IS_FLOAT 1
#define KRR_VSQRT(v) ((__typeof__(v))_mm256_sqrt_ps((__m256)(v)))
#define KRR_VMAX(a, b) ((__typeof__(a))_mm256_max_ps((__m256)(a), (__m256)(b)))
#define KRR_VMIN(a, b) ((__typeof__(a))_mm256_min_ps((__m256)(a), (__m256)(b)))
#define KRR_VANY_LE(a, b) \
  (_mm256_movemask_ps(_mm256_cmp_ps((__m256)(a), (__m256)(b), _CMP_LE_OQ)) != 0)
#include "kernels_t.c.inc"
#undef REAL
#undef IREAL
#undef SFX
#undef IS_FLOAT
#undef KRR_VSQRT
#undef KRR_VMAX
#undef KRR_VMIN
#undef KRR_VANY_LE
#define REAL double
#define IREAL int64_t
#define SFX d
#define IS_FLOAT 0
#define KRR_VSQRT(v) ((__typeof__(v))_mm256_sqrt_pd((__m256d)(v)))
#define KRR_VMAX(a, b) ((__typeof__(a))_mm256_max_pd((__m256d)(a), (__m256d)(b)))
#define KRR_VMIN(a, b) ((__typeof__(a))_mm256_min_pd((__m256d)(a), (__m256d)(b)))
#define KRR_VANY_LE(a, b) \
  (_mm256_movemask_pd(_mm256_cmp_pd((__m256d)(a), (__m256d)(b), _CMP_LE_OQ)) != 0)
#include "kernels_t.c.inc"
#undef REAL
#undef IREAL
#undef SFX
#undef IS_FLOAT
#undef KRR_VSQRT
#undef KRR_VMAX
#undef KRR_VMIN
#undef KRR_VANY_LE
#undef ISA
#undef VBYTES
#pragma GCC pop_options
#endif /* KRR_X86_DISPATCH */

/* ---- portable (baseline) ---- */
#define ISA gen
#define VBYTES 16
#ifdef KRR_X86_DISPATCH
#define KRR_VSQRT_S(v) ((__typeof__(v))_mm_sqrt_ps((__m128)(v)))
#define KRR_VSQRT_D(v) ((__typeof__(v))_mm_sqrt_pd((__m128d)(v)))
#else
static inline void krr_lane_sqrt_s(float *x, int n) {
  for (int l = 0; l < n; l++) x[l] = sqrtf(x[l]);
}
static inline void krr_lane_sqrt_d(double *x, int n) {
  for (int l = 0; l < n; l++) x[l] = sqrt(x[l]);
}
#define KRR_VSQRT_S(v) \
  __extension__({ __typeof__(v) w_ = (v); krr_lane_sqrt_s((float *)&w_, (int)(sizeof w_ / 4)); w_; })
#define KRR_VSQRT_D(v) \
  __extension__({ __typeof__(v) w_ = (v); krr_lane_sqrt_d((double *)&w_, (int)(sizeof w_ / 8)); w_; })
#endif
#define REAL float
#define IREAL int32_t
#define SFX s
#define IS_FLOAT 1
#define KRR_VSQRT(v) KRR_VSQRT_S(v)
#include "kernels_t.c.inc"
#undef REAL
#undef IREAL
#undef SFX
#undef IS_FLOAT
#undef KRR_VSQRT
#undef KRR_VMAX
#undef KRR_VMIN
#undef KRR_VANY_LE
#define REAL double
#define IREAL int64_t
#define SFX d
#define IS_FLOAT 0
#define KRR_VSQRT(v) KRR_VSQRT_D(v)
#include "kernels_t.c.inc"
#undef REAL
#undef IREAL
#undef SFX
#undef IS_FLOAT
#undef KRR_VSQRT
#undef KRR_VMAX
#undef KRR_VMIN
#undef KRR_VANY_LE
#undef ISA
#undef VBYTES

#else /* !KRR_HAVE_VEC: scalar fallback, written once for both precisions */

#define KRR_SCALAR_T(REAL, SFX)                                                              \
  static double krr_ks_t_##SFX(const REAL *x, const REAL *y, int p, int l1) {                \
    double t = 0;                                                                            \
    for (int k = 0; k < p; k++) {                                                            \
      double d = (double)x[k] - (double)y[k];                                                \
      t += l1 ? fabs(d) : d * d;                                                             \
    }                                                                                        \
    return t;                                                                                \
  }                                                                                          \
  static krr_status krr_k_gen_##SFX##_mv(krr_ctx *ctx, const krr_kernel *k, const REAL *X1,  \
                                         int64_t n1, const REAL *X2, int64_t n2, int p,      \
                                         const REAL *V, int64_t ldv, int q, REAL *out,       \
                                         int64_t ldo) {                                      \
    krr_kparams kp = krr_kparams_make(k);                                                    \
    int l1 = krr_kernel_is_l1(kp.type);                                                      \
    int nth = krr_cpu_team(ctx, krr_cpu_work_kernel(n1, n2, p, q));                           \
    _Pragma("omp parallel for schedule(static) num_threads(nth)")                            \
    for (int64_t i = 0; i < n1; i++) {                                                       \
      for (int c = 0; c < q; c++) {                                                          \
        double s = 0;                                                                        \
        for (int64_t j = 0; j < n2; j++)                                                     \
          s += krr_kernel_eval(kp, krr_ks_t_##SFX(X1 + i * p, X2 + j * p, p, l1)) *          \
               (double)V[c * ldv + j];                                                       \
        out[c * ldo + i] = (REAL)s;                                                          \
      }                                                                                      \
    }                                                                                        \
    return KRR_OK;                                                                           \
  }                                                                                          \
  static krr_status krr_k_gen_##SFX##_block(krr_ctx *ctx, const krr_kernel *k,               \
                                            const REAL *X1, int64_t n1, const REAL *X2,      \
                                            int64_t n2, int p, REAL *out, int64_t ldo) {     \
    krr_kparams kp = krr_kparams_make(k);                                                    \
    int l1 = krr_kernel_is_l1(kp.type);                                                      \
    int nth = krr_cpu_team(ctx, krr_cpu_work_kernel(n1, n2, p, 0));                           \
    _Pragma("omp parallel for schedule(static) num_threads(nth)")                            \
    for (int64_t j = 0; j < n2; j++)                                                         \
      for (int64_t i = 0; i < n1; i++)                                                       \
        out[j * ldo + i] = (REAL)krr_kernel_eval(kp, krr_ks_t_##SFX(X1 + i * p, X2 + j * p,  \
                                                                    p, l1));                 \
    return KRR_OK;                                                                           \
  }
KRR_SCALAR_T(float, s)
KRR_SCALAR_T(double, d)

/* products of components: every pair's components by krr_kc_eval */
#define KRR_SCALAR_P(REAL, SFX)                                                                    \
  static double krr_kp_pair_##SFX(const krr_kprod *pr, const REAL *x, const REAL *y) {             \
    double v = 1;                                                                                  \
    for (int e = 0; e < pr->ncomp; e++) {                                                          \
      const int k0 = pr->off[e], kind = krr_kc_stat_kind(&pr->comp[e]);                            \
      v *= krr_kc_eval(&pr->comp[e],                                                               \
                       krr_kc_stat_##SFX(kind, x + k0, 1, y + k0, 1, pr->off[e + 1] - k0), -1);    \
    }                                                                                              \
    return v;                                                                                      \
  }                                                                                                \
  static krr_status krr_k_gen_##SFX##_kprod_mv(                                                    \
      krr_ctx *ctx, const krr_kprod *pr, const REAL *X1, int64_t n1, const REAL *X2, int64_t n2,   \
      int p, const REAL *V, int64_t ldv, int q, REAL *out, int64_t ldo) {                          \
    int nth = krr_cpu_team(ctx, krr_cpu_work_kernel(n1, n2, p, q));                                \
    _Pragma("omp parallel for schedule(static) num_threads(nth)") for (int64_t i = 0; i < n1;      \
                                                                       i++) for (int c = 0; c < q; \
                                                                                 c++) {            \
      double s = 0;                                                                                \
      for (int64_t j = 0; j < n2; j++)                                                             \
        s += krr_kp_pair_##SFX(pr, X1 + i * p, X2 + j * p) * (double)V[c * ldv + j];               \
      out[c * ldo + i] = (REAL)s;                                                                  \
    }                                                                                              \
    return KRR_OK;                                                                                 \
  }                                                                                                \
  static krr_status krr_k_gen_##SFX##_kprod_block(krr_ctx *ctx, const krr_kprod *pr,               \
                                                  const REAL *X1, int64_t n1, const REAL *X2,      \
                                                  int64_t n2, int p, REAL *out, int64_t ldo) {     \
    int nth = krr_cpu_team(ctx, krr_cpu_work_kernel(n1, n2, p, 0));                                \
    _Pragma("omp parallel for schedule(static) num_threads(nth)") for (int64_t j = 0; j < n2;      \
                                                                       j++) for (int64_t i = 0;    \
                                                                                 i < n1; i++)      \
        out[j * ldo + i] = (REAL)krr_kp_pair_##SFX(pr, X1 + i * p, X2 + j * p);                    \
    return KRR_OK;                                                                                 \
  }
KRR_SCALAR_P(float, s)
KRR_SCALAR_P(double, d)
#endif

#ifdef KRR_X86_DISPATCH
/* 2 = AVX-512F, 1 = AVX2+FMA, 0 = baseline */
static int krr_cpu_isa(void) {
  int isa = 0;
#ifdef KRR_X86_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) isa = 2;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isa = 1;
  const char *cap = getenv("ASKOTCH_CPU_ISA");
  if (cap) {
    int c = strcmp(cap, "avx512") == 0 ? 2 : strcmp(cap, "avx2") == 0 ? 1 : 0;
    if (c < isa) isa = c;
  }
#endif
  return isa;
}
#endif

static krr_status krr_kcheck(krr_ctx *ctx, const krr_kernel *k, int64_t n1, int64_t n2, int p,
                             int64_t ldo, const char *what) {
  if (!k) return krr_fail(ctx, KRR_ERR_INPUT, "%s: kernel is NULL", what);
  if (!KRR_KERNEL_LISTED((int)k->type))
    return krr_fail(ctx, KRR_ERR_INPUT, "%s: unknown kernel code %d", what, (int)k->type);
  if (!(k->bandwidth > 0))
    return krr_fail(ctx, KRR_ERR_INPUT, "%s: invalid kernel bandwidth %g", what, k->bandwidth);
  if (n1 < 0 || n2 < 0 || p < 1 || ldo < n1)
    return krr_fail(ctx, KRR_ERR_INPUT, "%s: invalid sizes n1=%lld n2=%lld p=%d ldo=%lld", what,
                    (long long)n1, (long long)n2, p, (long long)ldo);
  return KRR_OK;
}

/* the products the fused tiles serve: listed (on great-circle distances
 * too: L2 kernels on two columns), periodic, linear and polynomial
 * components on consecutive column ranges */
static krr_status krr_kpcheck(krr_ctx *ctx, const krr_kprod *pr, int64_t n1, int64_t n2, int p,
                              int64_t ldo, const char *what) {
  if (!pr || pr->ncomp < 1 || pr->ncomp > KRR_KS_MAXC || pr->off[0] != 0 || pr->off[pr->ncomp] != p)
    return krr_fail(ctx, KRR_ERR_INPUT, "%s: a product needs 1 to 8 components on p columns", what);
  for (int e = 0; e < pr->ncomp; e++) {
    const krr_kcomp *c = &pr->comp[e];
    const int f = c->family;
    const int gc_ok = c->metric == 1 && f == KRR_KF_LISTED && KRR_KERNEL_LISTED(c->base) &&
                      !krr_kernel_is_l1(c->base) && pr->off[e + 1] - pr->off[e] == 2;
    if (pr->off[e + 1] <= pr->off[e] || (c->metric != 0 && !gc_ok) ||
        !(f == KRR_KF_LISTED || f == KRR_KF_PERIODIC || f == KRR_KF_LINEAR || f == KRR_KF_POLY))
      return krr_fail(ctx, KRR_ERR_INPUT, "%s: component %d is not served by the fused product",
                      what, e);
    if (f == KRR_KF_LISTED && (!KRR_KERNEL_LISTED(c->base) || !(c->bw > 0)))
      return krr_fail(ctx, KRR_ERR_INPUT, "%s: component %d: bad kernel", what, e);
    if (f == KRR_KF_PERIODIC && !(c->bw > 0 && c->par[0] > 0))
      return krr_fail(ctx, KRR_ERR_INPUT, "%s: component %d: bad periodic kernel", what, e);
    if (f == KRR_KF_POLY && !(c->par[0] >= 1 && c->par[0] <= 20 && c->par[0] == floor(c->par[0])))
      return krr_fail(ctx, KRR_ERR_INPUT, "%s: component %d: bad polynomial degree", what, e);
  }
  if (n1 < 0 || n2 < 0 || ldo < n1)
    return krr_fail(ctx, KRR_ERR_INPUT, "%s: invalid sizes n1=%lld n2=%lld ldo=%lld", what,
                    (long long)n1, (long long)n2, (long long)ldo);
  return KRR_OK;
}

#ifdef KRR_X86_DISPATCH
#define KRR_DISPATCH(SFX, op, ...)                                                \
  switch (krr_cpu_isa()) {                                                        \
    case 2: return krr_k_avx512_##SFX##_##op(__VA_ARGS__);                       \
    case 1: return krr_k_avx2_##SFX##_##op(__VA_ARGS__);                         \
    default: return krr_k_gen_##SFX##_##op(__VA_ARGS__);                         \
  }
#elif defined(KRR_HAVE_VEC)
#define KRR_DISPATCH(SFX, op, ...) return krr_k_gen_##SFX##_##op(__VA_ARGS__);
#else
#define KRR_DISPATCH(SFX, op, ...) return krr_k_gen_##SFX##_##op(__VA_ARGS__);
#endif

/* the right-hand sides checked; nothing to do for n1 = 0 or q = 0; OUT = 0
 * for n2 = 0 */
#define KRR_MV_EDGES(what)                                                                     \
  if (q < 0 || (q > 0 && ldv < n2))                                                            \
    return krr_fail(ctx, KRR_ERR_INPUT, what ": invalid q=%d or ldv=%lld", q, (long long)ldv); \
  if (n1 == 0 || q == 0) return KRR_OK;                                                        \
  if (n2 == 0) {                                                                               \
    for (int c = 0; c < q; c++)                                                                \
      for (int64_t i = 0; i < n1; i++) out[c * ldo + i] = 0;                                   \
    return KRR_OK;                                                                             \
  }

#define KRR_PUBLIC(REAL, SFX)                                                                      \
  krr_status krr_cpu_kernel_mv_##SFX(krr_ctx *ctx, const krr_kernel *k, const REAL *X1,            \
                                     int64_t n1, const REAL *X2, int64_t n2, int p, const REAL *V, \
                                     int64_t ldv, int q, REAL *out, int64_t ldo) {                 \
    krr_status st = krr_kcheck(ctx, k, n1, n2, p, ldo, "kernel_mv");                               \
    if (st != KRR_OK) return st;                                                                   \
    KRR_MV_EDGES("kernel_mv")                                                                      \
    KRR_DISPATCH(SFX, mv, ctx, k, X1, n1, X2, n2, p, V, ldv, q, out, ldo)                          \
  }                                                                                                \
  krr_status krr_cpu_kernel_block_##SFX(krr_ctx *ctx, const krr_kernel *k, const REAL *X1,         \
                                        int64_t n1, const REAL *X2, int64_t n2, int p, REAL *out,  \
                                        int64_t ldo) {                                             \
    krr_status st = krr_kcheck(ctx, k, n1, n2, p, ldo, "kernel_block");                            \
    if (st != KRR_OK) return st;                                                                   \
    if (n1 == 0 || n2 == 0) return KRR_OK;                                                         \
    KRR_DISPATCH(SFX, block, ctx, k, X1, n1, X2, n2, p, out, ldo)                                  \
  }                                                                                                \
  krr_status krr_cpu_kernel_gram_##SFX(krr_ctx *ctx, const krr_kernel *k, const REAL *X1,          \
                                       int64_t n1, const REAL *X2, int64_t n2, int p,              \
                                       const REAL *V, int64_t ldv, int q, double *acc) {           \
    krr_status st = krr_kcheck(ctx, k, n2, n1, p, n2, "kernel_gram");                              \
    if (st != KRR_OK) return st;                                                                   \
    if (q < 0 || (q > 0 && ldv < n2))                                                              \
      return krr_fail(ctx, KRR_ERR_INPUT, "kernel_gram: invalid q=%d or ldv=%lld", q,              \
                      (long long)ldv);                                                             \
    if (n1 == 0 || n2 == 0 || q == 0) return KRR_OK;                                               \
    KRR_DISPATCH(SFX, gram, ctx, k, X1, n1, X2, n2, p, V, ldv, q, acc)                             \
  }                                                                                                \
  krr_status krr_cpu_kprod_mv_##SFX(krr_ctx *ctx, const krr_kprod *pr, const REAL *X1, int64_t n1, \
                                    const REAL *X2, int64_t n2, int p, const REAL *V, int64_t ldv, \
                                    int q, REAL *out, int64_t ldo) {                               \
    krr_status st = krr_kpcheck(ctx, pr, n1, n2, p, ldo, "kprod_mv");                              \
    if (st != KRR_OK) return st;                                                                   \
    KRR_MV_EDGES("kprod_mv")                                                                       \
    KRR_DISPATCH(SFX, kprod_mv, ctx, pr, X1, n1, X2, n2, p, V, ldv, q, out, ldo)                   \
  }                                                                                                \
  krr_status krr_cpu_kprod_block_##SFX(krr_ctx *ctx, const krr_kprod *pr, const REAL *X1,          \
                                       int64_t n1, const REAL *X2, int64_t n2, int p, REAL *out,   \
                                       int64_t ldo) {                                              \
    krr_status st = krr_kpcheck(ctx, pr, n1, n2, p, ldo, "kprod_block");                           \
    if (st != KRR_OK) return st;                                                                   \
    if (n1 == 0 || n2 == 0) return KRR_OK;                                                         \
    KRR_DISPATCH(SFX, kprod_block, ctx, pr, X1, n1, X2, n2, p, out, ldo)                           \
  }
KRR_PUBLIC(double, d)
KRR_PUBLIC(float, s)
