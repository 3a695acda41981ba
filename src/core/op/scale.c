/* Observation weights as an operator: D K D, D = diag(d), over any inner
 * operator.
 *
 * Weighted kernel ridge regression (per-point noise variances lambda / w_i)
 * solves (K + lambda W^{-1}) alpha = y, W = diag(w).  With D = W^{1/2} this
 * is (D K D + lambda I) v = D y, alpha = D v: a symmetric positive definite
 * system of the usual form, so every solver runs unchanged on the operator
 * D K D (Rasmussen and Williams, "Gaussian Processes for Machine Learning",
 * 2006, sec. 2.2 and 3.4.3, use the same symmetric scaling W^{1/2} K
 * W^{1/2} + I for a stable Cholesky).  The caller scales the targets by d
 * and the solution back by d (the R glue does).  For inducing-point solvers
 * (Falkon) on centres C the same scaling gives
 *   (K_nC^T W K_nC + lambda K_CC) (D_C a) = K_nC^T W y,
 * weighted Nystrom KRR with weights D_C a on the centres.
 *
 * Every entry delegates to the inner operator and scales rows and columns:
 *   mv:   OUT = D_A K_AB (D_B V)     mat:  OUT = D_A K_AB D_B
 *   diag: d_i^2 k_ii                 features: D_A Z_A (nfeat unchanged)
 *   subset: the inner subset scaled by d_A
 * Blocks are the inner operator's (block_alloc / block_load delegate); a
 * loaded block's scaling is gathered from the device copy of d when used.
 * Ownership: the wrapper owns the inner operator and frees it (also when
 * creation fails).  Memory beyond the inner: d on the host and the device
 * (n each) and a work matrix of |B| x q for D_B V (grown on demand). */
#include <math.h>
#include <string.h>
#include "op.h"

typedef struct {
  krr_op *inner; /* owned */
  double *dh;    /* host, nloc scalings */
  void *dd;      /* device, nloc scalings */
  void *dA, *dB; /* device, scalings of the rows of A and B (grown on demand) */
  int64_t dacap, dbcap;
  void *t;       /* device, D_B V (grown on demand) */
  int64_t tcap;
} scale_t;

#define SC(op) ((scale_t *)(op)->impl)
#define XOP(op, name, ...) KOP((op)->ctx, (op)->prec, name, __VA_ARGS__)

/* grow a device buffer of `count` elements */
static krr_status grow(krr_op *op, void **buf, int64_t *cap, int64_t count) {
  if (*cap >= count) return KRR_OK;
  krr_dfree(op->ctx, buf);
  *cap = 0;
  if (!(*buf = krr_dalloc(op->ctx, count > 0 ? count : 1, op->es))) return op->ctx->status;
  *cap = count;
  return KRR_OK;
}

/* the device scalings of the rows of A (NULL: all rows, the device d) */
static krr_status rows_d(krr_op *op, const krr_block *A, void *buf, const void **out) {
  scale_t *S = SC(op);
  if (!A) {
    *out = S->dd;
    return KRR_OK;
  }
  *out = buf;
  if (A->b <= 0) return KRR_OK;
  return XOP(op, gather_rows, S->dd, op->nloc, 1, A->idx, A->b, buf, A->b);
}

/* both scaling buffers hold at least `count` elements */
static krr_status grow_d(krr_op *op, int64_t count) {
  scale_t *S = SC(op);
  KTRY(grow(op, &S->dA, &S->dacap, count));
  return grow(op, &S->dB, &S->dbcap, count);
}

static krr_status sc_block_alloc(krr_op *op, krr_arena *a, krr_block *blk) {
  krr_op *in = SC(op)->inner;
  return in->vt->block_alloc(in, a, blk);
}

static double sc_block_bytes(const krr_op *op, int64_t cap) {
  const krr_op *in = SC(op)->inner;
  return in->vt->block_bytes(in, cap);
}

