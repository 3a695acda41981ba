/* Falkon (Rudi, Carratino and Rosasco 2017; Meanti et al. 2020): inducing-
 * point KRR with m centres, written once on the kernel operator.
 *
 * Solves the normal equations  H a = b,  H = K_nm^T K_nm + lambda K_mm,
 * b = K_nm^T y  (lambda absolute, as in the full problem (K + lambda I) w = y)
 * by CG (linalg/cg.c) on  B^T H B beta = B^T b,  a = B beta,  with the Falkon
 * preconditioner
 *   T = chol(K_mm + eps tr(K_mm) I)     (upper, K_mm ~ T^T T; tr = m for a unit diagonal)
 *   R = chol((n/m) T T^T + lambda I)    (upper)
 *   B = T^{-1} R^{-1}
 * so that B^T H B ~ I when K_nm^T K_nm ~ (n/m) K_mm^2 (uniform centres).  The
 * paper's B = (1/sqrt(n)) T^{-1} R^{-1} belongs to its n-scaled lambda; a scalar
 * in B changes neither the CG iterates of a nor the solution.  lambda K_mm u is
 * applied with the exact K_mm (not T^T T), so the jitter only affects the
 * preconditioner, never the solution.  T does not depend on lambda and is kept
 * across a change of lambda; R is redone.
 *
 * Precision safeguards: everything of size m x m and the CG vectors (m x out)
 * live in double even for a single-precision problem; only the kernel
 * product K_nm^T K_nm u runs in the problem's precision (krr_op_gram_mv:
 * on the CPU each kernel pair once, summed in double; elsewhere two
 * products).  Passes count the two products' kernel pairs over n^2,
 * 2 m / n per product with H, fused or not: max_passes stops at the same
 * step on every backend and operator.  resid_est is the relative residual
 * of the normal equations ||H a - b|| / ||b|| = ||B^{-T} r|| / ||b||
 * = ||T^T R^T r|| / ||b|| from the CG residual r (the CG recomputes r
 * exactly every resid_every iterations; fk_iterate updates H a - b from the
 * CG's steps in between).
 * Weights: the m x out centre coefficients a (double), centres by
 * krr_solver_centers. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "solver.h"

#define OPTIONS(X)                                                                            \
  X(centers, INDICES, 0, 0, 0, 0, NULL, "the centres' rows (at least 2; none: n_centers drawn uniformly)") \
  X(n_centers, INT, 0, 1, INFINITY, 0, NULL,                                                  \
    "number of centres drawn uniformly (0: min(n, 20000, ceiling(sqrt(n) log n)))")          \
  X(resid_every, INT, 50, 1, INFINITY, 0, NULL,                                               \
    "recompute the CG residual exactly every this many iterations")
typedef struct { krr_common_opts common; KRR_OPT_FIELDS(OPTIONS) } opts_t;
static const krr_optdef optdefs[] = {KRR_OPT_DEFS(OPTIONS)};

typedef struct {
  int64_t mc;
  double bnorm;
  int64_t *cidx_h;
  krr_block cblk;           /* the centres */
  krr_cg cg;                /* in beta space (double, mc x m) */
  void *gw;                 /* krr_op_gram_mv's work */
  void *up, *op;            /* mc x m, prec */
  void *Kmm, *T, *R;        /* mc x mc, double */
  void *beta, *rhs, *bk, *u, *hp; /* mc x m, double */
  void *rh;                       /* mc x m, double: b - H a, the normal equations' residual */
} falkon_t;

#define F(s) ((falkon_t *)(s)->st)
#define O(s) SOPT(s, opts_t)
#define DOP(s, name, ...) KOP((s)->ctx, KRR_DOUBLE, name, __VA_ARGS__)

static krr_status fk_resolve(krr_solver *s) {
  opts_t *o = O(s);
  return krr_centers_resolve(s->ctx, s->n, o->centers.idx, o->centers.len, &o->n_centers);
}

static double fk_memory(const krr_solver *s) {
  const opts_t *o = O(s);
  double mc = (double)o->n_centers, m = s->m;
  double pe = 2.0 * mc * m + (s->prec == KRR_DOUBLE ? 0.0 : mc * mc) /* K_mm, transient */;
  double de = 3.0 * mc * mc + 7.0 * mc * m; /* K_mm, T, R; a and six work vectors */
  return pe * (double)s->es + krr_op_gram_bytes(s->op, o->n_centers, s->m) + de * 8.0 +
         krr_cg_memory(KRR_DOUBLE, (int64_t)mc, s->m, 0) + krr_block_bytes(s->op, o->n_centers) +
         8.0 * mc;
}

