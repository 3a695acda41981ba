/* The training-set operator of a fit, composed in one order for every front
 * end (the R glue, the MPI ranks, the C driver):
 *
 *   exact kernel | M random features | linear   (exact.c | features.c | linear.c)
 *     -> sharded over the ranks of comm     (sharded.c; exact kernel only)
 *     -> K + c 1 1^T, c > 0                 (shift.c; a penalised intercept)
 *     -> D K D, D = diag(d), d = sqrt(w)    (scale.c; observation weights w)
 *
 * The features code M selects the innermost operator: M = 0 the exact
 * kernel, M > 0 M random Fourier features of the kernel, M < 0 the linear
 * operator K = X X^T, whose features are the points themselves (the kernel
 * is not used): linear ridge regression in the feature-space solvers, or
 * ridge regression in any explicit features given as the points (R's
 * svrg(features = "nystrom") passes its Nystrom features so).
 *
 * Weighted KRR (K + lambda W^{-1}) alpha = y, W = D^2, is solved as
 * (D K D + lambda I) v = D y with alpha = D v: krr_obs_targets scales the
 * targets, krr_obs_scale_rows the solution (and a warm start back). */
#include "op.h"

krr_status krr_op_compose(krr_ctx *ctx, const krr_problem *pb, krr_kernel kernel, int64_t M,
                          uint64_t seed, double c, const double *obsd, struct krr_comm *comm,
                          krr_op **out) {
  krr_op *inner = NULL, *mid = NULL;
  *out = NULL;
  if (kernel.type == KRR_COMPOSITE && comm)
    return krr_fail(ctx, KRR_ERR_INPUT,
                    "a composite kernel takes the exact kernel or random features on one "
                    "process (no distributed fit)");
  krr_status st = M > 0   ? krr_op_features_create(ctx, pb, &kernel, M, seed, &inner)
                  : M < 0 ? krr_op_linear_create(ctx, pb, &inner)
                          : krr_op_exact_create(ctx, pb, kernel, &inner);
  if (st != KRR_OK) return st;
  if (comm) { /* a distributed fit: rows sharded */
    krr_op *local = inner;
    if (M != 0 || c > 0 || obsd) {
      krr_op_free(local);
      return krr_fail(ctx, KRR_ERR_INPUT,
                      "a distributed fit takes the exact kernel without "
                      "features, intercept or observation weights");
    }
    st = krr_op_sharded_create(local, comm, &inner);
    if (st != KRR_OK) return st;
  }
  if (c > 0) {
    st = krr_op_shift_create(inner, c, &mid);
    if (st != KRR_OK) return st;
  } else {
    mid = inner;
  }
  if (obsd) return krr_op_scale_create(mid, obsd, out);
  *out = mid;
  return KRR_OK;
}

void krr_obs_scale_rows(const double *d, const int64_t *idx, int64_t rows, int m, double *W,
                        int inverse) {
  for (int64_t i = 0; i < rows; i++) {
    double di = d[idx ? idx[i] : i];
    for (int c = 0; c < m; c++)
      W[i + (int64_t)c * rows] =
          inverse ? W[i + (int64_t)c * rows] / di : W[i + (int64_t)c * rows] * di;
  }
}

void krr_obs_targets(const double *d, const double *y, int64_t n, int m, double *ys) {
  for (int c = 0; c < m; c++)
    for (int64_t i = 0; i < n; i++) ys[i + c * n] = y[i + c * n] * d[i];
}
