/* EigenPro 3.0 (Abedsoltan, Belkin and Pandit 2023, "Toward large kernel
 * models"; KRR_SOLVER_EIGENPRO with ep_version = 3), written once for both
 * precisions against the krr_ops table.
 *
 * Model: f = K(., Z) alpha on mc centres Z (rows of X, drawn as Falkon draws
 * them: same count default, same stream, so eigenpro(3) and falkon() share
 * their centres for a given seed).  Objective, our inducing-point problem
 * (the normal equations are Falkon's, H alpha = K_nm^T y with
 * H = K_nm^T K_nm + lambda K_mm; the papers set lambda = 0):
 *     L(f) = (1/2n) sum_i (f(x_i) - y_i)^2 + (ell/2) ||f||_H^2,   ell = lambda / n.
 * Its functional gradient is G = (1/n) sum_i c_i k(., x_i) + ell f with
 * c = K_nZ alpha - y.  EigenPro 3.0 is projected, preconditioned SGD:
 *     f <- proj_Z(f - eta P G_B)
 * per mini-batch B (bs points drawn uniformly), where
 *   * G_B = (1/bs) sum_{i in B} c_i k(., x_i) + ell f (stochastic gradient);
 *   * P = I - sum_{j <= q} (1 - tau/lambda_j) psi_j (x) psi_j, the EigenPro
 *     data preconditioner from the top-q eigensystem of K_ss / s on a
 *     subsample S of s points (lambda_j = sigma_j / s, tau = sigma_{q+1} / s,
 *     both shifted by ell as in eigenpro.c; alpha exponent 1, as in the
 *     EigenPro 3.0 code).  In coefficients P G = G - sum_{k in S} k(., x_k) v_k
 *     with v = E D E^T G(X_S), D_j = (1 - (tau + ell)/(lambda_j + ell)) / sigma_j;
 *   * proj_Z is the RKHS projection onto span k(., Z): coefficients
 *     K_ZZ^{-1} h(Z).  As in EigenPro 3.0 it is computed INEXACTLY by two
 *     epochs of EigenPro 2.0 (eigenpro.c, lambda = 0, subsample min(mc, 2000),
 *     half the automatic step, as the EigenPro 3.0 projection code) on
 *     K_ZZ theta = h(Z), started from zero at every step.
 * Step and batch (EigenPro 3.0 rules): beta = max k(x, x) + ell = 1 + ell,
 *     bs = min(floor(beta / (tau + ell)), n, 4096)   (ep_batch overrides),
 *     eta = bs / (2 beta)              if bs < beta / (tau + ell) + 1
 *         = bs / (beta + (bs - 1) (tau + ell))   otherwise   (ep_step overrides).
 * As in the EigenPro 3.0 code the preconditioner is applied BEFORE the
 * projection, which then acts on the corrected gradient (whose spectrum is
 * flat): projecting the raw gradient and correcting afterwards makes the
 * projection's error in the top eigendirections blow up by the large step,
 * and diverges.
 * One deviation, on purpose: the subsample S is drawn from the CENTRES, not
 * independently from the data.  Then G(X_S) is a sub-vector of G(Z), and at
 * the inducing-point optimum G(Z) = 0, so the correction vanishes there and
 * the optimum is a fixed point of the iteration even with the inexact
 * projection (the ell f part of G is projected with the rest for the same
 * reason); with S drawn from the data the preconditioned, projected
 * iteration has a different (biased) fixed point.
 * The update, per step:
 *     c_B   = K(X_B, Z) alpha - y_B
 *     h     = (1/bs) K(Z, X_B) c_B + ell K_ZZ alpha     (= G_B(Z), mc x m)
 *     v     = E D E^T h[S];   h <- h - K(Z, X_S) v     (= (P G_B)(Z))
 *     theta = EigenPro2(K_ZZ theta = h)                 (inexact projection)
 *     alpha = alpha - eta theta.
 * This is stochastic gradient descent with a constant step: the per-batch
 * gradients do not vanish at the inducing-point optimum (the residuals c do
 * not), so the iterates reach a noise floor around it rather than converging
 * to it, and the projection is inexact -- EigenPro 3.0 has no convergence
 * guarantee, as the ASkotch papers note.  Tests check that it gets close to
 * the exact inducing-point solution, not that it matches it.
 * Diagnostics: passes = iter * bs / n (epochs over the data; the other
 * kernel pairs of a step -- about 3 mc^2 + mc s for the projection's two
 * epochs, ell K_ZZ alpha and the correction -- are not counted in passes but
 * are in time);
 * resid_est = the exact relative residual of the normal equations
 * ||H alpha - K_nm^T y|| / ||K_nm^T y|| (as Falkon reports), recomputed every
 * resid_every steps (default: every 5 epochs). */
