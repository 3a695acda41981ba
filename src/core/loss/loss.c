/* The loss table, the objective (targets on the device) and the generic
 * objective values and stopping criterion. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "loss.h"
#include "../dist/dist.h"
#include "../base/base.h"

/* one line per loss, the squared loss first */
#define LOSSES(X) \
  X(squared)      \
  X(huber)        \
  X(svr)          \
  X(hinge)        \
  X(squared_hinge) \
  X(logistic)

#define DECLARE(name) extern const krr_loss krr_loss_##name;
LOSSES(DECLARE)
#define ENTRY(name) &krr_loss_##name,
static const krr_loss *const table[] = {LOSSES(ENTRY)};
#define N_LOSSES ((int)(sizeof table / sizeof table[0]))

int krr_loss_count(void) { return N_LOSSES; }
const krr_loss *krr_loss_get(int i) { return i >= 0 && i < N_LOSSES ? table[i] : NULL; }
const char *krr_loss_name(const krr_loss *loss) { return loss ? loss->name : NULL; }

krr_status krr_loss_check_param(krr_ctx *ctx, const krr_objective *obj) {
  const krr_loss *l = obj ? obj->loss : NULL;
  if (!l || !l->param_name) return KRR_OK;
  double p = obj->param;
  if (!isfinite(p) || (l->param_lo_open ? !(p > l->param_lo) : !(p >= l->param_lo)))
    return krr_fail(ctx, KRR_ERR_INPUT, "the %s loss parameter `%s` must be %s %g (got %g)",
                    l->name, l->param_name, l->param_lo_open ? ">" : ">=", l->param_lo, p);
  return KRR_OK;
}

const krr_loss *krr_loss_lookup(const char *name) {
  for (int i = 0; name && i < N_LOSSES; i++)
    if (strcmp(table[i]->name, name) == 0) return table[i];
  return NULL;
}

