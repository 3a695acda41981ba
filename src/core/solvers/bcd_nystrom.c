/* Nystrom block coordinate descent (Tu, Roelofs, Venkataraman and Recht 2016,
 * "Large scale kernel learning using block coordinate descent", Algorithm 2),
 * written once on the kernel operator.
 *
 * The inducing-point problem on mc centres I (the one Falkon solves, with the
 * package's absolute lambda: the paper's n lambda is lambda here):
 *   H a = K_I^T Y,   H = K_I^T K_I + lambda K_II + lambda gamma I,
 * K_I = K(X, X_I) (n x mc).  gamma = 0 (default) is exactly Falkon's problem;
 * gamma > 0 is the paper's regularised variant (a different solution).
 * The centres are cut once into blocks (a seeded permutation cut into
 * ceil(mc / b) near-equal pieces; the paper's Alg. 2 permutes 1..p/b, printed
 * n/b); each epoch visits every block once in a fresh random order.  The
 * residual R = K_I a + lambda S a (n x m, S the centre selector) is kept
 * incrementally, so that K_b^T R carries both the K_I^T K_I and the lambda
 * K_II coupling and K_II is never formed (the paper's point).  A block step
 * is the exact block Gauss-Seidel update
 *   g = K_b^T (Y - R) - lambda gamma a_b       (the block of K_I^T Y - H a)
 *   (K_b^T K_b + lambda K_bb + lambda gamma I) d = g,   a_b += d,
 *   R += K_b d,   R[I_b] += lambda d,
 * the same as the paper's remove-solve-add form.  H_bb does not change
 * between epochs: its Cholesky factor is cached per block (mc b doubles)
 * until lambda changes, so after the first epoch a step costs the kernel
 * block and two n x b x m products, not the n b^2 Gram product.  Should the
 * Cholesky fail (duplicate points, rounding), it is retried with a jitter
 * delta I: the proximal step d = (H_bb + delta I)^{-1} g keeps the fixed
 * point (g = 0) and so the solution.
 *
 * K_b (n x b) is formed in chunks of rows; when all n rows fit in the chunk
 * budget (max(64 MiB, the data's size), within the memory check: `chunk`) it is
 * kept for the update of R (one kernel evaluation per step), else the update
 * evaluates it again matrix-free (two).  K_b^T K_b, the block solve and the
 * weights a (mc x m) are double in either precision; the kernel products,
 * R and Y - R are in the problem's precision.  Passes count kernel pairs
 * over n^2.  resid_est: the running estimate sqrt((mc / b) ||g||^2) /
 * ||K_I^T Y|| (exponentially smoothed over blocks) of the exact criterion,
 * the relative residual of the normal equations ||K_I^T Y - H a|| /
 * ||K_I^T Y|| (the same criterion as Falkon's).  Predictions use the
 * centres, as Falkon's. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "solver.h"

#define OPTIONS(X)                                                                            \
  X(centers, INDICES, 0, 0, 0, 0, NULL, "the centres' rows (at least 2; none: n_centers drawn uniformly)") \
  X(n_centers, INT, 0, 1, INFINITY, 0, NULL,                                                  \
    "number of centres drawn uniformly (0: min(n, 20000, ceiling(sqrt(n) log n)))")          \
  X(block_size, INT, 0, 1, INFINITY, 0, NULL,                                                 \
    "centres per block (0: min(centres, 1024), reduced to fit the memory budget)")            \
  X(gamma, REAL, 0, 0, INFINITY, 0, NULL,                                                     \
    "extra ridge lambda gamma ||a||^2 on the centre coefficients (Tu et al.'s gamma; 0: Falkon's problem)") \
  X(chunk, INT, 0, 1, INFINITY, 0, NULL,                                                      \
    "rows of K_b formed at a time (0: all n when they fit in max(64 MiB, the data's size))")
typedef struct { krr_common_opts common; KRR_OPT_FIELDS(OPTIONS) } opts_t;
static const krr_optdef optdefs[] = {KRR_OPT_DEFS(OPTIONS)};

static const char *const extras[] = {"block_size", "blocks", "chunked", NULL};

#define BCD_AUTO_BLOCK 1024

typedef struct {
  int64_t mc, b, chunk;
  int cached;                 /* K_b of all n rows kept for the update of R */
  double bnorm;               /* ||K_I^T Y||_F */
  krr_bcd c;                  /* the partition of the positions, factor cache */
  int64_t *cidx_h;            /* host mc: centre rows (sorted; the order of the weights) */
  int64_t *pos_h;             /* host mc: a permutation of the positions (blocks: pieces) */
  int64_t *pos_d;             /* device copy */
  int64_t *brows;             /* host b: a block's rows */
  krr_block blk, cblk, rblk;  /* the current block, all centres, a chunk of rows */
  void *R, *D;                /* n x m, prec */
  void *Kc;                   /* chunk x b, prec */
  void *Gp, *gp, *dp;         /* b x b, b x m, b x m, prec */
  void *ap;                   /* mc x m, prec (the weights for products) */
  void *G, *T, *A, *g, *d, *ab; /* b x b (3), b x m (3): double */
  void *hp;                   /* mc x m double: K_I^T products */
} bcd_t;