#include <math.h>
#include <string.h>
#include "internal.h"
#include "rng.h"

#define EP3_BS_CAP 4096
#define EP3_PROJ_EPOCHS 2
#define EP3_PROJ_SUBSAMPLE 2000

typedef struct {
  struct krr_solver base; /* base.w: alpha, mc x m (prec) */
  int64_t n, mc, s, bs, every, since, inner_iters;
  int p, m, q, ready;
  double eta, ell, beta, tau, bnorm;
  int64_t *cidx_h, *cidx, *spos, *bidx, *bidx_h;
  uint64_t *mark;
  void *Xc, *Xs, *XB, *E, *D; /* mc x p, s x p, bs x p, s x q, q */
  void *c, *cb, *h, *gs, *t;      /* bs x m, bs x m, mc x m, s x m, q x m */
  void *vn, *bk, *hk, *zk;        /* n x m, mc x m (residual of the normal equations) */
  krr_problem ipb;                /* the projection problem K_ZZ theta = h */
  krr_solver *inner;
} ep3_t;

#define PREC(s) ((s)->base.pb->prec)
#define CTX(s) ((s)->base.ctx)
#define OP(s, name, ...) KOP(CTX(s), PREC(s), name, __VA_ARGS__)

static int64_t ep3_subsample(const krr_problem *pb, const krr_solver_opts *o) {
  int64_t mc = krr_centers_count(pb, o);
  int64_t s = o->ep_subsample > 0 ? o->ep_subsample : 4000;
  return s < mc ? s : mc;
}

static int ep3_rank(const krr_solver_opts *o, int64_t s) {
  return o->rank > 0 ? o->rank : (int)(s - 1 < 100 ? s - 1 : 100);
}

size_t krr_eigenpro3_memory(const krr_problem *pb, const krr_solver_opts *o) {
  int64_t n = pb->n, m = pb->m, mc = krr_centers_count(pb, o), s = ep3_subsample(pb, o);
  int64_t p = pb->p, q = ep3_rank(o, s);
  int64_t bs = o->ep_batch > 0 ? o->ep_batch : (EP3_BS_CAP < n ? EP3_BS_CAP : n);
  int64_t si = mc < EP3_PROJ_SUBSAMPLE ? mc : EP3_PROJ_SUBSAMPLE;
  double e = (double)(mc * p + s * p + bs * p) + (double)s * s /* setup */ + (double)(s * q + q) +
             (double)(2 * bs * m + 4 * mc * m + s * m + q * m + n * m);
  /* the projection: EigenPro 2.0 on the mc centres (its own estimate) */
  krr_problem ipb = *pb;
  ipb.n = mc;
  krr_solver_opts io;
  krr_solver_opts_default(&io);
  io.ep_subsample = si;
  io.rank = q < si ? q : (int)(si - 1);
  return (size_t)(e * (double)krr_sizeof(pb->prec)) +
         sizeof(int64_t) * (size_t)(2 * mc + s + bs) + krr_eigenpro_memory(&ipb, &io);
}

static void ep3_free(krr_solver *base) {
  ep3_t *s = (ep3_t *)base;
  krr_ctx *ctx = CTX(s);
  if (s->inner) s->inner->vt->free(s->inner);
  void **bufs[] = {&s->base.w, (void **)&s->cidx, (void **)&s->spos, (void **)&s->bidx,
                   &s->Xc, &s->Xs, &s->XB, &s->E, &s->D, &s->c, &s->cb, &s->h, &s->gs,
                   &s->t, &s->vn, &s->bk, &s->hk, &s->zk};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) krr_dfree(ctx, bufs[i]);
  free(s->cidx_h); free(s->bidx_h); free(s->mark);
  free(s);
}

