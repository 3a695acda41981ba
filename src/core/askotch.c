/* ASkotch and Skotch (journal Alg. 1-3, with the corrections of
 * ALGORITHMS.md sections 2-4), and their exact-block relatives SAP / NSAP
 * (block Gauss-Seidel of Tu et al.: the block system (K_BB + lambda I) d = g
 * solved exactly by Cholesky, stepsize 1), written once for both precisions
 * against the krr_ops table. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "internal.h"
#include "rng.h"

typedef struct {
  struct krr_solver base;
  int accelerated, materialize, exact, r_eff;
  int64_t n, b;
  int p, m, r;
  double mu, nu, beta, gamma, alpha, L, ema;
  krr_lowrank lr;       /* Nystrom preconditioner of K_BB (nystrom.c) */
  /* device buffers */
  void *v, *z;          /* n x m (accelerated only) */
  int64_t *idx;         /* b */
  void *XB;             /* b x p */
  void *KB;             /* b x b, when materialised */
  void *g, *d, *gb;     /* b x m */
  void *p1, *p2, *p3;   /* b (powering) */
  /* host */
  int64_t *idx_h;
  uint64_t *mark;
  krr_rls *rls;         /* sampling = RLS (rls.c) */
} askotch_t;

#define PREC(s) ((s)->base.pb->prec)
#define CTX(s) ((s)->base.ctx)
#define OP(s, name, ...) KOP(CTX(s), PREC(s), name, __VA_ARGS__)

void krr_askotch_resolve(const krr_problem *pb, krr_solver_opts *o) {
  int64_t n = pb->n;
  if (o->block_size <= 0) {
    int64_t b = n / 100;
    if (b < 256) b = 256;
    o->block_size = b < n ? b : n;
  }
  if (o->rank <= 0) o->rank = o->block_size < 100 ? (int)o->block_size : 100;
  if (o->power_iters <= 0) o->power_iters = 10;
  if (o->block_mem_limit == 0) o->block_mem_limit = (size_t)512 << 20;
}

size_t krr_askotch_memory(const krr_problem *pb, const krr_solver_opts *o, int64_t b, int r,
                          int materialize) {
  int64_t n = pb->n, m = pb->m, p = pb->p;
  int acc = o->kind == KRR_SOLVER_ASKOTCH || o->kind == KRR_SOLVER_NSAP;
  double elems = (double)(acc ? 3 : 1) * (double)(n * m) + (double)(b * p) +
                 (materialize ? (double)b * (double)b : 0.0) + 3.0 * (double)(b * m) + 3.0 * b;
  return (size_t)(elems * (double)krr_sizeof(pb->prec)) +
         krr_lowrank_memory(pb->prec, b, r, m > 1 ? m : 1) + (size_t)b * 2 * sizeof(int64_t) +
         (size_t)(n / 8 + 8);
}

static void askotch_free(krr_solver *base) {
  askotch_t *s = (askotch_t *)base;
  krr_ctx *ctx = CTX(s);
  void **bufs[] = {&s->base.w, &s->v, &s->z, (void **)&s->idx, &s->XB, &s->KB, &s->g, &s->d,
                   &s->gb, &s->p1, &s->p2, &s->p3};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) krr_dfree(ctx, bufs[i]);
  krr_lowrank_free(ctx, &s->lr);
  krr_rls_free(s->rls);
  free(s->idx_h); free(s->mark);
  free(s);
}

/* --- the Nystrom preconditioner (P + rho I) of K_BB ------------------------ */

/* out(b x 1) = (K_BB + lambda I) u */
static krr_status kbb_mul(void *arg, const void *V, int q, void *Y);
static krr_status apply_H(askotch_t *s, const void *u, void *out) {
  KTRY(kbb_mul(s, u, 1, out));
  return OP(s, axpby, s->b, s->base.pb->lambda, u, 1.0, out);
}

/* out = (P + rho I)^{-1} in; for SAP/NSAP, (K_BB + lambda I)^{-1} in with the
 * Cholesky factor held in KB */
static krr_status pc_inv(askotch_t *s, const void *in, void *out, int m) {
  if (!s->exact) return krr_lowrank_inv(CTX(s), &s->lr, in, out, m);
  if (out != in) KTRY(CTX(s)->ops->copy(CTX(s), out, in, s->base.es * (size_t)(s->b * m)));
  KTRY(OP(s, trsm, 0, 1, s->b, m, 1.0, s->KB, s->b, out, s->b));
  return OP(s, trsm, 0, 0, s->b, m, 1.0, s->KB, s->b, out, s->b);
}

