/* Falkon's product K(X2, X1) K(X1, X2) V with each kernel pair evaluated
 * once (data.h: krr_kernel_gram_mv); two matrix-free products
 * (krr_kernel_mv_polled) would evaluate every pair twice.  FalkonML's fmmv
 * fuses the same way (Meanti et al. 2020, sec. 3).
 *  - A listed kernel on a backend with the kernel_gram op (the CPU): that
 *    op over chunks of X1's rows, polled between chunks, summing into a
 *    double n2 x q accumulator.
 *  - Otherwise (composite kernels; a device): a tile of r rows of X1
 *    against all of X2 is materialised (kernel_block), W = tile^T V and
 *    OUT += tile W follow as two BLAS products, and the tile is overwritten
 *    by the next one; on a device a tile is large enough for the BLAS to
 *    run at speed.  The sum over tiles is kept in double in single
 *    precision too.
 * Chunk and tile lengths depend only on the sizes and the backend, so
 * results are reproducible for every thread count. */
#include "data.h"

/* bytes of one tile: the host's fits its caches, a device's amortises the
 * launches */
#define GRAM_HOST_BYTES (4.0 * 1024 * 1024)
#define GRAM_DEVICE_BYTES (256.0 * 1024 * 1024)

static int64_t gram_rows(const krr_ctx *ctx, size_t es, int64_t n1, int64_t n2) {
  double target = krr_ctx_on_host(ctx) ? GRAM_HOST_BYTES : GRAM_DEVICE_BYTES;
  double r = target / ((double)es * (double)(n2 > 1 ? n2 : 1));
  int64_t rows = r > 1e9 ? (int64_t)1e9 : (int64_t)r / 32 * 32; /* whole vector lanes */
  if (rows < 32) rows = 32;
  return rows < n1 ? rows : (n1 > 1 ? n1 : 1);
}

/* the double accumulators (single precision only) come first, for their
 * alignment: acc and its addend, n2 x q each */
static size_t acc_bytes(krr_precision prec, int64_t n2, int q) {
  return prec == KRR_DOUBLE ? 0 : 2 * sizeof(double) * (size_t)(n2 * q);
}

/* the backend's fused op for a listed kernel, or NULL */
static krr_status (*fused_d(const krr_ctx *ctx,
                            const krr_kernel *k))(krr_ctx *, const krr_kernel *, const double *,
                                                  int64_t, const double *, int64_t, int,
                                                  const double *, int64_t, int, double *) {
  return k->type == KRR_COMPOSITE ? NULL : ctx->ops->kernel_gram_d;
}
static krr_status (*fused_s(const krr_ctx *ctx,
                            const krr_kernel *k))(krr_ctx *, const krr_kernel *, const float *,
                                                  int64_t, const float *, int64_t, int,
                                                  const float *, int64_t, int, double *) {
  return k->type == KRR_COMPOSITE ? NULL : ctx->ops->kernel_gram_s;
}
static int has_fused(const krr_ctx *ctx, krr_precision prec, const krr_kernel *k) {
  return prec == KRR_DOUBLE ? fused_d(ctx, k) != NULL : fused_s(ctx, k) != NULL;
}

size_t krr_kernel_gram_work(const krr_ctx *ctx, krr_precision prec, const krr_kernel *k, int64_t n1,
                            int64_t n2, int q) {
  if (has_fused(ctx, prec, k)) return sizeof(double) * (size_t)(n2 * q);
  size_t es = krr_sizeof(prec);
  int64_t r = gram_rows(ctx, es, n1, n2);
  size_t own = prec == KRR_DOUBLE ? 0 : (size_t)(n2 * q); /* the tile's term before its sum */
  return acc_bytes(prec, n2, q) + es * ((size_t)(r * n2 + r * q) + own);
}

/* OUT(n2 x q, ld ldo) <- the double sum acc (n2 x q) */
static krr_status acc_out(krr_ctx *ctx, krr_precision prec, const double *acc, int64_t n2, int q,
                          void *out, int64_t ldo) {
  for (int c = 0; c < q; c++)
    KTRY(krr_convert(ctx, KRR_DOUBLE, acc + (size_t)c * n2, prec,
                     KAT(out, (size_t)c * ldo, krr_sizeof(prec)), n2));
  return KRR_OK;
}