krr_status krr_objective_init(krr_ctx *ctx, const krr_op *op, const krr_loss *loss,
                              double lambda, const double *y, int m, krr_objective *obj) {
  memset(obj, 0, sizeof *obj);
  if (!loss) return krr_fail(ctx, KRR_ERR_INPUT, "unknown loss");
  if (!(lambda > 0) || !isfinite(lambda))
    return krr_fail(ctx, KRR_ERR_INPUT, "`lambda` must be positive and finite");
  if (m < 1) return krr_fail(ctx, KRR_ERR_INPUT, "need at least one column of targets");
  obj->loss = loss;
  obj->lambda = lambda;
  obj->prec = op->prec;
  obj->n = op->nloc;
  obj->m = m;
  /* sum of squares per column; over all ranks when the rows are sharded */
  double *ss = (double *)calloc((size_t)m + 1, sizeof(double));
  if (!ss) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  for (int c = 0; c < m; c++)
    for (int64_t i = 0; i < obj->n; i++) ss[c] += y[i + c * obj->n] * y[i + c * obj->n];
  krr_comm *comm = krr_op_comm(op, NULL);
  krr_status rs = comm ? krr_comm_allreduce(comm, ctx, ss, m, KRR_DT_DOUBLE, KRR_RED_SUM) : KRR_OK;
  if (rs != KRR_OK) { free(ss); return rs; }
  for (int c = 0; c < m; c++) ss[m] += ss[c];
  obj->ynorm = sqrt(ss[m]);
  if (m > 1) {
    obj->ycol = (double *)malloc(sizeof(double) * (size_t)m);
    if (!obj->ycol) { free(ss); return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory"); }
    for (int c = 0; c < m; c++) obj->ycol[c] = sqrt(ss[c]);
  }
  free(ss);
  obj->param = loss->param_name ? loss->param_default : 0.0;
  krr_status st = KRR_OK;
  if (!isfinite(obj->ynorm)) st = krr_fail(ctx, KRR_ERR_INPUT, "the targets must be finite");
  if (st == KRR_OK && loss->classification)
    for (int64_t i = 0; i < obj->n * (int64_t)m; i++)
      if (y[i] != 1.0 && y[i] != -1.0) {
        st = krr_fail(ctx, KRR_ERR_INPUT, "the %s loss needs targets -1 or +1 (got %g)",
                      loss->name, y[i]);
        break;
      }
  if (st == KRR_OK) st = krr_upload_vec(ctx, obj->prec, y, obj->n * (int64_t)m, &obj->y);
  if (st != KRR_OK) {
    free(obj->ycol);
    obj->ycol = NULL;
  }
  return st;
}

const char *krr_loss_param_name(const krr_loss *loss) { return loss ? loss->param_name : NULL; }

double krr_loss_dual_bound(const krr_loss *loss, double lambda, double param) {
  if (!loss || !(loss->sparse || loss->at_bound)) return NAN;
  krr_objective obj = {.loss = loss, .lambda = lambda, .prec = KRR_DOUBLE};
  obj.param = loss->param_name ? param : 0.0;
  double b = 0;
  for (int s = -1; s <= 1; s += 2) { /* both targets' boxes (hinge: [0, b] and [-b, 0]) */
    double lo = 0, hi = 0;
    loss->box(&obj, (double)s, &lo, &hi);
    b = fmax(b, fmax(-lo, hi));
  }
  return b;
}

krr_status krr_objective_set_param(krr_ctx *ctx, krr_objective *obj, double param) {
  const krr_loss *loss = obj ? obj->loss : NULL;
  if (!loss) return krr_fail(ctx, KRR_ERR_INPUT, "no objective");
  if (!isfinite(param))
    return krr_fail(ctx, KRR_ERR_INPUT, "the %s loss parameter `%s` must be finite", loss->name,
                    loss->param_name ? loss->param_name : "param");
  if (!loss->param_name) return KRR_OK; /* ignored */
  if (loss->param_lo_open ? !(param > loss->param_lo) : !(param >= loss->param_lo))
    return krr_fail(ctx, KRR_ERR_INPUT, "the %s loss parameter `%s` must be %s %g (got %g)",
                    loss->name, loss->param_name, loss->param_lo_open ? ">" : ">=",
                    loss->param_lo, param);
  obj->param = param;
  return KRR_OK;
}

void krr_objective_free(krr_ctx *ctx, krr_objective *obj) {
  if (!obj) return;
  if (obj->y) krr_dfree(ctx, &obj->y);
  if (obj->rows) krr_dfree(ctx, &obj->rows);
  free(obj->ycol);
  obj->ycol = NULL;
  free(obj->lcol);
  obj->lcol = NULL;
}

krr_status krr_objective_set_lambdas(krr_ctx *ctx, krr_objective *obj, const double *lcol) {
  if (strcmp(obj->loss->name, "squared") != 0)
    return krr_fail(ctx, KRR_ERR_INPUT, "a `lambda` path is only available for the squared loss");
  double lo = INFINITY;
  for (int j = 0; j < obj->m; j++) {
    if (!(lcol[j] > 0) || !isfinite(lcol[j]))
      return krr_fail(ctx, KRR_ERR_INPUT, "every `lambda` of the path must be positive and finite");
    if (lcol[j] < lo) lo = lcol[j];
  }
  double *c = (double *)malloc(sizeof(double) * (size_t)obj->m);
  if (!c) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  memcpy(c, lcol, sizeof(double) * (size_t)obj->m);
  free(obj->lcol);
  obj->lcol = c;
  obj->lambda = lo;
  return KRR_OK;
}

krr_status krr_objective_values(krr_op *op, const krr_objective *obj, const void *a,
                                const void *F, void *work, double *primal, double *dual) {
  int64_t len = op->nloc * (int64_t)obj->m;
  double aKa = 0, ls = 0, cs = 0;
  KTRY(krr_op_dot(op, len, a, F, &aKa));
  KTRY(obj->loss->sums(op, obj, a, F, work, &ls, &cs));
  *primal = 0.5 * aKa + ls / obj->lambda;
  *dual = 0.5 * aKa + cs / obj->lambda;
  return KRR_OK;
}

double krr_duality_gap(double primal, double dual) {
  return (primal + dual) / fmax(fmax(fabs(primal), fabs(dual)), 1e-300);
}

krr_status krr_objective_criterion(krr_op *op, const krr_objective *obj, const void *a,
                                   const void *F, void *work, double *crit) {
  int64_t len = op->nloc * (int64_t)obj->m;
  if (obj->loss->crit == KRR_CRIT_RESIDUAL) {
    double nr = 0;
    KTRY(obj->loss->grad(op->ctx, obj, len, obj->y, a, work));
    KTRY(KOP(op->ctx, op->prec, axpby, len, 1.0, F, 1.0, work));
    if (obj->m > 1 && obj->ycol) {
      /* several right-hand sides: the worst column's relative residual
       * max_j ||r_j|| / ||y_j|| (a zero column relative to ||Y||_F), so that
       * a tolerance bounds every output's error, not their sum */
      size_t es = krr_sizeof(op->prec);
      double worst = 0;
      for (int c = 0; c < obj->m; c++) {
        KTRY(krr_op_nrm2(op, op->nloc, KAT(work, (int64_t)c * op->nloc, es), &nr));
        double den = obj->ycol[c] > 0 ? obj->ycol[c] : (obj->ynorm > 0 ? obj->ynorm : 1.0);
        if (nr / den > worst) worst = nr / den;
      }
      *crit = worst;
    } else {
      KTRY(krr_op_nrm2(op, len, work, &nr));
      *crit = obj->ynorm > 0 ? nr / obj->ynorm : nr;
    }
  } else if (obj->rows && obj->m > 1) {
    /* columns holding rows out are separate fits (the folds of a cross-validation):
     * the worst column's gap, so that a tolerance holds for each */
    size_t es = krr_sizeof(op->prec);
    *crit = 0;
    for (int c = 0; c < obj->m; c++) {
      int64_t off = (int64_t)c * op->nloc;
      krr_objective col = *obj;
      double P = 0, D = 0;
      col.m = 1;
      col.y = KAT(obj->y, off, es);
      col.rows = KAT(obj->rows, off, es);
      KTRY(krr_objective_values(op, &col, KAT(a, off, es), KAT(F, off, es), work, &P, &D));
      double g = krr_duality_gap(P, D);
      if (!(g <= *crit)) *crit = g; /* NaN wins: the check below reports it */
    }
  } else {
    double P = 0, D = 0;
    KTRY(krr_objective_values(op, obj, a, F, work, &P, &D));
    *crit = krr_duality_gap(P, D);
  }
  if (!isfinite(*crit))
    return krr_fail(op->ctx, KRR_ERR_NUMERIC, "the iterate diverged (non-finite criterion)");
  return KRR_OK;
}
