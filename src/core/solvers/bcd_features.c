/* Random-feature block coordinate descent (Tu, Roelofs, Venkataraman and
 * Recht 2016, Algorithm 3; Huang et al. 2014), written once on an operator
 * with a finite feature map K ~ Z Z^T (the random Fourier features of
 * op/features.c, Z n x M).
 *
 * The ridge problem in the features (the paper's n lambda is the package's
 * lambda):  (Z^T Z + lambda I) w = Z^T Y.  The M features are cut into
 * ceil(M / b) near-equal consecutive pieces (the features are i.i.d. draws,
 * so consecutive pieces are a random partition); each epoch visits every
 * block once in a fresh random order.  The residual R = Z w (n x m) is kept;
 * a block step is the exact block update
 *   g = Z_b^T (Y - R) - lambda w_b,   (Z_b^T Z_b + lambda I) d = g,
 *   w_b += d,   R += Z_b d,
 * the paper's remove-solve-add form.  Z_b^T Z_b does not change: it is
 * kept per block (M b doubles, across changes of lambda), and so is the
 * Cholesky factor of Z_b^T Z_b + lambda I until lambda changes -- or, for a
 * lambda path, Z_b^T Z_b's tridiagonal form Q T Q^T, which serves every
 * lambda at once (linalg/bcd.c).  Z_b (n x b) is evaluated on the fly, or, with
 * `cache` (automatic: when n M numbers fit in half the memory budget and in
 * max(256 MiB, 4 x the data's size)), all of Z is formed once at the first
 * step -- the paper's "cacheable" advantage: afterwards a step costs two
 * n x b x m products.
 *
 * The weights the package keeps are the dual ones of the same problem,
 * a = (Y - R) / lambda (n x m): at the solution w = Z^T a and (Z Z^T +
 * lambda I) a = Y, so a fit predicts, refits and reports like any solver of
 * krr(features = M); theta (the model in feature space) is w itself, given
 * by the theta hook (= Z^T a at the solution).  Its exact criterion is the generic
 * relative residual of (Z Z^T + lambda I) a = Y, which equals
 * ||Z g|| / (lambda ||Y||) for the full gradient g = Z^T (Y - Z w) - lambda w;
 * resid_est estimates it by the running average of (M / b) ||Z_b g_b||^2 =
 * (M / b) g_b^T Z_b^T Z_b g_b (cross terms between blocks ignored).  w (M x m) and the block solves are
 * double; Z, R and the products are in the problem's precision.  Passes:
 * a block visit counts b / n (an n x b block), whether Z is cached or not. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "solver.h"

#define OPTIONS(X)                                                                            \
  X(block_size, INT, 0, 1, INFINITY, 0, NULL,                                                 \
    "features per block (0: min(features, 1024), reduced to fit the memory budget)")          \
  X(cache, CHOICE, 0, 0, 0, 0, "auto|yes|no",                                                 \
    "keep all n x M features after the first step (auto: when they fit)")
typedef struct { krr_common_opts common; KRR_OPT_FIELDS(OPTIONS) } opts_t;
static const krr_optdef optdefs[] = {KRR_OPT_DEFS(OPTIONS)};

static const char *const extras[] = {"block_size", "blocks", "cached", NULL};

#define BCD_AUTO_BLOCK 1024

typedef struct {
  int64_t M, b;
  int cached;              /* all of Z kept */
  krr_bcd c;               /* the partition, factor cache */
  void *Z;                 /* n x M (cached) or n x b, prec */
  void *R, *D;             /* n x m, prec */
  void *Gp, *gp, *dp;      /* b x b, b x m, b x m: prec */
  void *w;                 /* M x m double: the primal weights */
  void *grams;             /* M x b double: block k's Z_b^T Z_b at off_k b (lambda-free) */
  unsigned char *ghave;    /* host nb: Gram cached */
  void *T, *g, *t;         /* b x b, b x m, b x m: double */
} rf_t;

#define F(s) ((rf_t *)(s)->st)
#define O(s) SOPT(s, opts_t)
#define DOP(s, name, ...) KOP((s)->ctx, KRR_DOUBLE, name, __VA_ARGS__)