/* hk = H alpha - b (H = K_nm^T K_nm + lambda K_mm), *rel = ||hk|| / ||b|| */
static krr_status ep3_normal_resid(ep3_t *s, double *rel) {
  const krr_problem *pb = s->base.pb;
  int64_t n = s->n, mc = s->mc, len = mc * s->m;
  void *a = s->base.w;
  KTRY(OP(s, kernel_mv, &pb->kernel, pb->X, n, s->Xc, mc, s->p, a, mc, s->m, s->vn, n));
  KTRY(OP(s, kernel_mv, &pb->kernel, s->Xc, mc, pb->X, n, s->p, s->vn, n, s->m, s->hk, mc));
  KTRY(OP(s, kernel_mv, &pb->kernel, s->Xc, mc, s->Xc, mc, s->p, a, mc, s->m, s->zk, mc));
  KTRY(OP(s, axpby, len, pb->lambda, s->zk, 1.0, s->hk));
  KTRY(OP(s, axpby, len, -1.0, s->bk, 1.0, s->hk));
  double nr = 0;
  KTRY(OP(s, nrm2, len, s->hk, &nr));
  if (!isfinite(nr)) return krr_fail(CTX(s), KRR_ERR_NUMERIC, "EigenPro 3.0 diverged (non-finite residual)");
  *rel = s->bnorm > 0 ? nr / s->bnorm : nr;
  return KRR_OK;
}

