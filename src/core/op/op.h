/* op/: kernel operators.  Solvers reach the training data only through an
 * operator: the kernel matrix K = K(X, X) of the n training rows, blocks of
 * its rows, and the n-vectors (weights, targets, residuals) that live with
 * the rows.  An operator whose rows are spread over processes keeps n-vectors
 * in pieces of nloc rows and reduces dot products and block products over the
 * processes; one whose kernel is approximated by features (K ~ Z Z^T) has a
 * diagonal that is not 1.  Neither needs a solver to change: solvers call only
 * the functions below.
 *
 * Conventions: an n-vector of m columns is nloc x m, column-major with
 * leading dimension nloc; a block of b rows carries b x m matrices with
 * leading dimension b (replicated on every process).  A NULL block means
 * "all n rows". */
#ifndef KRR_OP_H
#define KRR_OP_H
#include "../data/data.h"

/* A set of training rows, loaded into an operator (indices on host and
 * device, and what the operator needs to evaluate its kernel rows: for the
 * exact operator the gathered points). */
typedef struct krr_block {
  int64_t b, cap;
  int64_t *idx_h; /* host, b row indices in 0..n-1 */
  int64_t *idx;   /* device copy */
  void *pts;      /* operator-private */
} krr_block;

typedef struct krr_op_vt {
  const char *name;
  /* private part of a block of capacity cap (from the arena); bytes it takes */
  krr_status (*block_alloc)(krr_op *op, krr_arena *a, krr_block *blk);
  double (*block_bytes)(const krr_op *op, int64_t cap);
  /* blk->idx_h / idx hold b rows: fill the private part */
  krr_status (*block_load)(krr_op *op, krr_block *blk);
  /* OUT(|A| x q, ld ldo) = K(X_A, X_B) V(|B| x q, ld ldv), matrix-free */
  krr_status (*mv)(krr_op *op, const krr_block *A, const krr_block *B, const void *V, int64_t ldv,
                   int q, void *out, int64_t ldo);
  /* OUT(|A| x |B|, ld ldo) = K(X_A, X_B), materialised */
  krr_status (*mat)(krr_op *op, const krr_block *A, const krr_block *B, void *out, int64_t ldo);
  /* host out[i] = K(x_i, x_i) for the rows of A (NULL: the nloc local rows) */
  krr_status (*diag)(krr_op *op, const krr_block *A, double *out);
  /* reductions over n-vectors (len = nloc * m elements) */
  krr_status (*dot)(krr_op *op, int64_t len, const void *x, const void *y, double *out);
  krr_status (*nrm2)(krr_op *op, int64_t len, const void *x, double *out);
  /* dst(b x m, ld ldd) = src[A, ] for an n-vector src (ld nloc) */
  krr_status (*gather)(krr_op *op, const krr_block *A, const void *src, int m, void *dst,
                       int64_t ldd);
  /* dst[A, ] += alpha src(b x m, ld lds) for an n-vector dst */
  krr_status (*scatter_axpy)(krr_op *op, double alpha, const void *src, int64_t lds, int m,
                             const krr_block *A, void *dst);
  /* an operator on the rows of A (valid while A is loaded and unchanged) */
  krr_status (*subset)(krr_op *op, const krr_block *A, krr_op **out);
  void (*free)(krr_op *op);
  /* optional (NULL unless op->nfeat > 0): the feature matrix of the rows of A,
   * Z(|A| x nfeat, ld ldz, column-major), K(X_A, X_B) = Z_A Z_B^T.  A solver
   * in feature space keeps theta = Z^T alpha (nfeat x m) and gets
   * K_{A:} alpha = Z_A theta in O(|A| nfeat). */
  krr_status (*features)(krr_op *op, const krr_block *A, void *Z, int64_t ldz);
  /* optional (NULL unless op->nfeat > 0): the feature columns j0 .. j0 + cnt - 1
   * of all nloc local rows, Z(nloc x cnt, ld ldz) -- what a solver over blocks
   * of features (Tu et al.'s random-feature BCD) needs */
  krr_status (*feature_cols)(krr_op *op, int64_t j0, int64_t cnt, void *Z, int64_t ldz);
  /* optional: OUT(|B| x q, ld ldo) = K(X_B, X) K(X, X_B) V over all rows X
   * with each kernel pair evaluated once, using gram_work(op, |B|, q) bytes
   * of device memory at work; where either is NULL or gram_work is 0,
   * krr_op_gram_mv() makes two products */
  krr_status (*gram_mv)(krr_op *op, const krr_block *B, const void *V, int64_t ldv, int q,
                        void *out, int64_t ldo, void *work);
  double (*gram_work)(const krr_op *op, int64_t b, int q);
} krr_op_vt;

struct krr_op {
  const krr_op_vt *vt;
  krr_ctx *ctx;
  krr_precision prec;
  size_t es;
  int64_t n;    /* rows */
  int64_t nloc; /* rows of the n-vectors held here (n on one process) */
  int p;
  krr_kernel kernel;
  void *impl;
  int64_t nfeat; /* columns of the feature map (K = Z Z^T); 0: no finite features (exact) */
};

/* blocks: capacity cap from the arena; set b rows (host indices, copied) */
krr_status krr_block_alloc(krr_op *op, krr_arena *a, int64_t cap, krr_block *blk);
double krr_block_bytes(const krr_op *op, int64_t cap);
krr_status krr_block_set(krr_op *op, krr_block *blk, const int64_t *idx, int64_t b);
/* rows i0 .. i0 + b - 1 */
krr_status krr_block_range(krr_op *op, krr_block *blk, int64_t i0, int64_t b);

