/* Elementwise formulas of the losses: the reference every backend's
 * loss_map entry (ops.h) evaluates, element by element, in double
 * arithmetic whatever the storage precision.  Includable from C and CUDA
 * (the includer may define KRR_HD, as for kernel_math.h).
 *
 * Convention (loss/loss.h): the dual is
 *     min_{a in box} 1/2 a^T K a + f(a),  f(a) = (1/lambda) sum_i xi*_{y_i}(-lambda a_i),
 * xi_y = l(y, .) and xi* its conjugate (Zhang et al., "Joker", Table 2, with
 * v = -lambda a).  Per element, with p the loss parameter:
 *
 *  loss           xi_y(F)                        f_i(a) = xi*(-lambda a)/lambda   box of a
 *  squared        (y - F)^2 / 2                  lambda a^2/2 - a y                R
 *  huber (p=delta) r^2/2 if |r| <= p, r = y - F;  lambda a^2/2 - a y                |a| <= p/lambda
 *                 else p|r| - p^2/2
 *  svr (p=eps)    max(0, |y - F| - p)            p|a| - a y                        |a| <= 1/lambda
 *  hinge          max(0, 1 - yF)                 -a y                              0 <= a y <= 1/lambda
 *  squared_hinge  max(0, 1 - yF)^2 / 2           lambda a^2/2 - a y                a y >= 0
 *  logistic       log(1 + exp(-yF))              bEnt(lambda a y)/lambda           0 <= a y <= 1/lambda
 *
 * bEnt(t) = t log t + (1 - t) log(1 - t), 0 log 0 = 0; classification targets
 * are +-1.  Logistic safeguards (Zhang et al., Section 3.2): the gradient
 * y log(t / (1 - t)) is evaluated at t = lambda a y clamped into [e, 1 - e],
 * and the box the solvers use is that clamped one, e the spacing of the
 * working precision below 1 (2^-53 double, 2^-24 float); the Hessian
 * lambda / (t (1 - t)) is capped at e^(-1/2).  Values (CONJ) of an a outside
 * the box (beyond a rounding slack) are +INFINITY. */
#ifndef KRR_LOSS_MATH_H
#define KRR_LOSS_MATH_H
#include <math.h>
#include "ops.h"

#ifndef KRR_HD
#define KRR_HD static inline
#endif

KRR_HD double krr_lm_clamp(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }
KRR_HD double krr_lm_sign(double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); }
KRR_HD double krr_lm_xlogx(double t) { return t > 0 ? t * log(t) : 0.0; }
KRR_HD double krr_lm_bent(double t) { return krr_lm_xlogx(t) + krr_lm_xlogx(1.0 - t); }

/* the box [lo, hi] of a dual variable with target y */
KRR_HD void krr_lm_box(int loss, double lambda, double p, double e, double y, double *lo,
                       double *hi) {
  double s = y >= 0 ? 1.0 : -1.0;
  switch (loss) {
    case KRR_LOSS_HUBER: *lo = -p / lambda; *hi = p / lambda; return;
    case KRR_LOSS_SVR: *lo = -1.0 / lambda; *hi = 1.0 / lambda; return;
    case KRR_LOSS_HINGE:
      if (s > 0) { *lo = 0.0; *hi = 1.0 / lambda; } else { *lo = -1.0 / lambda; *hi = 0.0; }
      return;
    case KRR_LOSS_SQUARED_HINGE:
      if (s > 0) { *lo = 0.0; *hi = INFINITY; } else { *lo = -INFINITY; *hi = 0.0; }
      return;
    case KRR_LOSS_LOGISTIC:
      if (s > 0) { *lo = e / lambda; *hi = (1.0 - e) / lambda; }
      else { *lo = -(1.0 - e) / lambda; *hi = -e / lambda; }
      return;
    default: *lo = -INFINITY; *hi = INFINITY; return;
  }
}

/* logistic: t = lambda a y clamped into [e, 1 - e] */
KRR_HD double krr_lm_logit_t(double lambda, double e, double y, double a) {
  return krr_lm_clamp(lambda * a * (y >= 0 ? 1.0 : -1.0), e, 1.0 - e);
}

/* f_i(a) (the dual's separable part) with a rounding slack on the box */
KRR_HD double krr_lm_f(int loss, double lambda, double p, double e, double y, double a) {
  double slack = 64.0 * e, t = lambda * a * (y >= 0 ? 1.0 : -1.0);
  switch (loss) {
    case KRR_LOSS_SQUARED: return 0.5 * lambda * a * a - a * y;
    case KRR_LOSS_HUBER:
      return fabs(lambda * a) <= p * (1.0 + slack) ? 0.5 * lambda * a * a - a * y : INFINITY;
    case KRR_LOSS_SVR: return fabs(lambda * a) <= 1.0 + slack ? p * fabs(a) - a * y : INFINITY;
    case KRR_LOSS_HINGE: return t >= -slack && t <= 1.0 + slack ? -a * y : INFINITY;
    case KRR_LOSS_SQUARED_HINGE: return t >= -slack ? 0.5 * lambda * a * a - a * y : INFINITY;
    case KRR_LOSS_LOGISTIC:
      if (t < -slack || t > 1.0 + slack) return INFINITY;
      return krr_lm_bent(krr_lm_clamp(t, 0.0, 1.0)) / lambda;
    default: return NAN;
  }
}

