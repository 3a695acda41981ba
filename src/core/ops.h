/* The krr_ops table: the seam between the algorithms (src/core) and a device
 * (src/cpu, src/cuda).  Solvers call only these.  A new device is a new table.
 *
 * Conventions
 *  - Every pointer named X* is a device array of points, n x p ROW-major
 *    (point-contiguous).  Every other matrix is COLUMN-major with a leading
 *    dimension.  Index arrays (idx) are device int64_t arrays.
 *  - "real" is float for the *_s entries and double for the *_d entries;
 *    scalars are passed as double.  Reductions (dot, nrm2) accumulate in
 *    double in both precisions.
 *  - Every entry returns KRR_OK or an error status after krr_fail(ctx, ...).
 *  - Work is ordered on the context's stream; download() and the reductions
 *    synchronise.  Nothing here prints, exits or longjmps.
 */
#ifndef KRR_OPS_H
#define KRR_OPS_H

#include "krr.h"

#ifdef __cplusplus
extern "C" {
#endif

struct krr_ddot; /* kderiv_math.h */

/* Random Fourier features (op/features.c), kept apart from KRR_OPS_TYPED:
 * Z(n x M, ld ldz) <- scale * cos(Z + c_j) in column j, where Z holds the
 * products X W^T of n points with the M frequencies and c (device, M) the
 * phases.  Elementwise, in the precision of real. */
#define KRR_OPS_FEATURES_TYPED(real, S)                                                 \
  krr_status (*rff_map_##S)(krr_ctx *, int64_t n, int64_t M, const real *c, double scale, \
                            real *Z, int64_t ldz);

/* Composite-kernel components (data/kcomp.c), kept apart from KRR_OPS_TYPED:
 * OUT(n1 x n2, ld ldo) = k_c(X1_i, X2_j) for the component c (kcomp_math.h:
 * krr_kc_stat_kind and krr_kc_eval, in double arithmetic), the points
 * holding exactly the component's p columns; with pairs = 1, out[i] =
 * k_c(X1_i, X2_i) for i < n1 (n2 = n1, ldo ignored). */
/* kprod_mv: OUT(n1 x q, ld ldo) = K(X1, X2) V and kprod_block: OUT(n1 x n2,
 * ld ldo) = K(X1, X2) for the product K = prod_c k_c of a term's components
 * (krr_kprod; the points n x p with p = off[ncomp]), the kernel formed in
 * registers as kernel_mv forms a listed kernel (the statistics summed in
 * real).  Only the families data/kcomp.c hands them: listed, periodic,
 * linear and polynomial components on Euclidean (L1) distances, and listed
 * L2 kernels on great-circle distances (two columns: lon, lat).  NULL in a
 * backend without them: data/kcomp.c then forms the term in tiles. */
#define KRR_OPS_KCOMP_TYPED(real, S)                                                               \
  krr_status (*kcomp_map_##S)(krr_ctx *, const krr_kcomp *c, const real *X1, int64_t n1,           \
                              const real *X2, int64_t n2, int p, int pairs, real *out,             \
                              int64_t ldo);                                                        \
  krr_status (*kprod_mv_##S)(krr_ctx *, const krr_kprod *k, const real *X1, int64_t n1,            \
                             const real *X2, int64_t n2, int p, const real *V, int64_t ldv, int q, \
                             real *out, int64_t ldo);                                              \
  krr_status (*kprod_block_##S)(krr_ctx *, const krr_kprod *k, const real *X1, int64_t n1,         \
                                const real *X2, int64_t n2, int p, real *out, int64_t ldo);

/* The losses the device maps know (the order of the table in loss/loss.c
 * need not match: each loss entry carries its code). */
typedef enum {
  KRR_LOSS_SQUARED = 0,
  KRR_LOSS_HUBER = 1,
  KRR_LOSS_SVR = 2,
  KRR_LOSS_HINGE = 3,
  KRR_LOSS_SQUARED_HINGE = 4,
  KRR_LOSS_LOGISTIC = 5
} krr_loss_code;

/* What loss_map computes per element (formulas: loss_math.h).  y, a: the
 * inputs, out: input (o) and output.  f_i(a) = xi*_{y_i}(-lambda a)/lambda.
 *   GRAD    out = f_i'(a)                CURV   out = f_i''(a) (logistic: capped)
 *   LOSS    out = xi_y(a) (a = F)        CONJ   out = xi*_y(-lambda a) (+INF off the box)
 *   DF      out = f_i(a + o) - f_i(a)    PSEUDO out = least-norm subgradient from o = g
 *   LO, HI  out = the trust-region box of a given the pseudo-gradient o (SVR: the orthant)
 *   PROJECT out = o clamped into the box of y
 * generic (loss ignored):
 *   CLAMP   out = min(max(o, y), a)      MUL    out = a * o
 *   FREE    out = 1 unless the variable is held at a bound (y = lo - a_B, a = hi - a_B,
 *           o = gradient), then 0
 *   ONES    out = 1 */
typedef enum {
  KRR_MAP_GRAD = 0, KRR_MAP_CURV = 1, KRR_MAP_LOSS = 2, KRR_MAP_CONJ = 3, KRR_MAP_DF = 4,
  KRR_MAP_PSEUDO = 5, KRR_MAP_LO = 6, KRR_MAP_HI = 7, KRR_MAP_PROJECT = 8,
  KRR_MAP_CLAMP = 9, KRR_MAP_MUL = 10, KRR_MAP_FREE = 11, KRR_MAP_ONES = 12
} krr_map_kind;

#define KRR_OPS_TYPED(real, S)                                                                     \
  /* OUT(n1 x q, ld ldo) = K(X1, X2) V(n2 x q, ld ldv): matrix-free, tiled, never  \
     storing n1 x n2.  OUT is overwritten. */               \
  krr_status (*kernel_mv_##S)(krr_ctx *, const krr_kernel *, const real *X1, int64_t n1,           \
                              const real *X2, int64_t n2, int p, const real *V, int64_t ldv,       \
                              int q, real *out, int64_t ldo);                                      \
  /* OUT(n1 x n2, ld ldo) = K(X1, X2), materialised. */                                            \
  krr_status (*kernel_block_##S)(krr_ctx *, const krr_kernel *, const real *X1, int64_t n1,        \
                                 const real *X2, int64_t n2, int p, real *out, int64_t ldo);       \
  /* optional (NULL: Falkon makes two kernel_mv products): ACC(n2 x q, ld n2,         \
     double) += K(X2, X1) K(X1, X2) V(n2 x q, ld ldv), each kernel pair once */            \
  krr_status (*kernel_gram_##S)(krr_ctx *, const krr_kernel *, const real *X1, int64_t n1,         \
                                const real *X2, int64_t n2, int p, const real *V, int64_t ldv,     \
                                int q, double *acc);                                               \
  /* dst(b x p, row-major) = X[idx, ] */                                                           \
  krr_status (*gather_points_##S)(krr_ctx *, const real *X, int p, const int64_t *idx, int64_t b,  \
                                  real *dst);                                                      \
  /* dst(b x m, ld ldd) = src[idx, ] (src ld lds) */                                               \
  krr_status (*gather_rows_##S)(krr_ctx *, const real *src, int64_t lds, int m,                    \
                                const int64_t *idx, int64_t b, real *dst, int64_t ldd);            \
  /* dst[idx, ] += alpha * src(b x m); idx distinct */                                             \
  krr_status (*scatter_axpy_##S)(krr_ctx *, double alpha, const real *src, int64_t lds, int m,     \
                                 const int64_t *idx, int64_t b, real *dst, int64_t ldd);           \
  /* y = a x + b y (contiguous, length n) */                                                       \
  krr_status (*axpby_##S)(krr_ctx *, int64_t n, double a, const real *x, double b, real *y);       \
  /* Nesterov's three sequences in one pass (length n): w = z;                        \
   * v = (1 - beta) z + beta v; z = alpha v + (1 - alpha) z (with the new v) */            \
  krr_status (*momentum_##S)(krr_ctx *, int64_t n, double alpha, double beta, real *z, real *v,    \
                             real *w);                                                             \
  krr_status (*dot_##S)(krr_ctx *, int64_t n, const real *x, const real *y, double *out);          \
  krr_status (*nrm2_##S)(krr_ctx *, int64_t n, const real *x, double *out);                        \
  /* C = alpha op(A) op(B) + beta C; ta/tb: 0 = N, 1 = T */                                        \
  krr_status (*gemm_##S)(krr_ctx *, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, \
                         const real *A, int64_t lda, const real *B, int64_t ldb, double beta,      \
                         real *C, int64_t ldc);                                                    \
  /* the upper triangle of C = alpha A^T A + beta C (A k x n; C n x n, the rest of C     \
     not written): a Gram matrix in half the work of gemm */         \
  krr_status (*syrk_##S)(krr_ctx *, int64_t n, int64_t k, double alpha, const real *A,             \
                         int64_t lda, double beta, real *C, int64_t ldc);                          \
  /* upper Cholesky A = R^T R in place; *info > 0: not positive definite (KRR_OK) */               \
  krr_status (*potrf_##S)(krr_ctx *, int64_t n, real * A, int64_t lda, int *info);                 \
  /* B = alpha op(A)^{-1} B (right = 0) or alpha B op(A)^{-1} (right = 1); A upper,    \
     non-unit, m x n is the shape of B */           \
  krr_status (*trsm_##S)(krr_ctx *, int right, int trans, int64_t m, int64_t n, double alpha,      \
                         const real *A, int64_t lda, real *B, int64_t ldb);                        \
  /* A(m x n, m >= n) <- Q of its thin QR */                                                       \
  krr_status (*qr_q_##S)(krr_ctx *, int64_t m, int64_t n, real * A, int64_t lda);                  \
  /* A(m x n, m >= n) <- U of its thin SVD; S (device, n) descending */                            \
  krr_status (*svd_thin_##S)(krr_ctx *, int64_t m, int64_t n, real * A, int64_t lda, real * S);    \
  /* symmetric eigen: A <- eigenvectors, W (device, n) ascending */                                \
  krr_status (*syev_##S)(krr_ctx *, int64_t n, real * A, int64_t lda, real * W);                   \
  /* the k largest eigenpairs of the symmetric A (upper triangle; A is destroyed):     \
     W (device, n) <- their eigenvalues ascending in W[0 .. k-1], Z (n x k) <- their   \
     eigenvectors (the tridiagonal form and only k back-transformed vectors) */           \
  krr_status (*syev_top_##S)(krr_ctx *, int64_t n, real * A, int64_t lda, int64_t k, real * W,     \
                             real * Z, int64_t ldz);                                               \
  /* symmetric tridiagonal reduction A = Q T Q^T from A's lower triangle: A <- the     \
     reflectors (below the subdiagonal), d (device, n) and e (device, n - 1) T's       \
     diagonal and subdiagonal, tau (device, n - 1) the reflectors' scales */           \
  krr_status (*sytrd_##S)(krr_ctx *, int64_t n, real * A, int64_t lda, real * d, real * e,         \
                          real * tau);                                                             \
  /* C(n x m) <- Q C (trans = 0) or Q^T C (trans = 1), Q from sytrd's A and tau */                 \
  krr_status (*ormtr_##S)(krr_ctx *, int trans, int64_t n, int64_t m, const real *A, int64_t lda,  \
                          const real *tau, real *C, int64_t ldc);                                  \
  /* C(n x m) <- (L diag(D) L^T)^{-1} C, L unit lower bidiagonal with subdiagonal l     \
     (device, n - 1), D (device, n) positive: a factored tridiagonal system */          \
  krr_status (*pttrs_##S)(krr_ctx *, int64_t n, int64_t m, const real *D, const real *l, real *C,  \
                          int64_t ldc);                                                            \
  /* A_ii += alpha + (d ? d_i : 0) */                                                              \
  krr_status (*add_diag_##S)(krr_ctx *, int64_t n, real * A, int64_t lda, double alpha,            \
                             const real *d);                                                       \
  /* A(m x n) <- diag(d) A */                                                                      \
  krr_status (*scale_rows_##S)(krr_ctx *, int64_t m, int64_t n, const real *d, real *A,            \
                               int64_t lda);                                                       \
  /* out[i] = N(0,1) draw number (offset + i) of stream seed (krr_rng_normal) */                   \
  krr_status (*randn_##S)(krr_ctx *, int64_t n, uint64_t seed, uint64_t offset, real * out);       \
  /* out[i] = krr_loss_elem(loss, kind, lambda, param, e, y[i], a[i], out[i]) for i < n  \
     (loss_math.h; e = the spacing below 1 of real); y, a may be NULL when the kind   \
     does not read them; out may alias a */         \
  krr_status (*loss_map_##S)(krr_ctx *, int loss, int kind, int64_t n, double lambda,              \
                             double param, const real *y, const real *a, real *out);

struct krr_ops {
  const char *name; /* "cpu", "cuda" */
  krr_status (*ctx_init)(krr_ctx *);
  void (*ctx_free)(krr_ctx *);
  /* bytes free / total on the device (CPU: MemAvailable / MemTotal) */
  krr_status (*mem_info)(krr_ctx *, size_t *free_bytes, size_t *total_bytes);
  /* NULL (after krr_fail(..., KRR_ERR_MEMORY, ...)) on failure */
  void *(*alloc)(krr_ctx *, size_t bytes);
  void (*dealloc)(krr_ctx *, void *p); /* NULL is a no-op */
  krr_status (*upload)(krr_ctx *, void *dst_dev, const void *src_host, size_t bytes);
  krr_status (*download)(krr_ctx *, void *dst_host, const void *src_dev, size_t bytes);
  krr_status (*copy)(krr_ctx *, void *dst_dev, const void *src_dev, size_t bytes);
  krr_status (*zero)(krr_ctx *, void *dst_dev, size_t bytes);
  krr_status (*sync)(krr_ctx *);
  KRR_OPS_TYPED(double, d)
  KRR_OPS_TYPED(float, s)
  /* random features (see KRR_OPS_FEATURES_TYPED above) */
  KRR_OPS_FEATURES_TYPED(double, d)
  KRR_OPS_FEATURES_TYPED(float, s)
  /* composite-kernel components (see KRR_OPS_KCOMP_TYPED above) */
  KRR_OPS_KCOMP_TYPED(double, d)
  KRR_OPS_KCOMP_TYPED(float, s)
  /* optional, host tables only (NULL: data/kernel_deriv.c runs the blocks on
   * the calling thread): part[b * nd + c] = krr_ddot_block(d, b)'s sums
   * (kderiv_math.h) for the column blocks b0 <= b < b1, host arrays */
  krr_status (*kernel_deriv_dot)(krr_ctx *, const struct krr_ddot *d, int64_t b0, int64_t b1,
                                 double *part);
};

#ifdef __cplusplus
}
#endif
#endif
