/* The epsilon-insensitive loss of support vector regression,
 * l(y, F) = max(0, |y - F| - eps) (param = eps >= 0, default 0.1 as in
 * LIBSVM and R's loss_svr(); the paper's Table A.3 uses 0.25).  Zhang et al., "Joker", Table 2: xi*(v) = eps |v|
 * + v y on |v| <= 1.  With v = -lambda a:
 *   f(a) = eps ||a||_1 - y^T a,  box |a_i| <= 1 / lambda  (C = 1 / lambda),
 * non-smooth at a_i = 0.  grad f = eps sign(a) - y with sign(0) = 0, curvature
 * 0.  The non-smooth term is handled by the sign linearisation of the
 * paper's Appendix B.2 (A.11) made exact: inside one trust-region step every
 * variable stays in one orthant (a_i > 0: [0, 1/lambda]; a_i < 0:
 * [-1/lambda, 0]; a_i = 0: the orthant its least-norm subgradient points to,
 * or held at 0 when |(K a)_i - y_i| <= eps), where eps |a| is linear, so the
 * quadratic model is exact and the box machinery of the other losses applies
 * (loss_map kinds PSEUDO, LO, HI).  We chose this over the +- split (A.9)
 * because the split doubles the variables and the block kernel matrix, and
 * over the plain linearisation because sign(0) = 0 alone would let a variable
 * leave 0 when the subgradient says it should stay.  Criterion: the relative
 * duality gap. */
#include "loss.h"

const krr_loss krr_loss_svr = {
    .name = "svr",
    .crit = KRR_CRIT_GAP,
    .linear = 0,
    .sparse = 1,
    .code = KRR_LOSS_SVR,
    .at_bound = 1,
    .param_name = "epsilon",
    .param_default = 0.1,
    .param_lo = 0.0,
    .param_lo_open = 0,
    .grad = krr_loss_map_grad,
    .curv = krr_loss_map_curv,
    .curv_const = 0.0,
    .box = krr_loss_map_box,
    .sums = krr_loss_map_sums,
};
