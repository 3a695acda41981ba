/* DBCD-TR, the dual block coordinate descent with trust region of Joker
 * (Zhang et al., "Joker: Joint Optimization Framework for Lightweight Kernel
 * Machines": Algorithm 3 outside, Algorithm 1 (trust region) and Algorithm 2
 * (truncated CG-Steihaug) inside, losses of Table 2), on the exact operator,
 * written once for both precisions.
 *
 * The dual (loss/loss.h): min_{a in box} 1/2 a^T K a + f(a), f separable.
 * Algorithm 3: the rows are partitioned once into blocks of size about b (a
 * seeded random permutation cut into ceil(n / b) near-equal pieces); each
 * iteration picks one block B uniformly (draw `iter` of the seed's stream)
 * and forms, once for all m columns,
 *   K_BB (b x b, materialised) and  gbar = K_{B:} a  (one product, b x m),
 * then each column runs its own trust-region loop (Algorithm 1) on
 *   J(a_B + s) - J(a_B) = s^T gbar + 1/2 s^T K_BB s + f(a_B + s) - f(a_B):
 *   g = gbar + grad f(a_B), Q = K_BB + diag(f''(a_B)) (logistic: capped),
 *   s = truncated CG-Steihaug (Algorithm 2) on 1/2 s^T Q s + g^T s, ||s|| <= Delta,
 *   rho = (actual decrease) / (model decrease);
 *   Delta <- Delta/4 if rho < 0.5; <- min(2 Delta, Delta_max) if rho > 0.75
 *   and the step reached the boundary; accept (a_B += s, gbar += K_BB s) if
 *   rho > eta = 0.1 (the paper's eta in [0, 1/4]); Delta_0 = Delta_max / 4.
 * Delta_max (the paper leaves it open) is the diameter of the block's box
 * when it is bounded, else ||g|| / lambda, which bounds the Newton step of
 * the losses with an unbounded box (their curvature is >= lambda).
 *
 * Algorithm 2 stops at the trust-region boundary or when the CG iterate
 * leaves the box, and projects onto the box.  Two refinements, needed to
 * reach small duality gaps: (i) CG runs on the free variables only (those
 * not held at a bound by a gradient pointing outward; the projected-Newton
 * active set), since a variable at its bound would otherwise stop every CG
 * at its first step; (ii) when a CG step (interior, or the step to the
 * trust-region boundary) would leave the box, it stops at the first crossing
 * (the model decreases along the step up to there), puts the crossing
 * variables on their bounds and restarts CG on the new free set, so every
 * trust-region step decreases the model (the paper projects the final step
 * instead, which can increase the model: with the hinge loss at C = 50 every
 * step was then rejected and the iterate never left zero).  SVR's eps |a| is linearised by the sign within
 * each step, with each variable kept in its orthant (loss/svr.c), so the
 * model stays exact.  The n-vector of weights a is the dual variable;
 * predictions are K(x, X) a.
 *
 * Inexact mode (the paper's Section 4 with random features): on an operator
 * with a finite feature map K = Z Z^T (op->nfeat > 0), the solver keeps
 * theta = Z^T a (nfeat x m) and forms K_{B:} a = Z_B theta and the update
 * theta += Z_B^T (a_B' - a_B) in O(b nfeat m) instead of a product over all
 * n rows; theta is recomputed from a at every (re)start (one pass).
 *
 * Support products (exact operator, one process): the dual of a loss with
 * a box that holds 0 (hinge, squared hinge, SVR) keeps most weights exactly
 * at 0 -- the non-support vectors -- so K_{B:} a is summed over the rows S
 * with a nonzero weight only, K(X_B, X_S) a_S: b |S| kernel pairs instead of
 * b n (Fashion-MNIST, hinge, C = 10: |S| ~ 0.15-0.2 n).  S is kept from each
 * block's new weights (a host flag per row); while |S| exceeds the option
 * `support` times n (0: never) the product runs over all rows.  The sum is
 * the same up to the order of its terms.  The exact criterion's product K a
 * (the duality gap) is K(X, X_S) a_S in the same way.
 *
 * On a device backend the per-column trust-region loops run on a host
 * context (copies of K_BB and the block's vectors; jk_init): they are long
 * chains of b-vector operations, latency bound on a GPU.
 *
 * The running criterion estimate feeds krr_solver_track_block with the norm
 * of the projected (free) block gradient, which vanishes at the solution for
 * every loss; the exact criterion (krr_solver_residual) is the loss's: the
 * relative residual for the squared loss, the relative duality gap
 * otherwise. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "solver.h"

#define OPTIONS(X)                                                                             \
  X(block_size, INT, 0, 1, INFINITY, 0, NULL,                                                  \
    "block size b (0: min(n, 512); the paper: 2048, logistic 1024, random features 512)")                              \
  X(tr_iters, INT, 50, 1, 100000, 0, NULL, "trust-region steps per block (Algorithm 1)")       \
  X(cg_iters, INT, 0, 1, INFINITY, 0, NULL,                                                    \
    "truncated CG-Steihaug steps per trust-region step (0: min(b, 50))")                       \
  X(support, REAL, 0.5, 0, 1, 0, NULL,                                                         \
    "the largest share of the rows over which K_{B:} a is summed as the rows with a nonzero "  \
    "weight only (hinge, squared hinge, SVR; exact operator; 0: always over all rows)")
typedef struct { krr_common_opts common; KRR_OPT_FIELDS(OPTIONS) } opts_t;
static const krr_optdef optdefs[] = {KRR_OPT_DEFS(OPTIONS)};

#define TR_ETA 0.1

typedef struct {
  int64_t nblocks;
  int64_t *perm;              /* host n: the fixed partition (blocks are consecutive pieces) */
  krr_block blk;
  void *KB;                   /* b x b */
  void *gbar, *aB, *a0, *yB;  /* b x m */
  /* b-vectors of the column being solved */
  void *g, *lo, *hi, *L, *U, *mask, *h, *s, *r, *d, *Qd, *p, *t1, *t2, *ones;
  double radius;              /* last trust-region radius */
  int64_t nf;                 /* inexact mode: the operator's features (0: exact) */
  void *theta, *ZB;           /* nf x m and b x nf (inexact mode) */
  /* where the trust-region loops run: the fit's context, or on a device a
   * host context (hctx) with host copies of K_BB, gbar, a_B and y_B (hKB ...) */
  krr_ctx *tc;
  krr_ctx hctx;
  int host;
  void *hKB, *hgbar, *haB, *hyB;
  void *tKB;                  /* the K_BB the trust-region loops read (KB or hKB) */
  /* support products (scap > 0): a host flag per row (a nonzero weight in
   * some column), their count, the rows as a block and their weights */
  int64_t scap, nnz;
  unsigned char *nz;
  int64_t *sidx;
  krr_block sblk;
  void *aS;                   /* scap x m */
  int sdirty;                 /* S changed since sblk was loaded */
} jk_t;