#define B(s) ((bcd_t *)(s)->st)
#define O(s) SOPT(s, opts_t)
#define DOP(s, name, ...) KOP((s)->ctx, KRR_DOUBLE, name, __VA_ARGS__)

static double chunk_cap(const krr_solver *s) {
  double data = (double)s->n * (double)s->op->p * (double)s->es, cap = 64.0 * 1048576.0;
  return data > cap ? data : cap;
}

/* rows per chunk of K_b for block size b */
static int64_t chunk_rows(const krr_solver *s, int64_t b) {
  if (O(s)->chunk > 0) return KRR_MIN(O(s)->chunk, s->n);
  double c = floor(chunk_cap(s) / ((double)b * (double)s->es));
  if (c >= (double)s->n) return s->n;
  int64_t r = (int64_t)c;
  return r < 256 ? (s->n < 256 ? s->n : 256) : r;
}

static double need(const krr_solver *s, int64_t b) {
  const opts_t *o = O(s);
  double mc = (double)o->n_centers, n = (double)s->op->nloc, m = s->m, bb = (double)b;
  int64_t c = chunk_rows(s, b);
  double pe = 2.0 * n * m + (double)c * bb + bb * bb + 2.0 * bb * m + mc * m;
  double de = 3.0 * bb * bb + 3.0 * bb * m + 2.0 * mc * m;
  return pe * (double)s->es + de * 8.0 +
         krr_bcd_memory(o->n_centers, b, krr_bcd_count_groups(s->obj), s->m, 0) +
         krr_block_bytes(s->op, b) +
         krr_block_bytes(s->op, o->n_centers) + (c < s->n ? krr_block_bytes(s->op, c) : 0.0) +
         8.0 * (3.0 * mc + bb);
}

static krr_status bn_resolve(krr_solver *s) {
  opts_t *o = O(s);
  KTRY(krr_centers_resolve(s->ctx, s->n, o->centers.idx, o->centers.len, &o->n_centers));
  if (s->data_free) return KRR_OK;
  if (o->block_size > o->n_centers)
    return krr_fail(s->ctx, KRR_ERR_INPUT, "`block_size` (%lld) must not exceed the number of "
                    "centres (%lld)", (long long)o->block_size, (long long)o->n_centers);
  B(s)->b = o->block_size > 0 ? o->block_size : KRR_MIN(o->n_centers, BCD_AUTO_BLOCK);
  return KRR_OK;
}

static double bn_memory(const krr_solver *s) { return need(s, B(s)->b); }

/* an automatic block size halves until it fits */
static krr_status bn_shrink(krr_solver *s, double avail) {
  bcd_t *f = B(s);
  if (O(s)->block_size > 0) return krr_solver_refuse(s, need(s, f->b), NULL);
  while (f->b > 16 && need(s, f->b) > avail) f->b /= 2;
  if (need(s, f->b) > avail) return krr_solver_refuse(s, need(s, f->b), NULL);
  return KRR_OK;
}

