/* ASkotch, first version (Rathore, Frangella and Udell, arXiv v1,
 * Algorithm 1; R: askotch(variant = "v1")), written once for both precisions
 * on the kernel operator.
 *
 *  - [n] is randomly partitioned ONCE into B = ceil(n / b) blocks of sizes
 *    floor(n/B) or ceil(n/B) (a seeded Fisher-Yates permutation; indices
 *    sorted within each block).
 *  - Setup (done by the first step() call, so init stays cheap): for every
 *    block, the rank-r Nystrom preconditioner P_b of K_bb (the journal
 *    version's Alg. 2) with damping rho_b (rho; default damped lambda + lam_r)
 *    and the preconditioned smoothness L_b = lambda_max((P_b + rho_b I)^{-1/2}
 *    (K_bb + lambda I)(P_b + rho_b I)^{-1/2}) by randomised powering (Alg. 3).
 *    The sketches do not depend on lambda: after a change of lambda only the
 *    damping and L_b are redone (from the cache when it exists).
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
 *    (computed at setup); mu > 0 overrides.  Iteration:
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
#include "solver.h"

#define OPTIONS(X)                                                                            \
  X(block_size, INT, 0, 1, INFINITY, 0, NULL,                                                 \
    "block size b: ceiling(n / b) fixed blocks (0: min(n, max(256, ceiling(n / 100))))")      \
  X(rank, INT, 0, 1, INFINITY, 0, NULL,                                                       \
    "Nystrom rank r of the block preconditioners (0: min(100, the smallest block))")          \
  X(rho, RHO, KRR_RHO_DAMPED, 0, 0, 0, KRR_RHO_CHOICES,                                       \
    "damping: damped (lambda + the r-th Nystrom eigenvalue), regularization (lambda) or a number") \
  X(mu, REAL, 0, 0, INFINITY, 1, NULL,                                                        \
    "NU_ACDM strong convexity mu (0: lambda / max_b lambda_max(P_b + rho_b I))")              \
  X(v1_beta, REAL, 0, 0, 1, 0, NULL, "NU_ACDM beta: blocks sampled ~ L_b^((1 - beta)/2)")     \
  X(power_iters, INT, 10, 1, 1000, 0, NULL, "power iterations for the step sizes")            \
  X(block_mem_limit, REAL, 536870912.0, 0, INFINITY, 0, NULL,                                 \
    "form K_bb explicitly when its entries take at most this many bytes")
typedef struct { krr_common_opts common; KRR_OPT_FIELDS(OPTIONS) } opts_t;
static const krr_optdef optdefs[] = {KRR_OPT_DEFS(OPTIONS)};

typedef struct {
  int64_t nb, bmax, bk;      /* bk: size of the current block */
  int r, cache, materialize;
  double a, beta, mu, S, tau, gamma;
  int64_t *perm, *off;       /* host: partition (n) and block offsets (nb + 1) */
  double *L, *rho, *prob;    /* host nb */
  double *lamc;              /* host nb * r: cached Nystrom eigenvalues */
  int *reff;                 /* host nb */
  int *sketched;             /* host nb: the cache holds block k's sketch */
  void *Uc;                  /* device nb * bmax * r: cached bases (or NULL) */
  krr_lowrank lr;            /* sized bmax; lr.n set to the current block size */
  krr_block blk;
  krr_kbb kbb;               /* products with K_bb (materialised or not) */
  void *wc, *z;              /* n x m: the coupling point w and z (s->w holds x, the
                                returned iterate, so weights / residual use it) */
  void *KB;                  /* bmax x bmax */
  void *g, *d, *gb;          /* bmax x m */
  void *p1, *p2, *p3;        /* bmax */
} v1_t;

static const char *const extras[] = {"step_L", "rho", "materialized", "cached", "t_nystrom",
                                     "t_block", "t_update", NULL};

#define V(s) ((v1_t *)(s)->st)
#define O(s) SOPT(s, opts_t)

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void shape(int64_t n, int64_t b, int64_t *nb, int64_t *bmax) {
  *nb = (n + b - 1) / b;
  *bmax = (n + *nb - 1) / *nb;
}

