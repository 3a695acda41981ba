/* ASkotch, first version (paper 000, Algorithm 1; KRR_SOLVER_ASKOTCH_V1),
 * written once for both precisions against the krr_ops table.
 *
 *  - [n] is randomly partitioned ONCE into B = ceil(n / b) blocks of sizes
 *    floor(n/B) or ceil(n/B) (a seeded Fisher-Yates permutation; indices
 *    sorted within each block).
 *  - Setup (done by the first step() call, so init stays cheap): for every
 *    block, the rank-r Nystrom preconditioner P_b of K_bb (ALGORITHMS.md
 *    section 2) with damping rho_b (rho_mode; default damped lambda + lam_r)
 *    and the preconditioned smoothness L_b = lambda_max((P_b + rho_b I)^{-1/2}
 *    (K_bb + lambda I)(P_b + rho_b I)^{-1/2}) by randomised powering (section 3).
 *    The factors U_b, lam_b are cached (n r numbers in all) when they fit in
 *    the memory budget; otherwise each iteration recomputes P_b with the same
 *    per-block seed, which reproduces exactly the P_b that L_b was measured for.
 *  - NU_ACDM acceleration (Allen-Zhu et al. 2016) with parameter beta in [0, 1]
 *    (v1_beta, default 0 as recommended by the paper):
 *      a = (1 - beta)/2, S = sum_b L_b^a, p_b = L_b^a / S,
 *      tau = 2 / (1 + sqrt(4 S^2 / mu + 1)), gamma = 1 / (tau S^2),
 *    mu: the strong convexity of the dual d(w) = 1/2 w^T (K + lambda I) w - y^T w
 *    in the norm the L_b are measured in (sum_b ||w_b||^2_{P_b + rho_b I}).  The
 *    paper plugs in lambda, the Euclidean constant; in the preconditioned norm
 *    it is only >= lambda / max_b lambda_max(P_b + rho_b I), and with lambda
 *    the momentum is too aggressive (on the test problems: 500 passes to 3e-5
 *    instead of ~200 to 1e-8).  Default mu = lambda / max_b (lam_1,b + rho_b)
 *    (computed at setup); o.mu > 0 overrides.  Iteration:
 *      draw block b ~ p;  g = K_{b:} w + lambda w_b - y_b;  v = (P_b + rho_b I)^{-1} g
 *      x_new = w;  x_new[b] -= v / L_b
 *      z_new = (z + gamma mu w) / (1 + gamma mu);  z_new[b] -= gamma / ((1 + gamma mu) p_b L_b^beta) v
 *      w = tau z_new + (1 - tau) x_new
 *    returning x.  The paper prints x_b^{i+1} <- x_b^i - v/L_b; NU_ACDM (and
 *    the paper's own z update, which mixes in w^i) takes the gradient step from
 *    the coupling point w^i, which is what we do.
 * Passes: iter * (mean block size) / n (the setup adds about r + 2 power_iters
 * block products per block and is not counted).  resid_est: the same running
 * estimate as askotch.c, from the block gradient at the coupling point w. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "internal.h"
#include "rng.h"

typedef struct {
  struct krr_solver base;
  int64_t n, bmax, nb, bk;   /* bk: size of the current block */
  int p, m, r, ready, cache, materialize;
  double a, beta, mu, S, tau, gamma, ema;
  int64_t *perm, *off;       /* host: partition (n) and block offsets (nb + 1) */
  double *L, *rho, *prob;    /* host nb */
  double *lamc;              /* host nb * r: cached Nystrom eigenvalues */
  int *reff;                 /* host nb */
  void *Uc;                  /* device nb * bmax * r: cached bases (or NULL) */
  krr_lowrank lr;            /* sized bmax; lr.n set to the current block size */
  void *wc, *z;              /* n x m: the coupling point w and z (base.w holds x, the
                                returned iterate, so weights / residual use it) */
  int64_t *idx;              /* device bmax */
  void *XB, *KB;             /* bmax x p, bmax x bmax */
  void *g, *d, *gb;          /* bmax x m */
  void *p1, *p2, *p3;        /* bmax */
} v1_t;

#define PREC(s) ((s)->base.pb->prec)
#define CTX(s) ((s)->base.ctx)
#define OP(s, name, ...) KOP(CTX(s), PREC(s), name, __VA_ARGS__)

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void v1_shape(int64_t n, int64_t b, int64_t *nb, int64_t *bmax) {
  *nb = (n + b - 1) / b;
  *bmax = (n + *nb - 1) / *nb;
}

