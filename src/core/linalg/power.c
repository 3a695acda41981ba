/* Randomised powering for the preconditioned step size (Rathore et al.,
 * Alg. 3): the Rayleigh quotient is taken before normalising, so the last
 * estimate belongs to the last vector. */
#include <math.h>
#include "linalg.h"

krr_status krr_power_lmax(krr_ctx *ctx, krr_lowrank *lr, krr_matmul_fn mul, void *arg,
                          int iters, uint64_t seed, void *p1, void *p2, void *p3, double *L) {
  krr_precision prec = lr->prec;
  int64_t b = lr->n;
  double nv = 0, l = 0;
  KTRY(KOP(ctx, prec, randn, b, seed, 0, p1));
  KTRY(KOP(ctx, prec, nrm2, b, p1, &nv));
  KTRY(KOP(ctx, prec, axpby, b, 0.0, p1, 1.0 / nv, p1));
  for (int it = 0; it < iters; it++) {
    KTRY(krr_poll(ctx));
    KTRY(krr_lowrank_invsqrt(ctx, lr, p1, p2, 1));
    KTRY(mul(arg, p2, 1, p3));
    KTRY(krr_lowrank_invsqrt(ctx, lr, p3, p2, 1));
    KTRY(KOP(ctx, prec, dot, b, p1, p2, &l));
    KTRY(KOP(ctx, prec, nrm2, b, p2, &nv));
    if (!(nv > 0) || !isfinite(nv)) break;
    KTRY(KOP(ctx, prec, axpby, b, 1.0 / nv, p2, 0.0, p1));
  }
  if (!(l > 0) || !isfinite(l))
    return krr_fail(ctx, KRR_ERR_NUMERIC, "stepsize estimate (powering) is not positive: %g", l);
  *L = l;
  return KRR_OK;
}
