/* Kernel functions of a distance: the reference definitions every backend
 * must agree with (ALGORITHMS.md section 1).  Each kernel is evaluated from
 * the statistic its backend accumulates:
 *   RBF            : t = ||x - x'||_2^2
 *   Laplace        : t = ||x - x'||_1
 *   Matern 1/2,3/2,5/2 : t = ||x - x'||_2^2   (d = sqrt(t))
 * K(x, x) is exactly 1 since t = 0 exactly when differences are formed
 * directly.  The parameters are precomputed once per call (krr_kparams). */
#ifndef KRR_KERNEL_MATH_H
#define KRR_KERNEL_MATH_H
#include <math.h>
#include "krr.h"

#ifndef KRR_HD
#define KRR_HD static inline
#endif

typedef struct {
  int type;
  double a; /* RBF: 1/(2 s^2); Laplace, M12: 1/s; M32: sqrt3/s; M52: sqrt5/s */
} krr_kparams;

KRR_HD krr_kparams krr_kparams_make(const krr_kernel *k) {
  krr_kparams kp;
  double s = k->bandwidth;
  kp.type = (int)k->type;
  switch (k->type) {
    case KRR_RBF: kp.a = 1.0 / (2.0 * s * s); break;
    case KRR_MATERN32: kp.a = 1.7320508075688772 / s; break;
    case KRR_MATERN52: kp.a = 2.23606797749979 / s; break;
    default: kp.a = 1.0 / s; break;
  }
  return kp;
}

/* 1 if the kernel accumulates the L1 distance, else squared L2 */
KRR_HD int krr_kernel_is_l1(int type) { return type == KRR_LAPLACE; }

/* reference (double) kernel value from the accumulated statistic t */
KRR_HD double krr_kernel_eval(krr_kparams kp, double t) {
  double u;
  switch (kp.type) {
    case KRR_RBF: return exp(-kp.a * t);
    case KRR_LAPLACE: return exp(-kp.a * t);
    case KRR_MATERN12: return exp(-kp.a * sqrt(t));
    case KRR_MATERN32: u = kp.a * sqrt(t); return (1.0 + u) * exp(-u);
    case KRR_MATERN52: u = kp.a * sqrt(t); return (1.0 + u + u * u / 3.0) * exp(-u);
    default: return NAN;
  }
}
#endif