size_t krr_askotch_v1_memory(const krr_problem *pb, const krr_solver_opts *o) {
  krr_solver_opts r = *o;
  krr_askotch_resolve(pb, &r);
  int64_t nb, bmax, n = pb->n, m = pb->m;
  v1_shape(n, r.block_size, &nb, &bmax);
  int rk = r.rank < n / nb ? r.rank : (int)(n / nb);
  double e = 3.0 * (double)(n * m) + (double)(bmax * pb->p) + 3.0 * (double)(bmax * m) + 3.0 * bmax;
  return (size_t)(e * (double)krr_sizeof(pb->prec)) + krr_lowrank_memory(pb->prec, bmax, rk, (int)m) +
         sizeof(int64_t) * (size_t)bmax;
}

static void v1_free(krr_solver *base) {
  v1_t *s = (v1_t *)base;
  krr_ctx *ctx = CTX(s);
  void **bufs[] = {&s->base.w, &s->wc, &s->z, (void **)&s->idx, &s->XB, &s->KB, &s->g, &s->d,
                   &s->gb, &s->p1, &s->p2, &s->p3, &s->Uc};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) krr_dfree(ctx, bufs[i]);
  krr_lowrank_free(ctx, &s->lr);
  free(s->perm); free(s->off); free(s->L); free(s->rho); free(s->prob); free(s->lamc); free(s->reff);
  free(s);
}

/* Y(bk x q) = K_bb V */
static krr_status kbb_mul(void *arg, const void *V, int q, void *Y) {
  v1_t *s = (v1_t *)arg;
  int64_t b = s->bk;
  if (s->materialize) return OP(s, gemm, 0, 0, b, q, b, 1.0, s->KB, b, V, b, 0.0, Y, b);
  return OP(s, kernel_mv, &s->base.pb->kernel, s->XB, b, s->XB, b, s->p, V, b, q, Y, b);
}

/* load block k: indices, points, K_bb when materialised */
static krr_status load_block(v1_t *s, int64_t k) {
  krr_ctx *ctx = CTX(s);
  const krr_problem *pb = s->base.pb;
  s->bk = s->off[k + 1] - s->off[k];
  s->lr.n = s->bk;
  KTRY(ctx->ops->upload(ctx, s->idx, s->perm + s->off[k], sizeof(int64_t) * (size_t)s->bk));
  KTRY(OP(s, gather_points, pb->X, s->p, s->idx, s->bk, s->XB));
  if (s->materialize) KTRY(OP(s, kernel_block, &pb->kernel, s->XB, s->bk, s->XB, s->bk, s->p, s->KB, s->bk));
  return KRR_OK;
}

/* the preconditioner of block k: from the cache or recomputed with its seed */
static krr_status block_precond(v1_t *s, int64_t k, int setup) {
  krr_ctx *ctx = CTX(s);
  krr_lowrank *lr = &s->lr;
  int r = s->r;
  size_t es = s->base.es;
  if (!setup && s->cache) {
    KTRY(ctx->ops->copy(ctx, lr->U, KAT(s->Uc, k * s->bmax * r, es), es * (size_t)(s->bk * r)));
    memcpy(lr->lam, s->lamc + k * r, sizeof(double) * (size_t)r);
    lr->r_eff = s->reff[k];
    lr->orth = 1;
    return krr_lowrank_prepare(ctx, lr, s->rho[k]);
  }
  KTRY(krr_nystrom_sketch(ctx, lr, kbb_mul, s, (double)s->bk, krr_rng_stream(s->base.o.seed, (uint64_t)k, 31)));
  double rho = setup ? krr_lowrank_rho(lr, s->base.o.rho_mode, s->base.o.rho_value, s->base.pb->lambda)
                     : s->rho[k];
  KTRY(krr_lowrank_prepare(ctx, lr, rho));
  if (setup) {
    s->rho[k] = rho;
    if (s->cache) {
      KTRY(ctx->ops->copy(ctx, KAT(s->Uc, k * s->bmax * r, es), lr->U, es * (size_t)(s->bk * r)));
      memcpy(s->lamc + k * r, lr->lam, sizeof(double) * (size_t)r);
      s->reff[k] = lr->r_eff;
    }
  }
  return KRR_OK;
}

