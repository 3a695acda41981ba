/* The linear operator K = X X^T on one device: the kernel whose feature map
 * is the point itself, psi(x) = x (nfeat = p).  Ridge regression in these
 * features is linear ridge regression, (X^T X + lambda I) w = X^T y, which
 * the feature-space solvers (svrg) solve through the operator like any
 * finite feature map.  X is the problem's row-major n x p matrix, i.e. the
 * column-major p x n matrix X^T, so every product is one GEMM on it:
 *   K(X_A, X_B) V = X_A (X_B^T V),  K(X_A, X_B) = X_A X_B^T.
 * The feature columns j0 .. j0 + c - 1 of all rows (column-major n x c) are
 * X^T's rows, gathered by a product with the columns j0 .. of the p x p
 * identity (O(n p c), the size of the data). */
#include <stdlib.h>
#include <string.h>
#include "op.h"

typedef struct {
  const void *X; /* n x p, row-major (the problem's points or a block's) */
  void *T;       /* p x q scratch of mv (device), grown on demand */
  int64_t Tcap;
  void *E;    /* the p x p identity (device), made on first use */
  double *hx; /* host rows for the diagonal */
  int64_t hxcap;
} linear_t;

#define LN(op) ((linear_t *)(op)->impl)
#define XOP(op, name, ...) KOP((op)->ctx, (op)->prec, name, __VA_ARGS__)

static const void *points(const krr_op *op, const krr_block *A) { return A ? A->pts : LN(op)->X; }

static krr_status ln_block_alloc(krr_op *op, krr_arena *a, krr_block *blk) {
  blk->pts = krr_arena_dev(a, blk->cap * (int64_t)op->p, op->es);
  return blk->pts ? KRR_OK : op->ctx->status;
}

static double ln_block_bytes(const krr_op *op, int64_t cap) {
  return (double)cap * op->p * (double)op->es;
}

static krr_status ln_block_load(krr_op *op, krr_block *blk) {
  return XOP(op, gather_points, LN(op)->X, op->p, blk->idx, blk->b, blk->pts);
}

/* OUT = X_A (X_B^T V) */
static krr_status ln_mv(krr_op *op, const krr_block *A, const krr_block *B, const void *V,
                        int64_t ldv, int q, void *out, int64_t ldo) {
  linear_t *L = LN(op);
  const int64_t na = krr_block_rows(op, A), nb = krr_block_rows(op, B), p = op->p;
  if (q <= 0 || na <= 0) return KRR_OK;
  if (!L->T || L->Tcap < p * q) {
    krr_dfree(op->ctx, &L->T);
    L->Tcap = 0;
    if (!(L->T = krr_dalloc(op->ctx, p * q, op->es))) return op->ctx->status;
    L->Tcap = p * q;
  }
  KTRY(krr_poll(op->ctx));
  if (nb <= 0) KTRY(op->ctx->ops->zero(op->ctx, L->T, op->es * (size_t)(p * q)));
  else KTRY(XOP(op, gemm, 0, 0, p, q, nb, 1.0, points(op, B), p, V, ldv, 0.0, L->T, p));
  return XOP(op, gemm, 1, 0, na, q, p, 1.0, points(op, A), p, L->T, p, 0.0, out, ldo);
}

/* OUT = X_A X_B^T */
static krr_status ln_mat(krr_op *op, const krr_block *A, const krr_block *B, void *out,
                         int64_t ldo) {
  const int64_t na = krr_block_rows(op, A), nb = krr_block_rows(op, B);
  if (na <= 0 || nb <= 0) return KRR_OK;
  KTRY(krr_poll(op->ctx));
  return XOP(op, gemm, 1, 0, na, nb, op->p, 1.0, points(op, A), op->p, points(op, B), op->p, 0.0,
             out, ldo);
}