static krr_status v1_resolve(krr_solver *s) {
  opts_t *o = O(s);
  int64_t n = s->n, nb, bmax;
  if (o->block_size == 0) o->block_size = krr_default_block(n);
  if (o->block_size > n)
    return krr_fail(s->ctx, KRR_ERR_INPUT, "`block_size` (%lld) must not exceed the number of "
                    "training points (%lld)", (long long)o->block_size, (long long)n);
  shape(n, o->block_size, &nb, &bmax);
  int64_t bmin = s->data_free ? o->block_size : n / nb; /* n unknown: the block size bounds it */
  if (o->rank == 0) o->rank = bmin < 100 ? bmin : 100;
  if (o->rank > bmin)
    return krr_fail(s->ctx, KRR_ERR_INPUT, "`rank` (%lld) must not exceed the smallest block of the "
                    "fixed partition (%lld)", (long long)o->rank, (long long)bmin);
  return KRR_OK;
}

static double base_need(const krr_solver *s) {
  const opts_t *o = O(s);
  int64_t nb, bmax, n = s->n, m = s->m;
  shape(n, o->block_size, &nb, &bmax);
  double e = 3.0 * (double)(n * m) + 3.0 * (double)(bmax * m) + 3.0 * bmax;
  return e * (double)s->es + krr_block_bytes(s->op, bmax) +
         krr_lowrank_memory(s->prec, bmax, (int)o->rank, (int)m) + 8.0 * (double)n +
         8.0 * (double)(nb + 1) + (40.0 + 8.0 * (double)o->rank) * (double)nb;
}

/* K_bb when it fits the block limit and the budget; the basis cache when it
 * fits after that */
static void plan(const krr_solver *s, int *mat, int *cache, double *total) {
  const opts_t *o = O(s);
  int64_t nb, bmax;
  shape(s->n, o->block_size, &nb, &bmax);
  double need = base_need(s);
  double kb = (double)bmax * (double)bmax * (double)s->es;
  *mat = kb <= o->block_mem_limit && need + kb <= s->avail;
  if (*mat) need += kb;
  double cb = (double)nb * (double)bmax * (double)o->rank * (double)s->es;
  *cache = need + cb <= s->avail;
  if (*cache) need += cb;
  *total = need;
}

static double v1_memory(const krr_solver *s) {
  int mat, cache;
  double total;
  plan(s, &mat, &cache, &total);
  return total;
}

static krr_status v1_shrink(krr_solver *s, double avail) {
  (void)avail;
  return krr_solver_refuse(s, base_need(s), "ASkotch v1");
}

static krr_status v1_init(krr_solver *s) {
  v1_t *v = V(s);
  const opts_t *o = O(s);
  krr_arena *ar = &s->arena;
  int64_t n = s->n, nm = n * (int64_t)s->m;
  int m = s->m;
  size_t es = s->es;
  double total;
  shape(n, o->block_size, &v->nb, &v->bmax);
  plan(s, &v->materialize, &v->cache, &total);
  int64_t nb = v->nb, bmax = v->bmax;
  v->r = (int)o->rank;
  v->beta = o->v1_beta;
  v->a = (1.0 - o->v1_beta) / 2.0;
  KTRY(krr_solver_alloc_weights(s, n, s->prec));
  v->wc = krr_arena_dev(ar, nm, es);
  v->z = krr_arena_dev(ar, nm, es);
  v->g = krr_arena_dev(ar, bmax * m, es);
  v->d = krr_arena_dev(ar, bmax * m, es);
  v->gb = krr_arena_dev(ar, bmax * m, es);
  v->p1 = krr_arena_dev(ar, bmax, es);
  v->p2 = krr_arena_dev(ar, bmax, es);
  v->p3 = krr_arena_dev(ar, bmax, es);
  v->perm = (int64_t *)krr_arena_host(ar, n, sizeof(int64_t));
  v->off = (int64_t *)krr_arena_host(ar, nb + 1, sizeof(int64_t));
  v->L = (double *)krr_arena_host(ar, nb, sizeof(double));
  v->rho = (double *)krr_arena_host(ar, nb, sizeof(double));
  v->prob = (double *)krr_arena_host(ar, nb, sizeof(double));
  v->lamc = (double *)krr_arena_host(ar, nb * (v->r > 0 ? v->r : 1), sizeof(double));
  v->reff = (int *)krr_arena_host(ar, nb, sizeof(int));
  v->sketched = (int *)krr_arena_host(ar, nb, sizeof(int));
  KTRY(KRR_ALLOCATED(ar, v->wc, v->z, v->g, v->d, v->gb, v->p1, v->p2, v->p3, v->perm, v->off,
                     v->L, v->rho, v->prob, v->lamc, v->reff, v->sketched));
  if (v->materialize) KTRY(KRR_ALLOCATED(ar, v->KB = krr_arena_dev(ar, bmax * bmax, es)));
  if (v->cache) KTRY(KRR_ALLOCATED(ar, v->Uc = krr_arena_dev(ar, nb * bmax * v->r, es)));
  KTRY(krr_block_alloc(s->op, ar, bmax, &v->blk));
  KTRY(krr_lowrank_alloc(ar, s->prec, bmax, v->r, m, &v->lr));
  v->kbb = (krr_kbb){s->op, &v->blk, v->materialize ? v->KB : NULL, 0.0};
  /* the fixed partition: seeded Fisher-Yates, blocks sorted */
  uint64_t ps = krr_rng_stream(krr_options_seed(s->opts), 0, 30);
  for (int64_t i = 0; i < n; i++) v->perm[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)(krr_rng_bits(ps, (uint64_t)i) % (uint64_t)(i + 1));
    int64_t t = v->perm[i]; v->perm[i] = v->perm[j]; v->perm[j] = t;
  }
  for (int64_t k = 0; k <= nb; k++) v->off[k] = k * n / nb;
  for (int64_t k = 0; k < nb; k++)
    qsort(v->perm + v->off[k], (size_t)(v->off[k + 1] - v->off[k]), sizeof(int64_t), cmp_i64);
  krr_solver_set_extra(s, "materialized", v->materialize);
  krr_solver_set_extra(s, "cached", v->cache);
  return KRR_OK;
}

