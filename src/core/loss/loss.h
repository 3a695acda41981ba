/* loss/: the loss table and the objective.
 *
 * Convention (once for the package): the fit is
 *     min_theta 1/2 ||theta||^2 + (1/lambda) sum_i l(y_i, <theta, phi(x_i)>),
 * solved through its dual (Zhang et al., "Joker", Theorem 1)
 *     min_{alpha in box} D(alpha) = 1/2 alpha^T K alpha + f(alpha),
 *     f(alpha) = (1/lambda) sum_i xi*_{y_i}(-lambda alpha_i),
 * with xi_y = l(y, .), xi* its Fenchel conjugate and the box the domain of
 * xi*.  Predictions are K(x, X) alpha.  The primal value at alpha (theta =
 * sum alpha_i phi(x_i), predictions F = K alpha) is
 *     P(alpha) = 1/2 alpha^T K alpha + (1/lambda) sum_i xi_{y_i}(F_i),
 * and the duality gap P + D >= 0 vanishes at the solution.  For the squared
 * loss l = 1/2 (y - F)^2: xi*(u) = u^2/2 + u y, f(alpha) = lambda/2 ||alpha||^2
 * - y^T alpha, and the dual is exactly the KRR system (K + lambda I) alpha = y.
 *
 * A loss entry gives what a dual block method needs: the gradient and the
 * curvature of f on a block, the box, and the sums that make the objectives;
 * each solver declares the losses it supports (by name).  A new loss is its
 * own file here (a krr_loss named krr_loss_<name>) plus one line in loss.c.  Elementwise maps of a
 * non-quadratic loss go through one entry of the krr_ops table, loss_map
 * (ops.h; the formulas in loss_math.h, shared with the backends); the squared
 * loss needs only axpby. */
#ifndef KRR_LOSS_H
#define KRR_LOSS_H
#include "../op/op.h"

typedef enum {
  KRR_CRIT_RESIDUAL = 0, /* ||K a + grad f(a)|| / ||y||: the relative residual of (K + lambda I) a = y */
  KRR_CRIT_GAP = 1       /* relative duality gap (P + D) / max(|P|, |D|, 1e-300) */
} krr_criterion;

struct krr_loss {
  const char *name;   /* solvers list the names of the losses they support */
  krr_criterion crit;
  int linear;         /* the dual is the linear system (K + lambda I) alpha = y (no box) */
  int code;           /* krr_loss_code: what the device maps (ops.h loss_map) evaluate */
  int classification; /* targets must be -1 or +1 */
  int sparse;         /* the dual solution has exact zeros (the points inside the margin or
                       * the tube: hinge, squared hinge, SVR), which kernel products may skip */
  int at_bound;       /* the dual solution has points at the bound of its box (the margin
                       * errors of hinge and SVR, Huber's outliers): krr_loss_dual_bound */
  /* the loss parameter (krr_objective.param): its name (NULL: none), default
   * and lower bound (> lo when lo_open, else >= lo; finite) */
  const char *param_name;
  double param_default, param_lo;
  int param_lo_open;
  /* out = grad f(a_B) elementwise over len entries of y_B and a_B (device, prec) */
  krr_status (*grad)(krr_ctx *ctx, const krr_objective *obj, int64_t len, const void *yB,
                     const void *aB, void *out);
  /* out = diagonal of the Hessian of f at a_B, lambda xi*''(-lambda a) (device, prec);
   * NULL when it is the constant lambda * curv_const (squared loss: 1) */
  krr_status (*curv)(krr_ctx *ctx, const krr_objective *obj, int64_t len, const void *yB,
                     const void *aB, void *out);
  double curv_const;
  /* the box of a dual variable whose target is y (+-INFINITY: unbounded) */
  void (*box)(const krr_objective *obj, double y, double *lo, double *hi);
  /* over an n-vector (reduced over the operator): *ls = sum xi_{y_i}(F_i),
   * *cs = sum xi*_{y_i}(-lambda a_i); work is an n-vector of scratch (the
   * generic krr_loss_map_sums allocates one more, the ones it reduces against) */
  krr_status (*sums)(krr_op *op, const krr_objective *obj, const void *a, const void *F,
                     void *work, double *ls, double *cs);
};

/* The generic entries of a non-quadratic loss, through the device map
 * loss_map of the loss's code (formulas: loss_math.h).  krr_loss_map_sums
 * reduces the elementwise values over the operator (krr_op_dot against a
 * vector of ones it allocates for the call). */
krr_status krr_loss_map_grad(krr_ctx *ctx, const krr_objective *obj, int64_t len, const void *yB,
                             const void *aB, void *out);
krr_status krr_loss_map_curv(krr_ctx *ctx, const krr_objective *obj, int64_t len, const void *yB,
                             const void *aB, void *out);
void krr_loss_map_box(const krr_objective *obj, double y, double *lo, double *hi);
krr_status krr_loss_map_sums(krr_op *op, const krr_objective *obj, const void *a, const void *F,
                             void *work, double *ls, double *cs);
/* KRR_ERR_INPUT naming the loss parameter when obj's is outside its range
 * (the dual solvers check it when they resolve their options); KRR_OK
 * without an objective or a parameter */
krr_status krr_loss_check_param(krr_ctx *ctx, const krr_objective *obj);
/* the spacing below 1 of a precision (2^-53, 2^-24) */
double krr_precision_eps(krr_precision prec);

/* P(a) and D(a) from a and F = K a (n-vectors; work: n-vector scratch) */
krr_status krr_objective_values(krr_op *op, const krr_objective *obj, const void *a,
                                const void *F, void *work, double *primal, double *dual);
/* The stopping criterion of the loss at a, from F = K a: the relative
 * residual or the relative duality gap (work: n-vector scratch). */
krr_status krr_objective_criterion(krr_op *op, const krr_objective *obj, const void *a,
                                   const void *F, void *work, double *crit);
#endif
