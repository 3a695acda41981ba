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
  if (shifted && ng > 1) /* V, 1 / (e + lambda) per group, V^T g; host e and one block's scale */
    return 8.0 * ((double)p * (double)b + (double)ng * (double)p + (double)b * m) + host +
           8.0 * ((double)p + (double)b);
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
  c->eig = shifted && c->ngcap > 1;
  c->order = (int64_t *)krr_arena_host(a, c->nb, sizeof(int64_t));
  c->have = (unsigned char *)krr_arena_host(a, c->nb, 1);
  c->c0 = (int *)krr_arena_host(a, obj->m + 1, sizeof(int));
  c->lam = (double *)krr_arena_host(a, obj->m, sizeof(double));
  c->factors = krr_arena_dev(a, p * b * (c->eig ? 1 : c->ngcap), sizeof(double));
  KTRY(KRR_ALLOCATED(a, c->order, c->have, c->c0, c->lam, c->factors));
  if (c->eig) {
    c->ev = (double *)krr_arena_host(a, p, sizeof(double));
    c->hinv = (double *)krr_arena_host(a, b, sizeof(double));
    c->inv = krr_arena_dev(a, p * c->ngcap, sizeof(double));
    c->tmp = krr_arena_dev(a, b * obj->m, sizeof(double));
    KTRY(KRR_ALLOCATED(a, c->ev, c->hinv, c->inv, c->tmp));
  }
  memset(c->have, 0, (size_t)c->nb);
  return krr_bcd_regroup(a->ctx, c, obj);
}

/* eig form: block k's 1 / (e + lam[q]) for every group, on the device */
static krr_status eig_scales(krr_ctx *ctx, krr_bcd *c, int64_t k) {
  int64_t off, len;
  krr_bcd_range(c, k, &off, &len);
  for (int q = 0; q < c->ng; q++) {
    for (int64_t i = 0; i < len; i++) c->hinv[i] = 1.0 / (c->ev[off + i] + c->lam[q]);
    KTRY(ctx->ops->upload(ctx, KAT(c->inv, (int64_t)q * c->p + off, sizeof(double)), c->hinv,
                          sizeof(double) * (size_t)len));
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
  if (!c->eig) {
    krr_bcd_forget(c);
    return KRR_OK;
  }
  for (int64_t k = 0; k < c->nb; k++) /* the eigensystems stay; only the scales change */
    if (c->have[k]) KTRY(eig_scales(ctx, c, k));
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
  if (c->eig) { /* G = V diag(e) V^T, once; e clamped at 0 (G is a Gram matrix) */
    void *V = krr_bcd_slot(c, k, 0);
    KTRY(ctx->ops->copy(ctx, V, G, bytes));
    KTRY(KOP(ctx, KRR_DOUBLE, syev, len, V, len, c->tmp));
    KTRY(ctx->ops->download(ctx, c->ev + off, c->tmp, sizeof(double) * (size_t)len));
    for (int64_t i = 0; i < len; i++)
      if (!(c->ev[off + i] > 0)) c->ev[off + i] = 0;
    KTRY(eig_scales(ctx, c, k));
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
  if (c->eig) { /* g <- V diag(1 / (e + lambda_q)) V^T g, column group by group */
    const int m = c->c0[c->ng];
    const void *V = krr_bcd_slot(c, k, 0);
    KTRY(KOP(ctx, KRR_DOUBLE, gemm, 1, 0, len, m, len, 1.0, V, len, g, ldg, 0.0, c->tmp, len));
    for (int q = 0; q < c->ng; q++)
      KTRY(KOP(ctx, KRR_DOUBLE, scale_rows, len, c->c0[q + 1] - c->c0[q],
               KAT(c->inv, (int64_t)q * c->p + off, sizeof(double)),
               KAT(c->tmp, (int64_t)c->c0[q] * len, sizeof(double)), len));
    return KOP(ctx, KRR_DOUBLE, gemm, 0, 0, len, m, len, 1.0, V, len, c->tmp, len, 0.0, g, ldg);
  }
  for (int q = 0; q < c->ng; q++)
    KTRY(krr_chol_solve(ctx, len, krr_bcd_slot(c, k, q), c->c0[q + 1] - c->c0[q],
                        KAT(g, (int64_t)c->c0[q] * ldg, sizeof(double)), ldg));
  return KRR_OK;
}
