/* A penalised intercept as an operator: K + c 1 1^T over any inner operator.
 *
 * With weights alpha, (K + c 1 1^T) alpha = K alpha + b 1, b = c sum_i alpha_i:
 * the model f(x) = sum_i alpha_i k(x, x_i) + b whose penalty adds
 * b^2 / (2 c) (the intercept is a feature of constant value sqrt(c); c = 1
 * is kernlab's C-bsvc / eps-bsvr).  Every entry delegates to the inner
 * operator and adds the rank-one term with GEMMs against a ones vector:
 *   mv:   OUT += c 1_A (1_B^T V)       mat:  OUT += c 1_A 1_B^T
 *   diag: + c                          features: [Z_A, sqrt(c) 1] when the
 *                                      inner has features (nfeat = M + 1)
 * Blocks are the inner operator's (block_alloc / block_load delegate).
 * Ownership: the wrapper owns the inner operator and frees it (also when
 * creation fails).  Memory beyond the inner: n ones and q numbers. */
#include <math.h>
#include <string.h>
#include "op.h"

typedef struct {
  krr_op *inner; /* owned */
  double c;
  void *ones;    /* device, n ones */
  void *s;       /* device, 1 x q column sums (grown on demand) */
  int64_t scap;
} shift_t;

#define SH(op) ((shift_t *)(op)->impl)
#define XOP(op, name, ...) KOP((op)->ctx, (op)->prec, name, __VA_ARGS__)

static krr_status sh_block_alloc(krr_op *op, krr_arena *a, krr_block *blk) {
  krr_op *in = SH(op)->inner;
  return in->vt->block_alloc(in, a, blk);
}

static double sh_block_bytes(const krr_op *op, int64_t cap) {
  const krr_op *in = SH(op)->inner;
  return in->vt->block_bytes(in, cap);
}

static krr_status sh_block_load(krr_op *op, krr_block *blk) {
  krr_op *in = SH(op)->inner;
  return in->vt->block_load(in, blk);
}

static krr_status sh_mv(krr_op *op, const krr_block *A, const krr_block *B, const void *V,
                        int64_t ldv, int q, void *out, int64_t ldo) {
  shift_t *S = SH(op);
  const int64_t na = krr_block_rows(op, A), nb = krr_block_rows(op, B);
  KTRY(krr_op_mv(S->inner, A, B, V, ldv, q, out, ldo));
  if (q <= 0 || na <= 0 || nb <= 0) return KRR_OK;
  if (S->scap < q) {
    krr_dfree(op->ctx, &S->s);
    S->scap = 0;
    if (!(S->s = krr_dalloc(op->ctx, q, op->es))) return op->ctx->status;
    S->scap = q;
  }
  /* s (1 x q) = 1_B^T V;  OUT += c 1_A s */
  KTRY(XOP(op, gemm, 1, 0, 1, q, nb, 1.0, S->ones, nb, V, ldv, 0.0, S->s, 1));
  return XOP(op, gemm, 0, 0, na, q, 1, S->c, S->ones, na, S->s, 1, 1.0, out, ldo);
}

static krr_status sh_mat(krr_op *op, const krr_block *A, const krr_block *B, void *out,
                         int64_t ldo) {
  shift_t *S = SH(op);
  const int64_t na = krr_block_rows(op, A), nb = krr_block_rows(op, B);
  KTRY(krr_op_mat(S->inner, A, B, out, ldo));
  if (na <= 0 || nb <= 0) return KRR_OK;
  return XOP(op, gemm, 0, 1, na, nb, 1, S->c, S->ones, na, S->ones, nb, 1.0, out, ldo);
}

static krr_status sh_diag(krr_op *op, const krr_block *A, double *out) {
  shift_t *S = SH(op);
  KTRY(krr_op_diag(S->inner, A, out));
  const int64_t b = A ? A->b : op->nloc;
  for (int64_t i = 0; i < b; i++) out[i] += S->c;
  return KRR_OK;
}

