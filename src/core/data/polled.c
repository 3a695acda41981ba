/* The device kernel primitives over row chunks with polls between them
 * (data.h: krr_kernel_mv_polled, krr_kernel_block_polled). */
#include "data.h"

/* About 2^32 kernel-coordinate units per chunk, a multiple of 256 rows and
 * at least 256.  One core does about 2.6e10-9e10 units per second in
 * kernel_mv (RBF, p = 10 and 784, float and double: inst/bench/RESULTS.md),
 * so a chunk takes ~0.05-0.17 s on one core, less with threads: short enough
 * to poll for interrupts between chunks.  256 rows is the CPU backend's
 * GEMM-path row tile: smaller chunks would run quarter-empty tiles and
 * recompute X2's row norms for every call. */
int64_t krr_kernel_chunk_rows(int64_t n2, int p, int q) {
  double per_row = (double)(n2 > 1 ? n2 : 1) * ((double)p + 2.0 * (q > 0 ? q : 1) + 16.0);
  double r = 4294967296.0 / per_row;
  if (r < 256) r = 256;
  if (r > 1e9) r = 1e9;
  return ((int64_t)r + 255) / 256 * 256;
}

krr_status krr_kernel_mv_polled(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                const void *X1, int64_t n1, const void *X2, int64_t n2, int p,
                                const void *V, int64_t ldv, int q, void *out, int64_t ldo) {
  size_t es = krr_sizeof(prec);
  int64_t c = krr_kernel_chunk_rows(n2, p, q);
  if (n1 <= c) return KOP(ctx, prec, kernel_mv, k, X1, n1, X2, n2, p, V, ldv, q, out, ldo);
  for (int64_t i0 = 0; i0 < n1; i0 += c) {
    int64_t r = n1 - i0 < c ? n1 - i0 : c;
    KTRY(krr_poll(ctx));
    KTRY(KOP(ctx, prec, kernel_mv, k, KAT(X1, i0 * p, es), r, X2, n2, p, V, ldv, q,
             KAT(out, i0, es), ldo));
  }
  return krr_poll(ctx);
}

krr_status krr_kernel_block_polled(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                   const void *X1, int64_t n1, const void *X2, int64_t n2, int p,
                                   void *out, int64_t ldo) {
  size_t es = krr_sizeof(prec);
  int64_t c = krr_kernel_chunk_rows(n2, p, 1);
  if (n1 <= c) return KOP(ctx, prec, kernel_block, k, X1, n1, X2, n2, p, out, ldo);
  for (int64_t i0 = 0; i0 < n1; i0 += c) {
    int64_t r = n1 - i0 < c ? n1 - i0 : c;
    KTRY(krr_poll(ctx));
    KTRY(KOP(ctx, prec, kernel_block, k, KAT(X1, i0 * p, es), r, X2, n2, p, KAT(out, i0, es), ldo));
  }
  return krr_poll(ctx);
}
