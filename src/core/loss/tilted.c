/* The tilted distributions of expectation propagation for the logistic
 * likelihood (Rasmussen and Williams 2006, sec. 3.6):
 *   sigma(y f) N(f; m, v) / Z,
 * its log normaliser, mean and variance, one per site.  Each is an integral
 * in one variable, taken by the trapezoidal rule in z = (f - m) / s
 * (s = sqrt(v)) over [-10, 10] with q nodes, q = 20 s / 0.25 + 1 rounded up,
 * at least 81 and at most 1e5 + 1: a spacing of at most 1/4 in z and, up to
 * sd 1250 (beyond, 1e5 + 1 nodes), at most 0.25 in f.  The logistic function
 * is analytic within pi of the real axis, so the rule's error is of order
 * exp(-2 pi^2 / 0.25) (Trefethen and Weideman 2014, SIAM Review 56).  The
 * likelihood's values are scaled by their largest on the grid (log sigma is
 * monotone in f, so the largest is at one end), which keeps the sums from
 * underflowing to zero for cavities far on the wrong side. */
#include <math.h>
#include "loss.h"

/* log sigma(t), without overflow or cancellation */
static double log_sigmoid(double t) { return -((t < 0 ? -t : 0.0) + log1p(exp(-fabs(t)))); }

/* (log Z, mean, var) of one site */
static void tilted_one(double y, double m, double s, double *out) {
  double q = ceil(20.0 * s / 0.25) + 1;
  q = q < 81 ? 81 : q > 1e5 + 1 ? 1e5 + 1 : q;
  const int64_t nq = (int64_t)q;
  const double h = 20.0 / (double)(nq - 1);
  const double lo = log_sigmoid(y * (m - 10 * s)), hi = log_sigmoid(y * (m + 10 * s));
  const double top = lo > hi ? lo : hi;
  double m0 = 0, m1 = 0, m2 = 0;
  for (int64_t k = 0; k < nq; k++) {
    const double z = k == nq - 1 ? 10.0 : -10.0 + (double)k * h;
    const double w = exp(log_sigmoid(y * (m + s * z)) - top - 0.5 * z * z);
    m0 += w;
    m1 += w * z;
    m2 += w * z * z;
  }
  const double ez = m1 / m0, vz = m2 / m0 - ez * ez;
  out[0] = log(m0 * h) - 0.5 * log(2 * M_PI) + top;
  out[1] = m + s * ez;
  out[2] = s * s * (vz > 0 ? vz : 0.0);
}

krr_status krr_ep_tilted_logistic(krr_ctx *ctx, int64_t n, const double *y, const double *m,
                                  const double *v, double *out) {
  for (int64_t i = 0; i < n; i++)
    if (!(v[i] > 0) || !isfinite(v[i]) || !isfinite(m[i]) || !(y[i] == 1 || y[i] == -1))
      return krr_fail(ctx, KRR_ERR_INPUT,
                      "tilted: site %lld: y must be +-1, m finite and v finite and positive",
                      (long long)i + 1);
  for (int64_t i = 0; i < n; i++) {
    if (i % 256 == 0) KTRY(krr_poll(ctx));
    double r[3];
    tilted_one(y[i], m[i], sqrt(v[i]), r);
    out[i] = r[0];
    out[n + i] = r[1];
    out[2 * n + i] = r[2];
  }
  return krr_poll(ctx);
}