static const char *const extras[] = {"tr_steps", "tr_accepted", "cg_steps", "cg_restarts", "radius",
                                     "nblocks", "support_products", NULL};

#define J(s) ((jk_t *)(s)->st)
#define O(s) SOPT(s, opts_t)
#define LMAP(s, kind, len, y, a, out)                                                       \
  SOP(s, loss_map, (s)->obj->loss->code, kind, len, (s)->obj->lambda, (s)->obj->param, y, a, out)
/* the same on the trust-region context (J(s)->tc) */
#define TOP(s, name, ...) KOP(J(s)->tc, (s)->prec, name, __VA_ARGS__)
#define TMAP(s, kind, len, y, a, out)                                                       \
  TOP(s, loss_map, (s)->obj->loss->code, kind, len, (s)->obj->lambda, (s)->obj->param, y, a, out)

/* a failure on the host trust-region context, reported on the fit's */
static krr_status jk_tr_status(krr_solver *s, krr_status st) {
  jk_t *j = J(s);
  return j->host ? krr_ctx_forward(s->ctx, &j->hctx, st) : st;
}

static void jk_release(krr_solver *s) {
  jk_t *j = J(s);
  if (j->host) krr_ctx_free(&j->hctx);
  j->host = 0;
  j->tc = NULL;
}

/* 512 for every loss and operator.  The paper uses 2048 (exact), 1024
 * (logistic) and 512 (random features); 512 reaches LIBSVM's test metric
 * several times sooner than 2048 on Fashion-MNIST (hinge) and Friedman 1
 * (SVR) at n = 1e4, because the trust-region solve of a b x b block costs
 * O(b^2) per CG step (inst/bench/bench_losses.R). */
static int64_t default_block(const krr_solver *s) {
  int64_t b = 512;
  return b < s->n ? b : s->n;
}

/* rows held for support products (0: none): the exact operator on one process,
 * a loss whose dual solution has exact zeros */
static int64_t support_cap(const krr_solver *s) {
  if (s->op->nfeat > 0 || s->op->nloc != s->n || !s->obj || !s->obj->loss || !s->obj->loss->sparse)
    return 0; /* logistic and Huber duals have no exact zeros */
  int64_t c = (int64_t)floor(O(s)->support * (double)s->n);
  return c > 0 ? c : 0;
}

static double jk_memory(const krr_solver *s) {
  const opts_t *o = O(s);
  double b = (double)o->block_size, nm = (double)s->n * (double)s->m;
  double nf = s->op->nfeat > 0 ? (double)s->op->nfeat : 0.0;
  int64_t sc = support_cap(s);
  double sup = sc ? krr_block_bytes(s->op, sc) + (double)sc * ((double)s->es * (double)s->m + 8.0) +
                        (double)s->n
                  : 0.0;
  /* on a device: the host copies of K_BB, gbar, a_B and y_B (jk_init) */
  double hcopy = s->ctx && !krr_ctx_on_host(s->ctx) ? b * b + 3.0 * b * (double)s->m : 0.0;
  return (double)s->es * (nm + b * b + 4.0 * b * (double)s->m + 15.0 * b + nf * ((double)s->m + b) + hcopy) +
         krr_block_bytes(s->op, o->block_size) + 8.0 * (double)s->n + sup;
}

