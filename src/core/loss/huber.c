/* The Huber loss l(y, F) = (y - F)^2 / 2 if |y - F| <= delta, else
 * delta |y - F| - delta^2 / 2 (param = delta > 0, default 1).
 * Zhang et al., "Joker", Table 2: xi*(v) = v^2/2 + v y on |v| <= delta.  With
 * the package's v = -lambda a:
 *   f(a) = (1/lambda) sum xi*(-lambda a_i) = lambda/2 ||a||^2 - y^T a,
 *   grad f = lambda a - y, curvature lambda (constant), box |a_i| <= delta / lambda:
 * the KRR dual with a box (Table A.2).  Criterion: the relative duality gap. */
#include "loss.h"

const krr_loss krr_loss_huber = {
    .name = "huber",
    .crit = KRR_CRIT_GAP,
    .linear = 0,
    .code = KRR_LOSS_HUBER,
    .at_bound = 1,
    .param_name = "delta",
    .param_default = 1.0,
    .param_lo = 0.0,
    .param_lo_open = 1,
    .grad = krr_loss_map_grad,
    .curv = NULL,
    .curv_const = 1.0,
    .box = krr_loss_map_box,
    .sums = krr_loss_map_sums,
};