/* load block k: rows, points, K_bb when materialised */
static krr_status load_block(krr_solver *s, int64_t k) {
  v1_t *v = V(s);
  v->bk = v->off[k + 1] - v->off[k];
  v->lr.n = v->bk;
  KTRY(krr_block_set(s->op, &v->blk, v->perm + v->off[k], v->bk));
  if (v->materialize) KTRY(krr_op_mat(s->op, &v->blk, &v->blk, v->KB, v->bk));
  return KRR_OK;
}

/* the preconditioner of block k: from the cache, else sketched with the
 * block's own seed (the same sketch every time); tuning sets rho_k */
static krr_status block_precond(krr_solver *s, int64_t k, int tuning) {
  v1_t *v = V(s);
  krr_lowrank *lr = &v->lr;
  int r = v->r;
  size_t es = s->es;
  if (v->cache && v->sketched[k]) {
    KTRY(s->ctx->ops->copy(s->ctx, lr->U, KAT(v->Uc, k * v->bmax * r, es), es * (size_t)(v->bk * r)));
    memcpy(lr->lam, v->lamc + k * r, sizeof(double) * (size_t)r);
    lr->r_eff = v->reff[k];
    lr->orth = 1;
  } else {
    double tr = 0;
    KTRY(krr_op_trace(s->op, &v->blk, &tr));
    KTRY(krr_nystrom_sketch(s->ctx, lr, krr_kbb_mul, &v->kbb, tr,
                            krr_rng_stream(krr_options_seed(s->opts), (uint64_t)k, 31)));
    if (v->cache) {
      KTRY(s->ctx->ops->copy(s->ctx, KAT(v->Uc, k * v->bmax * r, es), lr->U, es * (size_t)(v->bk * r)));
      memcpy(v->lamc + k * r, lr->lam, sizeof(double) * (size_t)r);
      v->reff[k] = lr->r_eff;
      v->sketched[k] = 1;
    }
  }
  if (tuning) v->rho[k] = krr_lowrank_rho(lr, O(s)->rho, s->obj->lambda);
  return krr_lowrank_prepare(s->ctx, lr, v->rho[k]);
}

/* per block: damping and step size L_b; then the NU_ACDM parameters */
static krr_status v1_tune(krr_solver *s) {
  v1_t *v = V(s);
  const opts_t *o = O(s);
  double pmax = 0;
  v->kbb.lambda = s->obj->lambda;
  for (int64_t k = 0; k < v->nb; k++) {
    KTRY(krr_poll(s->ctx));
    KTRY(load_block(s, k));
    KTRY(block_precond(s, k, 1));
    KTRY(krr_power_lmax(s->ctx, &v->lr, krr_kbb_hmul, &v->kbb, (int)o->power_iters,
                        krr_rng_stream(krr_options_seed(s->opts), (uint64_t)k, 32), v->p1, v->p2,
                        v->p3, &v->L[k]));
    double top = (v->lr.r_eff > 0 ? v->lr.lam[0] : 0.0) + v->rho[k];
    if (top > pmax) pmax = top;
  }
  /* default mu: lambda / max_b lambda_max(P_b + rho_b I), a lower bound on the
     strong convexity of the dual in the block-preconditioned norm */
  v->mu = o->mu > 0 ? o->mu : s->obj->lambda / (pmax > 1.0 ? pmax : 1.0);
  v->S = 0;
  for (int64_t k = 0; k < v->nb; k++) v->S += pow(v->L[k], v->a);
  for (int64_t k = 0; k < v->nb; k++) v->prob[k] = pow(v->L[k], v->a) / v->S;
  v->tau = 2.0 / (1.0 + sqrt(4.0 * v->S * v->S / v->mu + 1.0));
  v->gamma = 1.0 / (v->tau * v->S * v->S);
  return KRR_OK;
}