/* the backend's kernel_gram over chunks of X1's rows into acc (work) */
static krr_status gram_fused(krr_ctx *ctx, krr_precision prec, const krr_kernel *k, const void *X1,
                             int64_t n1, const void *X2, int64_t n2, int p, const void *V,
                             int64_t ldv, int q, void *out, int64_t ldo, double *acc) {
  const size_t es = krr_sizeof(prec);
  const int64_t c = krr_kernel_chunk_rows(n2, p, q);
  KTRY(ctx->ops->zero(ctx, acc, sizeof(double) * (size_t)(n2 * q)));
  for (int64_t i0 = 0; i0 < n1; i0 += c) {
    const int64_t r = n1 - i0 < c ? n1 - i0 : c;
    if (i0) KTRY(krr_poll(ctx));
    if (prec == KRR_DOUBLE)
      KTRY(fused_d(ctx, k)(ctx, k, (const double *)KAT(X1, i0 * p, es), r, (const double *)X2, n2,
                           p, (const double *)V, ldv, q, acc));
    else
      KTRY(fused_s(ctx, k)(ctx, k, (const float *)KAT(X1, i0 * p, es), r, (const float *)X2, n2, p,
                           (const float *)V, ldv, q, acc));
  }
  return acc_out(ctx, prec, acc, n2, q, out, ldo);
}

krr_status krr_kernel_gram_mv(krr_ctx *ctx, krr_precision prec, const krr_kernel *k, const void *X1,
                              int64_t n1, const void *X2, int64_t n2, int p, const void *V,
                              int64_t ldv, int q, void *out, int64_t ldo, void *work) {
  if (n2 <= 0 || q <= 0) return KRR_OK;
  if (n1 <= 0) { /* an empty sum */
    for (int c = 0; c < q; c++)
      KTRY(ctx->ops->zero(ctx, KAT(out, (size_t)c * ldo, krr_sizeof(prec)),
                          krr_sizeof(prec) * (size_t)n2));
    return KRR_OK;
  }
  if (has_fused(ctx, prec, k)) {
    KTRY(gram_fused(ctx, prec, k, X1, n1, X2, n2, p, V, ldv, q, out, ldo, (double *)work));
    return krr_poll(ctx);
  }
  const size_t es = krr_sizeof(prec);
  const int dbl = prec == KRR_DOUBLE;
  const int64_t r = gram_rows(ctx, es, n1, n2), poll_rows = krr_kernel_chunk_rows(n2, p, q);
  double *acc = (double *)work, *add = acc + (dbl ? 0 : n2 * q);
  void *tile = KAT(work, acc_bytes(prec, n2, q), 1);
  void *W = KAT(tile, r * n2, es), *T = KAT(W, r * q, es);
  int64_t since = 0;
  for (int64_t i0 = 0; i0 < n1; i0 += r) {
    const int64_t b = n1 - i0 < r ? n1 - i0 : r;
    if (since >= poll_rows) {
      KTRY(krr_poll(ctx));
      since = 0;
    }
    since += b;
    /* tile = K(X2, X1 rows) (n2 x b: a column per row of X1, so both
     * products run along columns of length n2), W = tile^T V, then OUT (or
     * T) = tile W */
    KTRY(krr_kernel_block_any(ctx, prec, k, X2, n2, KAT(X1, i0 * p, es), b, p, tile, n2));
    KTRY(KOP(ctx, prec, gemm, 1, 0, b, q, n2, 1.0, tile, n2, V, ldv, 0.0, W, b));
    if (dbl) {
      KTRY(KOP(ctx, prec, gemm, 0, 0, n2, q, b, 1.0, tile, n2, W, b, i0 ? 1.0 : 0.0, out, ldo));
      continue;
    }
    KTRY(KOP(ctx, prec, gemm, 0, 0, n2, q, b, 1.0, tile, n2, W, b, 0.0, T, n2));
    KTRY(krr_convert(ctx, prec, T, KRR_DOUBLE, i0 ? add : acc, n2 * q));
    if (i0) KTRY(KOP(ctx, KRR_DOUBLE, axpby, n2 * q, 1.0, (void *)add, 1.0, (void *)acc));
  }
  if (!dbl) KTRY(acc_out(ctx, prec, acc, n2, q, out, ldo));
  return krr_poll(ctx);
}
