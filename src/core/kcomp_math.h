/* The components of composite kernels (krr.h, krr_kspec): each family's
 * value and its derivatives in its log hyperparameters, in double, from the
 * statistic of a pair of points.  Includable from C and CUDA, like
 * kernel_math.h (the includer may define KRR_HD).
 *
 * The statistic (krr_kc_stat_kind) over the component's columns:
 *   KRR_KS_SQ   squared Euclidean distance t = d^2
 *   KRR_KS_L1   L1 distance (a listed L1 kernel)
 *   KRR_KS_DOT  the dot product s = x . x' (linear, polynomial)
 *   KRR_KS_GC   squared great-circle distance t = d^2, d in km on a sphere
 *               of the Earth's mean radius, between two (longitude, latitude)
 *               points in degrees (the haversine formula; fields' rdist.earth)
 * The families (Rasmussen and Williams 2006, ch. 4):
 *   LISTED    the row `base` of the kernel list with bandwidth bw
 *   MATERN    k = 2^(1-nu) / Gamma(nu) x^nu K_nu(x), x = sqrt(2 nu) d / bw
 *             (eq. 4.14; nu = 1/2, 3/2, 5/2 are the list's rows)
 *   PERIODIC  k = exp(-2 sin^2(pi d / P) / bw^2), P = par[0] (eq. 4.31)
 *   LINEAR    k = s
 *   POLY      k = (c s + o)^m, m = par[0], c = par[1], o = par[2]
 * The learnable (log) hyperparameters, index j: LISTED and MATERN j = 0 the
 * bandwidth; PERIODIC 0 the length scale bw, 1 the period; POLY 0 the scale
 * c, 1 the offset o; LINEAR none (its scale is its term's amplitude). */
#ifndef KRR_KCOMP_MATH_H
#define KRR_KCOMP_MATH_H
#include "kernel_math.h"

enum { KRR_KS_SQ = 0, KRR_KS_L1 = 1, KRR_KS_DOT = 2, KRR_KS_GC = 3 };
#define KRR_EARTH_KM 6371.0088 /* the Earth's mean radius (IUGG) */
#define KRR_KC_MAX_NU 20.0     /* the largest Matern smoothness evaluated */

/* learnable hyperparameters of a family (-1 for an unknown family) */
KRR_HD int krr_kc_npar(int family) {
  switch (family) {
    case KRR_KF_LISTED:
    case KRR_KF_MATERN: return 1;
    case KRR_KF_PERIODIC:
    case KRR_KF_POLY: return 2;
    case KRR_KF_LINEAR: return 0;
    default: return -1;
  }
}

KRR_HD int krr_kc_stat_kind(const krr_kcomp *c) {
  if (c->metric == 1) return KRR_KS_GC;
  if (c->family == KRR_KF_LINEAR || c->family == KRR_KF_POLY) return KRR_KS_DOT;
  if (c->family == KRR_KF_LISTED && krr_kernel_is_l1(c->base)) return KRR_KS_L1;
  return KRR_KS_SQ;
}

/* great-circle distance in km between (lon1, lat1) and (lon2, lat2) in
 * degrees; exactly 0 between identical points */
KRR_HD double krr_kc_gc_km(double lon1, double lat1, double lon2, double lat2) {
  const double r = 0.017453292519943295; /* pi / 180 */
  const double p1 = lat1 * r, p2 = lat2 * r;
  const double sa = sin(0.5 * (p2 - p1)), sb = sin(0.5 * (lon2 - lon1) * r);
  double a = sa * sa + cos(p1) * cos(p2) * sb * sb;
  if (a > 1) a = 1;
  return 2.0 * KRR_EARTH_KM * asin(sqrt(a));
}

/* the statistic of points x, y (coordinate k at x[k * sx], y[k * sy]; p
 * coordinates, 2 for KRR_KS_GC), accumulated in double */
#define KRR_KC_STAT_DEF(NAME, REAL)                                                            \
  KRR_HD double NAME(int kind, const REAL *x, int64_t sx, const REAL *y, int64_t sy, int p) {  \
    if (kind == KRR_KS_GC) {                                                                   \
      const double d = krr_kc_gc_km((double)x[0], (double)x[sx], (double)y[0], (double)y[sy]); \
      return d * d;                                                                            \
    }                                                                                          \
    double t = 0;                                                                              \
    for (int k = 0; k < p; k++) {                                                              \
      const double a = (double)x[k * sx], b = (double)y[k * sy];                               \
      t += kind == KRR_KS_DOT ? a * b : kind == KRR_KS_L1 ? fabs(a - b) : (a - b) * (a - b);   \
    }                                                                                          \
    return t;                                                                                  \
  }
