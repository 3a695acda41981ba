/* Falkon's product K(X2, X1) K(X1, X2) V with each kernel pair evaluated
 * once (data.h: krr_kernel_gram_mv), where the backend offers it: its
 * kernel_gram op (the CPU, listed kernels, n2 q up to 2^19) over chunks of
 * X1's rows, polled between chunks, summed into a double n2 x q
 * accumulator.  FalkonML's fmmv fuses the same way (Meanti et al. 2020,
 * sec. 3).  Elsewhere (composite kernels, devices) krr_op_gram_mv makes the
 * two matrix-free products.  The chunk length depends only on the sizes, so
 * results are reproducible for every thread count. */
#include "data.h"

/* n2 x q at most this: the CPU op's 16 double group sums then take at most
 * 64 MiB, its cap; beyond it the op would sum in fewer groups than threads */
#define GRAM_MAX_NQ ((int64_t)1 << 19)

int krr_kernel_gram_fused(const krr_ctx *ctx, krr_precision prec, const krr_kernel *k, int64_t n2,
                          int q) {
  if (k->type == KRR_COMPOSITE || n2 * (int64_t)q > GRAM_MAX_NQ) return 0;
  return prec == KRR_DOUBLE ? ctx->ops->kernel_gram_d != NULL : ctx->ops->kernel_gram_s != NULL;
}

size_t krr_kernel_gram_work(int64_t n2, int q) { return sizeof(double) * (size_t)(n2 * q); }

krr_status krr_kernel_gram_mv(krr_ctx *ctx, krr_precision prec, const krr_kernel *k, const void *X1,
                              int64_t n1, const void *X2, int64_t n2, int p, const void *V,
                              int64_t ldv, int q, void *out, int64_t ldo, void *work) {
  if (!krr_kernel_gram_fused(ctx, prec, k, n2, q))
    return krr_fail(ctx, KRR_ERR_INTERNAL, "kernel_gram: not offered by the %s backend here",
                    ctx->ops->name);
  if (n2 <= 0 || q <= 0) return KRR_OK;
  const size_t es = krr_sizeof(prec);
  const int64_t c = krr_kernel_chunk_rows(n2, p, q);
  double *acc = (double *)work;
  KTRY(ctx->ops->zero(ctx, acc, sizeof(double) * (size_t)(n2 * q)));
  for (int64_t i0 = 0; i0 < n1; i0 += c) {
    const int64_t r = n1 - i0 < c ? n1 - i0 : c;
    KTRY(krr_poll(ctx));
    KTRY(prec == KRR_DOUBLE
             ? ctx->ops->kernel_gram_d(ctx, k, (const double *)KAT(X1, i0 * p, es), r,
                                       (const double *)X2, n2, p, (const double *)V, ldv, q, acc)
             : ctx->ops->kernel_gram_s(ctx, k, (const float *)KAT(X1, i0 * p, es), r,
                                       (const float *)X2, n2, p, (const float *)V, ldv, q, acc));
  }
  for (int j = 0; j < q; j++)
    KTRY(krr_convert(ctx, KRR_DOUBLE, acc + (size_t)j * n2, prec, KAT(out, (size_t)j * ldo, es),
                     n2));
  return krr_poll(ctx);
}