/* One element of a loss map (ops.h, krr_map_kind): y, a and o are the
 * element's values of the arrays y, a, out (o: out on entry). */
/* SVR: a weight at 0 up to the rounding of steps of the box's size (a
 * weight left at 1e-16 would otherwise keep its orthant and be held at 0
 * when its gradient points across) */
KRR_HD int krr_lm_svr_zero(double lambda, double e, double a) {
  return fabs(a) <= 16.0 * e / lambda;
}

KRR_HD double krr_loss_elem(int loss, int kind, double lambda, double p, double e, double y,
                            double a, double o) {
  double lo, hi, t, r;
  switch (kind) {
    case KRR_MAP_GRAD:
      switch (loss) {
        case KRR_LOSS_HINGE: return -y;
        case KRR_LOSS_SVR: return (krr_lm_svr_zero(lambda, e, a) ? 0.0 : p * krr_lm_sign(a)) - y;
        case KRR_LOSS_LOGISTIC:
          t = krr_lm_logit_t(lambda, e, y, a);
          return (y >= 0 ? 1.0 : -1.0) * (log(t) - log1p(-t));
        default: return lambda * a - y;
      }
    case KRR_MAP_CURV:
      switch (loss) {
        case KRR_LOSS_HINGE: case KRR_LOSS_SVR: return 0.0;
        case KRR_LOSS_LOGISTIC: {
          double cap = 1.0 / sqrt(e);
          t = krr_lm_logit_t(lambda, e, y, a);
          r = lambda / (t * (1.0 - t));
          return r < cap ? r : cap;
        }
        default: return lambda;
      }
    case KRR_MAP_LOSS: /* a = F */
      r = y - a;
      switch (loss) {
        case KRR_LOSS_SQUARED: return 0.5 * r * r;
        case KRR_LOSS_HUBER: return fabs(r) <= p ? 0.5 * r * r : p * fabs(r) - 0.5 * p * p;
        case KRR_LOSS_SVR: return fabs(r) > p ? fabs(r) - p : 0.0;
        case KRR_LOSS_HINGE: t = 1.0 - y * a; return t > 0 ? t : 0.0;
        case KRR_LOSS_SQUARED_HINGE: t = 1.0 - y * a; return t > 0 ? 0.5 * t * t : 0.0;
        case KRR_LOSS_LOGISTIC: t = -y * a; return (t > 0 ? t : 0.0) + log1p(exp(-fabs(t)));
        default: return NAN;
      }
    case KRR_MAP_CONJ: return lambda * krr_lm_f(loss, lambda, p, e, y, a);
    case KRR_MAP_DF: /* o = s: f_i(a + s) - f_i(a), formed without cancellation where exact */
      switch (loss) {
        case KRR_LOSS_HINGE: return -y * o;
        case KRR_LOSS_SVR: return p * (fabs(a + o) - fabs(a)) - y * o;
        case KRR_LOSS_LOGISTIC:
          return krr_lm_f(loss, lambda, p, e, y, a + o) - krr_lm_f(loss, lambda, p, e, y, a);
        default: return o * (lambda * (a + 0.5 * o) - y);
      }
    case KRR_MAP_PSEUDO: /* o = g: SVR at a = 0, the least-norm subgradient */
      if (loss == KRR_LOSS_SVR && krr_lm_svr_zero(lambda, e, a))
        return o > p ? o - p : (o < -p ? o + p : 0.0);
      return o;
    case KRR_MAP_LO: case KRR_MAP_HI: /* o = pseudo-gradient */
      krr_lm_box(loss, lambda, p, e, y, &lo, &hi);
      if (loss == KRR_LOSS_SVR) { /* the orthant of a, or the one the gradient points to */
        int z = krr_lm_svr_zero(lambda, e, a);
        if ((!z && a > 0) || (z && o < 0)) lo = 0.0;
        if ((!z && a < 0) || (z && o > 0)) hi = 0.0;
        if (z && o == 0) lo = hi = 0.0;
      }
      return kind == KRR_MAP_LO ? lo : hi;
    case KRR_MAP_PROJECT:
      krr_lm_box(loss, lambda, p, e, y, &lo, &hi);
      return krr_lm_clamp(o, lo, hi);
    case KRR_MAP_CLAMP: return krr_lm_clamp(o, y, a);
    case KRR_MAP_MUL: return a * o;
    case KRR_MAP_FREE: { /* y = lo - a_B, a = hi - a_B, o = gradient */
      double w = a - y, tol = w < INFINITY ? 16.0 * e * w : 0.0; /* rounding of a scattered bound */
      int at_lo = y >= -tol, at_hi = a <= tol;
      if ((at_lo && at_hi) || (at_lo && o > 0) || (at_hi && o < 0)) return 0.0;
      return 1.0;
    }
    case KRR_MAP_ONES: return 1.0;
    default: return NAN;
  }
}
#endif
