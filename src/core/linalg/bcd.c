/* What the block coordinate descent solvers in feature space share (Tu,
 * Roelofs, Venkataraman and Recht 2016, Algorithms 2 and 3): the fixed
 * partition of the p coordinates (centres or features) into ceil(p / b)
 * near-equal consecutive pieces, a fresh random order of the pieces each
 * epoch, the cache of the blocks' Cholesky factors (a block's Gram matrix
 * does not change between epochs; only lambda changes it), the groups of a
 * lambda path (runs of columns with the same lambda: Tu et al.'s remark that
 * a path reuses each block's Gram matrix, so that it costs about one solve).
 * Also the groups of SAP / NSAP's path (one block, p = b). */
#include <math.h>
#include <string.h>
#include "linalg.h"
#include "../rng.h"
#include "../sampling/sampling.h"

int krr_bcd_count_groups(const krr_objective *obj) {
  int ng = 1;
  for (int j = 1; obj->lcol && j < obj->m; j++) ng += obj->lcol[j] != obj->lcol[j - 1];
  return ng;
}

double krr_bcd_memory(int64_t p, int64_t b, int ng, int m, int shifted) {
  int64_t nb = (p + b - 1) / b;
  double host = 9.0 * (double)nb + 16.0 * (m + 1);
  if (shifted && ng > 1) /* reflectors, tau, LDL^T per group, sytrd's d and e; host T, one factor */
    return 8.0 * ((double)p * (double)b + (double)p + 2.0 * (double)ng * (double)p + 2.0 * (double)b) +
           host + 8.0 * (2.0 * (double)p + 2.0 * (double)b);
  return 8.0 * (double)p * (double)b * ng + host;
}

krr_status krr_bcd_alloc(krr_bcd *c, krr_arena *a, int64_t p, int64_t b, uint64_t seed,
                         const krr_objective *obj, int shifted) {
  memset(c, 0, sizeof *c);
  c->p = p;
  c->b = b;
  c->nb = (p + b - 1) / b;
  c->seed = seed;
  c->ngcap = krr_bcd_count_groups(obj);
  c->tri = shifted && c->ngcap > 1;
  c->order = (int64_t *)krr_arena_host(a, c->nb, sizeof(int64_t));
  c->have = (unsigned char *)krr_arena_host(a, c->nb, 1);
  c->c0 = (int *)krr_arena_host(a, obj->m + 1, sizeof(int));
  c->lam = (double *)krr_arena_host(a, obj->m, sizeof(double));
  c->factors = krr_arena_dev(a, p * b * (c->tri ? 1 : c->ngcap), sizeof(double));
  KTRY(KRR_ALLOCATED(a, c->order, c->have, c->c0, c->lam, c->factors));
  if (c->tri) {
    c->tau = krr_arena_dev(a, p, sizeof(double));
    c->ldl = krr_arena_dev(a, 2 * c->ngcap * p, sizeof(double));
    c->de = krr_arena_dev(a, 2 * b, sizeof(double));
    c->td = (double *)krr_arena_host(a, 2 * p, sizeof(double));
    c->hf = (double *)krr_arena_host(a, 2 * b, sizeof(double));
    KTRY(KRR_ALLOCATED(a, c->tau, c->ldl, c->de, c->td, c->hf));
  }
  memset(c->have, 0, (size_t)c->nb);
  return krr_bcd_regroup(a->ctx, c, obj);
}

/* tri form: block k's LDL^T factors of T_k + lambda_q I for every group, on
 * the device.  T_k is similar to a Gram matrix (positive semidefinite up to
 * rounding): a pivot <= 0 is retried with the jitter jabs + jrel lambda_q,
 * then ten times more (a proximal step: the fixed point stays) */
static krr_status tri_factors(krr_ctx *ctx, krr_bcd *c, int64_t k) {
  int64_t off, len;
  krr_bcd_range(c, k, &off, &len);
  const double *d = c->td + off, *e = c->td + c->p + off;
  double *D = c->hf, *l = c->hf + len;
  for (int q = 0; q < c->ng; q++) {
    double j0 = c->jabs + c->jrel * c->lam[q], jitter = 0;
    if (!(j0 > 0)) j0 = 1e-15;
    int ok = 0;
    for (int attempt = 0; attempt < 9 && !ok; attempt++) {
      const double shift = c->lam[q] + jitter;
      D[0] = d[0] + shift;
      ok = D[0] > 0 && isfinite(D[0]);
      for (int64_t i = 1; i < len && ok; i++) {
        l[i - 1] = e[i - 1] / D[i - 1];
        D[i] = d[i] + shift - l[i - 1] * e[i - 1];
        ok = D[i] > 0 && isfinite(D[i]);
      }
      jitter = attempt == 0 ? j0 : jitter * 10;
    }
    if (!ok)
      return krr_fail(ctx, KRR_ERR_NUMERIC, "%s: the block system is not positive definite "
                      "(its factorisation failed even with a jitter); use a larger lambda",
                      c->who ? c->who : "bcd");
    KTRY(ctx->ops->upload(ctx, KAT(c->ldl, (int64_t)(2 * q) * c->p + off, sizeof(double)), D,
                          sizeof(double) * (size_t)len));
    if (len > 1)
      KTRY(ctx->ops->upload(ctx, KAT(c->ldl, (int64_t)(2 * q + 1) * c->p + off, sizeof(double)), l,
                            sizeof(double) * (size_t)(len - 1)));
  }
  return KRR_OK;
}