static int want_cache(const krr_solver *s, double avail) {
  const opts_t *o = O(s);
  if (o->cache == 1) return 1;
  if (o->cache == 2) return 0;
  double z = (double)s->op->nloc * (double)s->op->nfeat * (double)s->es;
  double data = 4.0 * (double)s->n * (double)s->op->p * (double)s->es, cap = 256.0 * 1048576.0;
  return z <= (data > cap ? data : cap) && z <= 0.5 * avail;
}

static double need(const krr_solver *s, int64_t b, int cached) {
  double n = (double)s->op->nloc, m = s->m, bb = (double)b, M = (double)s->op->nfeat;
  double pe = (cached ? n * M : n * bb) + 2.0 * n * m + bb * bb + 2.0 * bb * m;
  double de = bb * bb + 2.0 * bb * m + M * m + M * bb;
  return pe * (double)s->es + de * 8.0 +
         krr_bcd_memory(s->op->nfeat, b, krr_bcd_count_groups(s->obj), s->m, 1);
}

static krr_status rf_resolve(krr_solver *s) {
  opts_t *o = O(s);
  if (s->data_free) return KRR_OK;
  if (s->op->nfeat <= 0 || !s->op->vt->feature_cols)
    return krr_fail(s->ctx, KRR_ERR_INPUT, "random-feature BCD needs random features: the %s "
                    "operator has no finite feature map", s->op->vt->name);
  if (o->block_size > s->op->nfeat)
    return krr_fail(s->ctx, KRR_ERR_INPUT, "`block_size` (%lld) must not exceed the number of "
                    "features (%lld)", (long long)o->block_size, (long long)s->op->nfeat);
  F(s)->b = o->block_size > 0 ? o->block_size : KRR_MIN(s->op->nfeat, BCD_AUTO_BLOCK);
  return KRR_OK;
}

static double rf_memory(const krr_solver *s) { return need(s, F(s)->b, want_cache(s, s->avail)); }

/* no cache first (unless asked for), then an automatic block size halves */
static krr_status rf_shrink(krr_solver *s, double avail) {
  rf_t *f = F(s);
  int cached = want_cache(s, avail);
  if (need(s, f->b, cached) <= avail) return KRR_OK;
  if (O(s)->cache == 1) return krr_solver_refuse(s, need(s, f->b, 1), "the feature cache");
  if (O(s)->block_size <= 0)
    while (f->b > 16 && need(s, f->b, 0) > avail) f->b /= 2;
  return need(s, f->b, 0) <= avail ? KRR_OK : krr_solver_refuse(s, need(s, f->b, 0), NULL);
}

static krr_status rf_init(krr_solver *s) {
  rf_t *f = F(s);
  krr_arena *a = &s->arena;
  int64_t n = s->op->nloc, m = s->m, b = f->b;
  size_t es = s->es, ds = sizeof(double);
  f->M = s->op->nfeat;
  f->cached = want_cache(s, s->avail) && need(s, b, 1) <= s->avail;
  KTRY(krr_solver_alloc_weights(s, n, s->prec));
  f->Z = krr_arena_dev(a, n * (f->cached ? f->M : b), es);
  f->R = krr_arena_dev(a, n * m, es);
  f->D = krr_arena_dev(a, n * m, es);
  f->Gp = krr_arena_dev(a, b * b, es);
  f->gp = krr_arena_dev(a, b * m, es);
  f->dp = krr_arena_dev(a, b * m, es);
  f->w = krr_arena_dev(a, f->M * m, ds);
  f->T = krr_arena_dev(a, b * b, ds);
  f->g = krr_arena_dev(a, b * m, ds);
  f->t = krr_arena_dev(a, b * m, ds);
  f->grams = krr_arena_dev(a, f->M * b, ds);
  KTRY(KRR_ALLOCATED(a, f->Z, f->R, f->D, f->Gp, f->gp, f->dp, f->w, f->T, f->g, f->t,
                     f->grams));
  KTRY(krr_bcd_alloc(&f->c, a, f->M, b, krr_options_seed(s->opts), s->obj, 1));
  f->ghave = (unsigned char *)krr_arena_host(a, f->c.nb, 1);
  KTRY(KRR_ALLOCATED(a, f->ghave));
  memset(f->ghave, 0, (size_t)f->c.nb);
  krr_solver_set_extra(s, "blocks", (double)f->c.nb);
  krr_solver_set_extra(s, "block_size", (double)f->b);
  krr_solver_set_extra(s, "cached", f->cached ? 1.0 : 0.0);
  return KRR_OK;
}

