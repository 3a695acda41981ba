/* The EigenPro 2.0 iteration (Ma and Belkin 2019), shared by the EigenPro 2.0
 * solver (solvers/eigenpro.c, which documents the method and its rules) and
 * EigenPro 3.0's inexact projection (solvers/eigenpro3.c, lambda = 0 there).
 *
 * One step on (K + lambda I) w = y, batch B (|B| = bs), subsample S:
 *     g = K_{B:} w + lambda w_B - y_B
 *     w_B -= (eta / bs) g;   w_S += (eta / bs) U D U^T K_{S,B} g
 * with K_SS = U Sigma U^T (top q), D_j = (1 - t_j) / sigma_j,
 *     t_j = ((sigma_q+1 / s + lambda / n) / (sigma_j / s + lambda / n))^alpha,
 * alpha = 0.95, and the automatic batch / step of EigenPro 2.0 from
 *     beta = max_{i in S} k_P(x_i, x_i) + lambda,
 *     k_P(x_i, x_i) = K(x_i, x_i) - sum_j (1 - t_j) sigma_j U_ij^2   (the operator's diagonal),
 *     top = (sigma_1/s + lambda/n)^(1-alpha) (sigma_q+1/s + lambda/n)^alpha,
 *     m* = beta / top,  bs = min(m* + 1, cap),
 *     eta = bs / beta if bs < m* + 1, else 0.99 * 2 bs / (beta + (bs - 1) top),
 * the automatic step multiplied by step_scale. */
#include <math.h>
#include <string.h>
#include "linalg.h"
#include "../sampling/sampling.h"
#include "../rng.h"

#define EP_ALPHA 0.95
#define EP_BS_CAP 4096

int64_t krr_ep_batch_cap(int64_t n, int64_t batch) {
  if (batch > 0) return batch;
  return n < EP_BS_CAP ? n : EP_BS_CAP;
}

double krr_ep_memory(const krr_op *op, int m, int64_t S, int q, int64_t bs_cap) {
  double es = (double)op->es;
  return krr_sym_top_bytes(S, (int64_t)q + 1, op->es) /* the eigensystem's, transient */ +
         es * ((double)S * q + q +
               (double)bs_cap * m * 3.0 + (double)S * m + (double)q * m) +
         krr_block_bytes(op, S) + krr_block_bytes(op, bs_cap) +
         8.0 * ((double)S + (double)S * q + (double)(op->n / 64 + 1));
}

krr_status krr_ep_alloc(krr_ep *ep, krr_arena *a, krr_op *op, const krr_objective *obj,
                        int64_t S, int q, int64_t batch, double step, double step_scale,
                        uint64_t seed) {
  memset(ep, 0, sizeof *ep);
  ep->ctx = op->ctx;
  ep->op = op;
  ep->obj = obj;
  ep->n = op->n;
  ep->S = S;
  ep->q = q;
  ep->m = obj->m;
  ep->user_batch = batch;
  ep->user_step = step;
  ep->step_scale = step_scale;
  ep->seed = seed;
  ep->bs_cap = krr_ep_batch_cap(op->n, batch);
  size_t es = op->es;
  int m = obj->m;
  KTRY(krr_block_alloc(op, a, S, &ep->sub));
  KTRY(krr_block_alloc(op, a, ep->bs_cap, &ep->batch));
  ep->mark = (uint64_t *)krr_arena_host(a, op->n / 64 + 1, sizeof(uint64_t));
  ep->w_eig = (double *)krr_arena_host(a, S, sizeof(double));
  ep->uh = (double *)krr_arena_host(a, S * q, sizeof(double));
  ep->U = krr_arena_dev(a, S * q, es);
  ep->D = krr_arena_dev(a, q, es);
  ep->g = krr_arena_dev(a, ep->bs_cap * m, es);
  ep->gb = krr_arena_dev(a, ep->bs_cap * m, es);
  ep->gw = krr_arena_dev(a, ep->bs_cap * m, es);
  ep->h = krr_arena_dev(a, S * m, es);
  ep->t = krr_arena_dev(a, (int64_t)q * m, es);
  return KRR_ALLOCATED(a, ep->mark, ep->w_eig, ep->uh, ep->U, ep->D, ep->g, ep->gb, ep->gw, ep->h,
                       ep->t);
}

/* the subsample and its eigensystem: independent of lambda */
krr_status krr_ep_prepare(krr_ep *ep) {
  krr_sample_uniform(krr_rng_stream(ep->seed, 0, 40), ep->n, ep->S, ep->mark, ep->sub.idx_h);
  KTRY(krr_block_set(ep->op, &ep->sub, ep->sub.idx_h, ep->S));
  KTRY(krr_kernel_eigsys(ep->op, &ep->sub, ep->q, ep->seed, ep->U, ep->w_eig));
  return krr_download_vec(ep->ctx, ep->op->prec, ep->U, ep->S * ep->q, ep->uh);
}

