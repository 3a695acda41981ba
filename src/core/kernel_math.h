/* Kernel functions of a distance: the reference definitions every backend
 * must agree with (Rasmussen and Williams, "Gaussian Processes for Machine
 * Learning", ch. 4; the package's ?kernels page).  Each kernel is evaluated from
 * the statistic its backend accumulates:
 *   RBF            : t = ||x - x'||_2^2
 *   Laplace        : t = ||x - x'||_1
 *   Matern 1/2,3/2,5/2 : t = ||x - x'||_2^2   (d = sqrt(t))
 * K(x, x) is exactly 1 since t = 0 exactly when differences are formed
 * directly.  The parameters are precomputed once per call (krr_kparams).
 *
 * Includable from C and from CUDA (the includer may define KRR_HD, e.g. as
 * `static __host__ __device__ __forceinline__`). */
#ifndef KRR_KERNEL_MATH_H
#define KRR_KERNEL_MATH_H
#include <math.h>
#include "krr.h"

#ifndef KRR_HD
#define KRR_HD static inline
#endif

/* ---- the kernel list: the ONE place that enumerates the kernels ----------
 * Every switch over kernel codes, here and in the backends (src/cpu,
 * src/cuda), is generated from this list, and its `default:` is an error
 * (host: krr_fail "unknown kernel code"; device: unreachable; reference:
 * NaN).  So a kernel is added by adding a row here (and its enum value in
 * krr.h, which is checked below); no backend can fall back to another kernel.
 *
 *   X(NAME, name, A, L1, ROOT, POLY, DLOGS, DDLOGS, LABEL, FORMULA)
 *                                        (KRR_KERNEL_LIST(X))
 *   X(arg, NAME, name, ...)              (KRR_KERNEL_LIST_ARG(X, arg))
 *   NAME : enum constant KRR_##NAME (krr.h); rows are in enum order
 *   name : the R-level name
 *   A    : the rate a as an expression of the bandwidth `s`; always of the
 *          form c / s^m with m = 1 or 2 (krr_kernel_rate_power reads m
 *          off it, and R's bandwidth limits rely on that form)
 *   L1   : 1 if the statistic t is the L1 distance, 0 if squared L2
 *   ROOT : 1 if u = a sqrt(t), 0 if u = a t
 *   POLY : the kernel is POLY(u) exp(-u); an expression of `u` of type `T`
 *          (each expansion site provides both: T is float, double, a vector
 *          type, ...; `(T)1` multiplies exactly, so the exponential kernels
 *          cost nothing extra).  Written in the operation order the CPU
 *          vector code has always used, so its results are unchanged.
 *   DLOGS: the derivative with respect to the log bandwidth is
 *          dK/dlog s = DLOGS(u) exp(-u), an expression of `u` of type `T`.
 *          With k(u) = POLY(u) exp(-u) and u proportional to s^-m,
 *          dK/dlog s = -m u k'(u) = m u (POLY(u) - POLY'(u)) exp(-u)
 *          (the matrices of the likelihood gradient, Rasmussen and
 *          Williams 2006, eq. 5.9).  The derivative with respect to the log
 *          length scale of coordinate j (ARD: the points are x_j / ell_j)
 *          is dK/dlog s times t_j / t, the share of coordinate j in the
 *          statistic (t_j = D_j^2, or |D_j| for L1): t is a sum over
 *          coordinates, each scaling as ell_j^-q (q = 2, or 1 for L1), and
 *          since the kernel is a function of distance / s, a change of
 *          log s is the same change of every log ell_j
 *          (krr_kernel_dlog_ell).
 *   DDLOGS: the second derivative, d^2K/dlog s^2 = DDLOGS(u) exp(-u):
 *          with dK/dlog s = D(u) exp(-u) and du/dlog s = -m u,
 *          d^2K/dlog s^2 = -m u (D'(u) - D(u)) exp(-u) (the matrices of the
 *          likelihood's Hessian; krr_kernel_d2log_ell derives the length
 *          scales' second derivatives from it).
 *   LABEL, FORMULA: text for printing (R's print method of a kernel). */
