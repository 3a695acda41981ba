/* Problem setup, host<->device conversion, host-level kernel products. */
#include <math.h>
#include <string.h>
#include "internal.h"

#define KRR_STAGE_ELEMS ((int64_t)1 << 20) /* host staging chunk: 1M elements */

void krr_host_to_prec(krr_precision prec, const double *src, int64_t len, void *dst) {
  if (prec == KRR_DOUBLE) { memcpy(dst, src, sizeof(double) * (size_t)len); return; }
  float *f = (float *)dst;
  for (int64_t i = 0; i < len; i++) f[i] = (float)src[i];
}

void krr_prec_to_host(krr_precision prec, const void *src, int64_t len, double *dst) {
  if (prec == KRR_DOUBLE) { memcpy(dst, src, sizeof(double) * (size_t)len); return; }
  const float *f = (const float *)src;
  for (int64_t i = 0; i < len; i++) dst[i] = (double)f[i];
}

krr_status krr_upload_points(krr_ctx *ctx, krr_precision prec, const double *Xc, int64_t n,
                             int p, void **dev_out) {
  size_t es = krr_sizeof(prec);
  *dev_out = NULL;
  if (n < 1 || p < 1) return krr_fail(ctx, KRR_ERR_INPUT, "points: need n >= 1 and p >= 1");
  void *X = krr_dalloc(ctx, n * (int64_t)p, es);
  if (!X) return ctx->status;
  int64_t rows = KRR_STAGE_ELEMS / p;
  if (rows < 1) rows = 1;
  if (rows > n) rows = n;
  double *tmp = (double *)malloc(sizeof(double) * (size_t)(rows * p));
  void *stage = malloc(es * (size_t)(rows * p));
  if (!tmp || !stage) {
    free(tmp); free(stage); ctx->ops->dealloc(ctx, X);
    return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory staging the data");
  }
  krr_status st = KRR_OK;
  for (int64_t r0 = 0; r0 < n && st == KRR_OK; r0 += rows) {
    int64_t nr = n - r0 < rows ? n - r0 : rows;
    for (int64_t i = 0; i < nr; i++)
      for (int j = 0; j < p; j++) tmp[i * p + j] = Xc[(r0 + i) + (int64_t)j * n];
    krr_host_to_prec(prec, tmp, nr * p, stage);
    st = ctx->ops->upload(ctx, KAT(X, r0 * p, es), stage, es * (size_t)(nr * p));
  }
  free(tmp);
  free(stage);
  if (st != KRR_OK) { ctx->ops->dealloc(ctx, X); return st; }
  *dev_out = X;
  return KRR_OK;
}

krr_status krr_upload_vec(krr_ctx *ctx, krr_precision prec, const double *h, int64_t len,
                          void **dev_out) {
  size_t es = krr_sizeof(prec);
  *dev_out = NULL;
  void *d = krr_dalloc(ctx, len, es);
  if (!d) return ctx->status;
  krr_status st = KRR_OK;
  if (prec == KRR_DOUBLE) {
    st = ctx->ops->upload(ctx, d, h, es * (size_t)len);
  } else {
    int64_t chunk = KRR_STAGE_ELEMS;
    void *stage = malloc(es * (size_t)(len < chunk ? (len > 0 ? len : 1) : chunk));
    if (!stage) st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory staging a vector");
    for (int64_t i0 = 0; i0 < len && st == KRR_OK; i0 += chunk) {
      int64_t k = len - i0 < chunk ? len - i0 : chunk;
      krr_host_to_prec(prec, h + i0, k, stage);
      st = ctx->ops->upload(ctx, KAT(d, i0, es), stage, es * (size_t)k);
    }
    free(stage);
  }
  if (st != KRR_OK) { ctx->ops->dealloc(ctx, d); return st; }
  *dev_out = d;
  return KRR_OK;
}

krr_status krr_upload_vec_into(krr_ctx *ctx, krr_precision prec, const double *h, int64_t len,
                               void *dst) {
  if (len <= 0) return KRR_OK;
  if (prec == KRR_DOUBLE) return ctx->ops->upload(ctx, dst, h, sizeof(double) * (size_t)len);
  float small[256];
  float *f = len <= 256 ? small : (float *)malloc(sizeof(float) * (size_t)len);
  if (!f) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory staging a vector");
  krr_host_to_prec(prec, h, len, f);
  krr_status st = ctx->ops->upload(ctx, dst, f, sizeof(float) * (size_t)len);
  if (f != small) free(f);
  return st;
}