/* L_b by randomised powering (Rayleigh quotient before normalising) */
static krr_status powering(v1_t *s, int64_t k) {
  int64_t b = s->bk;
  double nv = 0, L = 0;
  uint64_t seed = krr_rng_stream(s->base.o.seed, (uint64_t)k, 32);
  KTRY(OP(s, randn, b, seed, 0, s->p1));
  KTRY(OP(s, nrm2, b, s->p1, &nv));
  KTRY(OP(s, axpby, b, 0.0, s->p1, 1.0 / nv, s->p1));
  for (int it = 0; it < s->base.o.power_iters; it++) {
    KTRY(krr_lowrank_invsqrt(CTX(s), &s->lr, s->p1, s->p2, 1));
    KTRY(kbb_mul(s, s->p2, 1, s->p3));
    KTRY(OP(s, axpby, b, s->base.pb->lambda, s->p2, 1.0, s->p3));
    KTRY(krr_lowrank_invsqrt(CTX(s), &s->lr, s->p3, s->p2, 1));
    KTRY(OP(s, dot, b, s->p1, s->p2, &L));
    KTRY(OP(s, nrm2, b, s->p2, &nv));
    if (!(nv > 0) || !isfinite(nv)) break;
    KTRY(OP(s, axpby, b, 1.0 / nv, s->p2, 0.0, s->p1));
  }
  if (!(L > 0) || !isfinite(L))
    return krr_fail(CTX(s), KRR_ERR_NUMERIC, "block %lld: stepsize estimate (powering) is not positive: %g",
                    (long long)k, L);
  s->L[k] = L;
  return KRR_OK;
}

static krr_status setup(v1_t *s) {
  double t0 = krr_now(), pmax = 0;
  for (int64_t k = 0; k < s->nb; k++) {
    KTRY(load_block(s, k));
    KTRY(block_precond(s, k, 1));
    KTRY(powering(s, k));
    double top = (s->lr.r_eff > 0 ? s->lr.lam[0] : 0.0) + s->rho[k];
    if (top > pmax) pmax = top;
  }
  /* default mu: lambda / max_b lambda_max(P_b + rho_b I), a lower bound on the
     strong convexity of the dual in the block-preconditioned norm */
  if (!(s->base.o.mu > 0)) s->mu = s->base.pb->lambda / (pmax > 1.0 ? pmax : 1.0);
  s->S = 0;
  for (int64_t k = 0; k < s->nb; k++) s->S += pow(s->L[k], s->a);
  for (int64_t k = 0; k < s->nb; k++) s->prob[k] = pow(s->L[k], s->a) / s->S;
  s->tau = 2.0 / (1.0 + sqrt(4.0 * s->S * s->S / s->mu + 1.0));
  s->gamma = 1.0 / (s->tau * s->S * s->S);
  KTRY(CTX(s)->ops->sync(CTX(s)));
  s->base.diag.t_nystrom += krr_now() - t0;
  s->ready = 1;
  return KRR_OK;
}

static int64_t draw_block(v1_t *s, uint64_t stream) {
  double u = krr_rng_unif(stream, 0), c = 0;
  for (int64_t k = 0; k < s->nb; k++) {
    c += s->prob[k];
    if (u <= c) return k;
  }
  return s->nb - 1;
}

