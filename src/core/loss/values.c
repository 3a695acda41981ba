/* The primal and dual objective values at host weights: what R records in
 * the trace of a kernel machine at its checks (one kernel pass, F = K a). */
#include "loss.h"

krr_status krr_objective_values_host(krr_op *op, const krr_objective *obj, const double *a_host,
                                     double *primal, double *dual) {
  krr_ctx *ctx = op->ctx;
  int64_t len = op->nloc * (int64_t)obj->m;
  void *a = NULL, *F = NULL, *work = NULL;
  krr_status st = krr_upload_vec(ctx, obj->prec, a_host, len, &a);
  if (st == KRR_OK && !(F = krr_dalloc(ctx, len, op->es))) st = ctx->status;
  if (st == KRR_OK && !(work = krr_dalloc(ctx, len, op->es))) st = ctx->status;
  if (st == KRR_OK) st = krr_op_mv(op, NULL, NULL, a, op->nloc, obj->m, F, op->nloc);
  if (st == KRR_OK) st = krr_objective_values(op, obj, a, F, work, primal, dual);
  krr_dfree(ctx, &work);
  krr_dfree(ctx, &F);
  krr_dfree(ctx, &a);
  return st;
}