/* device prec <-> device double */
static krr_status to_double(krr_solver *s, const void *src, void *dst, int64_t len) {
  return krr_convert(s->ctx, s->prec, src, KRR_DOUBLE, dst, len);
}

/* h = (K_nm^T K_nm + lambda K_mm) u, u and h mc x m double: K_nm^T K_nm u
 * in one pass over the kernel pairs where the operator fuses it */
static krr_status apply_H(krr_solver *s, const void *u, void *h) {
  falkon_t *f = F(s);
  int64_t mc = f->mc;
  KTRY(krr_convert(s->ctx, KRR_DOUBLE, u, s->prec, f->up, mc * s->m));
  KTRY(krr_op_gram_mv(s->op, &f->cblk, f->up, mc, s->m, f->op, mc, f->gw));
  KTRY(to_double(s, f->op, h, mc * s->m));
  s->diag.passes += 2.0 * (double)mc / (double)s->n;
  return DOP(s, gemm, 0, 0, mc, s->m, mc, s->obj->lambda, f->Kmm, mc, u, mc, 1.0, h, mc);
}

/* in place: x <- B x = T^{-1} R^{-1} x  (trans = 0) or B^T x = R^{-T} T^{-T} x */
static krr_status apply_B(krr_solver *s, int trans, void *x) {
  falkon_t *f = F(s);
  void *first = trans ? f->T : f->R, *second = trans ? f->R : f->T;
  KTRY(DOP(s, trsm, 0, trans, f->mc, s->m, 1.0, first, f->mc, x, f->mc));
  return DOP(s, trsm, 0, trans, f->mc, s->m, 1.0, second, f->mc, x, f->mc);
}

/* the CG operator B^T H B */
static krr_status apply_BHB(void *arg, const void *in, void *out) {
  krr_solver *s = (krr_solver *)arg;
  falkon_t *f = F(s);
  size_t bytes = sizeof(double) * (size_t)(f->mc * s->m);
  KTRY(s->ctx->ops->copy(s->ctx, f->u, in, bytes));
  KTRY(apply_B(s, 0, f->u));
  KTRY(apply_H(s, f->u, f->hp));
  KTRY(s->ctx->ops->copy(s->ctx, out, f->hp, bytes));
  return apply_B(s, 1, out);
}

static krr_status fk_init(krr_solver *s) {
  falkon_t *f = F(s);
  const opts_t *o = O(s);
  krr_arena *a = &s->arena;
  int64_t mc = o->n_centers, len = mc * s->m;
  size_t es = s->es, ds = sizeof(double);
  f->mc = s->ncenters = mc;
  KTRY(krr_solver_alloc_weights(s, mc, KRR_DOUBLE));
  f->cidx_h = (int64_t *)krr_arena_host(a, mc, sizeof(int64_t));
  f->gw = krr_arena_dev(a, (int64_t)krr_op_gram_bytes(s->op, mc, s->m), 1);
  f->up = krr_arena_dev(a, len, es);
  f->op = krr_arena_dev(a, len, es);
  f->Kmm = krr_arena_dev(a, mc * mc, ds);
  f->T = krr_arena_dev(a, mc * mc, ds);
  f->R = krr_arena_dev(a, mc * mc, ds);
  f->beta = krr_arena_dev(a, len, ds);
  f->rhs = krr_arena_dev(a, len, ds);
  f->bk = krr_arena_dev(a, len, ds);
  f->u = krr_arena_dev(a, len, ds);
  f->hp = krr_arena_dev(a, len, ds);
  f->rh = krr_arena_dev(a, len, ds);
  KTRY(KRR_ALLOCATED(a, f->cidx_h, f->gw, f->up, f->op, f->Kmm, f->T, f->R, f->beta, f->rhs, f->bk,
                     f->u, f->hp, f->rh));
  KTRY(krr_cg_alloc(&f->cg, a, KRR_DOUBLE, mc, s->m, NULL, apply_BHB, NULL, s, (int)o->resid_every));
  KTRY(krr_block_alloc(s->op, a, mc, &f->cblk));
  KTRY(krr_centers_pick(s->ctx, o->centers.idx, o->centers.len, krr_options_seed(s->opts), s->n,
                        mc, f->cidx_h));
  return krr_block_set(s->op, &f->cblk, f->cidx_h, mc);
}