static krr_status sc_block_load(krr_op *op, krr_block *blk) {
  krr_op *in = SC(op)->inner;
  return in->vt->block_load(in, blk);
}

static krr_status sc_mv(krr_op *op, const krr_block *A, const krr_block *B, const void *V,
                        int64_t ldv, int q, void *out, int64_t ldo) {
  scale_t *S = SC(op);
  const int64_t na = krr_block_rows(op, A), nb = krr_block_rows(op, B);
  if (q <= 0 || na <= 0) return KRR_OK;
  if (nb <= 0) return krr_op_mv(S->inner, A, B, V, ldv, q, out, ldo);
  KTRY(grow_d(op, KRR_MAX(A ? A->b : 0, B ? B->b : 0)));
  KTRY(grow(op, &S->t, &S->tcap, nb * (int64_t)q));
  const void *da = NULL, *db = NULL;
  KTRY(rows_d(op, A, S->dA, &da));
  KTRY(rows_d(op, B, S->dB, &db));
  /* t = D_B V (|B| x q, ld |B|) */
  for (int c = 0; c < q; c++)
    KTRY(op->ctx->ops->copy(op->ctx, KAT(S->t, c * nb, op->es), KAT(V, c * ldv, op->es),
                            op->es * (size_t)nb));
  KTRY(XOP(op, scale_rows, nb, q, db, S->t, nb));
  KTRY(krr_op_mv(S->inner, A, B, S->t, nb, q, out, ldo));
  return XOP(op, scale_rows, na, q, da, out, ldo);
}

static krr_status sc_mat(krr_op *op, const krr_block *A, const krr_block *B, void *out,
                         int64_t ldo) {
  scale_t *S = SC(op);
  const int64_t na = krr_block_rows(op, A), nb = krr_block_rows(op, B);
  KTRY(krr_op_mat(S->inner, A, B, out, ldo));
  if (na <= 0 || nb <= 0) return KRR_OK;
  KTRY(grow_d(op, A ? A->b : 0));
  const void *da = NULL;
  KTRY(rows_d(op, A, S->dA, &da));
  KTRY(XOP(op, scale_rows, na, nb, da, out, ldo));
  /* columns: one scalar each, from the host copy */
  for (int64_t j = 0; j < nb; j++) {
    double dj = S->dh[B ? B->idx_h[j] : j];
    void *col = KAT(out, j * ldo, op->es);
    KTRY(XOP(op, axpby, na, dj, col, 0.0, col));
  }
  return KRR_OK;
}

static krr_status sc_diag(krr_op *op, const krr_block *A, double *out) {
  scale_t *S = SC(op);
  KTRY(krr_op_diag(S->inner, A, out));
  const int64_t b = A ? A->b : op->nloc;
  for (int64_t i = 0; i < b; i++) {
    double di = S->dh[A ? A->idx_h[i] : i];
    out[i] *= di * di;
  }
  return KRR_OK;
}

static krr_status sc_dot(krr_op *op, int64_t len, const void *x, const void *y, double *out) {
  return krr_op_dot(SC(op)->inner, len, x, y, out);
}

static krr_status sc_nrm2(krr_op *op, int64_t len, const void *x, double *out) {
  return krr_op_nrm2(SC(op)->inner, len, x, out);
}

static krr_status sc_gather(krr_op *op, const krr_block *A, const void *src, int m, void *dst,
                            int64_t ldd) {
  return krr_op_gather(SC(op)->inner, A, src, m, dst, ldd);
}

static krr_status sc_scatter(krr_op *op, double alpha, const void *src, int64_t lds, int m,
                             const krr_block *A, void *dst) {
  return krr_op_scatter_axpy(SC(op)->inner, alpha, src, lds, m, A, dst);
}