/* Y(b x q) = K_BB V: one GEMM when K_BB is materialised, else matrix-free */
static krr_status kbb_mul(void *arg, const void *V, int q, void *Y) {
  askotch_t *s = (askotch_t *)arg;
  if (s->materialize)
    return OP(s, gemm, 0, 0, s->b, q, s->b, 1.0, s->KB, s->b, V, s->b, 0.0, Y, s->b);
  return OP(s, kernel_mv, &s->base.pb->kernel, s->XB, s->b, s->XB, s->b, s->p, V, s->b, q, Y, s->b);
}

/* Randomised Nystrom approximation of K_BB (Alg. 2; Tr(K_BB) = b since
 * k(x, x) = 1), then rho and the preconditioner's factors. */
static krr_status nystrom(askotch_t *s, uint64_t seed) {
  KTRY(krr_nystrom_sketch(CTX(s), &s->lr, kbb_mul, s, (double)s->b, seed));
  double rho = krr_lowrank_rho(&s->lr, s->base.o.rho_mode, s->base.o.rho_value, s->base.pb->lambda);
  return krr_lowrank_prepare(CTX(s), &s->lr, rho);
}

/* L = lambda_max((P+rho I)^{-1/2} H (P+rho I)^{-1/2}) by randomised powering,
 * Rayleigh quotient taken before normalising (ALGORITHMS.md section 3). */
static krr_status powering(askotch_t *s, uint64_t seed) {
  int64_t b = s->b;
  double nv = 0, L = 0;
  KTRY(OP(s, randn, b, seed, 0, s->p1));
  KTRY(OP(s, nrm2, b, s->p1, &nv));
  KTRY(OP(s, axpby, b, 0.0, s->p1, 1.0 / nv, s->p1));
  for (int it = 0; it < s->base.o.power_iters; it++) {
    KTRY(krr_lowrank_invsqrt(CTX(s), &s->lr, s->p1, s->p2, 1));
    KTRY(apply_H(s, s->p2, s->p3));
    KTRY(krr_lowrank_invsqrt(CTX(s), &s->lr, s->p3, s->p2, 1));
    KTRY(OP(s, dot, b, s->p1, s->p2, &L));
    KTRY(OP(s, nrm2, b, s->p2, &nv));
    if (!(nv > 0) || !isfinite(nv)) break;
    KTRY(OP(s, axpby, b, 1.0 / nv, s->p2, 0.0, s->p1));
  }
  if (!(L > 0) || !isfinite(L))
    return krr_fail(CTX(s), KRR_ERR_NUMERIC, "stepsize estimate (powering) is not positive: %g", L);
  s->L = L;
  return KRR_OK;
}

static krr_status askotch_iter(askotch_t *s) {
  krr_ctx *ctx = CTX(s);
  const krr_problem *pb = s->base.pb;
  int64_t n = s->n, b = s->b, nm = n * (int64_t)s->m;
  int m = s->m;
  size_t es = s->base.es;
  uint64_t it = (uint64_t)s->base.diag.iter, seed = s->base.o.seed;
  double t0 = krr_now();

  /* 1. block, its points and (when it fits) K_BB */
  if (s->rls) krr_rls_sample(s->rls, krr_rng_stream(seed, it, 0), b, s->idx_h);
  else krr_sample_uniform(krr_rng_stream(seed, it, 0), n, b, s->mark, s->idx_h);
  KTRY(ctx->ops->upload(ctx, s->idx, s->idx_h, sizeof(int64_t) * (size_t)b));
  KTRY(OP(s, gather_points, pb->X, s->p, s->idx, b, s->XB));
  if (s->materialize)
    KTRY(OP(s, kernel_block, &pb->kernel, s->XB, b, s->XB, b, s->p, s->KB, b));
  if (s->exact) {
    int info = 0;
    KTRY(OP(s, add_diag, b, s->KB, b, pb->lambda, NULL));
    KTRY(OP(s, potrf, b, s->KB, b, &info));
    if (info != 0)
      return krr_fail(ctx, KRR_ERR_NUMERIC, "block Cholesky of K_BB + lambda I failed (column %d); "
                      "increase lambda or use precision = \"double\"", info);
  } else {
    KTRY(nystrom(s, krr_rng_stream(seed, it, 1)));
  }
  KTRY(ctx->ops->sync(ctx));
  double t1 = krr_now();
  if (!s->exact) KTRY(powering(s, krr_rng_stream(seed, it, 2)));
  KTRY(ctx->ops->sync(ctx));
  double t2 = krr_now();

  /* 2. block gradient g = K_B: z + lambda z_B - y_B (at z when accelerated) */
  const void *src = s->accelerated ? s->z : s->base.w;
  double gn = 0, ybn = 0;
  KTRY(krr_block_residual(ctx, pb, s->XB, s->idx, b, src, s->g, s->gb, &gn, &ybn));
  double t3 = krr_now();

  /* 3. direction and update */
  KTRY(pc_inv(s, s->g, s->d, m));
  double sL = 1.0 / s->L;
  if (s->accelerated) {
    KTRY(ctx->ops->copy(ctx, s->base.w, s->z, es * (size_t)nm));
    KTRY(OP(s, scatter_axpy, -sL, s->d, b, m, s->idx, b, s->base.w, n));
    KTRY(OP(s, axpby, nm, 1.0 - s->beta, s->z, s->beta, s->v));
    KTRY(OP(s, scatter_axpy, -s->gamma * sL, s->d, b, m, s->idx, b, s->v, n));
    KTRY(ctx->ops->copy(ctx, s->z, s->base.w, es * (size_t)nm));
    KTRY(OP(s, axpby, nm, s->alpha, s->v, 1.0 - s->alpha, s->z));
  } else {
    KTRY(OP(s, scatter_axpy, -sL, s->d, b, m, s->idx, b, s->base.w, n));
  }
  KTRY(ctx->ops->sync(ctx));
  double t4 = krr_now();

  /* 4. diagnostics */
  krr_diag *dg = &s->base.diag;
  dg->iter++;
  dg->passes = (double)dg->iter * (double)b / (double)n;
  dg->block_resid = ybn > 0 ? gn / ybn : gn;
  double est2 = (double)n / (double)b * gn * gn / (pb->ynorm * pb->ynorm > 0 ? pb->ynorm * pb->ynorm : 1.0);
  double om = (double)b / (double)n;
  if (om < 0.1) om = 0.1;
  s->ema = dg->iter == 1 ? est2 : (1 - om) * s->ema + om * est2;
  dg->resid_est = sqrt(s->ema);
  dg->step_L = s->L;
  dg->rho = s->exact ? 0.0 : s->lr.rho;
  dg->t_nystrom += t1 - t0;
  dg->t_power += t2 - t1;
  dg->t_block += t3 - t2;
  dg->t_update += t4 - t3;
  return KRR_OK;
}