static krr_status v1_iter(v1_t *s) {
  krr_ctx *ctx = CTX(s);
  const krr_problem *pb = s->base.pb;
  int64_t n = s->n, nm = n * (int64_t)s->m;
  int m = s->m;
  size_t es = s->base.es;
  uint64_t it = (uint64_t)s->base.diag.iter, seed = s->base.o.seed;
  double t0 = krr_now();
  int64_t k = draw_block(s, krr_rng_stream(seed, it, 0));
  KTRY(load_block(s, k));
  KTRY(block_precond(s, k, 0));
  int64_t b = s->bk;
  KTRY(ctx->ops->sync(ctx));
  double t1 = krr_now();

  /* g = K_b: w + lambda w_b - y_b at the coupling point w */
  void *w = s->wc;
  double gn = 0, ybn = 0;
  KTRY(krr_block_residual(ctx, pb, s->XB, s->idx, b, w, s->g, s->gb, &gn, &ybn));
  double t2 = krr_now();

  KTRY(krr_lowrank_inv(ctx, &s->lr, s->g, s->d, m));
  double L = s->L[k], gm = s->gamma * s->mu;
  /* x_new = w - U_b v / L  (into base.w) */
  KTRY(ctx->ops->copy(ctx, s->base.w, w, es * (size_t)nm));
  KTRY(OP(s, scatter_axpy, -1.0 / L, s->d, b, m, s->idx, b, s->base.w, n));
  /* z_new = (z + gamma mu w)/(1 + gamma mu) - gamma/((1 + gamma mu) p L^beta) U_b v */
  KTRY(OP(s, axpby, nm, gm / (1.0 + gm), w, 1.0 / (1.0 + gm), s->z));
  KTRY(OP(s, scatter_axpy, -s->gamma / ((1.0 + gm) * s->prob[k] * pow(L, s->beta)), s->d, b, m, s->idx,
          b, s->z, n));
  /* w = tau z + (1 - tau) x_new */
  KTRY(ctx->ops->copy(ctx, w, s->base.w, es * (size_t)nm));
  KTRY(OP(s, axpby, nm, s->tau, s->z, 1.0 - s->tau, w));
  KTRY(ctx->ops->sync(ctx));
  double t3 = krr_now();

  krr_diag *dg = &s->base.diag;
  dg->iter++;
  dg->passes = (double)dg->iter * ((double)n / (double)s->nb) / (double)n;
  dg->block_resid = ybn > 0 ? gn / ybn : gn;
  double y2 = pb->ynorm * pb->ynorm > 0 ? pb->ynorm * pb->ynorm : 1.0;
  double est2 = (double)n / (double)b * gn * gn / y2;
  double om = (double)b / (double)n;
  if (om < 0.1) om = 0.1;
  s->ema = dg->iter == 1 ? est2 : (1 - om) * s->ema + om * est2;
  dg->resid_est = sqrt(s->ema);
  dg->step_L = L;
  dg->rho = s->rho[k];
  dg->t_nystrom += t1 - t0;
  dg->t_block += t2 - t1;
  dg->t_update += t3 - t2;
  return KRR_OK;
}

static krr_status v1_step(krr_solver *base, int64_t iters) {
  v1_t *s = (v1_t *)base;
  if (!s->ready) KTRY(setup(s));
  for (int64_t i = 0; i < iters; i++) KTRY(v1_iter(s));
  return KRR_OK;
}

static const krr_solver_vt v1_vt = {.step = v1_step, .free = v1_free};