KRR_KC_STAT_DEF(krr_kc_stat_d, double)
KRR_KC_STAT_DEF(krr_kc_stat_s, float)
#undef KRR_KC_STAT_DEF

/* exp(lognorm) x^power K_order(x) for x > 0 and a real order >= 0, by the
 * trapezoidal rule on K_v(x) = int_0^inf exp(-x cosh t) cosh(v t) dt
 * (Watson 1944, 6.22(5)).  The integrand is entire and decays in the strip
 * |Im t| < pi/2, so the rule's error falls as exp(-2 pi d / h) for a strip
 * of half-width d (Trefethen and Weideman 2014, SIAM Review 56, thm 5.1);
 * on Im t = d the integrand's modulus exceeds its value on the real axis by
 * up to exp(x (1 - cos d)) (1 / cos d)^v, so d shrinks as x grows.  With
 * h = 2 pi d / 46 the relative error of the Matern values stays below
 * 1e-13 for orders up to KRR_KC_MAX_NU + 1 and x up to 600 (checked against
 * R's besselK in the tests).  The terms
 * are summed from t = 0 until they are negligible past the integrand's
 * peak, t = asinh(v / x); everything is formed in the exponent, so nothing
 * overflows before the normalisation. */
KRR_HD double krr_kc_bessel_xk(double x, double order, double power, double lognorm) {
  const double d = x > 8.0 ? sqrt(8.0 / x) : 1.0;
  const double h = 6.283185307179586 * d / 46.0;
  const double lead = lognorm + power * log(x), peak = asinh(order / x);
  double sum = 0;
  for (int k = 0; k < 200000; k++) {
    const double t = k * h, base = lead - x * cosh(t);
    const double f = 0.5 * (exp(base + order * t) + exp(base - order * t));
    sum += k == 0 ? 0.5 * f : f;
    if (t > peak && !(f > 1e-18 * sum)) break;
  }
  return h * sum;
}

/* the Matern correlation of smoothness nu at x = sqrt(2 nu) d / bw (1 at
 * x = 0), and its derivative in log bw: with d/dx [x^nu K_nu(x)] =
 * -x^nu K_{nu-1}(x) and dx/dlog bw = -x, it is c x^(nu+1) K_{nu-1}(x),
 * K_{nu-1} = K_{1-nu} (0 at x = 0) */
KRR_HD double krr_kc_matern(double nu, double x, int deriv) {
  if (!(x > 0)) return x == 0 ? (deriv ? 0.0 : 1.0) : NAN;
  const double lognorm = (1.0 - nu) * 0.6931471805599453 - lgamma(nu);
  return deriv ? krr_kc_bessel_xk(x, fabs(nu - 1.0), nu + 1.0, lognorm)
               : krr_kc_bessel_xk(x, nu, nu, lognorm);
}

/* the component's value (j = -1) or its derivative in its log
 * hyperparameter j, from the statistic st of krr_kc_stat_kind; NaN for a
 * j the family does not have */
KRR_HD double krr_kc_eval(const krr_kcomp *c, double st, int j) {
  if (j >= krr_kc_npar(c->family)) return NAN;
  switch (c->family) {
    case KRR_KF_LISTED: {
      const krr_kparams kp = krr_kparams_of(c->base, c->bw);
      return j < 0 ? krr_kernel_eval(kp, st) : krr_kernel_dlog_s(kp, st);
    }
    case KRR_KF_MATERN: {
      const double nu = c->par[0];
      return krr_kc_matern(nu, sqrt(2.0 * nu * st) / c->bw, j == 0);
    }
    case KRR_KF_PERIODIC: {
      const double th = 3.141592653589793 * sqrt(st) / c->par[0], s = sin(th);
      const double il2 = 1.0 / (c->bw * c->bw), k = exp(-2.0 * s * s * il2);
      return j < 0 ? k : j == 0 ? k * 4.0 * s * s * il2 : k * 4.0 * th * s * cos(th) * il2;
    }
    case KRR_KF_LINEAR: return st;
    case KRR_KF_POLY: {
      const double m = c->par[0], b = c->par[1] * st + c->par[2];
      if (j < 0) return pow(b, m);
      const double g = m * pow(b, m - 1.0);
      return j == 0 ? g * c->par[1] * st : g * c->par[2];
    }
    default: return NAN;
  }
}
#endif
