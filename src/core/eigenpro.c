/* EigenPro 2.0 (Ma and Belkin 2019; KRR_SOLVER_EIGENPRO, ep_version 2), written
 * once for both precisions against the krr_ops table.
 *
 * EigenPro 2.0: preconditioned mini-batch SGD (Richardson) on OUR regularised
 * system (K + lambda I) w = y.  The papers set lambda = 0 and iterate on
 * K w = y; we always have lambda > 0 and put it in the gradient:
 *     g = K_{B:} w + lambda w_B - y_B                     (batch B, |B| = bs)
 *     w_B -= (eta / bs) g                                  (SGD step)
 *     w_S += (eta / bs) U D U^T K_{S,B} g                   (EigenPro correction)
 * S: s points drawn uniformly once (ep_subsample, default min(n, 4000));
 * K_SS = U Sigma U^T its eigensystem (syev), top q = rank (default
 * min(100, s - 1)) directions corrected with the (q+1)-th as the tail:
 *     D_j = (1 - t_j) / sigma_j,
 *     t_j = ((sigma_q+1 / s + lambda / n) / (sigma_j / s + lambda / n))^alpha, alpha = 0.95
 * (the EigenPro repository's alpha; with lambda = 0 this is exactly its
 * preconditioner).  sigma_j / s estimates the j-th eigenvalue of the
 * covariance operator K / n, and lambda / n is our ridge on the same scale, so
 * the corrected top eigenvalue of the preconditioned (K + lambda I)/n is
 *     top = (sigma_1/s + lambda/n)^(1-alpha) (sigma_q+1/s + lambda/n)^alpha.
 * Since y - (K + lambda I) w* = 0 on every coordinate, the batch gradient
 * vanishes at the solution: the iteration is consistent (no noise floor in
 * exact arithmetic) and converges linearly in expectation, like randomised
 * Kaczmarz -- but at the rate of the preconditioned condition number
 * top / (lambda/n), which is slow for small lambda.
 * Automatic batch and step (EigenPro 2.0 rules, as in its code):
 *     beta  = max_{i in S} k_P(x_i, x_i) + lambda, k_P(x_i, x_i) = 1 - sum_j (1 - t_j) sigma_j U_ij^2
 *     m*    = beta / top                  (critical batch size)
 *     bs    = min(m* + 1, n, 4096)        (ep_batch overrides; the GPU-memory cap of
 *                                          the original is replaced by 4096)
 *     eta   = bs / beta                   if bs < m* + 1
 *           = 0.99 * 2 bs / (beta + (bs - 1) top)   otherwise   (ep_step overrides)
 * One iteration = one batch; passes = iter * bs / n (+ the correction's
 * s * bs pairs, not counted).  Batches are drawn uniformly without
 * replacement within a batch, independently across iterations.
 * resid_est: the running estimate of askotch.c from the batch gradient,
 * (n / bs) ||g||^2 / ||y||^2 smoothed by an exponential average.
 *
 * EigenPro 3.0 (inducing points, ep_version = 3) lives in eigenpro3.c; it
 * runs this EigenPro 2.0 iteration (krr_ep2_create, with half the automatic
 * step, as the EigenPro 3.0 code does) as its inexact projection onto the
 * span of the centres. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "internal.h"
#include "rng.h"

#define EP_ALPHA 0.95
#define EP_BS_CAP 4096

typedef struct {
  struct krr_solver base;
  int version, ready;
  int64_t n, s, bs;
  int p, m, q;
  double eta, beta, top, mstar, ema;
  double step_scale; /* multiplies the automatic step (1; 0.5 inside EigenPro 3.0) */
  int64_t *sidx, *bidx;  /* device s, bs */
  int64_t *bidx_h;
  uint64_t *mark;
  void *Xs, *XB, *U, *D; /* s x p, bs x p, s x q, q */
  void *g, *gb, *h, *t;  /* bs x m, bs x m, s x m, q x m */
} ep_t;

