/* The training points on the device, and host <-> device conversions. */
#include <math.h>
#include <string.h>
#include "data.h"

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

/* Rows [r0, r0 + nr) of a host column-major double matrix (leading dimension
 * ldx, p columns) into dst, nr x p row-major in prec.  Transposed in blocks of
 * 8 rows: every column contributes one cache line of 8 consecutive rows, and
 * the 8 destination rows are written sequentially. */
void krr_points_rows_to_prec(krr_precision prec, const double *Xc, int64_t ldx, int64_t r0,
                             int64_t nr, int p, void *dst) {
  const int64_t RB = 8;
  for (int64_t i0 = 0; i0 < nr; i0 += RB) {
    const int64_t ib = nr - i0 < RB ? nr - i0 : RB;
    const double *src = Xc + r0 + i0;
    if (prec == KRR_DOUBLE) {
      double *d = (double *)dst + i0 * p;
      for (int j = 0; j < p; j++, src += ldx)
        for (int64_t i = 0; i < ib; i++) d[i * p + j] = src[i];
    } else {
      float *d = (float *)dst + i0 * p;
      for (int j = 0; j < p; j++, src += ldx)
        for (int64_t i = 0; i < ib; i++) d[i * p + j] = (float)src[i];
    }
  }
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
  void *stage = malloc(es * (size_t)(rows * p));
  if (!stage) {
    ctx->ops->dealloc(ctx, X);
    return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory staging the data");
  }
  krr_status st = KRR_OK;
  for (int64_t r0 = 0; r0 < n && st == KRR_OK; r0 += rows) {
    int64_t nr = n - r0 < rows ? n - r0 : rows;
    krr_points_rows_to_prec(prec, Xc, n, r0, nr, p, stage);
    st = ctx->ops->upload(ctx, KAT(X, r0 * p, es), stage, es * (size_t)(nr * p));
  }
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

krr_status krr_convert(krr_ctx *ctx, krr_precision from, const void *src, krr_precision to,
                       void *dst, int64_t len) {
  size_t ef = krr_sizeof(from), et = krr_sizeof(to);
  if (from == to) return len > 0 ? ctx->ops->copy(ctx, dst, src, ef * (size_t)len) : KRR_OK;
  int64_t chunk = len < KRR_STAGE_ELEMS ? (len > 0 ? len : 1) : KRR_STAGE_ELEMS;
  double *h = (double *)malloc(sizeof(double) * (size_t)chunk);
  if (!h) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory converting a vector");
  krr_status st = KRR_OK;
  for (int64_t i0 = 0; i0 < len && st == KRR_OK; i0 += chunk) {
    int64_t k = len - i0 < chunk ? len - i0 : chunk;
    st = krr_download_vec(ctx, from, KAT(src, i0, ef), k, h);
    if (st == KRR_OK) st = krr_upload_vec_into(ctx, to, h, k, KAT(dst, i0, et));
  }
  free(h);
  return st;
}

krr_status krr_problem_create(krr_ctx *ctx, krr_precision prec, const double *X, int64_t n, int p,
                              krr_problem *pb) {
  memset(pb, 0, sizeof *pb);
  if (n < 2) return krr_fail(ctx, KRR_ERR_INPUT, "need at least 2 observations, got %lld", (long long)n);
  if (p < 1) return krr_fail(ctx, KRR_ERR_INPUT, "need p >= 1");
  pb->prec = prec; pb->n = n; pb->p = p;
  return krr_upload_points(ctx, prec, X, n, p, &pb->X);
}

void krr_problem_free(krr_ctx *ctx, krr_problem *pb) {
  if (!pb) return;
  if (pb->X) ctx->ops->dealloc(ctx, pb->X);
  pb->X = NULL;
}