static krr_status v1_start(krr_solver *s) {
  v1_t *v = V(s);
  size_t bytes = s->es * (size_t)(s->n * s->m);
  KTRY(s->ctx->ops->copy(s->ctx, v->wc, s->w, bytes));
  return s->ctx->ops->copy(s->ctx, v->z, s->w, bytes);
}

static int64_t draw_block(const v1_t *v, uint64_t stream) {
  double u = krr_rng_unif(stream, 0), c = 0;
  for (int64_t k = 0; k < v->nb; k++) {
    c += v->prob[k];
    if (u <= c) return k;
  }
  return v->nb - 1;
}

static krr_status v1_iterate(krr_solver *s) {
  v1_t *v = V(s);
  krr_ctx *ctx = s->ctx;
  int64_t n = s->n, nm = n * (int64_t)s->m;
  int m = s->m;
  size_t es = s->es;
  uint64_t it = (uint64_t)s->diag.iter;
  double t0 = krr_now();
  int64_t k = draw_block(v, krr_rng_stream(krr_options_seed(s->opts), it, 0));
  KTRY(load_block(s, k));
  KTRY(block_precond(s, k, 0));
  int64_t b = v->bk;
  KTRY(ctx->ops->sync(ctx));
  double t1 = krr_now();

  /* g = K_b: w + lambda w_b - y_b at the coupling point w */
  double gn = 0, ybn = 0;
  KTRY(krr_block_gradient(s->op, s->obj, &v->blk, v->wc, v->g, v->gb, v->d, &gn, &ybn));
  double t2 = krr_now();

  KTRY(krr_lowrank_inv(ctx, &v->lr, v->g, v->d, m));
  double L = v->L[k], gm = v->gamma * v->mu;
  /* x_new = w - U_b v / L  (into s->w) */
  KTRY(ctx->ops->copy(ctx, s->w, v->wc, es * (size_t)nm));
  KTRY(krr_op_scatter_axpy(s->op, -1.0 / L, v->d, b, m, &v->blk, s->w));
  /* z_new = (z + gamma mu w)/(1 + gamma mu) - gamma/((1 + gamma mu) p L^beta) U_b v */
  KTRY(SOP(s, axpby, nm, gm / (1.0 + gm), v->wc, 1.0 / (1.0 + gm), v->z));
  KTRY(krr_op_scatter_axpy(s->op, -v->gamma / ((1.0 + gm) * v->prob[k] * pow(L, v->beta)), v->d, b,
                           m, &v->blk, v->z));
  /* w = tau z + (1 - tau) x_new */
  KTRY(ctx->ops->copy(ctx, v->wc, s->w, es * (size_t)nm));
  KTRY(SOP(s, axpby, nm, v->tau, v->z, 1.0 - v->tau, v->wc));
  KTRY(ctx->ops->sync(ctx));
  double t3 = krr_now();

  krr_solver_tick(s);
  s->diag.passes = (double)s->diag.iter / (double)v->nb;
  krr_solver_track_block(s, b, gn, ybn);
  krr_solver_set_extra(s, "step_L", L);
  krr_solver_set_extra(s, "rho", v->rho[k]);
  krr_solver_add_extra(s, "t_nystrom", t1 - t0);
  krr_solver_add_extra(s, "t_block", t2 - t1);
  krr_solver_add_extra(s, "t_update", t3 - t2);
  return KRR_OK;
}

const krr_solver_def krr_solver_askotch_v1 = {
    .name = "askotch_v1",
    .title = "ASkotch v1 (fixed partition, NU_ACDM)",
    .losses = "squared",
    .options = {optdefs, KRR_NOPTS(optdefs), sizeof(opts_t)},
    .extras = extras,
    .state_size = sizeof(v1_t),
    .mem_advice = "use a smaller block_size or rank",
    .resolve = v1_resolve,
    .memory = v1_memory,
    .shrink = v1_shrink,
    .init = v1_init,
    .tune = v1_tune,
    .start = v1_start,
    .iterate = v1_iterate,
};