#define PREC(s) ((s)->base.pb->prec)
#define CTX(s) ((s)->base.ctx)
#define OP(s, name, ...) KOP(CTX(s), PREC(s), name, __VA_ARGS__)

static int64_t ep_s(const krr_problem *pb, const krr_solver_opts *o) {
  int64_t s = o->ep_subsample > 0 ? o->ep_subsample : 4000;
  return s < pb->n ? s : pb->n;
}

size_t krr_eigenpro_memory(const krr_problem *pb, const krr_solver_opts *o) {
  if (o->ep_version == 3) return krr_eigenpro3_memory(pb, o);
  int64_t n = pb->n, m = pb->m, s = ep_s(pb, o), p = pb->p;
  int64_t bs = o->ep_batch > 0 ? o->ep_batch : (EP_BS_CAP < n ? EP_BS_CAP : n);
  int64_t q = o->rank > 0 ? o->rank : 100;
  double e = (double)(n * m) + (double)(s * p + bs * p) + (double)s * s /* setup */ + (double)s * q +
             (double)(2 * bs * m + s * m + q * m + q);
  return (size_t)(e * (double)krr_sizeof(pb->prec)) + sizeof(int64_t) * (size_t)(s + bs);
}

static void ep_free(krr_solver *base) {
  ep_t *s = (ep_t *)base;
  krr_ctx *ctx = CTX(s);
  void **bufs[] = {&s->base.w, (void **)&s->sidx, (void **)&s->bidx, &s->Xs, &s->XB, &s->U, &s->D,
                   &s->g, &s->gb, &s->h, &s->t};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) krr_dfree(ctx, bufs[i]);
  free(s->bidx_h); free(s->mark);
  free(s);
}

/* Top-q eigensystem of K(Xs, Xs) (S points of the problem's precision):
 * U (device S x q) gets the eigenvector of the j-th largest eigenvalue in
 * column j, w (host, S) all eigenvalues in ascending order.  Shared by
 * EigenPro 2.0 and 3.0; the S x S work space lives only in this call. */
krr_status krr_ep_eigensystem(krr_ctx *ctx, const krr_problem *pb, const void *Xs, int64_t S,
                              int q, void *U, double *w) {
  size_t es = krr_sizeof(pb->prec);
  void *K = krr_dalloc(ctx, S * S, es), *W = krr_dalloc(ctx, S, es);
  krr_status st = (K && W) ? KRR_OK : (ctx->status ? ctx->status : KRR_ERR_MEMORY);
  if (st == KRR_OK) st = KOP(ctx, pb->prec, kernel_block, &pb->kernel, Xs, S, Xs, S, pb->p, K, S);
  if (st == KRR_OK) st = KOP(ctx, pb->prec, syev, S, K, S, W);
  if (st == KRR_OK) st = krr_download_vec(ctx, pb->prec, W, S, w);
  for (int j = 0; st == KRR_OK && j < q; j++)
    st = ctx->ops->copy(ctx, KAT(U, (int64_t)j * S, es), KAT(K, (S - 1 - j) * S, es), es * (size_t)S);
  krr_dfree(ctx, &K); krr_dfree(ctx, &W);
  return st;
}