#define KRR_KERNEL_LIST_ARG(X, arg)                                                           \
  X(arg, RBF, "rbf", 1.0 / (2.0 * s * s), 0, 0, (T)1, (u * (T)2), (u * (T)4 * (u - (T)1)),   \
    "Gaussian (RBF)", "exp(-||x - x'||^2 / (2 sigma^2))")                                     \
  X(arg, LAPLACE, "laplace", 1.0 / s, 1, 0, (T)1, (u), (u * (u - (T)1)),                      \
    "Laplace (L1 distance)", "exp(-||x - x'||_1 / sigma)")                                    \
  X(arg, MATERN12, "matern12", 1.0 / s, 0, 1, (T)1, (u), (u * (u - (T)1)), "Matern 1/2",      \
    "exp(-d / sigma), d = ||x - x'||")                                                        \
  X(arg, MATERN32, "matern32", 1.7320508075688772 / s, 0, 1, (u + (T)1), (u * u),             \
    (u * u * (u - (T)2)), "Matern 3/2", "(1 + sqrt(3) d / sigma) exp(-sqrt(3) d / sigma)")    \
  X(arg, MATERN52, "matern52", 2.23606797749979 / s, 0, 1,                                    \
    (u * u * (T)(1.0 / 3.0) + u + (T)1), (u * u * (u + (T)1) * (T)(1.0 / 3.0)),               \
    (u * u * (u * u - (T)2 * u - (T)2) * (T)(1.0 / 3.0)), "Matern 5/2",                       \
    "(1 + sqrt(5) d / sigma + 5 d^2 / (3 sigma^2)) exp(-sqrt(5) d / sigma)")
#define KRR_KERNEL_LIST(X) KRR_KERNEL_LIST_ARG(KRR_KLIST_APPLY_, X)
#define KRR_KLIST_APPLY_(X, ...) X(__VA_ARGS__)

/* Number of rows, and compile-time checks that the rows are the enum of
 * krr.h in order.  KRR_N_KERNELS itself stays in krr.h (code that does not
 * include this header validates codes with it); it must equal the count. */
#define KRR_KLIST_ROW_(K, ...) KRR_KROW_##K,
enum { KRR_KERNEL_LIST(KRR_KLIST_ROW_) KRR_N_KERNELS_LISTED };
#undef KRR_KLIST_ROW_
#ifdef __cplusplus
#define KRR_KLIST_ASSERT_(c, m) static_assert(c, m)
#else
#define KRR_KLIST_ASSERT_(c, m) _Static_assert(c, m)
#endif
KRR_KLIST_ASSERT_(KRR_N_KERNELS == KRR_N_KERNELS_LISTED,
                  "KRR_N_KERNELS (krr.h) must equal the rows of KRR_KERNEL_LIST");