static krr_status jk_resolve(krr_solver *s) {
  opts_t *o = O(s);
  KTRY(krr_loss_check_param(s->ctx, s->obj));
  if (o->block_size == 0) o->block_size = default_block(s);
  if (!s->data_free && o->block_size > s->n)
    return krr_fail(s->ctx, KRR_ERR_INPUT, "`block_size` (%lld) must not exceed the number of "
                    "training points (%lld)", (long long)o->block_size, (long long)s->n);
  if (o->cg_iters == 0) o->cg_iters = o->block_size < 50 ? o->block_size : 50;
  return KRR_OK;
}

static krr_status jk_init(krr_solver *s) {
  jk_t *j = J(s);
  const opts_t *o = O(s);
  krr_arena *ar = &s->arena;
  int64_t n = s->n, b = o->block_size, bm = b * (int64_t)s->m;
  size_t es = s->es;
  KTRY(krr_solver_alloc_weights(s, n, s->prec));
  KTRY(krr_block_alloc(s->op, ar, b, &j->blk));
  j->perm = (int64_t *)krr_arena_host(ar, n, sizeof(int64_t));
  j->KB = krr_arena_dev(ar, b * b, es);
  j->gbar = krr_arena_dev(ar, bm, es);
  j->aB = krr_arena_dev(ar, bm, es);
  j->a0 = krr_arena_dev(ar, bm, es);
  j->yB = krr_arena_dev(ar, bm, es);
  KTRY(KRR_ALLOCATED(ar, j->perm, j->KB, j->gbar, j->aB, j->a0, j->yB));
  /* On a device the trust-region loops (thousands of b-vector operations per
   * block, each a kernel launch and many a synchronising reduction: latency
   * bound, 100x slower than the CPU at b = 64) run on the host, on copies of
   * K_BB and the block's b x m vectors; the O(b n) products stay on the device. */
  j->tc = s->ctx;
  j->tKB = j->KB;
  if (!krr_ctx_on_host(s->ctx)) {
    KTRY(krr_ctx_host_twin(s->ctx, &j->hctx));
    j->host = 1;
    j->tc = &j->hctx;
    j->hKB = krr_arena_host(ar, b * b, es);
    j->hgbar = krr_arena_host(ar, bm, es);
    j->haB = krr_arena_host(ar, bm, es);
    j->hyB = krr_arena_host(ar, bm, es);
    KTRY(KRR_ALLOCATED(ar, j->hKB, j->hgbar, j->haB, j->hyB));
    j->tKB = j->hKB;
  }
  void **vec[] = {&j->g, &j->lo, &j->hi, &j->L, &j->U, &j->mask, &j->h,
                  &j->s, &j->r, &j->d, &j->Qd, &j->p, &j->t1, &j->t2, &j->ones};
  for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++)
    if (!(*vec[i] = j->host ? krr_arena_host(ar, b, es) : krr_arena_dev(ar, b, es)))
      return s->ctx->status;
  j->nf = s->op->nfeat > 0 ? s->op->nfeat : 0;
  if (j->nf) {
    j->theta = krr_arena_dev(ar, j->nf * (int64_t)s->m, es);
    j->ZB = krr_arena_dev(ar, j->nf * b, es);
    KTRY(KRR_ALLOCATED(ar, j->theta, j->ZB));
  }
  KTRY(jk_tr_status(s, TMAP(s, KRR_MAP_ONES, b, NULL, NULL, j->ones))); /* sums of b-vectors (the DF map) */
  j->nblocks = (n + b - 1) / b;
  krr_solver_set_extra(s, "nblocks", (double)j->nblocks);
  j->scap = support_cap(s);
  if (j->scap) {
    KTRY(krr_block_alloc(s->op, ar, j->scap, &j->sblk));
    j->nz = (unsigned char *)krr_arena_host(ar, n, 1);
    j->sidx = (int64_t *)krr_arena_host(ar, j->scap, sizeof(int64_t));
    j->aS = krr_arena_dev(ar, j->scap * (int64_t)s->m, es);
    KTRY(KRR_ALLOCATED(ar, j->nz, j->sidx, j->aS));
  }
  return KRR_OK;
}

/* whether row r of the host matrix a (m columns, ld ld) has a nonzero weight */
static int row_nonzero(const void *a, size_t es, int64_t ld, int m, int64_t r) {
  for (int c = 0; c < m; c++) {
    int64_t k = r + (int64_t)c * ld;
    if (es == sizeof(double) ? ((const double *)a)[k] != 0 : ((const float *)a)[k] != 0) return 1;
  }
  return 0;
}

