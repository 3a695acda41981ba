/* The squared hinge loss of the L2 support vector classifier,
 * l(y, F) = max(0, 1 - yF)^2 / 2, y = +-1.  Zhang et al., "Joker", Table 2:
 * xi*(v) = v^2/2 + v y on v y <= 0.  With v = -lambda a:
 *   f(a) = lambda/2 ||a||^2 - y^T a,  box a_i y_i >= 0 (one-sided),
 * grad f = lambda a - y, curvature lambda.  Criterion: the relative duality
 * gap. */
#include "loss.h"

const krr_loss krr_loss_squared_hinge = {
    .name = "squared_hinge",
    .crit = KRR_CRIT_GAP,
    .linear = 0,
    .sparse = 1,
    .code = KRR_LOSS_SQUARED_HINGE,
    .classification = 1,
    .grad = krr_loss_map_grad,
    .curv = NULL,
    .curv_const = 1.0,
    .box = krr_loss_map_box,
    .sums = krr_loss_map_sums,
};