/* the whole feature matrix, once */
static krr_status rf_prepare(krr_solver *s) {
  rf_t *f = F(s);
  return f->cached ? krr_op_feature_cols(s->op, 0, f->M, f->Z, s->op->nloc) : KRR_OK;
}

static krr_status rf_tune(krr_solver *s) { return krr_bcd_regroup(s->ctx, &F(s)->c, s->obj); }

/* a = (Y - R) / lambda, each column with its lambda */
static krr_status dual_weights(krr_solver *s) {
  rf_t *f = F(s);
  int64_t n = s->op->nloc;
  KTRY(s->ctx->ops->copy(s->ctx, s->w, s->obj->y, s->es * (size_t)(n * s->m)));
  for (int q = 0; q < f->c.ng; q++) {
    double il = 1.0 / f->c.lam[q];
    int64_t o = (int64_t)f->c.c0[q] * n, len = (int64_t)(f->c.c0[q + 1] - f->c.c0[q]) * n;
    KTRY(SOP(s, axpby, len, -il, KAT(f->R, o, s->es), il, KAT(s->w, o, s->es)));
  }
  return KRR_OK;
}

/* w = Z^T a and R = Z w for the starting dual weights a (zero: w = R = 0) */
static krr_status rf_start(krr_solver *s) {
  rf_t *f = F(s);
  krr_ctx *ctx = s->ctx;
  int64_t n = s->op->nloc, m = s->m, M = f->M;
  if (s->w_zero) {
    KTRY(ctx->ops->zero(ctx, f->w, sizeof(double) * (size_t)(M * m)));
    KTRY(ctx->ops->zero(ctx, f->R, s->es * (size_t)(n * m)));
    return dual_weights(s);
  }
  KTRY(ctx->ops->zero(ctx, f->R, s->es * (size_t)(n * m)));
  for (int64_t k = 0; k < f->c.nb; k++) { /* block by block: w_b = Z_b^T a, R += Z_b w_b */
    int64_t off, b;
    const void *Zb;
    krr_bcd_range(&f->c, k, &off, &b);
    if (f->cached) {
      Zb = KAT(f->Z, off * n, s->es);
    } else {
      KTRY(krr_op_feature_cols(s->op, off, b, f->Z, n));
      Zb = f->Z;
    }
    KTRY(SOP(s, gemm, 1, 0, b, m, n, 1.0, Zb, n, s->w, n, 0.0, f->dp, b));
    KTRY(SOP(s, gemm, 0, 0, n, m, b, 1.0, Zb, n, f->dp, b, 1.0, f->R, n));
    KTRY(krr_convert(ctx, s->prec, f->dp, KRR_DOUBLE, f->g, b * m));
    for (int q = 0; q < m; q++)
      KTRY(ctx->ops->copy(ctx, KAT(f->w, off + q * M, sizeof(double)), KAT(f->g, q * b, sizeof(double)),
                          sizeof(double) * (size_t)b));
  }
  s->diag.passes += 2.0 * (double)M / (double)s->n;
  return dual_weights(s);
}