/* upper Cholesky of src + jitter I into A (A may be src), raising the jitter
 * on failure; the strict lower triangle is zeroed (for products with A^T) */
static krr_status chol_jitter(krr_solver *s, const void *src, void *A, double jitter,
                              const char *what) {
  falkon_t *f = F(s);
  krr_ctx *ctx = s->ctx;
  int64_t mc = f->mc;
  size_t bytes = sizeof(double) * (size_t)(mc * mc);
  int info = 1;
  for (int attempt = 0; attempt < 6 && info != 0; attempt++, jitter *= 10) {
    if (src != A) KTRY(ctx->ops->copy(ctx, A, src, bytes));
    KTRY(DOP(s, add_diag, mc, A, mc, jitter, NULL));
    KTRY(krr_potrf_polled(ctx, KRR_DOUBLE, mc, A, mc, &info));
    if (src == A && info != 0) break;
  }
  if (info != 0)
    return krr_fail(ctx, KRR_ERR_NUMERIC, "Falkon preconditioner: Cholesky of %s failed "
                    "(column %d); use fewer centres or a larger lambda", what, info);
  for (int64_t j = 0; j + 1 < mc; j++)
    KTRY(ctx->ops->zero(ctx, KAT(A, j + 1 + j * mc, sizeof(double)),
                        sizeof(double) * (size_t)(mc - 1 - j)));
  return KRR_OK;
}

/* K_mm (double) and T: independent of lambda */
static krr_status fk_prepare(krr_solver *s) {
  falkon_t *f = F(s);
  krr_ctx *ctx = s->ctx;
  int64_t mc = f->mc;
  if (s->prec == KRR_DOUBLE) {
    KTRY(krr_op_mat(s->op, &f->cblk, &f->cblk, f->Kmm, mc));
  } else { /* formed in the problem's precision, kept in double */
    void *tmp = krr_dalloc(ctx, mc * mc, s->es);
    if (!tmp) return ctx->status;
    krr_status st = krr_op_mat(s->op, &f->cblk, &f->cblk, tmp, mc);
    if (st == KRR_OK) st = to_double(s, tmp, f->Kmm, mc * mc);
    krr_dfree(ctx, &tmp);
    KTRY(st);
  }
  double eps = s->prec == KRR_DOUBLE ? DBL_EPSILON : FLT_EPSILON, tr = 0;
  KTRY(krr_op_trace(s->op, &f->cblk, &tr)); /* m for a unit diagonal */
  KTRY(chol_jitter(s, f->Kmm, f->T, eps * tr, "K_mm + eps m I"));
  s->diag.passes += (double)mc * mc / ((double)s->n * s->n);
  return KRR_OK;
}

/* R = chol((n/m) T T^T + lambda I): the upper triangle of T T^T by the
 * triangular product (m^3 / 3 flops, as FalkonML's lauum), which potrf reads */
static krr_status fk_tune(krr_solver *s) {
  falkon_t *f = F(s);
  int64_t mc = f->mc;
  KTRY(krr_uut_polled(s->ctx, KRR_DOUBLE, mc, (double)s->n / (double)mc, f->T, mc, f->R, mc));
  return chol_jitter(s, f->R, f->R, s->obj->lambda, "(n/m) T T^T + lambda I");
}

/* resid_est = ||b - H a|| / ||b|| from rh */
static krr_status track_norm(krr_solver *s, int done) {
  falkon_t *f = F(s);
  double nr = 0;
  KTRY(DOP(s, nrm2, f->mc * s->m, f->rh, &nr));
  s->diag.resid_est = f->bnorm > 0 ? nr / f->bnorm : nr;
  s->diag.done = done;
  return KRR_OK;
}

/* rh = b - H a = B^{-T} r = T^T R^T r from the CG residual r */
static krr_status track(krr_solver *s, int done) {
  falkon_t *f = F(s);
  int64_t mc = f->mc;
  KTRY(DOP(s, gemm, 1, 0, mc, s->m, mc, 1.0, f->R, mc, f->cg.r, mc, 0.0, f->u, mc));
  KTRY(DOP(s, gemm, 1, 0, mc, s->m, mc, 1.0, f->T, mc, f->u, mc, 0.0, f->rh, mc));
  return track_norm(s, done);
}