/* subsample of the centres, eigensystem, preconditioner, batch, step, b, projection */
static krr_status ep3_setup(ep3_t *s) {
  krr_ctx *ctx = CTX(s);
  const krr_problem *pb = s->base.pb;
  int64_t S = s->s, mc = s->mc, n = s->n;
  int q = s->q;
  size_t es = s->base.es;
  double t0 = krr_now();
  int64_t *sh = (int64_t *)malloc(sizeof(int64_t) * (size_t)S);
  uint64_t *mk = (uint64_t *)calloc((size_t)(mc / 64 + 1), sizeof(uint64_t));
  double *w = (double *)malloc(sizeof(double) * (size_t)S);
  double *dh = (double *)malloc(sizeof(double) * (size_t)(q + 1));
  krr_status st = KRR_OK;
#define T(expr) do { if ((st = (expr)) != KRR_OK) goto done; } while (0)
  if (!sh || !mk || !w || !dh) { st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory"); goto done; }
  krr_sample_uniform(krr_rng_stream(s->base.o.seed, 0, 41), mc, S, mk, sh);
  T(ctx->ops->upload(ctx, s->spos, sh, sizeof(int64_t) * (size_t)S));
  T(OP(s, gather_points, s->Xc, s->p, s->spos, S, s->Xs));
  T(krr_ep_eigensystem(ctx, pb, s->Xs, S, q, s->E, w));
  {
    double ell = s->ell, tail = w[S - 1 - q] > 0 ? w[S - 1 - q] : 0;
    double tl = tail / (double)S + ell;
    for (int j = 0; j < q; j++) {
      double sj = w[S - 1 - j];
      dh[j] = sj > tail && sj > 0 ? (1.0 - tl / (sj / (double)S + ell)) / sj : 0.0;
    }
    s->tau = tl;
    s->beta = 1.0 + ell; /* k(x, x) = 1 for every kernel of the package */
    if (!(tl > 0) || !isfinite(tl)) {
      st = krr_fail(ctx, KRR_ERR_NUMERIC, "EigenPro 3.0: the preconditioned top eigenvalue is not "
                    "positive (%g); use a smaller rank", tl);
      goto done;
    }
    int64_t cap = n < EP3_BS_CAP ? n : EP3_BS_CAP;
    double crit = s->beta / tl;
    int64_t bs = s->base.o.ep_batch > 0 ? s->base.o.ep_batch : (crit < (double)cap ? (int64_t)crit : cap);
    if (bs < 1) bs = 1;
    s->bs = bs;
    if (s->base.o.ep_step > 0) s->eta = s->base.o.ep_step;
    else if ((double)bs < crit + 1) s->eta = (double)bs / (2.0 * s->beta);
    else s->eta = (double)bs / (s->beta + (double)(bs - 1) * tl);
  }
  T(krr_upload_vec_into(ctx, PREC(s), dh, q, s->D));
  {
    int64_t bs = s->bs;
    int m = s->m, ok = 1;
#define ALLOC(ptr, count) ok = ok && ((ptr) = krr_dalloc(ctx, (count), es)) != NULL
    ok = ok && (s->bidx = (int64_t *)krr_dalloc(ctx, bs, sizeof(int64_t))) != NULL;
    ALLOC(s->XB, bs * s->p); ALLOC(s->c, bs * m); ALLOC(s->cb, bs * m);
#undef ALLOC
    s->bidx_h = (int64_t *)malloc(sizeof(int64_t) * (size_t)bs);
    if (!ok) { st = ctx->status ? ctx->status : KRR_ERR_MEMORY; goto done; }
    if (!s->bidx_h) { st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory"); goto done; }
  }
  /* b = K_nm^T y for the residual of the normal equations */
  T(OP(s, kernel_mv, &pb->kernel, s->Xc, mc, pb->X, n, s->p, pb->y, n, s->m, s->bk, mc));
  T(OP(s, nrm2, mc * s->m, s->bk, &s->bnorm));
  /* the projection: EigenPro 2.0 on K_ZZ theta = h, lambda = 0 */
  {
    s->ipb = *pb;
    s->ipb.n = mc;
    s->ipb.X = s->Xc;
    s->ipb.y = s->h;
    s->ipb.lambda = 0.0;
    s->ipb.ynorm = 1.0;
    krr_solver_opts io;
    krr_solver_opts_default(&io);
    io.kind = KRR_SOLVER_EIGENPRO;
    io.seed = krr_rng_stream(s->base.o.seed, 0, 42);
    io.mem_limit = s->base.o.mem_limit;
    io.ep_subsample = mc < EP3_PROJ_SUBSAMPLE ? mc : EP3_PROJ_SUBSAMPLE;
    io.rank = q < io.ep_subsample ? q : (int)(io.ep_subsample - 1);
    if (io.rank < 1) io.rank = 1;
    if (io.ep_subsample < 2) {
      st = krr_fail(ctx, KRR_ERR_INPUT, "EigenPro 3.0 needs at least 2 centres");
      goto done;
    }
    T(krr_ep2_create(ctx, &s->ipb, &io, 0.5, &s->inner));
    T(s->inner->vt->step(s->inner, 0)); /* its setup: batch and step */
    int64_t bi = s->inner->diag.block_size > 0 ? s->inner->diag.block_size : 1;
    s->inner_iters = (EP3_PROJ_EPOCHS * mc + bi - 1) / bi;
  }
  s->every = s->base.o.resid_every > 0 ? s->base.o.resid_every : (5 * n + s->bs - 1) / s->bs;
  s->base.diag.block_size = s->bs;
  s->base.diag.rank = q;
  s->base.diag.step_L = s->eta;
  s->base.diag.rho = s->tau;
  s->ready = 1;
#undef T
done:
  free(sh); free(mk); free(w); free(dh);
  s->base.diag.t_nystrom += krr_now() - t0;
  return st;
}

static krr_status ep3_iter(ep3_t *s) {
  krr_ctx *ctx = CTX(s);
  const krr_problem *pb = s->base.pb;
  int64_t n = s->n, bs = s->bs, S = s->s, mc = s->mc, len = mc * s->m;
  int m = s->m, q = s->q;
  void *a = s->base.w;
  uint64_t it = (uint64_t)s->base.diag.iter;
  double t0 = krr_now();
  /* 1. batch residual c_B = K(X_B, Z) alpha - y_B and h = (1/bs) K(Z, X_B) c_B */
  krr_sample_uniform(krr_rng_stream(s->base.o.seed, it, 0), n, bs, s->mark, s->bidx_h);
  KTRY(ctx->ops->upload(ctx, s->bidx, s->bidx_h, sizeof(int64_t) * (size_t)bs));
  KTRY(OP(s, gather_points, pb->X, s->p, s->bidx, bs, s->XB));
  KTRY(OP(s, kernel_mv, &pb->kernel, s->XB, bs, s->Xc, mc, s->p, a, mc, m, s->c, bs));
  KTRY(OP(s, gather_rows, pb->y, n, m, s->bidx, bs, s->cb, bs));
  KTRY(OP(s, axpby, bs * m, -1.0, s->cb, 1.0, s->c));
  double gn = 0, ybn = 0;
  KTRY(OP(s, nrm2, bs * m, s->c, &gn));
  KTRY(OP(s, nrm2, bs * m, s->cb, &ybn));
  if (!isfinite(gn)) return krr_fail(ctx, KRR_ERR_NUMERIC, "EigenPro 3.0 diverged (non-finite residual)");
  KTRY(OP(s, kernel_mv, &pb->kernel, s->Xc, mc, s->XB, bs, s->p, s->c, bs, m, s->h, mc));
  KTRY(OP(s, axpby, len, 0.0, s->h, 1.0 / (double)bs, s->h));
  if (s->ell > 0) { /* + ell f(Z): h = G_B(Z) */
    KTRY(OP(s, kernel_mv, &pb->kernel, s->Xc, mc, s->Xc, mc, s->p, a, mc, m, s->zk, mc));
    KTRY(OP(s, axpby, len, s->ell, s->zk, 1.0, s->h));
  }
  double t1 = krr_now();
  /* 2. preconditioner: v = E D E^T h[S];  h <- h - K(Z, X_S) v  (= (P G_B)(Z)) */
  KTRY(OP(s, gather_rows, s->h, mc, m, s->spos, S, s->gs, S));
  KTRY(OP(s, gemm, 1, 0, q, m, S, 1.0, s->E, S, s->gs, S, 0.0, s->t, q));
  KTRY(OP(s, scale_rows, q, m, s->D, s->t, q));
  KTRY(OP(s, gemm, 0, 0, S, m, q, 1.0, s->E, S, s->t, q, 0.0, s->gs, S));
  KTRY(OP(s, kernel_mv, &pb->kernel, s->Xc, mc, s->Xs, S, s->p, s->gs, S, m, s->zk, mc));
  KTRY(OP(s, axpby, len, -1.0, s->zk, 1.0, s->h));
  /* 3. inexact projection theta ~ K_ZZ^{-1} h: EigenPro 2.0 from zero; alpha -= eta theta */
  double t2 = krr_now();
  KTRY(ctx->ops->zero(ctx, s->inner->w, s->base.es * (size_t)len));
  KTRY(s->inner->vt->step(s->inner, s->inner_iters));
  double t3 = krr_now();
  KTRY(OP(s, axpby, len, -s->eta, s->inner->w, 1.0, a));
  krr_diag *dg = &s->base.diag;
  dg->iter++;
  dg->passes = (double)dg->iter * (double)bs / (double)n;
  dg->block_resid = ybn > 0 ? gn / ybn : gn;
  if (++s->since >= s->every) {
    KTRY(ep3_normal_resid(s, &dg->resid_est));
    s->since = 0;
  }
  KTRY(ctx->ops->sync(ctx));
  double t4 = krr_now();
  dg->t_block += t1 - t0;
  dg->t_power += t3 - t2; /* the projection */
  dg->t_update += (t2 - t1) + (t4 - t3);
  return KRR_OK;
}

static krr_status ep3_step(krr_solver *base, int64_t iters) {
  ep3_t *s = (ep3_t *)base;
  if (!s->ready) KTRY(ep3_setup(s));
  for (int64_t i = 0; i < iters; i++) KTRY(ep3_iter(s));
  return KRR_OK;
}

static krr_status ep3_weights(krr_solver *base, double *w_out) {
  ep3_t *s = (ep3_t *)base;
  return krr_download_vec(CTX(s), PREC(s), s->base.w, s->mc * s->m, w_out);
}

static krr_status ep3_residual(krr_solver *base, double *rel) {
  ep3_t *s = (ep3_t *)base;
  if (!s->ready) KTRY(ep3_setup(s));
  return ep3_normal_resid(s, rel);
}

static int64_t ep3_ncenters(const krr_solver *base) { return ((const ep3_t *)base)->mc; }

static krr_status ep3_centers(krr_solver *base, int64_t *idx) {
  ep3_t *s = (ep3_t *)base;
  memcpy(idx, s->cidx_h, sizeof(int64_t) * (size_t)s->mc);
  return KRR_OK;
}

static const krr_solver_vt ep3_vt = {ep3_step, ep3_free, ep3_weights,
                                     ep3_residual, ep3_ncenters, ep3_centers};

krr_status krr_eigenpro3_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                              krr_solver **out) {
  int64_t n = pb->n;
  KTRY(krr_centers_check(ctx, pb, o));
  int64_t mc = krr_centers_count(pb, o);
  if (mc < 2) return krr_fail(ctx, KRR_ERR_INPUT, "EigenPro 3.0 needs at least 2 centres");
  if (o->ep_subsample < 0 || o->ep_subsample > mc)
    return krr_fail(ctx, KRR_ERR_INPUT, "ep_subsample (%lld) must be between 0 and the number of "
                    "centres (%lld): EigenPro 3.0 draws its subsample from the centres",
                    (long long)o->ep_subsample, (long long)mc);
  KTRY(krr_ep_check_batch_step(ctx, o, n));
  if (o->resid_every < 0) return krr_fail(ctx, KRR_ERR_INPUT, "resid_every must be >= 0");
  int64_t S = ep3_subsample(pb, o);
  int q = ep3_rank(o, S);
  if (q >= S)
    return krr_fail(ctx, KRR_ERR_INPUT, "rank (%d) must be smaller than the EigenPro subsample (%lld)", q,
                    (long long)S);
  size_t fr = 0, tot = 0;
  KTRY(ctx->ops->mem_info(ctx, &fr, &tot));
  size_t avail = o->mem_limit > 0 ? o->mem_limit : (size_t)((double)fr * 0.9);
  size_t need = krr_eigenpro3_memory(pb, o);
  if (need > avail)
    return krr_fail(ctx, KRR_ERR_MEMORY, "EigenPro 3.0 with %lld centres needs %.1f MiB beyond the data "
                    "but only %.1f MiB are available; use fewer centres", (long long)mc,
                    need / 1048576.0, avail / 1048576.0);
  size_t es = krr_sizeof(pb->prec);
  ep3_t *s = (ep3_t *)calloc(1, sizeof(ep3_t));
  if (!s) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  s->base.vt = &ep3_vt;
  s->base.ctx = ctx;
  s->base.pb = pb;
  s->base.o = *o;
  s->base.o.n_centers = mc;
  s->base.es = es;
  s->n = n; s->mc = mc; s->s = S; s->q = q; s->p = pb->p; s->m = pb->m;
  s->ell = pb->lambda / (double)n;
  int m = pb->m, ok = 1;
  int64_t len = mc * m;
#define ALLOC(ptr, count) ok = ok && ((ptr) = krr_dalloc(ctx, (count), es)) != NULL
  ALLOC(s->base.w, len);
  ok = ok && (s->cidx = (int64_t *)krr_dalloc(ctx, mc, sizeof(int64_t))) != NULL;
  ok = ok && (s->spos = (int64_t *)krr_dalloc(ctx, S, sizeof(int64_t))) != NULL;
  ALLOC(s->Xc, mc * s->p); ALLOC(s->Xs, S * s->p); ALLOC(s->E, S * q); ALLOC(s->D, q);
  ALLOC(s->h, len); ALLOC(s->gs, S * m); ALLOC(s->t, q * m);
  ALLOC(s->vn, n * m); ALLOC(s->bk, len); ALLOC(s->hk, len); ALLOC(s->zk, len);
#undef ALLOC
  s->cidx_h = (int64_t *)malloc(sizeof(int64_t) * (size_t)mc);
  s->mark = (uint64_t *)calloc((size_t)(n / 64 + 1), sizeof(uint64_t));
  krr_status st = ok ? KRR_OK : (ctx->status ? ctx->status : KRR_ERR_MEMORY);
  if (st == KRR_OK && (!s->cidx_h || !s->mark)) st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK) st = krr_centers_pick(ctx, o, n, mc, s->cidx_h);
  if (st == KRR_OK) st = ctx->ops->upload(ctx, s->cidx, s->cidx_h, sizeof(int64_t) * (size_t)mc);
  if (st == KRR_OK) st = OP(s, gather_points, pb->X, s->p, s->cidx, mc, s->Xc);
  if (st == KRR_OK) st = ctx->ops->zero(ctx, s->base.w, es * (size_t)len);
  s->base.o.centers = NULL; /* not kept: the caller's array may go away */
  if (st != KRR_OK) { ep3_free(&s->base); return st; }
  s->base.diag.resid_est = 1.0;
  s->base.diag.block_resid = NAN;
  s->base.diag.rank = q;
  *out = &s->base;
  return KRR_OK;
}