/* the support flags of the rows idx[0 .. b) from their host weights: row r
 * of a (ld b) when a holds the block, row idx[r] of a (ld n) when it is the
 * whole weight vector (whole != 0) */
static void support_mark(jk_t *j, const int64_t *idx, int64_t b, int m, const void *a, size_t es,
                         int64_t ld, int whole) {
  for (int64_t r = 0; r < b; r++) {
    unsigned char f = (unsigned char)row_nonzero(a, es, ld, m, whole ? idx[r] : r);
    if (f != j->nz[idx[r]]) {
      j->nz[idx[r]] = f;
      j->nnz += f ? 1 : -1;
      j->sdirty = 1;
    }
  }
}

/* the support of the whole weight vector (at a (re)start) */
static krr_status support_reset(krr_solver *s) {
  jk_t *j = J(s);
  int64_t n = s->n;
  size_t bytes = s->es * (size_t)(n * (int64_t)s->m);
  const void *w = s->w;
  void *tmp = NULL;
  if (!krr_ctx_on_host(s->ctx)) { /* device weights: one download */
    if (!(tmp = malloc(bytes))) return krr_fail(s->ctx, KRR_ERR_MEMORY, "joker: out of host memory");
    krr_status st = s->ctx->ops->download(s->ctx, tmp, s->w, bytes);
    if (st != KRR_OK) { free(tmp); return st; }
    w = tmp;
  }
  j->nnz = 0;
  for (int64_t i = 0; i < n; i++) {
    j->nz[i] = (unsigned char)row_nonzero(w, s->es, n, s->m, i);
    j->nnz += j->nz[i];
  }
  j->sdirty = 1;
  free(tmp);
  return KRR_OK;
}

/* the support rows as a block (reloaded when S changed) and their weights a_S */
static krr_status support_load(krr_solver *s) {
  jk_t *j = J(s);
  if (j->sdirty) {
    int64_t c = 0;
    for (int64_t i = 0; i < s->n; i++)
      if (j->nz[i]) j->sidx[c++] = i;
    KTRY(krr_block_set(s->op, &j->sblk, j->sidx, c));
    j->sdirty = 0;
  }
  return krr_op_gather(s->op, &j->sblk, s->w, s->m, j->aS, j->sblk.b);
}

/* OUT = K(X_A, X) a (A: a block of rows, or NULL: all) over the support rows
 * while they are few enough, else over all rows */
static krr_status support_product(krr_solver *s, const krr_block *A, void *out, int64_t ldo) {
  jk_t *j = J(s);
  int m = s->m;
  if (!j->scap || j->nnz > j->scap)
    return krr_op_mv(s->op, A, NULL, s->w, s->op->nloc, m, out, ldo);
  if (j->nnz == 0) return s->ctx->ops->zero(s->ctx, out, s->es * (size_t)(ldo * m));
  KTRY(support_load(s));
  if (A) krr_solver_add_extra(s, "support_products", 1.0); /* block products only */
  return krr_op_mv(s->op, A, &j->sblk, j->aS, j->sblk.b, m, out, ldo);
}

/* K a for the criterion (the duality gap), the same way: one kernel pass or less */
static krr_status jk_apply_k(krr_solver *s, void *F) {
  return support_product(s, NULL, F, s->op->nloc);
}

/* the fixed partition: a seeded permutation (Fisher-Yates on the counter-based
 * stream), cut into nblocks near-equal consecutive pieces */
static krr_status jk_prepare(krr_solver *s) {
  jk_t *j = J(s);
  int64_t n = s->n;
  krr_sample_permutation(krr_rng_stream(krr_options_seed(s->opts), 0, 31), n, j->perm);
  return KRR_OK;
}

static void block_rows(const krr_solver *s, int64_t k, int64_t *first, int64_t *len);

/* the weights start in the box (a fresh fit from zero: logistic's clamped box
 * excludes 0); inexact mode: theta = Z^T a, block by block over the partition */
static krr_status jk_start(krr_solver *s) {
  jk_t *j = J(s);
  j->radius = NAN;
  if (!s->obj->loss->linear)
    KTRY(LMAP(s, KRR_MAP_PROJECT, s->n * (int64_t)s->m, s->obj->y, NULL, s->w));
  if (j->scap) KTRY(support_reset(s));
  if (!j->nf) return KRR_OK;
  for (int64_t k = 0; k < j->nblocks; k++) {
    int64_t first, b;
    block_rows(s, k, &first, &b);
    KTRY(krr_block_set(s->op, &j->blk, j->perm + first, b));
    KTRY(krr_op_features(s->op, &j->blk, j->ZB, b));
    KTRY(krr_op_gather(s->op, &j->blk, s->w, s->m, j->aB, b));
    KTRY(SOP(s, gemm, 1, 0, j->nf, s->m, b, 1.0, j->ZB, b, j->aB, b, k ? 1.0 : 0.0, j->theta,
             j->nf));
  }
  return KRR_OK;
}