static krr_status sh_dot(krr_op *op, int64_t len, const void *x, const void *y, double *out) {
  return krr_op_dot(SH(op)->inner, len, x, y, out);
}

static krr_status sh_nrm2(krr_op *op, int64_t len, const void *x, double *out) {
  return krr_op_nrm2(SH(op)->inner, len, x, out);
}

static krr_status sh_gather(krr_op *op, const krr_block *A, const void *src, int m, void *dst,
                            int64_t ldd) {
  return krr_op_gather(SH(op)->inner, A, src, m, dst, ldd);
}

static krr_status sh_scatter(krr_op *op, double alpha, const void *src, int64_t lds, int m,
                             const krr_block *A, void *dst) {
  return krr_op_scatter_axpy(SH(op)->inner, alpha, src, lds, m, A, dst);
}

/* [Z_A, sqrt(c) 1]: the inner's M columns, then the constant one */
static krr_status sh_features(krr_op *op, const krr_block *A, void *Z, int64_t ldz) {
  shift_t *S = SH(op);
  krr_op *in = S->inner;
  const int64_t na = krr_block_rows(op, A), M = in->nfeat;
  KTRY(krr_op_features(in, A, Z, ldz));
  if (na <= 0) return KRR_OK;
  void *col = KAT(Z, M * ldz, op->es);
  KTRY(op->ctx->ops->copy(op->ctx, col, S->ones, op->es * (size_t)na));
  return XOP(op, axpby, na, 0.0, col, sqrt(S->c), col);
}

static krr_status sh_subset(krr_op *op, const krr_block *A, krr_op **out) {
  krr_op *sub = NULL;
  *out = NULL;
  KTRY(krr_op_subset(SH(op)->inner, A, &sub));
  return krr_op_shift_create(sub, SH(op)->c, out);
}

static void sh_free(krr_op *op) {
  shift_t *S = SH(op);
  if (S) {
    krr_op_free(S->inner);
    krr_dfree(op->ctx, &S->ones);
    krr_dfree(op->ctx, &S->s);
    free(S);
  }
  free(op);
}

static const krr_op_vt shift_vt = {
    .name = "shifted",
    .block_alloc = sh_block_alloc,
    .block_bytes = sh_block_bytes,
    .block_load = sh_block_load,
    .mv = sh_mv,
    .mat = sh_mat,
    .diag = sh_diag,
    .dot = sh_dot,
    .nrm2 = sh_nrm2,
    .gather = sh_gather,
    .scatter_axpy = sh_scatter,
    .subset = sh_subset,
    .free = sh_free,
    .features = sh_features,
};

krr_status krr_op_shift_create(krr_op *inner, double c, krr_op **out) {
  *out = NULL;
  if (!inner) return KRR_ERR_INPUT;
  krr_ctx *ctx = inner->ctx;
  if (!(c > 0) || !(c < INFINITY)) {
    krr_op_free(inner);
    return krr_fail(ctx, KRR_ERR_INPUT, "the intercept penalty `c` must be positive and finite");
  }
  krr_op *op = (krr_op *)calloc(1, sizeof *op);
  shift_t *S = (shift_t *)calloc(1, sizeof *S);
  double *h = (double *)calloc((size_t)(inner->n > 0 ? inner->n : 1), sizeof(double));
  krr_status st = op && S && h ? KRR_OK : krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK) {
    for (int64_t i = 0; i < inner->n; i++) h[i] = 1.0;
    st = krr_upload_vec(ctx, inner->prec, h, inner->n, &S->ones);
  }
  free(h);
  if (st != KRR_OK) {
    if (S) krr_dfree(ctx, &S->ones);
    free(S);
    free(op);
    krr_op_free(inner);
    return st;
  }
  S->inner = inner;
  S->c = c;
  *op = *inner; /* ctx, prec, es, n, nloc, p, kernel */
  op->vt = &shift_vt;
  op->impl = S;
  op->nfeat = inner->nfeat > 0 && inner->vt->features ? inner->nfeat + 1 : 0;
  *out = op;
  return KRR_OK;
}