static krr_status askotch_step(krr_solver *base, int64_t iters) {
  askotch_t *s = (askotch_t *)base;
  for (int64_t i = 0; i < iters; i++) KTRY(askotch_iter(s));
  return KRR_OK;
}

static const krr_solver_vt askotch_vt = {.step = askotch_step, .free = askotch_free};

krr_status krr_askotch_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o_in,
                            krr_solver **out) {
  krr_solver_opts o = *o_in;
  int user_block = o.block_size > 0;
  krr_askotch_resolve(pb, &o);
  int64_t n = pb->n;
  if (o.block_size > n)
    return krr_fail(ctx, KRR_ERR_INPUT, "block_size (%lld) must not exceed the number of observations (%lld)",
                    (long long)o.block_size, (long long)n);
  if (o.rank > o.block_size)
    return krr_fail(ctx, KRR_ERR_INPUT, "rank (%d) must not exceed block_size (%lld)", o.rank,
                    (long long)o.block_size);
  if (o.rho_mode == KRR_RHO_VALUE && !(o.rho_value > 0 && isfinite(o.rho_value)))
    return krr_fail(ctx, KRR_ERR_INPUT, "rho must be positive and finite");
  if (o.sampling != KRR_SAMPLING_UNIFORM && o.sampling != KRR_SAMPLING_RLS)
    return krr_fail(ctx, KRR_ERR_INPUT, "unknown sampling code %d", (int)o.sampling);
  size_t es = krr_sizeof(pb->prec);

  /* memory plan: refuse (or shrink a default block) before allocating */
  size_t fr = 0, tot = 0;
  KTRY(ctx->ops->mem_info(ctx, &fr, &tot));
  size_t avail = o.mem_limit > 0 ? o.mem_limit : (size_t)((double)fr * 0.9);
  int64_t b = o.block_size;
  if (krr_askotch_memory(pb, &o, b, o.rank, 0) > avail) {
    int64_t sb = krr_suggest_block(pb, &o, avail);
    if (user_block || sb < 1)
      return krr_fail(ctx, KRR_ERR_MEMORY,
                      "the fit needs %.1f MiB beyond the data but only %.1f MiB are available; "
                      "try block_size = %lld%s", krr_askotch_memory(pb, &o, b, o.rank, 0) / 1048576.0,
                      avail / 1048576.0, (long long)(sb > 0 ? sb : 1),
                      sb < 1 ? " or a smaller data set / single precision" : "");
    b = o.block_size = sb;
    if (o.rank > b) o.rank = (int)b;
  }
  int exact = o.kind == KRR_SOLVER_SAP || o.kind == KRR_SOLVER_NSAP;
  int mat = (exact || (double)b * (double)b * (double)es <= (double)o.block_mem_limit) &&
            krr_askotch_memory(pb, &o, b, o.rank, 1) <= avail;

  askotch_t *s = (askotch_t *)calloc(1, sizeof(askotch_t));
  if (!s) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  s->base.vt = &askotch_vt;
  s->base.ctx = ctx;
  s->base.pb = pb;
  s->base.o = o;
  s->base.es = es;
  s->accelerated = o.kind == KRR_SOLVER_ASKOTCH || o.kind == KRR_SOLVER_NSAP;
  s->exact = exact;
  s->materialize = mat;
  s->L = 1.0; /* exact block solves take unit steps */
  if (s->exact && !mat) {
    free(s);
    return krr_fail(ctx, KRR_ERR_MEMORY, "SAP needs the %lld x %lld block kernel matrix in memory; "
                    "use a smaller block_size", (long long)b, (long long)b);
  }
  s->n = n; s->b = b; s->p = pb->p; s->m = pb->m; s->r = o.rank;
  int64_t nm = n * (int64_t)pb->m;
  int r = o.rank, m = pb->m;

  /* acceleration parameters (Table 3): mu = lambda, nu = n/b, with mu < nu */
  s->nu = o.nu > 0 ? o.nu : (double)n / (double)b;
  s->mu = o.mu > 0 ? o.mu : pb->lambda;
  if (o.mu > 0 || o.nu > 0) {
    if (!(s->mu < s->nu)) {
      double mu = s->mu, nu = s->nu;
      free(s);
      return krr_fail(ctx, KRR_ERR_INPUT, "acceleration parameters need mu < nu (got mu = %g, nu = %g)",
                      mu, nu);
    }
  } else if (s->mu >= s->nu) {
    s->mu = 0.5 * s->nu; /* keep 0 <= beta < 1 (ALGORITHMS.md section 4) */
  }
  s->beta = 1.0 - sqrt(s->mu / s->nu);
  s->gamma = 1.0 / sqrt(s->mu * s->nu);
  s->alpha = 1.0 / (1.0 + s->gamma * s->nu);

  int ok = 1;
#define ALLOC(ptr, count) ok = ok && ((ptr) = krr_dalloc(ctx, (count), es)) != NULL
  ALLOC(s->base.w, nm);
  if (s->accelerated) { ALLOC(s->v, nm); ALLOC(s->z, nm); }
  ok = ok && (s->idx = (int64_t *)krr_dalloc(ctx, b, sizeof(int64_t))) != NULL;
  ALLOC(s->XB, b * s->p);
  if (mat) ALLOC(s->KB, b * b);
  ALLOC(s->g, b * m); ALLOC(s->d, b * m); ALLOC(s->gb, b * m);
  ALLOC(s->p1, b); ALLOC(s->p2, b); ALLOC(s->p3, b);
#undef ALLOC
  if (ok && !s->exact) ok = krr_lowrank_alloc(ctx, pb->prec, b, r, m > 1 ? m : 1, &s->lr) == KRR_OK;
  if (ok) {
    s->idx_h = (int64_t *)malloc(sizeof(int64_t) * (size_t)b);
    s->mark = (uint64_t *)calloc((size_t)(n / 64 + 1), sizeof(uint64_t));
    if (!s->idx_h || !s->mark) {
      krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
      ok = 0;
    }
  }
  krr_status st = ok ? KRR_OK : ctx->status;
  if (st == KRR_OK) st = ctx->ops->zero(ctx, s->base.w, es * (size_t)nm);
  if (st == KRR_OK && s->accelerated) st = ctx->ops->zero(ctx, s->v, es * (size_t)nm);
  if (st == KRR_OK && s->accelerated) st = ctx->ops->zero(ctx, s->z, es * (size_t)nm);
  if (st == KRR_OK && o.sampling == KRR_SAMPLING_RLS) st = krr_rls_create(ctx, pb, &o, b, &s->rls);
  if (st != KRR_OK) {
    if (st == KRR_ERR_MEMORY) {
      int64_t sb = krr_suggest_block(pb, &o, avail / 2);
      char why[sizeof ctx->msg];
      memcpy(why, ctx->msg, sizeof why);
      ctx->status = KRR_OK; /* replace the bare allocation message with advice */
      krr_fail(ctx, KRR_ERR_MEMORY, "allocation failed (%.700s); try block_size = %lld", why,
               (long long)(sb > 0 ? sb : 1));
    }
    askotch_free(&s->base);
    return st;
  }
  s->base.diag.block_size = b;
  s->base.diag.rank = r;
  s->base.diag.materialized = mat;
  s->base.diag.resid_est = 1.0;
  s->base.diag.block_resid = NAN;
  *out = &s->base;
  return KRR_OK;
}