static inline int64_t krr_block_rows(const krr_op *op, const krr_block *A) {
  return A ? A->b : op->n;
}
static inline krr_status krr_op_mv(krr_op *op, const krr_block *A, const krr_block *B,
                                   const void *V, int64_t ldv, int q, void *out, int64_t ldo) {
  return op->vt->mv(op, A, B, V, ldv, q, out, ldo);
}
static inline krr_status krr_op_mat(krr_op *op, const krr_block *A, const krr_block *B, void *out,
                                    int64_t ldo) {
  return op->vt->mat(op, A, B, out, ldo);
}
static inline krr_status krr_op_diag(krr_op *op, const krr_block *A, double *out) {
  return op->vt->diag(op, A, out);
}
static inline krr_status krr_op_dot(krr_op *op, int64_t len, const void *x, const void *y,
                                    double *out) {
  return op->vt->dot(op, len, x, y, out);
}
static inline krr_status krr_op_nrm2(krr_op *op, int64_t len, const void *x, double *out) {
  return op->vt->nrm2(op, len, x, out);
}
static inline krr_status krr_op_gather(krr_op *op, const krr_block *A, const void *src, int m,
                                       void *dst, int64_t ldd) {
  return op->vt->gather(op, A, src, m, dst, ldd);
}
static inline krr_status krr_op_scatter_axpy(krr_op *op, double alpha, const void *src,
                                             int64_t lds, int m, const krr_block *A, void *dst) {
  return op->vt->scatter_axpy(op, alpha, src, lds, m, A, dst);
}
static inline krr_status krr_op_subset(krr_op *op, const krr_block *A, krr_op **out) {
  return op->vt->subset(op, A, out);
}
/* a one-process operator of n rows with a zeroed private part of impl_bytes
 * (op->impl); both freed by the caller's vtable free */
krr_status krr_op_new(krr_ctx *ctx, const krr_op_vt *vt, krr_precision prec, int64_t n, int p,
                      krr_kernel kernel, size_t impl_bytes, krr_op **out);
/* vtable entries for n-vectors held whole on one process (dot, nrm2,
 * gather, scatter_axpy of the exact and random-feature operators) */
krr_status krr_op_local_dot(krr_op *op, int64_t len, const void *x, const void *y, double *out);
krr_status krr_op_local_nrm2(krr_op *op, int64_t len, const void *x, double *out);
krr_status krr_op_local_gather(krr_op *op, const krr_block *A, const void *src, int m, void *dst,
                               int64_t ldd);
krr_status krr_op_local_scatter(krr_op *op, double alpha, const void *src, int64_t lds, int m,
                                const krr_block *A, void *dst);
/* sum of the diagonal over the rows of A (host) */
krr_status krr_op_trace(krr_op *op, const krr_block *A, double *out);

/* Falkon's OUT(|B| x q, ld ldo) = K(X_B, X) K(X, X_B) V over all rows:
 * fused where the operator offers it (each kernel pair once), else two
 * products through an n-vector.  krr_op_gram_bytes() is the device memory
 * work must hold. */
double krr_op_gram_bytes(const krr_op *op, int64_t b, int q);
krr_status krr_op_gram_mv(krr_op *op, const krr_block *B, const void *V, int64_t ldv, int q,
                          void *out, int64_t ldo, void *work);

/* Z_A (|A| x op->nfeat, ld ldz); KRR_ERR_INPUT when the operator has no features */
static inline krr_status krr_op_features(krr_op *op, const krr_block *A, void *Z, int64_t ldz) {
  if (op->nfeat <= 0 || !op->vt->features)
    return krr_fail(op->ctx, KRR_ERR_INPUT, "the %s operator has no finite feature map",
                    op->vt->name);
  return op->vt->features(op, A, Z, ldz);
}

/* columns j0 .. j0 + cnt - 1 of the feature matrix Z (nloc x cnt, ld ldz);
 * KRR_ERR_INPUT when the operator has none */
static inline krr_status krr_op_feature_cols(krr_op *op, int64_t j0, int64_t cnt, void *Z,
                                             int64_t ldz) {
  if (op->nfeat <= 0 || !op->vt->feature_cols)
    return krr_fail(op->ctx, KRR_ERR_INPUT, "the %s operator has no finite feature map",
                    op->vt->name);
  if (j0 < 0 || cnt < 0 || j0 + cnt > op->nfeat)
    return krr_fail(op->ctx, KRR_ERR_INTERNAL, "feature columns %lld + %lld out of range",
                    (long long)j0, (long long)cnt);
  return op->vt->feature_cols(op, j0, cnt, Z, ldz);
}

/* Random Fourier features (features.c): the frequencies W (M x p, row-major)
 * and phases c (M) of (kernel, p, M, seed), drawn on the host from
 * counter-based streams of seed (the same on every device and thread count).
 * KRR_ERR_INPUT (after krr_fail on ctx, when ctx is not NULL) for a kernel
 * without a spectral sampler. */
krr_status krr_features_draw(krr_ctx *ctx, const krr_kernel *k, int p, int64_t M, uint64_t seed,
                             double *W, double *c);
/* K(x, x) of a stationary kernel: 1 for a listed kernel, the sum of the
 * terms' amplitudes for a composite; psi is scaled by its square root */
double krr_features_variance(const krr_kernel *k);

/* The points (n x p, row-major, device) of an exact operator; NULL for
 * any other operator. */
const void *krr_op_exact_points(const krr_op *op);

/* The communicator and first global row of a sharded operator (sharded.c;
 * its constructor, krr_op_sharded_create, is in krr.h); NULL, 0 for any
 * other */
struct krr_comm *krr_op_comm(const krr_op *op, int64_t *row0);
#endif
