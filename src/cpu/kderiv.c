/* kernel_deriv_dot on the CPU (ops.h): the column blocks of the likelihood
 * gradient's contraction (core/kderiv_math.h) on the context's threads,
 * each with its own scratch.  Each block's sums go to its own place in part
 * and the core adds them in block order, so the result does not depend on
 * which thread took which block. */
#include <stdlib.h>
#include "cpu.h"
#include "../core/kderiv_math.h"

krr_status krr_cpu_kernel_deriv_dot(krr_ctx *ctx, const krr_ddot *d, int64_t b0, int64_t b1,
                                    double *part) {
  if (b0 < 0 || b1 < b0 || b1 > krr_ddot_blocks(d->n))
    return krr_fail(ctx, KRR_ERR_INPUT, "kernel_deriv_dot: invalid blocks [%lld, %lld)",
                    (long long)b0, (long long)b1);
  /* the pairs of the blocks (i <= l) at about the kernel's cost each */
  const double l0 = (double)b0 * KRR_DDOT_BLOCK, l1 = (double)b1 * KRR_DDOT_BLOCK;
  const double pairs = (l1 * l1 - l0 * l0) / 2;
  const int nt = krr_cpu_team(ctx, pairs * (d->p + 2.0 * d->r + 20.0 * (d->nd > 0 ? d->nd : 1)));
  const size_t per = (size_t)krr_ddot_scratch(d->n);
  double *scratch = (double *)malloc(sizeof(double) * per * (size_t)nt);
  if (!scratch)
    return krr_fail(ctx, KRR_ERR_MEMORY, "kernel_deriv_dot: cannot allocate %.0f bytes",
                    8.0 * (double)per * nt);
    /* the last blocks have the most rows: taken first */
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1)
  for (int64_t b = b1 - 1; b >= b0; b--)
    krr_ddot_block(d, b, part + b * d->nd, scratch + per * (size_t)krr_cpu_thread_num());
  free(scratch);
  return KRR_OK;
}