static krr_status bn_init(krr_solver *s) {
  bcd_t *f = B(s);
  const opts_t *o = O(s);
  krr_arena *a = &s->arena;
  int64_t mc = o->n_centers, b = f->b, m = s->m, n = s->op->nloc;
  size_t es = s->es, ds = sizeof(double);
  f->mc = s->ncenters = mc;
  f->chunk = chunk_rows(s, b);
  f->cached = f->chunk >= s->n;
  KTRY(krr_solver_alloc_weights(s, mc, KRR_DOUBLE));
  f->cidx_h = (int64_t *)krr_arena_host(a, mc, sizeof(int64_t));
  f->pos_h = (int64_t *)krr_arena_host(a, mc, sizeof(int64_t));
  f->pos_d = (int64_t *)krr_arena_dev(a, mc, sizeof(int64_t));
  f->brows = (int64_t *)krr_arena_host(a, b, sizeof(int64_t));
  f->R = krr_arena_dev(a, n * m, es);
  f->D = krr_arena_dev(a, n * m, es);
  f->Kc = krr_arena_dev(a, f->chunk * b, es);
  f->Gp = krr_arena_dev(a, b * b, es);
  f->gp = krr_arena_dev(a, b * m, es);
  f->dp = krr_arena_dev(a, b * m, es);
  f->ap = krr_arena_dev(a, mc * m, es);
  f->G = krr_arena_dev(a, b * b, ds);
  f->T = krr_arena_dev(a, b * b, ds);
  f->A = krr_arena_dev(a, b * b, ds);
  f->g = krr_arena_dev(a, b * m, ds);
  f->d = krr_arena_dev(a, b * m, ds);
  f->ab = krr_arena_dev(a, b * m, ds);
  f->hp = krr_arena_dev(a, mc * m, ds);
  KTRY(KRR_ALLOCATED(a, f->cidx_h, f->pos_h, f->pos_d, f->brows, f->R, f->D, f->Kc,
                     f->Gp, f->gp, f->dp, f->ap, f->G, f->T, f->A, f->g, f->d, f->ab, f->hp));
  KTRY(krr_bcd_alloc(&f->c, a, mc, b, krr_options_seed(s->opts), s->obj, 0));
  KTRY(krr_block_alloc(s->op, a, b, &f->blk));
  KTRY(krr_block_alloc(s->op, a, mc, &f->cblk));
  if (!f->cached) KTRY(krr_block_alloc(s->op, a, f->chunk, &f->rblk));
  KTRY(krr_centers_pick(s->ctx, o->centers.idx, o->centers.len, krr_options_seed(s->opts), s->n,
                        mc, f->cidx_h));
  /* the fixed partition: a seeded permutation of the positions */
  krr_sample_permutation(krr_rng_stream(krr_options_seed(s->opts), 0, 41), mc, f->pos_h);
  KTRY(s->ctx->ops->upload(s->ctx, f->pos_d, f->pos_h, sizeof(int64_t) * (size_t)mc));
  krr_solver_set_extra(s, "blocks", (double)f->c.nb);
  krr_solver_set_extra(s, "block_size", (double)f->b);
  krr_solver_set_extra(s, "chunked", f->cached ? 0.0 : 1.0);
  return krr_block_set(s->op, &f->cblk, f->cidx_h, mc);
}

/* out[rows of blk, j] += lambda_j src[, j] (src b x m prec, ld lds): the
 * lambda S a term of R, each column with its lambda */
static krr_status scatter_lambda(krr_solver *s, const void *src, int64_t lds,
                                 const krr_block *blk, void *out) {
  for (int j = 0; j < s->m; j++)
    KTRY(krr_op_scatter_axpy(s->op, krr_objective_lambda(s->obj, j),
                             KAT(src, (int64_t)j * lds, s->es), lds, 1, blk,
                             KAT(out, (int64_t)j * s->op->nloc, s->es)));
  return KRR_OK;
}

/* out (n x m, prec) = K_I a + lambda S a for the weights a = s->w */
static krr_status full_residual(krr_solver *s, void *out) {
  bcd_t *f = B(s);
  int64_t n = s->op->nloc;
  KTRY(krr_convert(s->ctx, KRR_DOUBLE, s->w, s->prec, f->ap, f->mc * s->m));
  KTRY(krr_op_mv(s->op, NULL, &f->cblk, f->ap, f->mc, s->m, out, n));
  KTRY(scatter_lambda(s, f->ap, f->mc, &f->cblk, out));
  s->diag.passes += (double)f->mc / (double)s->n;
  return KRR_OK;
}

/* hp (mc x m, double) = K_I^T v for v (n x m, prec) */
static krr_status apply_KIt(krr_solver *s, const void *v, void *hp) {
  bcd_t *f = B(s);
  KTRY(krr_op_mv(s->op, &f->cblk, NULL, v, s->op->nloc, s->m, f->ap, f->mc));
  s->diag.passes += (double)f->mc / (double)s->n;
  return krr_convert(s->ctx, s->prec, f->ap, KRR_DOUBLE, hp, f->mc * s->m);
}