static void block_rows(const krr_solver *s, int64_t k, int64_t *first, int64_t *len) {
  int64_t n = s->n, nb = J(s)->nblocks, q = n / nb, r = n % nb;
  *first = k * q + (k < r ? k : r);
  *len = q + (k < r ? 1 : 0);
}

/* out = K_BB v + h .* v (b-vectors); masked by the free set when mask != NULL */
static krr_status qmul(krr_solver *s, int64_t b, const void *v, void *out, int masked) {
  jk_t *j = J(s);
  krr_ctx *ctx = j->tc;
  KTRY(ctx->ops->copy(ctx, out, v, s->es * (size_t)b));
  KTRY(TMAP(s, KRR_MAP_MUL, b, NULL, j->h, out));
  KTRY(TOP(s, gemm, 0, 0, b, 1, b, 1.0, j->tKB, b, v, b, 1.0, out, b));
  if (masked) KTRY(TMAP(s, KRR_MAP_MUL, b, NULL, j->mask, out));
  return KRR_OK;
}

static krr_status dot(krr_solver *s, int64_t b, const void *x, const void *y, double *out) {
  return TOP(s, dot, b, x, y, out);
}

/* the model g^T v + 1/2 v^T Q v of the trust-region step v (Qd: scratch) */
static krr_status model(krr_solver *s, int64_t b, const void *v, double *out) {
  jk_t *j = J(s);
  double gv = 0, vQv = 0;
  KTRY(qmul(s, b, v, j->Qd, 0));
  KTRY(dot(s, b, v, j->Qd, &vQv));
  KTRY(dot(s, b, j->g, v, &gv));
  *out = gv + 0.5 * vQv;
  return KRR_OK;
}

/* s <- s + tau d with tau in [0, w] the first crossing of the box [L, U]
 * (bisection to a relative 2^-30 of w; no min-reduction is needed), the
 * crossing variables put exactly on their bounds (so the next step holds
 * them); tmp: scratch.  The model decreases along d up to w, so this step
 * beats s. */
static krr_status box_step(krr_solver *s, int64_t b, double w, void *tmp) {
  jk_t *j = J(s);
  krr_ctx *ctx = j->tc;
  size_t vb = s->es * (size_t)b;
  double tlo = 0, thi = w;
  for (int it = 0; it < 30; it++) {
    double t = 0.5 * (tlo + thi), viol = 0;
    KTRY(ctx->ops->copy(ctx, tmp, j->s, vb));
    KTRY(TOP(s, axpby, b, t, j->d, 1.0, tmp));
    KTRY(ctx->ops->copy(ctx, j->t2, tmp, vb));
    KTRY(TMAP(s, KRR_MAP_CLAMP, b, j->L, j->U, j->t2));
    KTRY(TOP(s, axpby, b, -1.0, tmp, 1.0, j->t2));
    KTRY(TOP(s, nrm2, b, j->t2, &viol));
    if (viol > 0) thi = t; else tlo = t;
  }
  /* thi (just past the crossing) clamped: the crossing variables land exactly on their bounds */
  KTRY(TOP(s, axpby, b, thi, j->d, 1.0, j->s));
  return TMAP(s, KRR_MAP_CLAMP, b, j->L, j->U, j->s);
}

/* tau >= 0 with ||s + tau d|| = radius */
static double to_boundary(double ss, double sd, double dd, double radius) {
  double c = ss - radius * radius, disc = sd * sd - dd * c;
  if (disc < 0) disc = 0;
  if (dd <= 0) return 0;
  double t = sd >= 0 ? -c / (sd + sqrt(disc)) : (-sd + sqrt(disc)) / dd;
  return t > 0 ? t : 0; /* ||s|| above the radius by rounding */
}

/* Algorithm 1 on column c of the block: a (= aB col), gb (= gbar col), y (= yB col);
 * *pg: the norm of the projected gradient at the start */
