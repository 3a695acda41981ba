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

/* K_order(x) for x > 0 and a real order >= 0 as in Press et al. (2007,
 * Numerical Recipes, 3rd ed., sec. 6.6.2, bessik): with order = nl + mu,
 * nl the nearest integer and |mu| <= 1/2, K_mu and K_{mu+1} by Temme's
 * series (Temme 1975, J. Comput. Phys. 19) for x <= 3 and by Steed's
 * continued fraction CF2 (Thompson and Barnett 1987) above, then the
 * forward recurrence K_{v+1} = 2v / x K_v + K_{v-1}, stable for K.  The
 * series' terms cancel to e^-x, so it loses about e^(2x) rounding errors:
 * at most 1e-13 relative at x = 3 (Press et al. stop at 2, where CF2
 * needs ~80 iterations of a division-bound recurrence, 60 at 3).  The
 * Matern values are within 1.3e-13 of R's besselK() for smoothness
 * 0.1-20 and x up to 600 (tests).  The constants of mu
 * (krr_kc_bessel_prep) do not depend on x. */
typedef struct {
  double mu, gam1, gam2, gampl, gammi, fact; /* Temme's constants of mu */
  int nl;
} krr_kc_bessel_prep;

KRR_HD krr_kc_bessel_prep krr_kc_bessel_prepare(double order) {
  krr_kc_bessel_prep b;
  b.nl = (int)(order + 0.5);
  b.mu = order - b.nl;
  const double mu = b.mu, m2 = mu * mu, pimu = 3.141592653589793 * mu;
  b.gampl = 1.0 / tgamma(1.0 + mu); /* 1 / Gamma(1 + mu) */
  b.gammi = 1.0 / tgamma(1.0 - mu);
  b.gam2 = 0.5 * (b.gammi + b.gampl);
  /* gam1 = (1/Gamma(1 - mu) - 1/Gamma(1 + mu)) / (2 mu): by the Taylor
   * series of 1/Gamma(1 + z) (Abramowitz and Stegun 6.1.34) where the
   * difference would cancel */
  b.gam1 = fabs(mu) < 0.1 ? -0.5772156649015329 +
                                m2 * (0.0420026350340952 +
                                      m2 * (0.0421977345555443 +
                                            m2 * (-0.0072189432466630 + m2 * 0.0002152416741149)))
                          : (b.gammi - b.gampl) / (2.0 * mu);
  b.fact = fabs(pimu) < 1e-8 ? 1.0 : pimu / sin(pimu);
  return b;
}

/* log K_order(x) (b prepared for the order) */
KRR_HD double krr_kc_bessel_logk(const krr_kc_bessel_prep *b, double x) {
  const double mu = b->mu, m2 = mu * mu, eps = 1e-16;
  double rkmu, rk1, logs = 0;
  if (x <= 3.0) { /* Temme's series: K_mu = sum, K_{mu+1} = sum1 2 / x */
    const double x2 = 0.5 * x, dl = -log(x2), e = mu * dl;
    const double fact2 = fabs(e) < 1e-8 ? 1.0 : sinh(e) / e;
    double ff = b->fact * (b->gam1 * cosh(e) + b->gam2 * fact2 * dl), sum = ff;
    const double ee = exp(e);
    double p = 0.5 * ee / b->gampl, q = 0.5 / (ee * b->gammi), c = 1, sum1 = p;
    const double dd = x2 * x2;
    for (int i = 1; i < 1000; i++) {
      ff = (i * ff + p + q) / (i * (double)i - m2);
      c *= dd / i;
      p /= i - mu;
      q /= i + mu;
      const double del = c * ff;
      sum += del;
      sum1 += c * (p - i * ff);
      if (fabs(del) < fabs(sum) * eps) break;
    }
    rkmu = sum;
    rk1 = sum1 * 2.0 / x;
  } else { /* CF2: K_mu = sqrt(pi / (2x)) e^-x / s, kept as log */
    double bb = 2.0 * (1.0 + x), d = 1.0 / bb, h = d, delh = d, q1 = 0, q2 = 1;
    const double a1 = 0.25 - m2;
    double q = a1, c = a1, a = -a1, s = 1.0 + q * delh;
    for (int i = 2; i < 1000; i++) {
      a -= 2 * (i - 1);
      c = -a * c / i;
      const double qnew = (q1 - bb * q2) / a;
      q1 = q2;
      q2 = qnew;
      q += c * qnew;
      bb += 2.0;
      d = 1.0 / (bb + a * d);
      delh = (bb * d - 1.0) * delh;
      h += delh;
      const double dels = q * delh;
      s += dels;
      if (fabs(dels / s) < eps) break;
    }
    logs = 0.5 * log(1.5707963267948966 / x) - x - log(s);
    rkmu = 1.0;
    rk1 = (mu + x + 0.5 - a1 * h) / x;
  }
  /* the recurrence to nl, rescaled before it can overflow */
  for (int i = 1; i <= b->nl; i++) {
    const double t = (mu + i) * (2.0 / x) * rk1 + rkmu;
    rkmu = rk1;
    rk1 = t;
    if (rk1 > 1e250) {
      rkmu *= 1e-250;
      rk1 *= 1e-250;
      logs += 575.64627324851145; /* log 1e250 */
    }
  }
  return logs + log(rkmu);
}