/* D_A Z_A: K' = D Z Z^T D = (D Z)(D Z)^T */
static krr_status sc_features(krr_op *op, const krr_block *A, void *Z, int64_t ldz) {
  scale_t *S = SC(op);
  const int64_t na = krr_block_rows(op, A);
  KTRY(krr_op_features(S->inner, A, Z, ldz));
  if (na <= 0) return KRR_OK;
  KTRY(grow_d(op, A ? A->b : 0));
  const void *da = NULL;
  KTRY(rows_d(op, A, S->dA, &da));
  return XOP(op, scale_rows, na, op->nfeat, da, Z, ldz);
}

/* D Z[, j0 .. j0 + cnt - 1] */
static krr_status sc_feature_cols(krr_op *op, int64_t j0, int64_t cnt, void *Z, int64_t ldz) {
  KTRY(krr_op_feature_cols(SC(op)->inner, j0, cnt, Z, ldz));
  return XOP(op, scale_rows, op->nloc, cnt, SC(op)->dd, Z, ldz);
}

static krr_status sc_subset(krr_op *op, const krr_block *A, krr_op **out) {
  scale_t *S = SC(op);
  krr_op *sub = NULL;
  *out = NULL;
  double *d = (double *)malloc(sizeof(double) * (size_t)(A->b > 0 ? A->b : 1));
  if (!d) return krr_fail(op->ctx, KRR_ERR_MEMORY, "out of host memory");
  for (int64_t i = 0; i < A->b; i++) d[i] = S->dh[A->idx_h[i]];
  krr_status st = krr_op_subset(S->inner, A, &sub);
  if (st == KRR_OK) st = krr_op_scale_create(sub, d, out);
  free(d);
  return st;
}

static void sc_free(krr_op *op) {
  scale_t *S = SC(op);
  if (S) {
    krr_op_free(S->inner);
    krr_dfree(op->ctx, &S->dd);
    krr_dfree(op->ctx, &S->dA);
    krr_dfree(op->ctx, &S->dB);
    krr_dfree(op->ctx, &S->t);
    free(S->dh);
    free(S);
  }
  free(op);
}

static const krr_op_vt scale_vt = {
    .name = "weighted",
    .block_alloc = sc_block_alloc,
    .block_bytes = sc_block_bytes,
    .block_load = sc_block_load,
    .mv = sc_mv,
    .mat = sc_mat,
    .diag = sc_diag,
    .dot = sc_dot,
    .nrm2 = sc_nrm2,
    .gather = sc_gather,
    .scatter_axpy = sc_scatter,
    .subset = sc_subset,
    .free = sc_free,
    .features = sc_features,
    .feature_cols = sc_feature_cols,
};

krr_status krr_op_scale_create(krr_op *inner, const double *d, krr_op **out) {
  *out = NULL;
  if (!inner) return KRR_ERR_INPUT;
  krr_ctx *ctx = inner->ctx;
  const int64_t n = inner->nloc;
  for (int64_t i = 0; i < n; i++) {
    if (!(d[i] > 0) || !(d[i] < INFINITY)) {
      krr_op_free(inner);
      return krr_fail(ctx, KRR_ERR_INPUT,
                      "the observation weights must be positive and finite (row %lld: %g)",
                      (long long)(i + 1), d[i]);
    }
  }
  krr_op *op = (krr_op *)calloc(1, sizeof *op);
  scale_t *S = (scale_t *)calloc(1, sizeof *S);
  double *dh = (double *)malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  krr_status st = op && S && dh ? KRR_OK : krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK) {
    memcpy(dh, d, sizeof(double) * (size_t)n);
    st = krr_upload_vec(ctx, inner->prec, dh, n, &S->dd);
  }
  if (st != KRR_OK) {
    if (S) krr_dfree(ctx, &S->dd);
    free(dh);
    free(S);
    free(op);
    krr_op_free(inner);
    return st;
  }
  S->inner = inner;
  S->dh = dh;
  *op = *inner; /* ctx, prec, es, n, nloc, p, kernel, nfeat */
  op->vt = &scale_vt;
  op->impl = S;
  op->nfeat = inner->nfeat > 0 && inner->vt->features ? inner->nfeat : 0;
  *out = op;
  return KRR_OK;
}