/* b = K_I^T Y (the targets may have changed) and R for the starting weights */
static krr_status bn_start(krr_solver *s) {
  bcd_t *f = B(s);
  int64_t len = s->op->nloc * s->m;
  KTRY(apply_KIt(s, s->obj->y, f->hp));
  KTRY(DOP(s, nrm2, f->mc * s->m, f->hp, &f->bnorm));
  if (s->w_zero) return s->ctx->ops->zero(s->ctx, f->R, s->es * (size_t)len);
  return full_residual(s, f->R);
}

/* G += src (b x b or b x m, prec) converted to double */
static krr_status add_double(krr_solver *s, const void *src, void *work, void *dst, int64_t len,
                             int first) {
  if (first) return krr_convert(s->ctx, s->prec, src, KRR_DOUBLE, dst, len);
  KTRY(krr_convert(s->ctx, s->prec, src, KRR_DOUBLE, work, len));
  return DOP(s, axpby, len, 1.0, work, 1.0, dst);
}

/* a new lambda: the cached factors are stale */
static krr_status bn_tune(krr_solver *s) { return krr_bcd_regroup(s->ctx, &B(s)->c, s->obj); }

static krr_status bn_iterate(krr_solver *s) {
  bcd_t *f = B(s);
  krr_ctx *ctx = s->ctx;
  const double gamma = O(s)->gamma;
  const int64_t n = s->op->nloc, m = s->m;
  const int64_t k = krr_bcd_pick(&f->c, s->diag.iter);
  const int gram = !f->c.have[k]; /* the first visit since lambda was set */
  int64_t off, b;
  krr_bcd_range(&f->c, k, &off, &b);
  const int64_t *pos_d = f->pos_d + off;
  for (int64_t i = 0; i < b; i++) f->brows[i] = f->cidx_h[f->pos_h[off + i]];
  KTRY(krr_block_set(s->op, &f->blk, f->brows, b));
  /* D = Y - R; g = K_b^T D (and G = K_b^T K_b) over chunks of rows */
  KTRY(ctx->ops->copy(ctx, f->D, s->obj->y, s->es * (size_t)(n * m)));
  KTRY(SOP(s, axpby, n * m, -1.0, f->R, 1.0, f->D));
  for (int64_t r0 = 0; r0 < n; r0 += f->chunk) {
    int64_t cnt = KRR_MIN(f->chunk, n - r0);
    if (f->cached) {
      KTRY(krr_op_mat(s->op, NULL, &f->blk, f->Kc, n));
    } else {
      KTRY(krr_block_range(s->op, &f->rblk, r0, cnt));
      KTRY(krr_op_mat(s->op, &f->rblk, &f->blk, f->Kc, cnt));
    }
    if (gram) {
      KTRY(krr_gemm_polled(s->ctx, s->prec, 1, 0, b, b, cnt, 1.0, f->Kc, cnt, f->Kc, cnt, 0.0,
                           f->Gp, b));
      KTRY(add_double(s, f->Gp, f->T, f->G, b * b, r0 == 0));
    }
    KTRY(SOP(s, gemm, 1, 0, b, m, cnt, 1.0, f->Kc, cnt, KAT(f->D, r0, s->es), n, 0.0, f->gp, b));
    KTRY(add_double(s, f->gp, f->d, f->g, b * m, r0 == 0));
  }
  s->diag.passes += (double)b / (double)s->n;
  if (gram) { /* per lambda: H_bb = G + lambda K_bb (+ lambda gamma I), factored, cached */
    KTRY(krr_op_mat(s->op, &f->blk, &f->blk, f->Gp, b));
    s->diag.passes += (double)b * (double)b / ((double)s->n * (double)s->n);
    KTRY(krr_convert(ctx, s->prec, f->Gp, KRR_DOUBLE, f->T, b * b));
    for (int q = 0; q < f->c.ng; q++) {
      const double lq = f->c.lam[q];
      KTRY(ctx->ops->copy(ctx, f->A, f->G, sizeof(double) * (size_t)(b * b)));
      KTRY(DOP(s, axpby, b * b, lq, f->T, 1.0, f->A));
      if (gamma > 0) KTRY(DOP(s, add_diag, b, f->A, b, lq * gamma, NULL));
      double gf = 0;
      KTRY(DOP(s, nrm2, b * b, f->A, &gf));
      KTRY(krr_bcd_factor(s->ctx, &f->c, k, q, f->A,
                          (s->prec == KRR_DOUBLE ? DBL_EPSILON : FLT_EPSILON) * (gf > 0 ? gf : 1.0),
                          s->def->title));
    }
    f->c.have[k] = 1;
  }
  if (gamma > 0) { /* g -= lambda gamma a_b */
    KTRY(DOP(s, gather_rows, s->w, f->mc, (int)m, pos_d, b, f->ab, b));
    for (int q = 0; q < f->c.ng; q++)
      KTRY(DOP(s, axpby, b * (f->c.c0[q + 1] - f->c.c0[q]), -f->c.lam[q] * gamma,
               KAT(f->ab, (int64_t)f->c.c0[q] * b, sizeof(double)), 1.0,
               KAT(f->g, (int64_t)f->c.c0[q] * b, sizeof(double))));
  }
  double gn = 0;
  KTRY(DOP(s, nrm2, b * m, f->g, &gn));
  KTRY(krr_bcd_solve(s->ctx, &f->c, k, f->g, b)); /* g <- d */
  /* a_b += d; R += K_b d; R[I_b] += lambda d */
  KTRY(DOP(s, scatter_axpy, 1.0, f->g, b, (int)m, pos_d, b, s->w, f->mc));
  KTRY(krr_convert(ctx, KRR_DOUBLE, f->g, s->prec, f->dp, b * m));
  if (f->cached) {
    KTRY(SOP(s, gemm, 0, 0, n, m, b, 1.0, f->Kc, n, f->dp, b, 1.0, f->R, n));
  } else {
    KTRY(krr_op_mv(s->op, NULL, &f->blk, f->dp, b, (int)m, f->D, n));
    KTRY(SOP(s, axpby, n * m, 1.0, f->D, 1.0, f->R));
    s->diag.passes += (double)b / (double)s->n;
  }
  KTRY(scatter_lambda(s, f->dp, b, &f->blk, f->R));
  krr_solver_tick(s);
  krr_solver_track_coords(s, f->c.p, b, gn, f->bnorm);
  s->diag.block_resid = f->bnorm > 0 ? gn / f->bnorm : gn;
  return KRR_OK;
}

