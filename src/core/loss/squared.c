/* The squared loss l(y, F) = 1/2 (y - F)^2 (kernel ridge regression):
 * xi*(u) = u^2/2 + u y, so f(a) = lambda/2 ||a||^2 - y^T a, grad f = lambda a
 * - y, curvature lambda, no box; the dual is (K + lambda I) a = y and the
 * criterion the relative residual. */
#include <math.h>
#include "loss.h"

#define LOP(ctx, obj, name, ...) KOP(ctx, (obj)->prec, name, __VA_ARGS__)

/* len = rows x m, column-major; a lambda path (obj->lcol): lambda_j a_j - y_j */
static krr_status sq_grad(krr_ctx *ctx, const krr_objective *obj, int64_t len, const void *yB,
                          const void *aB, void *out) {
  size_t es = krr_sizeof(obj->prec);
  if (out != aB) KTRY(ctx->ops->copy(ctx, out, aB, es * (size_t)len));
  if (!obj->lcol) return LOP(ctx, obj, axpby, len, -1.0, yB, obj->lambda, out);
  int64_t rows = len / obj->m;
  for (int j = 0; j < obj->m; j++)
    KTRY(LOP(ctx, obj, axpby, rows, -1.0, KAT(yB, (int64_t)j * rows, es), obj->lcol[j],
             KAT(out, (int64_t)j * rows, es)));
  return KRR_OK;
}

static void sq_box(const krr_objective *obj, double y, double *lo, double *hi) {
  (void)obj; (void)y;
  *lo = -INFINITY;
  *hi = INFINITY;
}

/* sum 1/2 (F - y)^2 and sum (lambda^2 a^2 / 2 - lambda a y) */
static krr_status sq_sums(krr_op *op, const krr_objective *obj, const void *a, const void *F,
                          void *work, double *ls, double *cs) {
  krr_ctx *ctx = op->ctx;
  int64_t len = op->nloc * (int64_t)obj->m;
  double r = 0, aa = 0, ay = 0;
  KTRY(ctx->ops->copy(ctx, work, F, op->es * (size_t)len));
  KTRY(LOP(ctx, obj, axpby, len, -1.0, obj->y, 1.0, work));
  KTRY(krr_op_nrm2(op, len, work, &r));
  KTRY(krr_op_dot(op, len, a, a, &aa));
  KTRY(krr_op_dot(op, len, a, obj->y, &ay));
  *ls = 0.5 * r * r;
  *cs = 0.5 * obj->lambda * obj->lambda * aa - obj->lambda * ay;
  return KRR_OK;
}

const krr_loss krr_loss_squared = {
    .name = "squared",
    .crit = KRR_CRIT_RESIDUAL,
    .linear = 1,
    .code = KRR_LOSS_SQUARED,
    .grad = sq_grad,
    .curv = NULL,
    .curv_const = 1.0,
    .box = sq_box,
    .sums = sq_sums,
};