krr_status krr_bcd_regroup(krr_ctx *ctx, krr_bcd *c, const krr_objective *obj) {
  int ng = 0;
  for (int j = 0; j < obj->m; j++)
    if (j == 0 || krr_objective_lambda(obj, j) != krr_objective_lambda(obj, j - 1)) {
      if (ng >= c->ngcap) return KRR_ERR_INTERNAL; /* more groups than at init */
      c->c0[ng] = j;
      c->lam[ng++] = krr_objective_lambda(obj, j);
    }
  c->c0[ng] = obj->m;
  c->ng = ng;
  if (!c->tri) {
    krr_bcd_forget(c);
    return KRR_OK;
  }
  for (int64_t k = 0; k < c->nb; k++) /* the tridiagonal forms stay; only the factors change */
    if (c->have[k]) KTRY(tri_factors(ctx, c, k));
  return KRR_OK;
}

void krr_bcd_forget(krr_bcd *c) {
  if (c->have) memset(c->have, 0, (size_t)c->nb);
}

void krr_bcd_range(const krr_bcd *c, int64_t k, int64_t *off, int64_t *len) {
  int64_t q = c->p / c->nb, r = c->p % c->nb;
  *off = k * q + (k < r ? k : r);
  *len = q + (k < r ? 1 : 0);
}

int64_t krr_bcd_pick(krr_bcd *c, int64_t iter) {
  int64_t slot = iter % c->nb;
  if (slot == 0) /* a new epoch: a random order of the blocks */
    krr_sample_permutation(krr_rng_stream(c->seed, (uint64_t)(iter / c->nb), 42), c->nb, c->order);
  return c->order[slot];
}

/* block k's factor for group g: its slot in the cache (len x len, ld len) */
void *krr_bcd_slot(const krr_bcd *c, int64_t k, int g) {
  int64_t off, len;
  krr_bcd_range(c, k, &off, &len);
  return KAT(c->factors, (int64_t)g * c->p * c->b + off * c->b, sizeof(double));
}

krr_status krr_bcd_factor(krr_ctx *ctx, krr_bcd *c, int64_t k, int g, const void *G,
                          double jitter0, const char *who) {
  int64_t off, len;
  double used = 0;
  krr_bcd_range(c, k, &off, &len);
  KTRY(krr_chol_jitter(ctx, len, G, krr_bcd_slot(c, k, g), jitter0, &used));
  if (isnan(used))
    return krr_fail(ctx, KRR_ERR_NUMERIC, "%s: the block system is not positive definite "
                    "(Cholesky failed even with a jitter); use a larger lambda", who);
  return KRR_OK;
}

krr_status krr_bcd_factor_shifted(krr_ctx *ctx, krr_bcd *c, int64_t k, const void *G, void *T,
                                  double abs_jitter, double rel_jitter, const char *who) {
  int64_t off, len;
  krr_bcd_range(c, k, &off, &len);
  const size_t bytes = sizeof(double) * (size_t)(len * len);
  if (c->tri) { /* G = Q T Q^T, once */
    void *V = krr_bcd_slot(c, k, 0);
    c->jabs = abs_jitter;
    c->jrel = rel_jitter;
    c->who = who;
    if (V != G) KTRY(ctx->ops->copy(ctx, V, G, bytes)); /* G may be the slot itself (SAP) */
    KTRY(KOP(ctx, KRR_DOUBLE, sytrd, len, V, len, c->de, KAT(c->de, len, sizeof(double)),
             KAT(c->tau, off, sizeof(double))));
    KTRY(ctx->ops->download(ctx, c->td + off, c->de, sizeof(double) * (size_t)len));
    if (len > 1)
      KTRY(ctx->ops->download(ctx, c->td + c->p + off, KAT(c->de, len, sizeof(double)),
                              sizeof(double) * (size_t)(len - 1)));
    KTRY(tri_factors(ctx, c, k));
  } else {
    for (int q = 0; q < c->ng; q++) {
      KTRY(ctx->ops->copy(ctx, T, G, bytes));
      KTRY(KOP(ctx, KRR_DOUBLE, add_diag, len, T, len, c->lam[q], NULL));
      KTRY(krr_bcd_factor(ctx, c, k, q, T, abs_jitter + rel_jitter * c->lam[q], who));
    }
  }
  c->have[k] = 1;
  return KRR_OK;
}

krr_status krr_bcd_solve(krr_ctx *ctx, const krr_bcd *c, int64_t k, void *g, int64_t ldg) {
  int64_t off, len;
  krr_bcd_range(c, k, &off, &len);
  if (c->tri) { /* g <- Q (T + lambda_q I)^{-1} Q^T g, column group by group */
    const int m = c->c0[c->ng];
    const void *V = krr_bcd_slot(c, k, 0), *tau = KAT(c->tau, off, sizeof(double));
    KTRY(KOP(ctx, KRR_DOUBLE, ormtr, 1, len, m, V, len, tau, g, ldg));
    for (int q = 0; q < c->ng; q++)
      KTRY(KOP(ctx, KRR_DOUBLE, pttrs, len, c->c0[q + 1] - c->c0[q],
               KAT(c->ldl, (int64_t)(2 * q) * c->p + off, sizeof(double)),
               KAT(c->ldl, (int64_t)(2 * q + 1) * c->p + off, sizeof(double)),
               KAT(g, (int64_t)c->c0[q] * ldg, sizeof(double)), ldg));
    return KOP(ctx, KRR_DOUBLE, ormtr, 0, len, m, V, len, tau, g, ldg);
  }
  for (int q = 0; q < c->ng; q++)
    KTRY(krr_chol_solve(ctx, len, krr_bcd_slot(c, k, q), c->c0[q + 1] - c->c0[q],
                        KAT(g, (int64_t)c->c0[q] * ldg, sizeof(double)), ldg));
  return KRR_OK;
}
