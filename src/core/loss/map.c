/* The generic entries of the non-quadratic losses (huber.c, svr.c, ...):
 * gradient, curvature, box and the sums of the objectives through the device
 * map loss_map (ops.h) of the loss's code; the formulas are in loss_math.h.
 * A file of its own so that the loss table (loss.c) and the loss files do
 * not depend on each other in a circle. */
#include <math.h>
#include "loss.h"
#include "../loss_math.h"

double krr_precision_eps(krr_precision prec) { return prec == KRR_FLOAT ? 0x1p-24 : 0x1p-53; }

/* --- the generic entries of the non-quadratic losses ------------------------- */
#define LMAP(ctx, obj, kind, len, y, a, out)                                              \
  KOP(ctx, (obj)->prec, loss_map, (obj)->loss->code, kind, len, (obj)->lambda, (obj)->param, \
      y, a, out)

krr_status krr_loss_map_grad(krr_ctx *ctx, const krr_objective *obj, int64_t len, const void *yB,
                             const void *aB, void *out) {
  return LMAP(ctx, obj, KRR_MAP_GRAD, len, yB, aB, out);
}

krr_status krr_loss_map_curv(krr_ctx *ctx, const krr_objective *obj, int64_t len, const void *yB,
                             const void *aB, void *out) {
  return LMAP(ctx, obj, KRR_MAP_CURV, len, yB, aB, out);
}

void krr_loss_map_box(const krr_objective *obj, double y, double *lo, double *hi) {
  krr_lm_box(obj->loss->code, obj->lambda, obj->param, krr_precision_eps(obj->prec), y, lo, hi);
}

/* sum xi(F) and sum xi*(-lambda a): elementwise values in work, reduced over the
 * operator against ones (an MPI operator reduces krr_op_dot over its pieces) */
krr_status krr_loss_map_sums(krr_op *op, const krr_objective *obj, const void *a, const void *F,
                             void *work, double *ls, double *cs) {
  krr_ctx *ctx = op->ctx;
  int64_t len = op->nloc * (int64_t)obj->m;
  /* the sums over the rows each column uses: against obj->rows when rows are held out */
  void *ones = obj->rows ? NULL : krr_dalloc(ctx, len, op->es);
  const void *use = obj->rows ? obj->rows : ones;
  krr_status st = use ? KRR_OK : ctx->status;
  if (st == KRR_OK && ones) st = LMAP(ctx, obj, KRR_MAP_ONES, len, NULL, NULL, ones);
  if (st == KRR_OK) st = LMAP(ctx, obj, KRR_MAP_LOSS, len, obj->y, F, work);
  if (st == KRR_OK) st = krr_op_dot(op, len, work, use, ls);
  if (st == KRR_OK) st = LMAP(ctx, obj, KRR_MAP_CONJ, len, obj->y, a, work);
  if (st == KRR_OK) st = krr_op_dot(op, len, work, use, cs);
  krr_dfree(ctx, &ones);
  return st;
}