krr_status krr_askotch_v1_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o_in,
                               krr_solver **out) {
  krr_solver_opts o = *o_in;
  int64_t n = pb->n;
  if (o.block_size > n || o.block_size < 0)
    return krr_fail(ctx, KRR_ERR_INPUT, "block_size (%lld) must be between 1 and the number of observations (%lld)",
                    (long long)o.block_size, (long long)n);
  krr_askotch_resolve(pb, &o);
  int64_t nb, bmax;
  v1_shape(n, o.block_size, &nb, &bmax);
  int64_t bmin = n / nb;
  if (o_in->rank <= 0 && o.rank > bmin) o.rank = (int)bmin;
  if (o.rank < 0 || o.rank > bmin)
    return krr_fail(ctx, KRR_ERR_INPUT, "rank (%d) must not exceed the smallest block size (%lld)", o.rank,
                    (long long)bmin);
  if (o.rho_mode != KRR_RHO_DAMPED && o.rho_mode != KRR_RHO_REGULARIZATION && o.rho_mode != KRR_RHO_VALUE)
    return krr_fail(ctx, KRR_ERR_INPUT, "unknown rho mode %d", (int)o.rho_mode);
  if (o.rho_mode == KRR_RHO_VALUE && !(o.rho_value > 0 && isfinite(o.rho_value)))
    return krr_fail(ctx, KRR_ERR_INPUT, "rho must be positive and finite");
  if (!(o.v1_beta >= 0 && o.v1_beta <= 1))
    return krr_fail(ctx, KRR_ERR_INPUT, "v1_beta must be in [0, 1] (got %g)", o.v1_beta);
  if (!(o.mu >= 0) || !isfinite(o.mu))
    return krr_fail(ctx, KRR_ERR_INPUT, "mu must be >= 0 and finite (got %g)", o.mu);
  if (o.sampling != KRR_SAMPLING_UNIFORM)
    return krr_fail(ctx, KRR_ERR_INPUT, "ASkotch v1 samples blocks of its fixed partition; sampling must be uniform");
  size_t es = krr_sizeof(pb->prec);
  size_t fr = 0, tot = 0;
  KTRY(ctx->ops->mem_info(ctx, &fr, &tot));
  size_t avail = o.mem_limit > 0 ? o.mem_limit : (size_t)((double)fr * 0.9);
  size_t need = krr_askotch_v1_memory(pb, &o);
  if (need > avail)
    return krr_fail(ctx, KRR_ERR_MEMORY, "ASkotch v1 needs %.1f MiB beyond the data but only %.1f MiB are "
                    "available; use a smaller block_size or rank", need / 1048576.0, avail / 1048576.0);
  int r = o.rank;
  size_t kb = (size_t)bmax * (size_t)bmax * es;
  int mat = kb <= o.block_mem_limit && need + kb <= avail;
  if (mat) need += kb;
  size_t cb = (size_t)nb * (size_t)bmax * (size_t)r * es;
  int cache = need + cb <= avail;

  v1_t *s = (v1_t *)calloc(1, sizeof(v1_t));
  if (!s) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  s->base.vt = &v1_vt;
  s->base.ctx = ctx;
  s->base.pb = pb;
  s->base.o = o;
  s->base.es = es;
  s->n = n; s->nb = nb; s->bmax = bmax; s->p = pb->p; s->m = pb->m; s->r = r;
  s->materialize = mat; s->cache = cache;
  s->beta = o.v1_beta;
  s->a = (1.0 - o.v1_beta) / 2.0;
  s->mu = o.mu > 0 ? o.mu : pb->lambda; /* default replaced at setup */
  int64_t nm = n * (int64_t)pb->m;
  int m = pb->m, ok = 1;
#define ALLOC(ptr, count) ok = ok && ((ptr) = krr_dalloc(ctx, (count), es)) != NULL
  ALLOC(s->base.w, nm); ALLOC(s->wc, nm); ALLOC(s->z, nm);
  ok = ok && (s->idx = (int64_t *)krr_dalloc(ctx, bmax, sizeof(int64_t))) != NULL;
  ALLOC(s->XB, bmax * s->p);
  if (mat) ALLOC(s->KB, bmax * bmax);
  ALLOC(s->g, bmax * m); ALLOC(s->d, bmax * m); ALLOC(s->gb, bmax * m);
  ALLOC(s->p1, bmax); ALLOC(s->p2, bmax); ALLOC(s->p3, bmax);
  if (cache) ALLOC(s->Uc, nb * bmax * r);
#undef ALLOC
  if (ok) ok = krr_lowrank_alloc(ctx, pb->prec, bmax, r, m, &s->lr) == KRR_OK;
  if (ok) {
    s->perm = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
    s->off = (int64_t *)malloc(sizeof(int64_t) * (size_t)(nb + 1));
    s->L = (double *)calloc((size_t)nb, sizeof(double));
    s->rho = (double *)calloc((size_t)nb, sizeof(double));
    s->prob = (double *)calloc((size_t)nb, sizeof(double));
    s->lamc = (double *)calloc((size_t)(nb * (r > 0 ? r : 1)), sizeof(double));
    s->reff = (int *)calloc((size_t)nb, sizeof(int));
    if (!s->perm || !s->off || !s->L || !s->rho || !s->prob || !s->lamc || !s->reff) {
      krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
      ok = 0;
    }
  }
  krr_status st = ok ? KRR_OK : (ctx->status ? ctx->status : KRR_ERR_MEMORY);
  if (st == KRR_OK) st = ctx->ops->zero(ctx, s->base.w, es * (size_t)nm);
  if (st == KRR_OK) st = ctx->ops->zero(ctx, s->wc, es * (size_t)nm);
  if (st == KRR_OK) st = ctx->ops->zero(ctx, s->z, es * (size_t)nm);
  if (st != KRR_OK) { v1_free(&s->base); return st; }
  /* the fixed partition: seeded Fisher-Yates, blocks sorted */
  uint64_t ps = krr_rng_stream(o.seed, 0, 30);
  for (int64_t i = 0; i < n; i++) s->perm[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)(krr_rng_bits(ps, (uint64_t)i) % (uint64_t)(i + 1));
    int64_t t = s->perm[i]; s->perm[i] = s->perm[j]; s->perm[j] = t;
  }
  for (int64_t k = 0; k <= nb; k++) s->off[k] = k * n / nb;
  for (int64_t k = 0; k < nb; k++) {
    qsort(s->perm + s->off[k], (size_t)(s->off[k + 1] - s->off[k]), sizeof(int64_t), cmp_i64);
  }
  s->base.diag.block_size = bmax;
  s->base.diag.rank = r;
  s->base.diag.materialized = mat;
  s->base.diag.resid_est = 1.0;
  s->base.diag.block_resid = NAN;
  *out = &s->base;
  return KRR_OK;
}