static krr_status trust_region(krr_solver *s, int64_t b, void *a, void *gb, const void *y,
                               double *pg) {
  jk_t *j = J(s);
  const opts_t *o = O(s);
  krr_ctx *ctx = j->tc;
  size_t vb = s->es * (size_t)b;
  double lambda = s->obj->lambda, e = krr_precision_eps(s->prec);
  double radius = 0, rmax = 0, g0 = 0, gtol = 0;
  int64_t tr = 0, acc = 0, cgs = 0, restarts = 0;
  *pg = 0;
  for (int64_t k = 0; k < o->tr_iters; k++) {
    /* up to tr_iters x cg_iters products with K_BB per block (2500 at the
     * defaults, about a second at b = 512): an interrupt is heard between
     * the steps and CG steps (the block's weights are written back only
     * after the loop) */
    KTRY(krr_poll(s->ctx));
    /* gradient, its projection, the step box and the free set at a */
    KTRY(ctx->ops->copy(ctx, j->g, a, vb));
    KTRY(TMAP(s, KRR_MAP_GRAD, b, y, a, j->g));
    KTRY(TOP(s, axpby, b, 1.0, gb, 1.0, j->g));
    KTRY(TMAP(s, KRR_MAP_PSEUDO, b, y, a, j->g));
    KTRY(ctx->ops->copy(ctx, j->lo, j->g, vb));
    KTRY(TMAP(s, KRR_MAP_LO, b, y, a, j->lo));
    KTRY(ctx->ops->copy(ctx, j->hi, j->g, vb));
    KTRY(TMAP(s, KRR_MAP_HI, b, y, a, j->hi));
    KTRY(ctx->ops->copy(ctx, j->L, j->lo, vb));
    KTRY(TOP(s, axpby, b, -1.0, a, 1.0, j->L));
    KTRY(ctx->ops->copy(ctx, j->U, j->hi, vb));
    KTRY(TOP(s, axpby, b, -1.0, a, 1.0, j->U));
    KTRY(ctx->ops->copy(ctx, j->mask, j->g, vb));
    KTRY(TMAP(s, KRR_MAP_FREE, b, j->L, j->U, j->mask));
    KTRY(ctx->ops->copy(ctx, j->r, j->g, vb));
    KTRY(TMAP(s, KRR_MAP_MUL, b, NULL, j->mask, j->r));
    double gn = 0;
    KTRY(TOP(s, nrm2, b, j->r, &gn));
    if (!isfinite(gn))
      return krr_fail(ctx, KRR_ERR_NUMERIC, "the iterate diverged (non-finite block gradient)");
    if (k == 0) {
      double gbn = 0, ybn = 0;
      KTRY(TOP(s, nrm2, b, gb, &gbn));
      KTRY(TOP(s, nrm2, b, y, &ybn));
      *pg = g0 = gn;
      gtol = 8.0 * e * (gbn + ybn + 1.0);
    }
    if (gn <= gtol) break;
    KTRY(TMAP(s, KRR_MAP_CURV, b, y, a, j->h));
    if (k == 0) { /* Delta_max: the box's diameter, else ||g|| / lambda; Delta_0 = Delta_max / 4 */
      KTRY(ctx->ops->copy(ctx, j->t1, j->U, vb));
      KTRY(TOP(s, axpby, b, -1.0, j->L, 1.0, j->t1));
      KTRY(TOP(s, nrm2, b, j->t1, &rmax));
      if (!(rmax < INFINITY)) rmax = gn / lambda;
      radius = 0.25 * rmax;
    }
    /* Algorithm 2 on the free set: s = 0, r = -g, d = r */
    double rr = gn * gn, cgtol = gn * fmin(0.1, sqrt(gn / g0));
    int boundary = 0;
    double mcur = 0; /* the model at s */
    KTRY(ctx->ops->zero(ctx, j->s, vb));
    KTRY(TOP(s, axpby, b, 0.0, j->r, -1.0, j->r));
    KTRY(ctx->ops->copy(ctx, j->d, j->r, vb));
    for (int64_t c = 0; c < o->cg_iters; c++) {
      double dq = 0, ss = 0, sd = 0, dd = 0, viol = 0;
      cgs++;
      KTRY(krr_poll(s->ctx)); /* a clock read unless 0.1 s have passed */
      KTRY(qmul(s, b, j->d, j->Qd, 1));
      KTRY(dot(s, b, j->d, j->Qd, &dq));
      KTRY(dot(s, b, j->s, j->s, &ss));
      KTRY(dot(s, b, j->s, j->d, &sd));
      KTRY(dot(s, b, j->d, j->d, &dd));
      double w = dq > 0 ? rr / dq : INFINITY;
      double nn = ss + 2 * w * sd + w * w * dd; /* ||s + w d||^2 */
      int to_bnd = !(dq > 0) || nn >= radius * radius;
      if (to_bnd) w = to_boundary(ss, sd, dd, radius); /* the model decreases up to the boundary */
      /* s_next = s + w d in t1; does it leave the box? */
      KTRY(ctx->ops->copy(ctx, j->t1, j->s, vb));
      KTRY(TOP(s, axpby, b, w, j->d, 1.0, j->t1));
      KTRY(ctx->ops->copy(ctx, j->p, j->t1, vb)); /* p = P(s_next) - s_next */
      KTRY(TMAP(s, KRR_MAP_CLAMP, b, j->L, j->U, j->p));
      KTRY(TOP(s, axpby, b, -1.0, j->t1, 1.0, j->p));
      KTRY(TOP(s, nrm2, b, j->p, &viol));
      if (viol > 0) {
        /* the projected step P(s + w d) when it decreases the model (many
         * variables reach their bounds at once), else the first box crossing,
         * the crossing variables onto their bounds; then CG restarts from
         * there on the new free set (a projected search with subspace CG: the
         * active set grows instead of every step ending at its first
         * crossing) */
        KTRY(ctx->ops->copy(ctx, j->p, j->t1, vb)); /* p = P(s + w d), within the radius */
        KTRY(TMAP(s, KRR_MAP_CLAMP, b, j->L, j->U, j->p));
        double mA = 0, mB = 0;
        KTRY(model(s, b, j->p, &mA));
        if (mA < mcur) { /* the projected step decreases the model: many variables reach their bounds at once */
          KTRY(ctx->ops->copy(ctx, j->s, j->p, vb));
          mcur = mA;
        } else { /* the first crossing, where the model still decreases */
          KTRY(box_step(s, b, w, j->t1));
          KTRY(model(s, b, j->s, &mB));
          mcur = mB;
        }
        /* Qd = Q s (left by model()); Qd + g: the model gradient at s */
        KTRY(TOP(s, axpby, b, 1.0, j->g, 1.0, j->Qd));
        KTRY(ctx->ops->copy(ctx, j->p, j->L, vb));
        KTRY(TOP(s, axpby, b, -1.0, j->s, 1.0, j->p));
        KTRY(ctx->ops->copy(ctx, j->t2, j->U, vb));
        KTRY(TOP(s, axpby, b, -1.0, j->s, 1.0, j->t2));
        KTRY(ctx->ops->copy(ctx, j->mask, j->Qd, vb));
        KTRY(TMAP(s, KRR_MAP_FREE, b, j->p, j->t2, j->mask));
        KTRY(ctx->ops->copy(ctx, j->r, j->Qd, vb));
        KTRY(TMAP(s, KRR_MAP_MUL, b, NULL, j->mask, j->r));
        KTRY(TOP(s, axpby, b, 0.0, j->r, -1.0, j->r));
        KTRY(ctx->ops->copy(ctx, j->d, j->r, vb));
        KTRY(dot(s, b, j->r, j->r, &rr));
        restarts++;
        if (sqrt(rr) <= cgtol) break;
        continue;
      }
      KTRY(ctx->ops->copy(ctx, j->s, j->t1, vb));
      /* along d from s the model changes by w (r . d) ... = -w rr + w^2 dq / 2 (r . d = rr in CG) */
      mcur += -w * rr + 0.5 * w * w * dq;
      if (to_bnd) { boundary = 1; break; }
      KTRY(TOP(s, axpby, b, -w, j->Qd, 1.0, j->r));
      double rn = 0;
      KTRY(dot(s, b, j->r, j->r, &rn));
      if (sqrt(rn) <= cgtol) break;
      KTRY(TOP(s, axpby, b, 1.0, j->r, rn / rr, j->d));
      rr = rn;
    }
    tr++;
    /* the ratio of actual to predicted decrease */
    double sn = 0, gs = 0, sQs = 0, sKs = 0, gbs = 0, df = 0;
    KTRY(TOP(s, nrm2, b, j->s, &sn));
    if (!(sn > 0)) break;
    KTRY(ctx->ops->zero(ctx, j->t1, vb)); /* t1 = K_BB s */
    KTRY(TOP(s, gemm, 0, 0, b, 1, b, 1.0, j->tKB, b, j->s, b, 0.0, j->t1, b));
    KTRY(dot(s, b, j->s, j->t1, &sKs));
    KTRY(ctx->ops->copy(ctx, j->t2, j->s, vb));
    KTRY(TMAP(s, KRR_MAP_MUL, b, NULL, j->h, j->t2));
    KTRY(dot(s, b, j->s, j->t2, &sQs));
    sQs += sKs;
    KTRY(dot(s, b, j->g, j->s, &gs));
    KTRY(dot(s, b, gb, j->s, &gbs));
    KTRY(ctx->ops->copy(ctx, j->t2, j->s, vb));
    KTRY(TMAP(s, KRR_MAP_DF, b, y, a, j->t2));
    KTRY(dot(s, b, j->t2, j->ones, &df));
    double pred = -(gs + 0.5 * sQs), ared = -(gbs + 0.5 * sKs + df);
    double rho = pred > 0 ? ared / pred : -1.0;
    if (!isfinite(rho)) rho = -1.0;
    if (rho < 0.5) radius *= 0.25;
    else if (rho > 0.75 && (boundary || radius - sn <= 1e-6 * radius))
      radius = fmin(2.0 * radius, rmax);
    if (rho > TR_ETA) {
      acc++;
      KTRY(TOP(s, axpby, b, 1.0, j->s, 1.0, a));
      KTRY(TMAP(s, KRR_MAP_CLAMP, b, j->lo, j->hi, a));
      KTRY(TOP(s, axpby, b, 1.0, j->t1, 1.0, gb));
    }
    if (pred <= 0 || radius <= e * sn) break;
  }
  j->radius = radius;
  krr_solver_add_extra(s, "tr_steps", (double)tr);
  krr_solver_add_extra(s, "tr_accepted", (double)acc);
  krr_solver_add_extra(s, "cg_steps", (double)cgs);
  krr_solver_add_extra(s, "cg_restarts", (double)restarts);
  return KRR_OK;
}

