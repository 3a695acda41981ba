/* The logistic loss of kernel logistic regression (KLR),
 * l(y, F) = log(1 + exp(-yF)), y = +-1.  Zhang et al., "Joker", Table 2:
 * xi*(v) = bEnt(-v y) on -1 <= v y <= 0, bEnt(t) = t log t + (1-t) log(1-t).
 * With v = -lambda a and t_i = lambda a_i y_i:
 *   f(a) = (1/lambda) sum bEnt(t_i),  box 0 <= a_i y_i <= 1 / lambda,
 *   grad f = y log(t / (1 - t)),  curvature lambda / (t (1 - t)).
 * Safeguards (the paper's Section 3.2): t is clamped into [e, 1 - e], e the
 * spacing of the working precision below 1, and that clamped box is the one
 * the solvers keep a in, so 1/lambda - a y is exact and the logarithms finite;
 * the curvature is capped at e^(-1/2).  Float therefore never yields NaN.
 * Criterion: the relative duality gap. */
#include "loss.h"

const krr_loss krr_loss_logistic = {
    .name = "logistic",
    .crit = KRR_CRIT_GAP,
    .linear = 0,
    .code = KRR_LOSS_LOGISTIC,
    .classification = 1,
    .grad = krr_loss_map_grad,
    .curv = krr_loss_map_curv,
    .curv_const = 0.0,
    .box = krr_loss_map_box,
    .sums = krr_loss_map_sums,
};
