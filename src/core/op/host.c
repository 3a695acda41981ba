/* Operator entries for host data (the R glue): the feature count and theta
 * = Z^T alpha from host weights. */
#include "op.h"

int64_t krr_op_nfeat(const krr_op *op) { return op ? op->nfeat : 0; }

krr_status krr_op_features_theta_host(krr_op *op, const double *alpha_host, int m,
                                      double *theta_host) {
  void *a = NULL;
  krr_status st = krr_upload_vec(op->ctx, op->prec, alpha_host, op->nloc * (int64_t)m, &a);
  if (st == KRR_OK) st = krr_op_features_theta(op, a, m, theta_host);
  krr_dfree(op->ctx, &a);
  return st;
}
