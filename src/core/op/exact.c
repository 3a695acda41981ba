/* The exact kernel operator on one device: K(X_A, X_B) evaluated from the
 * points with the backend's fused kernel_mv / kernel_block (never storing
 * more than a tile).  A block's private part is its gathered points (b x p,
 * row-major).  The diagonal is the kernel at distance zero, k(x, x) =
 * krr_kernel_eval(t = 0), which is 1 for every kernel of the list (all
 * stationary) and is evaluated, not assumed; a composite kernel's (data/kcomp.c)
 * is its terms' amplitudes times its linear and polynomial components' values. */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "../kernel_math.h"

typedef struct {
  const void *X; /* n x p, row-major (the problem's points or a block's) */
} exact_t;

#define EX(op) ((exact_t *)(op)->impl)
#define XOP(op, name, ...) KOP((op)->ctx, (op)->prec, name, __VA_ARGS__)

static const void *points(const krr_op *op, const krr_block *A) {
  return A ? A->pts : EX(op)->X;
}

static krr_status ex_block_alloc(krr_op *op, krr_arena *a, krr_block *blk) {
  blk->pts = krr_arena_dev(a, blk->cap * (int64_t)op->p, op->es);
  return blk->pts ? KRR_OK : op->ctx->status;
}

static double ex_block_bytes(const krr_op *op, int64_t cap) {
  return (double)cap * op->p * (double)op->es;
}

static krr_status ex_block_load(krr_op *op, krr_block *blk) {
  return XOP(op, gather_points, EX(op)->X, op->p, blk->idx, blk->b, blk->pts);
}

static krr_status ex_mv(krr_op *op, const krr_block *A, const krr_block *B, const void *V,
                        int64_t ldv, int q, void *out, int64_t ldo) {
  return krr_kernel_mv_any(op->ctx, op->prec, &op->kernel, points(op, A), krr_block_rows(op, A),
                           points(op, B), krr_block_rows(op, B), op->p, V, ldv, q, out, ldo);
}

static krr_status ex_mat(krr_op *op, const krr_block *A, const krr_block *B, void *out,
                         int64_t ldo) {
  return krr_kernel_block_any(op->ctx, op->prec, &op->kernel, points(op, A), krr_block_rows(op, A),
                              points(op, B), krr_block_rows(op, B), op->p, out, ldo);
}

static krr_status ex_gram_mv(krr_op *op, const krr_block *B, const void *V, int64_t ldv, int q,
                             void *out, int64_t ldo, void *work) {
  return krr_kernel_gram_mv(op->ctx, op->prec, &op->kernel, EX(op)->X, op->n, points(op, B),
                            krr_block_rows(op, B), op->p, V, ldv, q, out, ldo, work);
}

/* 0 (two products instead) where the backend does not fuse this kernel */
static double ex_gram_work(const krr_op *op, int64_t b, int q) {
  if (!krr_kernel_gram_fused(op->ctx, op->prec, &op->kernel, b, q)) return 0;
  return (double)krr_kernel_gram_work(b, q);
}

static krr_status ex_diag(krr_op *op, const krr_block *A, double *out) {
  if (op->kernel.type == KRR_COMPOSITE)
    return krr_kcomp_diag(op->ctx, op->prec, &op->kernel, points(op, A), A ? A->b : op->nloc, op->p,
                          out);
  krr_kparams kp = krr_kparams_make(&op->kernel);
  double k0 = krr_kernel_eval(kp, 0.0);
  int64_t b = A ? A->b : op->nloc;
  for (int64_t i = 0; i < b; i++) out[i] = k0;
  return KRR_OK;
}

static krr_status make(krr_ctx *ctx, krr_precision prec, const void *X, int64_t n, int p,
                       krr_kernel kernel, krr_op **out);

static krr_status ex_subset(krr_op *op, const krr_block *A, krr_op **out) {
  return make(op->ctx, op->prec, A->pts, A->b, op->p, op->kernel, out);
}

static void ex_free(krr_op *op) {
  free(op->impl);
  free(op);
}

static const krr_op_vt exact_vt = {
    .name = "exact",
    .block_alloc = ex_block_alloc,
    .block_bytes = ex_block_bytes,
    .block_load = ex_block_load,
    .mv = ex_mv,
    .mat = ex_mat,
    .diag = ex_diag,
    .dot = krr_op_local_dot,
    .nrm2 = krr_op_local_nrm2,
    .gather = krr_op_local_gather,
    .scatter_axpy = krr_op_local_scatter,
    .subset = ex_subset,
    .free = ex_free,
    .gram_mv = ex_gram_mv,
    .gram_work = ex_gram_work,
};

static krr_status make(krr_ctx *ctx, krr_precision prec, const void *X, int64_t n, int p,
                       krr_kernel kernel, krr_op **out) {
  KTRY(krr_op_new(ctx, &exact_vt, prec, n, p, kernel, sizeof(exact_t), out));
  ((exact_t *)(*out)->impl)->X = X;
  return KRR_OK;
}

krr_status krr_op_exact_create(krr_ctx *ctx, const krr_problem *pb, krr_kernel kernel,
                               krr_op **out) {
  *out = NULL;
  if (kernel.type == KRR_COMPOSITE) {
    const char *bad = krr_kspec_invalid(&kernel.spec, pb->p);
    if (bad) return krr_fail(ctx, KRR_ERR_INPUT, "%s", bad);
    return make(ctx, pb->prec, pb->X, pb->n, pb->p, kernel, out);
  }
  if (!(kernel.bandwidth > 0) || !(kernel.bandwidth < INFINITY))
    return krr_fail(ctx, KRR_ERR_INPUT, "`bandwidth` must be positive and finite");
  if (!krr_kernel_name(kernel.type))
    return krr_fail(ctx, KRR_ERR_INPUT, "unknown kernel code %d", (int)kernel.type);
  return make(ctx, pb->prec, pb->X, pb->n, pb->p, kernel, out);
}

const void *krr_op_exact_points(const krr_op *op) {
  return op && op->vt == &exact_vt ? EX(op)->X : NULL;
}