/* a = B beta into the weights */
static krr_status weights_from_beta(krr_solver *s) {
  falkon_t *f = F(s);
  KTRY(s->ctx->ops->copy(s->ctx, s->w, f->beta, sizeof(double) * (size_t)(f->mc * s->m)));
  return apply_B(s, 0, s->w);
}

/* b = K_nm^T y (the targets may have changed), beta = B^{-1} a = R T a */
static krr_status fk_start(krr_solver *s) {
  falkon_t *f = F(s);
  int64_t mc = f->mc, len = mc * s->m;
  KTRY(krr_op_mv(s->op, &f->cblk, NULL, s->obj->y, s->op->nloc, s->m, f->op, mc));
  KTRY(to_double(s, f->op, f->bk, len));
  KTRY(DOP(s, nrm2, len, f->bk, &f->bnorm));
  s->diag.passes += (double)mc / (double)s->n;
  KTRY(s->ctx->ops->copy(s->ctx, f->rhs, f->bk, sizeof(double) * (size_t)len));
  KTRY(apply_B(s, 1, f->rhs));
  if (!s->w_zero) {
    KTRY(DOP(s, gemm, 0, 0, mc, s->m, mc, 1.0, f->T, mc, s->w, mc, 0.0, f->u, mc));
    KTRY(DOP(s, gemm, 0, 0, mc, s->m, mc, 1.0, f->R, mc, f->u, mc, 0.0, f->beta, mc));
  }
  KTRY(krr_cg_start(&f->cg, f->beta, f->rhs, s->w_zero));
  KTRY(weights_from_beta(s));
  return track(s, f->cg.live == 0);
}

/* One CG step.  beta moves by alpha d, so a = B beta by alpha B d and
 * b - H a by -alpha H B d: the product apply_BHB(d) left B d in u and
 * H B d in hp, and the updates cost two axpys instead of two triangular
 * solves and two products with m x m factors.  a and rh are formed afresh
 * from beta and r when the CG replaced its residual (its last product was
 * then with beta, not d) and at the end. */
static krr_status fk_iterate(krr_solver *s) {
  falkon_t *f = F(s);
  int64_t mc = f->mc;
  int done = 0;
  KTRY(krr_cg_iter(&f->cg, f->rhs, &done));
  krr_solver_tick(s);
  if (f->cg.replaced || done) {
    KTRY(weights_from_beta(s));
    return track(s, done);
  }
  for (int j = 0; j < s->m; j++) {
    const double a = f->cg.step[j];
    if (a == 0) continue;
    KTRY(DOP(s, axpby, mc, a, KAT(f->u, j * mc, 8), 1.0, KAT(s->w, j * mc, 8)));
    KTRY(DOP(s, axpby, mc, -a, KAT(f->hp, j * mc, 8), 1.0, KAT(f->rh, j * mc, 8)));
  }
  return track_norm(s, done);
}

/* the exact relative residual of the normal equations */
static krr_status fk_residual(krr_solver *s, double *rel) {
  falkon_t *f = F(s);
  int64_t len = f->mc * s->m;
  double nr = 0, passes = s->diag.passes;
  KTRY(apply_H(s, s->w, f->hp));
  s->diag.passes = passes; /* a check, not an iteration */
  KTRY(DOP(s, axpby, len, -1.0, f->bk, 1.0, f->hp));
  KTRY(DOP(s, nrm2, len, f->hp, &nr));
  *rel = f->bnorm > 0 ? nr / f->bnorm : nr;
  return KRR_OK;
}

static krr_status fk_centers(krr_solver *s, int64_t *idx) {
  memcpy(idx, F(s)->cidx_h, sizeof(int64_t) * (size_t)F(s)->mc);
  return KRR_OK;
}

const krr_solver_def krr_solver_falkon = {
    .name = "falkon",
    .title = "Falkon",
    .losses = "squared",
    .options = {optdefs, KRR_NOPTS(optdefs), sizeof(opts_t)},
    .state_size = sizeof(falkon_t),
    .mem_advice = "use fewer centres",
    .distributed = 1, /* K_nm^T K_nm u: local products + an allreduce of m-vectors */
    .normal_floor = 1,
    .resolve = fk_resolve,
    .memory = fk_memory,
    .init = fk_init,
    .prepare = fk_prepare,
    .tune = fk_tune,
    .start = fk_start,
    .iterate = fk_iterate,
    .residual = fk_residual,
    .centers = fk_centers,
};