/* the exact relative residual of the normal equations (two kernel passes) */
static krr_status bn_residual(krr_solver *s, double *rel) {
  bcd_t *f = B(s);
  int64_t n = s->op->nloc, len = f->mc * s->m;
  double nr = 0, passes = s->diag.passes;
  KTRY(full_residual(s, f->D));
  KTRY(SOP(s, axpby, n * s->m, 1.0, s->obj->y, -1.0, f->D)); /* Y - R */
  KTRY(apply_KIt(s, f->D, f->hp));
  s->diag.passes = passes; /* a check, not an iteration */
  for (int j = 0; O(s)->gamma > 0 && j < s->m; j++)
    KTRY(DOP(s, axpby, f->mc, -krr_objective_lambda(s->obj, j) * O(s)->gamma,
             KAT(s->w, (int64_t)j * f->mc, sizeof(double)), 1.0,
             KAT(f->hp, (int64_t)j * f->mc, sizeof(double))));
  KTRY(DOP(s, nrm2, len, f->hp, &nr));
  *rel = f->bnorm > 0 ? nr / f->bnorm : nr;
  return KRR_OK;
}

static krr_status bn_centers(krr_solver *s, int64_t *idx) {
  memcpy(idx, B(s)->cidx_h, sizeof(int64_t) * (size_t)B(s)->mc);
  return KRR_OK;
}

const krr_solver_def krr_solver_bcd_nystrom = {
    .name = "bcd_nystrom",
    .title = "Nystrom block coordinate descent",
    .losses = "squared",
    .options = {optdefs, KRR_NOPTS(optdefs), sizeof(opts_t)},
    .extras = extras,
    .state_size = sizeof(bcd_t),
    .mem_advice = "use fewer centres or a smaller block_size",
    .lambda_path = 1,
    .resolve = bn_resolve,
    .memory = bn_memory,
    .shrink = bn_shrink,
    .init = bn_init,
    .tune = bn_tune,
    .start = bn_start,
    .iterate = bn_iterate,
    .residual = bn_residual,
    .centers = bn_centers,
};