static krr_status jk_iterate(krr_solver *s) {
  jk_t *j = J(s);
  krr_ctx *ctx = s->ctx;
  int m = s->m;
  uint64_t it = (uint64_t)s->diag.iter, seed = krr_options_seed(s->opts);
  /* the block: uniform over the fixed partition */
  int64_t k = (int64_t)(krr_rng_unif(krr_rng_stream(seed, it, 32), 0) * (double)j->nblocks);
  if (k >= j->nblocks) k = j->nblocks - 1;
  int64_t first, b;
  block_rows(s, k, &first, &b);
  KTRY(krr_block_set(s->op, &j->blk, j->perm + first, b));
  KTRY(krr_op_mat(s->op, &j->blk, &j->blk, j->KB, b));
  if (j->nf) { /* K_{B:} a = Z_B theta */
    KTRY(krr_op_features(s->op, &j->blk, j->ZB, b));
    KTRY(SOP(s, gemm, 0, 0, b, m, j->nf, 1.0, j->ZB, b, j->theta, j->nf, 0.0, j->gbar, b));
  } else {
    KTRY(support_product(s, &j->blk, j->gbar, b));
  }
  KTRY(krr_op_gather(s->op, &j->blk, s->w, m, j->aB, b));
  KTRY(krr_op_gather(s->op, &j->blk, s->obj->y, m, j->yB, b));
  size_t bmb = s->es * (size_t)(b * m);
  KTRY(ctx->ops->copy(ctx, j->a0, j->aB, bmb));
  void *aB = j->aB, *gbar = j->gbar, *yB = j->yB;
  if (j->host) { /* the trust-region loops on host copies */
    aB = j->haB, gbar = j->hgbar, yB = j->hyB;
    KTRY(ctx->ops->download(ctx, j->hKB, j->KB, s->es * (size_t)(b * b)));
    KTRY(ctx->ops->download(ctx, aB, j->aB, bmb));
    KTRY(ctx->ops->download(ctx, gbar, j->gbar, bmb));
    KTRY(ctx->ops->download(ctx, yB, j->yB, bmb));
  }
  double pg2 = 0, y2 = 0;
  for (int c = 0; c < m; c++) {
    double pg = 0;
    size_t off = (size_t)c * (size_t)b;
    KTRY(jk_tr_status(s, trust_region(s, b, KAT(aB, off, s->es), KAT(gbar, off, s->es),
                                      KAT(yB, off, s->es), &pg)));
    pg2 += pg * pg;
  }
  if (j->host) KTRY(ctx->ops->upload(ctx, j->aB, aB, bmb));
  /* the block's change into a */
  KTRY(SOP(s, axpby, b * m, -1.0, j->a0, 1.0, j->aB));
  KTRY(krr_op_scatter_axpy(s->op, 1.0, j->aB, b, m, &j->blk, s->w));
  /* the support flags once the weights hold the block (a0 + (a' - a0) is 0
   * exactly where a' is): from the host copy on a device, else from w itself */
  if (j->scap) {
    if (j->host) support_mark(j, j->perm + first, b, m, aB, s->es, b, 0);
    else support_mark(j, j->perm + first, b, m, s->w, s->es, s->n, 1);
  }
  if (j->nf) /* theta += Z_B^T (a_B' - a_B) */
    KTRY(SOP(s, gemm, 1, 0, j->nf, m, b, 1.0, j->ZB, b, j->aB, b, 1.0, j->theta, j->nf));
  KTRY(SOP(s, nrm2, b * m, j->yB, &y2));
  krr_solver_tick(s);
  s->diag.passes = (double)s->diag.iter * (double)b / (double)s->n;
  krr_solver_track_block(s, b, sqrt(pg2), y2);
  krr_solver_set_extra(s, "radius", j->radius);
  return KRR_OK;
}

