/* Kernel products on host data (prediction, fitted values) and kernel names. */
#include "data.h"
#include "../kernel_math.h"

const char *krr_kernel_name(krr_kernel_type t) {
#define NAME_(K, name, ...) case KRR_##K: return name;
  switch (t) {
    KRR_KERNEL_LIST(NAME_)
    default: return NULL;
  }
#undef NAME_
}

krr_status krr_kernel_apply_host(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                 const double *X1, int64_t n1, const double *X2, int64_t n2, int p,
                                 const double *V, int q, double *out) {
  void *dX1 = NULL, *dX2 = NULL, *dV = NULL, *dO = NULL;
  size_t es = krr_sizeof(prec);
  krr_status st = krr_upload_points(ctx, prec, X1, n1, p, &dX1);
  if (st == KRR_OK) st = krr_upload_points(ctx, prec, X2, n2, p, &dX2);
  if (st == KRR_OK) st = krr_upload_vec(ctx, prec, V, n2 * (int64_t)q, &dV);
  if (st == KRR_OK && !(dO = krr_dalloc(ctx, n1 * (int64_t)q, es))) st = ctx->status;
  if (st == KRR_OK) st = KOP(ctx, prec, kernel_mv, k, dX1, n1, dX2, n2, p, dV, n2, q, dO, n1);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, n1 * (int64_t)q, out);
  krr_dfree(ctx, &dX1); krr_dfree(ctx, &dX2); krr_dfree(ctx, &dV); krr_dfree(ctx, &dO);
  return st;
}

krr_status krr_kernel_matrix_host(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                  const double *X1, int64_t n1, const double *X2, int64_t n2, int p,
                                  double *out) {
  void *dX1 = NULL, *dX2 = NULL, *dO = NULL;
  size_t es = krr_sizeof(prec);
  krr_status st = krr_upload_points(ctx, prec, X1, n1, p, &dX1);
  if (st == KRR_OK) st = krr_upload_points(ctx, prec, X2, n2, p, &dX2);
  if (st == KRR_OK && !(dO = krr_dalloc(ctx, n1 * n2, es))) st = ctx->status;
  if (st == KRR_OK) st = KOP(ctx, prec, kernel_block, k, dX1, n1, dX2, n2, p, dO, n1);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, n1 * n2, out);
  krr_dfree(ctx, &dX1); krr_dfree(ctx, &dX2); krr_dfree(ctx, &dO);
  return st;
}
