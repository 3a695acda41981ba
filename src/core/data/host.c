/* Kernel products on host data (prediction, fitted values) and kernel names. */
#include "data.h"
#include <stdlib.h>
#include <string.h>
#include "../kernel_math.h"

const char *krr_kernel_name(krr_kernel_type t) {
#define NAME_(K, name, ...) case KRR_##K: return name;
  switch (t) {
    KRR_KERNEL_LIST(NAME_)
    default: return NULL;
  }
#undef NAME_
}

/* the label and formula text of the kernel list (printing) */
const char *krr_kernel_label(krr_kernel_type t) {
#define LABEL_(K, n, A, L1, ROOT, POLY, DLOGS, DDLOGS, LABEL, FORMULA) case KRR_##K: return LABEL;
  switch (t) {
    KRR_KERNEL_LIST(LABEL_)
    default: return NULL;
  }
#undef LABEL_
}
const char *krr_kernel_formula(krr_kernel_type t) {
#define FORMULA_(K, n, A, L1, ROOT, POLY, DLOGS, DDLOGS, LABEL, FORMULA) case KRR_##K: return FORMULA;
  switch (t) {
    KRR_KERNEL_LIST(FORMULA_)
    default: return NULL;
  }
#undef FORMULA_
}

/* OUT = K(X1, X2) V with X1 taken in blocks of rows (the new points of a
 * prediction): X2 and V are converted and uploaded once, each block of X1 is
 * converted into one reused buffer of at most max(KRR_APPLY_BLOCK_ELEMS,
 * KRR_APPLY_MIN_ROWS x p) elements and multiplied by krr_kernel_mv_any
 * (kernel_mv calls, tiled and multi-threaded inside), so memory beyond the inputs and X2's
 * copy is O(block x (p + q)), never n1 x n2 nor a second copy of all of X1.
 * The environment variable ASKOTCH_APPLY_BLOCK (rows >= 1) overrides the
 * block size (tests: many block boundaries with small data). */
#define KRR_APPLY_BLOCK_ELEMS ((int64_t)1 << 22)
#define KRR_APPLY_MIN_ROWS ((int64_t)1024)

static int64_t apply_block_rows(int64_t n1, int p) {
  if (n1 < 1) return 1;
  const char *env = getenv("ASKOTCH_APPLY_BLOCK");
  if (env && atoll(env) >= 1) return KRR_MIN((int64_t)atoll(env), n1);
  int64_t rows = KRR_APPLY_BLOCK_ELEMS / (p > 0 ? p : 1);
  if (rows < KRR_APPLY_MIN_ROWS) rows = KRR_APPLY_MIN_ROWS;
  if (rows >= n1) return n1;
  const int64_t nblk = (n1 + rows - 1) / rows; /* equal blocks: no short last one */
  return (n1 + nblk - 1) / nblk;
}

krr_status krr_kernel_apply_host(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                 const double *X1, int64_t n1, const double *X2, int64_t n2, int p,
                                 const double *V, int q, double *out) {
  void *dX1 = NULL, *dX2 = NULL, *dV = NULL, *dO = NULL, *stage = NULL;
  double *hO = NULL;
  size_t es = krr_sizeof(prec);
  const int64_t nb = apply_block_rows(n1, p);
  krr_status st = krr_upload_points(ctx, prec, X2, n2, p, &dX2);
  if (st == KRR_OK) st = krr_upload_vec(ctx, prec, V, n2 * (int64_t)q, &dV);
  if (st == KRR_OK && !(dX1 = krr_dalloc(ctx, nb * (int64_t)p, es))) st = ctx->status;
  if (st == KRR_OK && !(dO = krr_dalloc(ctx, nb * (int64_t)q, es))) st = ctx->status;
  if (st == KRR_OK) {
    stage = malloc(es * (size_t)(nb * p));
    hO = (double *)malloc(sizeof(double) * (size_t)(nb * q));
    if (!stage || !hO) st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory staging a block");
  }
  for (int64_t i0 = 0; i0 < n1 && st == KRR_OK; i0 += nb) {
    const int64_t m = n1 - i0 < nb ? n1 - i0 : nb;
    krr_points_rows_to_prec(prec, X1, n1, i0, m, p, stage);
    st = ctx->ops->upload(ctx, dX1, stage, es * (size_t)(m * p));
    if (st == KRR_OK) st = krr_kernel_mv_any(ctx, prec, k, dX1, m, dX2, n2, p, dV, n2, q, dO, m);
    if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, m * (int64_t)q, hO);
    if (st == KRR_OK)
      for (int c = 0; c < q; c++)
        memcpy(out + (int64_t)c * n1 + i0, hO + (int64_t)c * m, sizeof(double) * (size_t)m);
  }
  free(stage);
  free(hO);
  krr_dfree(ctx, &dX1); krr_dfree(ctx, &dX2); krr_dfree(ctx, &dV); krr_dfree(ctx, &dO);
  return st;
}

krr_status krr_kernel_diag_host(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                const double *X, int64_t n, int p, double *out) {
  if (k->type != KRR_COMPOSITE) {
    const double k0 = krr_kernel_eval(krr_kparams_make(k), 0.0);
    for (int64_t i = 0; i < n; i++) out[i] = k0;
    return KRR_OK;
  }
  void *dX = NULL;
  krr_status st = krr_upload_points(ctx, prec, X, n, p, &dX);
  if (st == KRR_OK) st = krr_kcomp_diag(ctx, prec, k, dX, n, p, out);
  krr_dfree(ctx, &dX);
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
  if (st == KRR_OK) st = krr_kernel_block_any(ctx, prec, k, dX1, n1, dX2, n2, p, dO, n1);
  if (st == KRR_OK) st = krr_download_vec(ctx, prec, dO, n1 * n2, out);
  krr_dfree(ctx, &dX1); krr_dfree(ctx, &dX2); krr_dfree(ctx, &dO);
  return st;
}