/* subsample, eigensystem, preconditioner, beta, batch and step */
static krr_status ep_setup(ep_t *s) {
  krr_ctx *ctx = CTX(s);
  const krr_problem *pb = s->base.pb;
  int64_t n = s->n, S = s->s;
  int q = s->q;
  size_t es = s->base.es;
  double t0 = krr_now();
  int64_t *sh = (int64_t *)malloc(sizeof(int64_t) * (size_t)S);
  double *w = (double *)malloc(sizeof(double) * (size_t)S);
  double *uh = (double *)malloc(sizeof(double) * (size_t)(S * q));
  double *dh = (double *)malloc(sizeof(double) * (size_t)(q + 1));
  krr_status st = KRR_OK;
#define T(expr) do { if ((st = (expr)) != KRR_OK) goto done; } while (0)
  if (!sh || !w || !uh || !dh) { st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory"); goto done; }
  krr_sample_uniform(krr_rng_stream(s->base.o.seed, 0, 40), n, S, s->mark, sh);
  T(ctx->ops->upload(ctx, s->sidx, sh, sizeof(int64_t) * (size_t)S));
  T(OP(s, gather_points, pb->X, s->p, s->sidx, S, s->Xs));
  T(krr_ep_eigensystem(ctx, pb, s->Xs, S, q, s->U, w));
  T(krr_download_vec(ctx, PREC(s), s->U, S * q, uh));
  {
    double ln = pb->lambda / (double)n;
    double sig1 = w[S - 1] > 0 ? w[S - 1] : 0, tail = w[S - 1 - q] > 0 ? w[S - 1 - q] : 0;
    double tl = tail / (double)S + ln;
    for (int j = 0; j < q; j++) {
      double sj = w[S - 1 - j];
      double tj = sj > tail && sj > 0 ? pow(tl / (sj / (double)S + ln), EP_ALPHA) : 1.0;
      dh[j] = sj > 0 ? (1.0 - tj) / sj : 0.0;
      w[S - 1 - j] = (1.0 - tj) * (sj > 0 ? sj : 0); /* reuse: (1 - t_j) sigma_j for beta */
    }
    double bmax = 0;
    for (int64_t i = 0; i < S; i++) {
      double kp = 1.0;
      for (int j = 0; j < q; j++) kp -= w[S - 1 - j] * uh[i + (int64_t)j * S] * uh[i + (int64_t)j * S];
      if (kp > bmax) bmax = kp;
    }
    if (!(bmax > 0)) bmax = 1.0;
    s->beta = bmax + pb->lambda;
    double t1v = sig1 / (double)S + ln;
    s->top = pow(t1v, 1.0 - EP_ALPHA) * pow(tl, EP_ALPHA);
    if (!(s->top > 0) || !isfinite(s->top)) {
      st = krr_fail(ctx, KRR_ERR_NUMERIC, "EigenPro: the preconditioned top eigenvalue is not positive (%g)", s->top);
      goto done;
    }
    s->mstar = s->beta / s->top;
    int64_t cap = n < EP_BS_CAP ? n : EP_BS_CAP;
    int64_t bs = s->base.o.ep_batch > 0 ? s->base.o.ep_batch
                                        : (s->mstar + 1 < (double)cap ? (int64_t)(s->mstar + 1) : cap);
    if (bs < 1) bs = 1;
    s->bs = bs;
    if (s->base.o.ep_step > 0) s->eta = s->base.o.ep_step;
    else if ((double)bs < s->mstar + 1) s->eta = s->step_scale * (double)bs / s->beta;
    else s->eta = s->step_scale * 0.99 * 2.0 * (double)bs / (s->beta + (double)(bs - 1) * s->top);
  }
  T(krr_upload_vec_into(ctx, PREC(s), dh, q, s->D));
  {
    int64_t bs = s->bs, m = s->m;
    int ok = 1;
#define ALLOC(ptr, count) ok = ok && ((ptr) = krr_dalloc(ctx, (count), es)) != NULL
    ok = ok && (s->bidx = (int64_t *)krr_dalloc(ctx, bs, sizeof(int64_t))) != NULL;
    ALLOC(s->XB, bs * s->p); ALLOC(s->g, bs * m); ALLOC(s->gb, bs * m);
#undef ALLOC
    s->bidx_h = (int64_t *)malloc(sizeof(int64_t) * (size_t)bs);
    if (!ok) { st = ctx->status ? ctx->status : KRR_ERR_MEMORY; goto done; }
    if (!s->bidx_h) { st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory"); goto done; }
  }
  s->base.diag.block_size = s->bs;
  s->base.diag.rank = q;
  s->base.diag.step_L = s->eta;
  s->base.diag.rho = s->top;
  s->ready = 1;
#undef T
done:
  free(sh); free(w); free(uh); free(dh);
  s->base.diag.t_nystrom += krr_now() - t0;
  return st;
}

/* h(s x m) <- U D U^T h */
static krr_status ep_precond(ep_t *s, void *h) {
  int64_t S = s->s;
  int q = s->q, m = s->m;
  KTRY(OP(s, gemm, 1, 0, q, m, S, 1.0, s->U, S, h, S, 0.0, s->t, q));
  KTRY(OP(s, scale_rows, q, m, s->D, s->t, q));
  return OP(s, gemm, 0, 0, S, m, q, 1.0, s->U, S, s->t, q, 0.0, h, S);
}

static krr_status ep2_iter(ep_t *s) {
  krr_ctx *ctx = CTX(s);
  const krr_problem *pb = s->base.pb;
  int64_t n = s->n, bs = s->bs, S = s->s;
  int m = s->m;
  uint64_t it = (uint64_t)s->base.diag.iter;
  double t0 = krr_now();
  krr_sample_uniform(krr_rng_stream(s->base.o.seed, it, 0), n, bs, s->mark, s->bidx_h);
  KTRY(ctx->ops->upload(ctx, s->bidx, s->bidx_h, sizeof(int64_t) * (size_t)bs));
  KTRY(OP(s, gather_points, pb->X, s->p, s->bidx, bs, s->XB));
  void *w = s->base.w;
  double gn = 0, ybn = 0;
  KTRY(krr_block_residual(ctx, pb, s->XB, s->bidx, bs, w, s->g, s->gb, &gn, &ybn));
  double t1 = krr_now();
  double st = s->eta / (double)bs;
  KTRY(OP(s, kernel_mv, &pb->kernel, s->Xs, S, s->XB, bs, s->p, s->g, bs, m, s->h, S));
  KTRY(ep_precond(s, s->h));
  KTRY(OP(s, scatter_axpy, -st, s->g, bs, m, s->bidx, bs, w, n));
  KTRY(OP(s, scatter_axpy, st, s->h, S, m, s->sidx, S, w, n));
  KTRY(ctx->ops->sync(ctx));
  double t2 = krr_now();
  krr_diag *dg = &s->base.diag;
  dg->iter++;
  dg->passes = (double)dg->iter * (double)bs / (double)n;
  dg->block_resid = ybn > 0 ? gn / ybn : gn;
  double y2 = pb->ynorm * pb->ynorm > 0 ? pb->ynorm * pb->ynorm : 1.0;
  double est2 = (double)n / (double)bs * gn * gn / y2;
  double om = (double)bs / (double)n;
  if (om < 0.1) om = 0.1;
  s->ema = dg->iter == 1 ? est2 : (1 - om) * s->ema + om * est2;
  dg->resid_est = sqrt(s->ema);
  dg->t_block += t1 - t0;
  dg->t_update += t2 - t1;
  return KRR_OK;
}


static krr_status ep_step(krr_solver *base, int64_t iters) {
  ep_t *s = (ep_t *)base;
  if (!s->ready) {
    KTRY(ep_setup(s));
  }
  for (int64_t i = 0; i < iters; i++) KTRY(ep2_iter(s));
  return KRR_OK;
}

static const krr_solver_vt ep2_vt = {.step = ep_step, .free = ep_free};

/* ep_batch in [0, n] (0: automatic), ep_step >= 0 and finite (0: automatic) */
krr_status krr_ep_check_batch_step(krr_ctx *ctx, const krr_solver_opts *o, int64_t n) {
  if (o->ep_batch < 0 || o->ep_batch > n)
    return krr_fail(ctx, KRR_ERR_INPUT, "ep_batch (%lld) must be between 0 and n (%lld)",
                    (long long)o->ep_batch, (long long)n);
  if (!isfinite(o->ep_step) || o->ep_step < 0)
    return krr_fail(ctx, KRR_ERR_INPUT, "ep_step must be >= 0 (0: automatic) and finite");
  return KRR_OK;
}

/* An EigenPro 2.0 solver for pb (validated), its automatic step times step_scale. */
krr_status krr_ep2_create(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                          double step_scale, krr_solver **out) {
  int64_t n = pb->n;
  if (o->ep_subsample < 0 || o->ep_subsample > n)
    return krr_fail(ctx, KRR_ERR_INPUT, "ep_subsample (%lld) must be between 0 and the number of "
                    "observations (%lld)", (long long)o->ep_subsample, (long long)n);
  KTRY(krr_ep_check_batch_step(ctx, o, n));
  int64_t S = ep_s(pb, o);
  if (S < 2) return krr_fail(ctx, KRR_ERR_INPUT, "EigenPro needs at least 2 observations");
  int q = o->rank > 0 ? o->rank : (int)(S - 1 < 100 ? S - 1 : 100);
  if (q >= S)
    return krr_fail(ctx, KRR_ERR_INPUT, "rank (%d) must be smaller than the EigenPro subsample (%lld)", q,
                    (long long)S);
  size_t fr = 0, tot = 0;
  KTRY(ctx->ops->mem_info(ctx, &fr, &tot));
  size_t avail = o->mem_limit > 0 ? o->mem_limit : (size_t)((double)fr * 0.9);
  size_t need = krr_eigenpro_memory(pb, o);
  if (need > avail)
    return krr_fail(ctx, KRR_ERR_MEMORY, "EigenPro needs %.1f MiB beyond the data but only %.1f MiB are "
                    "available; use a smaller ep_subsample", need / 1048576.0, avail / 1048576.0);
  size_t es = krr_sizeof(pb->prec);
  ep_t *s = (ep_t *)calloc(1, sizeof(ep_t));
  if (!s) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  s->base.vt = &ep2_vt;
  s->base.ctx = ctx;
  s->base.pb = pb;
  s->base.o = *o;
  s->base.es = es;
  s->version = 2;
  s->step_scale = step_scale;
  s->n = n; s->s = S; s->q = q; s->p = pb->p; s->m = pb->m;
  int m = pb->m, ok = 1;
  int64_t wlen = n * m;
#define ALLOC(ptr, count) ok = ok && ((ptr) = krr_dalloc(ctx, (count), es)) != NULL
  ALLOC(s->base.w, wlen);
  ok = ok && (s->sidx = (int64_t *)krr_dalloc(ctx, S, sizeof(int64_t))) != NULL;
  ALLOC(s->Xs, S * s->p); ALLOC(s->U, S * q); ALLOC(s->D, q); ALLOC(s->h, S * m); ALLOC(s->t, q * m);
#undef ALLOC
  s->mark = (uint64_t *)calloc((size_t)(n / 64 + 1), sizeof(uint64_t));
  krr_status st = ok ? KRR_OK : (ctx->status ? ctx->status : KRR_ERR_MEMORY);
  if (st == KRR_OK && !s->mark)
    st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK) st = ctx->ops->zero(ctx, s->base.w, es * (size_t)wlen);
  if (st != KRR_OK) { ep_free(&s->base); return st; }
  s->base.diag.resid_est = 1.0;
  s->base.diag.block_resid = NAN;
  s->base.diag.rank = q;
  *out = &s->base;
  return KRR_OK;
}

krr_status krr_eigenpro_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                             krr_solver **out) {
  int version = o->ep_version == 0 ? 2 : o->ep_version;
  if (version == 3) return krr_eigenpro3_init(ctx, pb, o, out);
  if (version != 2)
    return krr_fail(ctx, KRR_ERR_INPUT, "ep_version must be 2 or 3 (got %d)", o->ep_version);
  return krr_ep2_create(ctx, pb, o, 1.0, out);
}
