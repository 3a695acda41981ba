/* Products with the kernel matrix of a block, K_BB (materialised when it
 * fits, else matrix-free), and with K_BB + lambda I: the products the
 * block preconditioners sketch and the powering measures. */
#include "linalg.h"

krr_status krr_kbb_mul(void *arg, const void *V, int q, void *Y) {
  const krr_kbb *k = (const krr_kbb *)arg;
  int64_t b = k->blk->b;
  if (k->KB)
    return KOP(k->op->ctx, k->op->prec, gemm, 0, 0, b, q, b, 1.0, k->KB, b, V, b, 0.0, Y, b);
  return krr_op_mv(k->op, k->blk, k->blk, V, b, q, Y, b);
}

krr_status krr_kbb_hmul(void *arg, const void *V, int q, void *Y) {
  const krr_kbb *k = (const krr_kbb *)arg;
  KTRY(krr_kbb_mul(arg, V, q, Y));
  return KOP(k->op->ctx, k->op->prec, axpby, k->blk->b * q, k->lambda, V, 1.0, Y);
}