#define KRR_KLIST_CHECK_(K, ...) \
  KRR_KLIST_ASSERT_((int)KRR_##K == (int)KRR_KROW_##K, "KRR_KERNEL_LIST row out of enum order");
KRR_KERNEL_LIST(KRR_KLIST_CHECK_)
#undef KRR_KLIST_CHECK_

/* 1 if `type` is a listed kernel code; 1 if the kernel accumulates the L1
 * distance.  Constant expressions when `type` is a constant (CUDA templates
 * use them in constexpr / static_assert). */
#define KRR_KLIST_IS_(t, K, ...) || (t) == KRR_##K
#define KRR_KERNEL_LISTED(type) (0 KRR_KERNEL_LIST_ARG(KRR_KLIST_IS_, type))
#define KRR_KLIST_L1_(t, K, n, A, L1, ...) || ((t) == KRR_##K && (L1))
#define KRR_KERNEL_IS_L1(type) (0 KRR_KERNEL_LIST_ARG(KRR_KLIST_L1_, type))

typedef struct {
  int type;
  double a; /* RBF: 1/(2 s^2); Laplace, M12: 1/s; M32: sqrt3/s; M52: sqrt5/s */
} krr_kparams;

/* a = NaN for a code not in the list (callers validate the code first) */
KRR_HD krr_kparams krr_kparams_of(int type, double s) {
  krr_kparams kp;
  kp.type = type;
  switch (kp.type) {
#define KRR_KLIST_A_(K, n, A, ...) \
  case KRR_##K: kp.a = (A); break;
    KRR_KERNEL_LIST(KRR_KLIST_A_)
#undef KRR_KLIST_A_
    default: kp.a = NAN; break;
  }
  return kp;
}
KRR_HD krr_kparams krr_kparams_make(const krr_kernel *k) {
  return krr_kparams_of((int)k->type, k->bandwidth);
}

/* m of the rate a(s) = a(1) / s^m (the list's A: 2 for the RBF kernel, 1
 * for the others), read off A as log2(a(1) / a(2)), which is exact for that
 * form; 0 for an unlisted code or an A not of that form with m in 1..4 */
KRR_HD int krr_kernel_rate_power(int type) {
  const double r = krr_kparams_of(type, 1.0).a / krr_kparams_of(type, 2.0).a;
  for (int m = 1; m <= 4; m++)
    if (r == (double)(1 << m)) return m;
  return 0;
}

/* 1 if the kernel accumulates the L1 distance, else squared L2 */
KRR_HD int krr_kernel_is_l1(int type) { return KRR_KERNEL_IS_L1(type); }

/* reference (double) kernel value from the accumulated statistic t */
KRR_HD double krr_kernel_eval(krr_kparams kp, double t) {
  typedef double T;
  T u;
  switch (kp.type) {
#define KRR_KLIST_EVAL_(K, n, A, L1, ROOT, POLY, ...) \
  case KRR_##K: u = kp.a * ((ROOT) ? sqrt(t) : t); return (POLY) * exp(-u);
    KRR_KERNEL_LIST(KRR_KLIST_EVAL_)
#undef KRR_KLIST_EVAL_
    default: return NAN;
  }
}

/* reference (double) dK/dlog s from the statistic t: DLOGS(u) exp(-u), and
 * 0 where exp(-u) underflows (the limit, with no Inf * 0 for a huge u) */
KRR_HD double krr_kernel_dlog_s(krr_kparams kp, double t) {
  typedef double T;
  T u, e;
  switch (kp.type) {
#define KRR_KLIST_DLOGS_(K, n, A, L1, ROOT, POLY, DLOGS, ...) \
  case KRR_##K:                                              \
    u = kp.a * ((ROOT) ? sqrt(t) : t);                       \
    e = exp(-u);                                             \
    return e == 0 ? 0.0 : (DLOGS) * e;
    KRR_KERNEL_LIST(KRR_KLIST_DLOGS_)
#undef KRR_KLIST_DLOGS_
    default: return NAN;
  }
}

/* dK/dlog s from the statistic t and the kernel's value k = POLY(u) exp(-u)
 * there, as DLOGS(u) k / POLY(u) (POLY > 0 for u >= 0): the derivative
 * without a second exponential where the value is at hand; 0 where k is */
KRR_HD double krr_kernel_dlog_s_at(krr_kparams kp, double t, double k) {
  typedef double T;
  T u;
  switch (kp.type) {
#define KRR_KLIST_DLOGS_AT_(K, n, A, L1, ROOT, POLY, DLOGS, ...) \
  case KRR_##K: u = kp.a * ((ROOT) ? sqrt(t) : t); return k == 0 ? 0.0 : (DLOGS) * (k / (POLY));
    KRR_KERNEL_LIST(KRR_KLIST_DLOGS_AT_)
#undef KRR_KLIST_DLOGS_AT_
    default: return NAN;
  }
}

/* reference (double) d^2K/dlog s^2 from the statistic t: DDLOGS(u) exp(-u),
 * 0 where exp(-u) underflows */
KRR_HD double krr_kernel_d2log_s(krr_kparams kp, double t) {
  typedef double T;
  T u, e;
  switch (kp.type) {
#define KRR_KLIST_DDLOGS_(K, n, A, L1, ROOT, POLY, DLOGS, DDLOGS, ...) \
  case KRR_##K:                                                       \
    u = kp.a * ((ROOT) ? sqrt(t) : t);                                \
    e = exp(-u);                                                      \
    return e == 0 ? 0.0 : (DDLOGS) * e;
    KRR_KERNEL_LIST(KRR_KLIST_DDLOGS_)
#undef KRR_KLIST_DDLOGS_
    default: return NAN;
  }
}

/* reference (double) dK/dlog ell_j from the statistic t and coordinate j's
 * part tj of it (D_j^2, or |D_j| for L1; the points already divided by
 * their length scales): dK/dlog s times tj / t; 0 where dK/dlog s is 0,
 * which includes t = 0 (DLOGS(0) = 0 in every row) and an infinite t */
KRR_HD double krr_kernel_dlog_ell(krr_kparams kp, double t, double tj) {
  const double d = krr_kernel_dlog_s(kp, t);
  return d != 0 ? d * (tj / t) : 0.0;
}

/* reference (double) d^2K/dlog ell_i dlog ell_j (same: i == j) from t and
 * the coordinates' parts ti, tj.  K = k(t), t = sum_j t_j, t_j scaling as
 * ell_j^-q (q = 2 for squared L2, 1 for L1); with g = dK/dlog s = -q t k'(t)
 * and h = d^2K/dlog s^2 = q^2 (t k' + t^2 k''):
 *   d^2K/dlog ell_i dlog ell_j = (h + q g) t_i t_j / t^2 - q g t_j / t [i == j],
 * whose sum over all i, j is h (a change of log s is one of every log ell_j);
 * 0 where g and h are (t = 0, underflow) */
KRR_HD double krr_kernel_d2log_ell(krr_kparams kp, double t, double ti, double tj, int same) {
  const double g = krr_kernel_dlog_s(kp, t), h = krr_kernel_d2log_s(kp, t);
  if (g == 0 && h == 0) return 0.0;
  const double q = krr_kernel_is_l1(kp.type) ? 1.0 : 2.0, si = ti / t, sj = tj / t;
  return (h + q * g) * si * sj - (same ? q * g * sj : 0.0);
}

/* reference (double) d^2K/dlog s dlog ell_j: h t_j / t (the sum over i of
 * the above) */
KRR_HD double krr_kernel_d2log_s_ell(krr_kparams kp, double t, double tj) {
  const double h = krr_kernel_d2log_s(kp, t);
  return h != 0 ? h * (tj / t) : 0.0;
}
#endif
