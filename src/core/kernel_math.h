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
 *   X(NAME, name, A, L1, ROOT, POLY)     (KRR_KERNEL_LIST(X))
 *   X(arg, NAME, name, A, L1, ROOT, POLY) (KRR_KERNEL_LIST_ARG(X, arg))
 *   NAME : enum constant KRR_##NAME (krr.h); rows are in enum order
 *   name : the R-level name
 *   A    : the scale a as an expression of the bandwidth `s`
 *   L1   : 1 if the statistic t is the L1 distance, 0 if squared L2
 *   ROOT : 1 if u = a sqrt(t), 0 if u = a t
 *   POLY : the kernel is POLY(u) exp(-u); an expression of `u` of type `T`
 *          (each expansion site provides both: T is float, double, a vector
 *          type, ...; `(T)1` multiplies exactly, so the exponential kernels
 *          cost nothing extra).  Written in the operation order the CPU
 *          vector code has always used, so its results are unchanged. */
#define KRR_KERNEL_LIST_ARG(X, arg)                                                      \
  X(arg, RBF, "rbf", 1.0 / (2.0 * s * s), 0, 0, (T)1)                                   \
  X(arg, LAPLACE, "laplace", 1.0 / s, 1, 0, (T)1)                                       \
  X(arg, MATERN12, "matern12", 1.0 / s, 0, 1, (T)1)                                     \
  X(arg, MATERN32, "matern32", 1.7320508075688772 / s, 0, 1, (u + (T)1))               \
  X(arg, MATERN52, "matern52", 2.23606797749979 / s, 0, 1,                              \
    (u * u * (T)(1.0 / 3.0) + u + (T)1))
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
KRR_HD krr_kparams krr_kparams_make(const krr_kernel *k) {
  krr_kparams kp;
  const double s = k->bandwidth;
  kp.type = (int)k->type;
  switch (kp.type) {
#define KRR_KLIST_A_(K, n, A, ...) \
  case KRR_##K: kp.a = (A); break;
    KRR_KERNEL_LIST(KRR_KLIST_A_)
#undef KRR_KLIST_A_
    default: kp.a = NAN; break;
  }
  return kp;
}

/* 1 if the kernel accumulates the L1 distance, else squared L2 */
KRR_HD int krr_kernel_is_l1(int type) { return KRR_KERNEL_IS_L1(type); }

/* reference (double) kernel value from the accumulated statistic t */
KRR_HD double krr_kernel_eval(krr_kparams kp, double t) {
  typedef double T;
  T u;
  switch (kp.type) {
#define KRR_KLIST_EVAL_(K, n, A, L1, ROOT, POLY) \
  case KRR_##K: u = kp.a * ((ROOT) ? sqrt(t) : t); return (POLY) * exp(-u);
    KRR_KERNEL_LIST(KRR_KLIST_EVAL_)
#undef KRR_KLIST_EVAL_
    default: return NAN;
  }
}
#endif