/* preconditioner, beta, batch and step for the objective's lambda */
krr_status krr_ep_tune(krr_ep *ep) {
  int64_t S = ep->S, n = ep->n;
  int q = ep->q;
  const double *w = ep->w_eig;
  double lambda = ep->obj->lambda, ln = lambda / (double)n;
  double *dh = (double *)malloc(sizeof(double) * (size_t)(q + 1));
  double *fac = (double *)malloc(sizeof(double) * (size_t)(q + 1));
  double *kd = (double *)malloc(sizeof(double) * (size_t)S);
  krr_status st = KRR_OK;
  if (!dh || !fac || !kd) { st = krr_fail(ep->ctx, KRR_ERR_MEMORY, "out of host memory"); goto done; }
  if ((st = krr_op_diag(ep->op, &ep->sub, kd)) != KRR_OK) goto done;
  double sig1 = w[S - 1] > 0 ? w[S - 1] : 0, tail = w[S - 1 - q] > 0 ? w[S - 1 - q] : 0;
  double tl = tail / (double)S + ln;
  for (int j = 0; j < q; j++) {
    double sj = w[S - 1 - j];
    double tj = sj > tail && sj > 0 ? pow(tl / (sj / (double)S + ln), EP_ALPHA) : 1.0;
    dh[j] = sj > 0 ? (1.0 - tj) / sj : 0.0;
    fac[j] = (1.0 - tj) * (sj > 0 ? sj : 0);
  }
  double bmax = 0, kmax = 0;
  for (int64_t i = 0; i < S; i++) kmax = kd[i] > kmax ? kd[i] : kmax;
  for (int64_t i = 0; i < S; i++) {
    double kp = kd[i];
    for (int j = 0; j < q; j++) kp -= fac[j] * ep->uh[i + (int64_t)j * S] * ep->uh[i + (int64_t)j * S];
    if (kp > bmax) bmax = kp;
  }
  if (!(bmax > 0)) bmax = kmax; /* no correction left: the largest diagonal entry */
  ep->beta = bmax + lambda;
  ep->top = pow(sig1 / (double)S + ln, 1.0 - EP_ALPHA) * pow(tl, EP_ALPHA);
  if (!(ep->top > 0) || !isfinite(ep->top)) {
    st = krr_fail(ep->ctx, KRR_ERR_NUMERIC,
                  "EigenPro: the preconditioned top eigenvalue is not positive (%g)", ep->top);
    goto done;
  }
  ep->mstar = ep->beta / ep->top;
  int64_t cap = krr_ep_batch_cap(n, 0);
  int64_t bs = ep->user_batch > 0 ? ep->user_batch
                                  : (ep->mstar + 1 < (double)cap ? (int64_t)(ep->mstar + 1) : cap);
  ep->bs = bs < 1 ? 1 : bs;
  if (ep->user_step > 0) ep->eta = ep->user_step;
  else if ((double)ep->bs < ep->mstar + 1) ep->eta = ep->step_scale * (double)ep->bs / ep->beta;
  else ep->eta = ep->step_scale * 0.99 * 2.0 * (double)ep->bs / (ep->beta + (double)(ep->bs - 1) * ep->top);
  st = krr_upload_vec_into(ep->ctx, ep->op->prec, dh, q, ep->D);
done:
  free(dh); free(fac); free(kd);
  return st;
}

/* h(S x m) <- U D U^T h */
static krr_status precond(krr_ep *ep, void *h) {
  krr_ctx *ctx = ep->ctx;
  krr_precision prec = ep->op->prec;
  int64_t S = ep->S;
  int q = ep->q, m = ep->m;
  KTRY(KOP(ctx, prec, gemm, 1, 0, q, m, S, 1.0, ep->U, S, h, S, 0.0, ep->t, q));
  KTRY(KOP(ctx, prec, scale_rows, q, m, ep->D, ep->t, q));
  return KOP(ctx, prec, gemm, 0, 0, S, m, q, 1.0, ep->U, S, ep->t, q, 0.0, h, S);
}

krr_status krr_ep_iter(krr_ep *ep, void *w, uint64_t it, double *gn, double *ybn) {
  krr_op *op = ep->op;
  int64_t bs = ep->bs;
  int m = ep->m;
  krr_sample_uniform(krr_rng_stream(ep->seed, it, 0), ep->n, bs, ep->mark, ep->batch.idx_h);
  KTRY(krr_block_set(op, &ep->batch, ep->batch.idx_h, bs));
  KTRY(krr_block_gradient(op, ep->obj, &ep->batch, w, ep->g, ep->gb, ep->gw, gn, ybn));
  double st = ep->eta / (double)bs;
  KTRY(krr_op_mv(op, &ep->sub, &ep->batch, ep->g, bs, m, ep->h, ep->S));
  KTRY(precond(ep, ep->h));
  KTRY(krr_op_scatter_axpy(op, -st, ep->g, bs, m, &ep->batch, w));
  return krr_op_scatter_axpy(op, st, ep->h, ep->S, m, &ep->sub, w);
}
