/* The hinge loss of the L1 support vector classifier, l(y, F) = max(0, 1 - yF),
 * y = +-1.  Zhang et al., "Joker", Table 2: xi*(v) = v y on -1 <= v y <= 0.
 * With v = -lambda a:
 *   f(a) = -y^T a,  box 0 <= a_i y_i <= 1 / lambda  (the SVM dual, C = 1 / lambda),
 * grad f = -y, curvature 0 (the trust-region model is K_BB alone).
 * Criterion: the relative duality gap. */
#include "loss.h"

const krr_loss krr_loss_hinge = {
    .name = "hinge",
    .crit = KRR_CRIT_GAP,
    .linear = 0,
    .sparse = 1,
    .code = KRR_LOSS_HINGE,
    .at_bound = 1,
    .classification = 1,
    .grad = krr_loss_map_grad,
    .curv = krr_loss_map_curv,
    .curv_const = 0.0,
    .box = krr_loss_map_box,
    .sums = krr_loss_map_sums,
};