/* exp(lognorm) x^power K_order(x) for x > 0 and a real order >= 0, formed
 * in the exponent so that nothing overflows before the normalisation */
KRR_HD double krr_kc_bessel_xk(double x, double order, double power, double lognorm) {
  const krr_kc_bessel_prep b = krr_kc_bessel_prepare(order);
  return exp(lognorm + power * log(x) + krr_kc_bessel_logk(&b, x));
}

/* the Matern correlation of smoothness nu at x = sqrt(2 nu) d / bw (1 at
 * x = 0), and its derivative in log bw: with d/dx [x^nu K_nu(x)] =
 * -x^nu K_{nu-1}(x) and dx/dlog bw = -x, it is c x^(nu+1) K_{nu-1}(x),
 * K_{nu-1} = K_{1-nu} (0 at x = 0) */
/* x = sqrt(2 nu) d / bw of a Matern component from its statistic d^2 */
KRR_HD double krr_kc_matern_arg(const krr_kcomp *c, double st) {
  return sqrt(2.0 * c->par[0] * st) / c->bw;
}
KRR_HD double krr_kc_matern_lognorm(double nu) {
  return (1.0 - nu) * 0.6931471805599453 - lgamma(nu);
}
/* the value with b prepared for the order nu and lognorm of nu, for a loop
 * over pairs (the CPU's kcomp_map) */
KRR_HD double krr_kc_matern_value(const krr_kc_bessel_prep *b, double nu, double lognorm,
                                  double x) {
  if (!(x > 0)) return x == 0 ? 1.0 : NAN;
  return exp(lognorm + nu * log(x) + krr_kc_bessel_logk(b, x));
}
KRR_HD double krr_kc_matern(double nu, double x, int deriv) {
  if (!(x > 0)) return x == 0 ? (deriv ? 0.0 : 1.0) : NAN;
  const double lognorm = krr_kc_matern_lognorm(nu);
  if (deriv) return krr_kc_bessel_xk(x, fabs(nu - 1.0), nu + 1.0, lognorm);
  const krr_kc_bessel_prep b = krr_kc_bessel_prepare(nu);
  return krr_kc_matern_value(&b, nu, lognorm, x);
}

/* the periodic kernel's derivative in its log bandwidth, from its value k
 * and s = sin(pi d / period): k 4 s^2 / bw^2 */
KRR_HD double krr_kc_periodic_dlog_bw(const krr_kcomp *c, double k, double s) {
  return k * 4.0 * s * s / (c->bw * c->bw);
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
    case KRR_KF_MATERN: return krr_kc_matern(c->par[0], krr_kc_matern_arg(c, st), j == 0);
    case KRR_KF_PERIODIC: {
      const double th = 3.141592653589793 * sqrt(st) / c->par[0], s = sin(th);
      const double il2 = 1.0 / (c->bw * c->bw), k = exp(-2.0 * s * s * il2);
      return j < 0    ? k
             : j == 0 ? krr_kc_periodic_dlog_bw(c, k, s)
                      : k * 4.0 * th * s * cos(th) * il2;
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

/* krr_kc_eval(c, st, j) for a derivative (j >= 0) given the component's
 * value v = krr_kc_eval(c, st, -1) at st: a listed kernel's and the
 * periodic kernel's bandwidth derivatives from v, without evaluating the
 * exponential again (the contraction of the likelihood gradients) */
KRR_HD double krr_kc_deriv_at(const krr_kcomp *c, double st, int j, double v) {
  if (j == 0 && c->family == KRR_KF_LISTED)
    return krr_kernel_dlog_s_at(krr_kparams_of(c->base, c->bw), st, v);
  if (j == 0 && c->family == KRR_KF_PERIODIC) {
    return krr_kc_periodic_dlog_bw(c, v, sin(3.141592653589793 * sqrt(st) / c->par[0]));
  }
  return krr_kc_eval(c, st, j);
}
#endif
