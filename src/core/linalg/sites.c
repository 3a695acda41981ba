/* The Gaussian posterior of a Gaussian-process prior and Gaussian sites:
 * the step that expectation propagation repeats every sweep, and the
 * Laplace approximation every Newton iteration (Rasmussen and Williams
 * 2006, sec. 3.4 and 3.6; GPML's epComputeParams).  With prior covariance K (n x n), site
 * precisions tau >= 0 and shifts nu, S = diag(tau) and
 * B = I + S^1/2 K S^1/2 = R^T R:
 *   posterior covariance  Sigma = K - K S^1/2 B^-1 S^1/2 K,
 *   its diagonal          K_ii - ||R^-T S^1/2 k_i||^2,
 *   mean weights          alpha = nu - S^1/2 B^-1 S^1/2 K nu,
 *   posterior mean        K alpha.
 * The variances are taken from the triangular solve with all n columns
 * (n^3 flops after the factor's n^3 / 3), not from the diagonal of B^-1 as
 * (1 - (B^-1)_ii) / tau_i, which loses its digits for sites of small
 * precision.  Without var (NULL) only the factor and the mean: a Newton step
 * of the Laplace approximation's mode (R&W Algorithm 3.1), whose weights
 * W are the sites' precisions and whose b = W f + grad log p(y | f) are
 * their shifts, so that alpha is the step's a and the mean its new f. */
#include <math.h>
#include <stdlib.h>
#include "linalg.h"

/* y = K x for the symmetric host matrix K (n x n) */
static krr_status sym_mv(krr_ctx *ctx, int64_t n, const double *K, const double *x, double *y) {
  return ctx->ops->gemm_d(ctx, 0, 0, n, 1, n, 1.0, K, n, x, n, 0.0, y, n);
}

/* alpha and the posterior mean, from B's factor R */
static krr_status sites_mean(krr_ctx *ctx, int64_t n, const double *K, const double *sw,
                             const double *nu, const double *R, double *alpha, double *mean) {
  KTRY(sym_mv(ctx, n, K, nu, mean));
  for (int64_t i = 0; i < n; i++) alpha[i] = sw[i] * mean[i];
  KTRY(krr_chol_solve(ctx, n, R, 1, alpha, n));
  for (int64_t i = 0; i < n; i++) alpha[i] = nu[i] - sw[i] * alpha[i];
  return sym_mv(ctx, n, K, alpha, mean);
}

/* The work on a host context: R (n x n) given; V (n x n) when var is
 * wanted */
static krr_status sites_run(krr_ctx *ctx, int64_t n, const double *K, const double *tau,
                            const double *nu, double *R, double *V, double *sw, double *var,
                            double *mean, double *alpha) {
  for (int64_t i = 0; i < n; i++) {
    if (!(tau[i] >= 0) || !isfinite(tau[i]) || !isfinite(nu[i]))
      return krr_fail(ctx, KRR_ERR_INPUT,
                      "sites: site %lld has a precision that is not finite and >= 0 or a "
                      "shift that is not finite",
                      (long long)i + 1);
    sw[i] = sqrt(tau[i]);
  }
  for (int64_t j = 0; j < n * n; j++)
    if (!isfinite(K[j]))
      return krr_fail(ctx, KRR_ERR_INPUT, "sites: K has a value that is not finite");
  for (int64_t j = 0; j < n; j++) {
    const double *kj = K + j * n;
    double *rj = R + j * n;
    for (int64_t i = 0; i < n; i++) rj[i] = i <= j ? sw[i] * sw[j] * kj[i] + (i == j) : 0.0;
    if (V)
      for (int64_t i = 0; i < n; i++) V[j * n + i] = sw[i] * kj[i];
  }
  int info = 0;
  KTRY(krr_potrf_polled(ctx, KRR_DOUBLE, n, R, n, &info));
  if (info != 0)
    return krr_fail(ctx, KRR_ERR_NUMERIC,
                    "sites: I + S^1/2 K S^1/2 is not numerically positive "
                    "definite (leading minor %d)",
                    info);
  if (V) {
    KTRY(krr_trsm_polled(ctx, KRR_DOUBLE, 0, 1, n, n, 1.0, R, n, V, n));
    for (int64_t j = 0; j < n; j++) {
      const double *vj = V + j * n;
      double s = 0;
      for (int64_t i = 0; i < n; i++) s += vj[i] * vj[i];
      var[j] = K[j * n + j] - s;
    }
  }
  return sites_mean(ctx, n, K, sw, nu, R, alpha, mean);
}

krr_status krr_gp_sites_host(krr_ctx *ctx, int64_t n, const double *K, const double *tau,
                             const double *nu, double *R, double *var, double *mean,
                             double *alpha) {
  if (n < 0) return krr_fail(ctx, KRR_ERR_INPUT, "sites: negative size");
  if (n == 0) return KRR_OK;
  const krr_ops *h = ctx->host_ops;
  if (!h) return krr_fail(ctx, KRR_ERR_INPUT, "sites: the context has no host backend");
  double *V = var ? malloc(sizeof(double) * (size_t)n * (size_t)n) : NULL;
  double *sw = malloc(sizeof(double) * (size_t)n);
  krr_status st =
      (V || !var) && sw ? KRR_OK : krr_fail(ctx, KRR_ERR_MEMORY, "sites: out of host memory");
  if (st == KRR_OK && krr_ctx_on_host(ctx)) {
    st = sites_run(ctx, n, K, tau, nu, R, V, sw, var, mean, alpha);
  } else if (st == KRR_OK) {
    krr_ctx hc;
    st = krr_ctx_host_twin(ctx, &hc);
    if (st == KRR_OK) {
      st = krr_ctx_forward(ctx, &hc, sites_run(&hc, n, K, tau, nu, R, V, sw, var, mean, alpha));
      krr_ctx_free(&hc);
    }
  }
  free(V);
  free(sw);
  return st;
}