static krr_status rf_iterate(krr_solver *s) {
  rf_t *f = F(s);
  krr_ctx *ctx = s->ctx;
  const int64_t n = s->op->nloc, m = s->m, M = f->M;
  const int64_t k = krr_bcd_pick(&f->c, s->diag.iter);
  int64_t off, b;
  krr_bcd_range(&f->c, k, &off, &b);
  const void *Zb;
  if (f->cached) {
    Zb = KAT(f->Z, off * n, s->es);
  } else {
    KTRY(krr_op_feature_cols(s->op, off, b, f->Z, n));
    Zb = f->Z;
  }
  /* a visit counts b / n passes, cached or not (an n x b block, as a kernel
   * block of the full-kernel solvers): max_passes bounds the epochs the same
   * way whatever the cache */
  s->diag.passes += (double)b / (double)s->n;
  void *Gk = KAT(f->grams, off * f->b, sizeof(double)); /* Z_b^T Z_b, b x b */
  if (!f->ghave[k]) { /* the Gram, once: it does not depend on lambda */
    KTRY(krr_gemm_polled(s->ctx, s->prec, 1, 0, b, b, n, 1.0, Zb, n, Zb, n, 0.0, f->Gp, b));
    KTRY(krr_convert(ctx, s->prec, f->Gp, KRR_DOUBLE, Gk, b * b));
    f->ghave[k] = 1;
  }
  if (!f->c.have[k]) /* Z_b^T Z_b + lambda I for every lambda: factored (or, for a path,
                         Z_b^T Z_b's tridiagonal form) and cached */
    KTRY(krr_bcd_factor_shifted(ctx, &f->c, k, Gk, f->T, 0.0,
                                s->prec == KRR_DOUBLE ? DBL_EPSILON : FLT_EPSILON, s->def->title));
  /* g = Z_b^T (Y - R) - lambda w_b */
  KTRY(ctx->ops->copy(ctx, f->D, s->obj->y, s->es * (size_t)(n * m)));
  KTRY(SOP(s, axpby, n * m, -1.0, f->R, 1.0, f->D));
  KTRY(SOP(s, gemm, 1, 0, b, m, n, 1.0, Zb, n, f->D, n, 0.0, f->gp, b));
  KTRY(krr_convert(ctx, s->prec, f->gp, KRR_DOUBLE, f->g, b * m));
  for (int q = 0; q < m; q++)
    KTRY(DOP(s, axpby, b, -krr_objective_lambda(s->obj, q), KAT(f->w, off + q * M, sizeof(double)),
             1.0, KAT(f->g, q * b, sizeof(double))));
  /* the estimate's ||Z_b g_b||^2 = g^T (Z_b^T Z_b) g, from the cached Gram */
  double gn = 0;
  KTRY(DOP(s, gemm, 0, 0, b, m, b, 1.0, Gk, b, f->g, b, 0.0, f->t, b));
  KTRY(DOP(s, dot, b * m, f->g, f->t, &gn));
  gn = sqrt(gn > 0 ? gn : 0);
  /* d; w_b += d; R += Z_b d */
  KTRY(krr_bcd_solve(s->ctx, &f->c, k, f->g, b));
  for (int q = 0; q < m; q++)
    KTRY(DOP(s, axpby, b, 1.0, KAT(f->g, q * b, sizeof(double)), 1.0,
             KAT(f->w, off + q * M, sizeof(double))));
  KTRY(krr_convert(ctx, KRR_DOUBLE, f->g, s->prec, f->dp, b * m));
  KTRY(SOP(s, gemm, 0, 0, n, m, b, 1.0, Zb, n, f->dp, b, 1.0, f->R, n));
  KTRY(dual_weights(s));
  krr_solver_tick(s);
  /* on the scale of the smallest lambda (the largest weights) */
  const double lo = s->obj->lambda;
  krr_solver_track_coords(s, f->c.p, b, gn, lo * s->obj->ynorm);
  s->diag.block_resid = s->obj->ynorm > 0 ? gn / (lo * s->obj->ynorm) : gn;
  return KRR_OK;
}

/* theta: the primal weights w themselves (not Z^T a, a pass over Z) */
static krr_status rf_theta(krr_solver *s, double *host) {
  return krr_download_vec(s->ctx, KRR_DOUBLE, F(s)->w, F(s)->M * s->m, host);
}

const krr_solver_def krr_solver_bcd_features = {
    .name = "bcd_features",
    .title = "Random-feature block coordinate descent",
    .losses = "squared",
    .options = {optdefs, KRR_NOPTS(optdefs), sizeof(opts_t)},
    .extras = extras,
    .state_size = sizeof(rf_t),
    .mem_advice = "use fewer features, a smaller block_size or cache = \"no\"",
    .lambda_path = 1,
    .resolve = rf_resolve,
    .memory = rf_memory,
    .shrink = rf_shrink,
    .init = rf_init,
    .prepare = rf_prepare,
    .tune = rf_tune,
    .start = rf_start,
    .iterate = rf_iterate,
    .theta = rf_theta,
};