/* theta = Z^T a (inexact mode) as kept along the iterations, so that a
 * random-features model needs no pass over the features (n M p) after the
 * fit's deadline; before a (re)start, from the weights */
static krr_status jk_theta(krr_solver *s, double *host) {
  jk_t *j = J(s);
  if (!j->nf)
    return krr_fail(s->ctx, KRR_ERR_INPUT, "joker: theta exists on a random-features operator only");
  if (!s->started) return krr_op_features_theta(s->op, s->w, s->m, host);
  return krr_download_vec(s->ctx, s->prec, j->theta, j->nf * (int64_t)s->m, host);
}

const krr_solver_def krr_solver_joker = {
    .name = "joker",
    .title = "Joker DBCD-TR",
    .losses = "squared huber svr hinge squared_hinge logistic",
    .options = {optdefs, KRR_NOPTS(optdefs), sizeof(opts_t)},
    .extras = extras,
    .state_size = sizeof(jk_t),
    .mem_advice = "use a smaller block_size or support = 0",
    .resolve = jk_resolve,
    .memory = jk_memory,
    .init = jk_init,
    .prepare = jk_prepare,
    .start = jk_start,
    .iterate = jk_iterate,
    .apply_k = jk_apply_k,
    .theta = jk_theta,
    .release = jk_release,
};