krr_status krr_download_vec(krr_ctx *ctx, krr_precision prec, const void *d, int64_t len,
                            double *h) {
  if (prec == KRR_DOUBLE) return ctx->ops->download(ctx, h, d, sizeof(double) * (size_t)len);
  int64_t chunk = KRR_STAGE_ELEMS;
  float *stage = (float *)malloc(sizeof(float) * (size_t)(len < chunk ? (len > 0 ? len : 1) : chunk));
  if (!stage) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory staging a vector");
  krr_status st = KRR_OK;
  for (int64_t i0 = 0; i0 < len && st == KRR_OK; i0 += chunk) {
    int64_t k = len - i0 < chunk ? len - i0 : chunk;
    st = ctx->ops->download(ctx, stage, (const float *)d + i0, sizeof(float) * (size_t)k);
    if (st == KRR_OK) krr_prec_to_host(KRR_FLOAT, stage, k, h + i0);
  }
  free(stage);
  return st;
}

krr_status krr_problem_create(krr_ctx *ctx, krr_precision prec, const double *X, int64_t n, int p,
                              const double *y, int m, krr_kernel kernel, double lambda,
                              krr_problem *pb) {
  memset(pb, 0, sizeof *pb);
  if (n < 2) return krr_fail(ctx, KRR_ERR_INPUT, "need at least 2 observations, got %lld", (long long)n);
  if (p < 1 || m < 1) return krr_fail(ctx, KRR_ERR_INPUT, "need p >= 1 and m >= 1");
  if (!(kernel.bandwidth > 0) || !isfinite(kernel.bandwidth))
    return krr_fail(ctx, KRR_ERR_INPUT, "bandwidth must be positive and finite");
  if (!(lambda > 0) || !isfinite(lambda))
    return krr_fail(ctx, KRR_ERR_INPUT, "lambda must be positive and finite");
  if ((int)kernel.type < 0 || (int)kernel.type >= KRR_N_KERNELS)
    return krr_fail(ctx, KRR_ERR_INPUT, "unknown kernel code %d", (int)kernel.type);
  pb->prec = prec; pb->n = n; pb->p = p; pb->m = m; pb->kernel = kernel; pb->lambda = lambda;
  double s = 0.0;
  for (int64_t i = 0; i < n * (int64_t)m; i++) s += y[i] * y[i];
  pb->ynorm = sqrt(s);
  KTRY(krr_upload_points(ctx, prec, X, n, p, &pb->X));
  krr_status st = krr_upload_vec(ctx, prec, y, n * (int64_t)m, &pb->y);
  if (st != KRR_OK) { krr_problem_free(ctx, pb); return st; }
  return KRR_OK;
}

void krr_problem_free(krr_ctx *ctx, krr_problem *pb) {
  if (!pb) return;
  krr_dfree(ctx, &pb->X);
  krr_dfree(ctx, &pb->y);
}

krr_status krr_problem_residual(krr_ctx *ctx, const krr_problem *pb, const void *w, double *rel) {
  size_t es = krr_sizeof(pb->prec);
  int64_t nm = pb->n * (int64_t)pb->m;
  void *r = krr_dalloc(ctx, nm, es);
  if (!r) return ctx->status;
  krr_status st = KOP(ctx, pb->prec, kernel_mv, &pb->kernel, pb->X, pb->n, pb->X, pb->n, pb->p,
                      w, pb->n, pb->m, r, pb->n);
  if (st == KRR_OK) st = KOP(ctx, pb->prec, axpby, nm, pb->lambda, w, 1.0, r);
  if (st == KRR_OK) st = KOP(ctx, pb->prec, axpby, nm, -1.0, pb->y, 1.0, r);
  double nr = 0;
  if (st == KRR_OK) st = KOP(ctx, pb->prec, nrm2, nm, r, &nr);
  ctx->ops->dealloc(ctx, r);
  if (st == KRR_OK) *rel = pb->ynorm > 0 ? nr / pb->ynorm : nr;
  return st;
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