/* out[i] = ||x_i||^2, from the points downloaded in chunks */
static krr_status ln_diag(krr_op *op, const krr_block *A, double *out) {
  linear_t *L = LN(op);
  const int64_t n = A ? A->b : op->nloc, p = op->p;
  const int64_t chunk = KRR_MIN(n, KRR_MAX((int64_t)1, ((int64_t)1 << 20) / (p > 0 ? p : 1)));
  if (n <= 0) return KRR_OK;
  if (!L->hx || L->hxcap < chunk * p) {
    free(L->hx);
    L->hxcap = 0;
    if (!(L->hx = (double *)malloc(sizeof(double) * (size_t)(chunk * p))))
      return krr_fail(op->ctx, KRR_ERR_MEMORY, "out of host memory");
    L->hxcap = chunk * p;
  }
  const void *X = points(op, A);
  for (int64_t r0 = 0; r0 < n; r0 += chunk) {
    const int64_t cnt = KRR_MIN(chunk, n - r0);
    KTRY(krr_poll(op->ctx));
    KTRY(krr_download_vec(op->ctx, op->prec, KAT(X, r0 * p, op->es), cnt * p, L->hx));
    for (int64_t i = 0; i < cnt; i++) {
      double s = 0;
      for (int64_t j = 0; j < p; j++) s += L->hx[i * p + j] * L->hx[i * p + j];
      out[r0 + i] = s;
    }
  }
  return KRR_OK;
}

/* the p x p identity on the device, once */
static krr_status identity(krr_op *op) {
  linear_t *L = LN(op);
  if (L->E) return KRR_OK;
  const int64_t p = op->p;
  double *h = (double *)calloc((size_t)(p * p), sizeof(double));
  if (!h) return krr_fail(op->ctx, KRR_ERR_MEMORY, "out of host memory");
  for (int64_t j = 0; j < p; j++) h[j + j * p] = 1.0;
  krr_status st = krr_upload_vec(op->ctx, op->prec, h, p * p, &L->E);
  free(h);
  return st;
}

/* Z_A (|A| x p, ld ldz) = X_A: (X_A^T)^T I */
static krr_status ln_features(krr_op *op, const krr_block *A, void *Z, int64_t ldz) {
  const int64_t na = krr_block_rows(op, A);
  KTRY(identity(op));
  if (na <= 0) return KRR_OK;
  return XOP(op, gemm, 1, 0, na, op->p, op->p, 1.0, points(op, A), op->p, LN(op)->E, op->p, 0.0, Z,
             ldz);
}

/* Z (nloc x cnt, ld ldz) = the columns j0 .. j0 + cnt - 1 of X */
static krr_status ln_feature_cols(krr_op *op, int64_t j0, int64_t cnt, void *Z, int64_t ldz) {
  KTRY(identity(op));
  if (cnt <= 0 || op->n <= 0) return KRR_OK;
  return XOP(op, gemm, 1, 0, op->n, cnt, op->p, 1.0, LN(op)->X, op->p,
             KAT(LN(op)->E, j0 * op->p, op->es), op->p, 0.0, Z, ldz);
}

static krr_status make(krr_ctx *ctx, krr_precision prec, const void *X, int64_t n, int p,
                       krr_op **out);

static krr_status ln_subset(krr_op *op, const krr_block *A, krr_op **out) {
  return make(op->ctx, op->prec, A->pts, A->b, op->p, out);
}

static void ln_free(krr_op *op) {
  linear_t *L = LN(op);
  if (L) {
    krr_dfree(op->ctx, &L->T);
    krr_dfree(op->ctx, &L->E);
    free(L->hx);
    free(L);
  }
  free(op);
}

static const krr_op_vt linear_vt = {
    .name = "linear",
    .block_alloc = ln_block_alloc,
    .block_bytes = ln_block_bytes,
    .block_load = ln_block_load,
    .mv = ln_mv,
    .mat = ln_mat,
    .diag = ln_diag,
    .dot = krr_op_local_dot,
    .nrm2 = krr_op_local_nrm2,
    .gather = krr_op_local_gather,
    .scatter_axpy = krr_op_local_scatter,
    .subset = ln_subset,
    .free = ln_free,
    .features = ln_features,
    .feature_cols = ln_feature_cols,
};

static krr_status make(krr_ctx *ctx, krr_precision prec, const void *X, int64_t n, int p,
                       krr_op **out) {
  /* the kernel field is not used: the operator's kernel is x'y */
  krr_kernel none = {.type = KRR_RBF, .bandwidth = 1.0};
  KTRY(krr_op_new(ctx, &linear_vt, prec, n, p, none, sizeof(linear_t), out));
  LN(*out)->X = X;
  (*out)->nfeat = p;
  return KRR_OK;
}

krr_status krr_op_linear_create(krr_ctx *ctx, const krr_problem *pb, krr_op **out) {
  *out = NULL;
  if (!pb || pb->n < 1 || pb->p < 1)
    return krr_fail(ctx, KRR_ERR_INPUT, "linear operator: no points");
  return make(ctx, pb->prec, pb->X, pb->n, pb->p, out);
}
