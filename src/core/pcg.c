/* Preconditioned conjugate gradients on (K + lambda I) w = y (ALGORITHMS.md
 * section 5), written once for both precisions against the krr_ops table.
 *
 * Multi-RHS: one kernel_mv with all m columns per iteration (one pass), CG
 * scalars kept per column (independent CG runs sharing the products).
 * Preconditioners:
 *  - Nystrom (Frangella et al.): rank-r randomized Nystrom of the full K via one
 *    kernel_mv with r right-hand sides (Alg. 2), rho damped / regularization /
 *    value, applied by Woodbury (nystrom.c: orthogonal form in double, the
 *    Cholesky form in single).
 *  - randomly pivoted / greedy partial Cholesky (Chen, Epperly, Tropp, Webber):
 *    F (n x r), P = F F^T + lambda I via Woodbury.  Pivots are drawn one at a
 *    time from the residual diagonal kept on the host in double; each pivot
 *    costs one kernel column K(X, x_s) (n pairs) and one n-vector download
 *    (r downloads in all; the block variant would batch them).
 *  - none.
 * The preconditioner is built by the first step() call, so init stays cheap.
 * Passes: 1 per CG iteration (n^2 kernel pairs), +1 per exact residual
 * recomputation (every resid_every iterations, default 50, against float
 * drift), +1 for the Nystrom sketch, + r/n for the partial Cholesky.
 * resid_est is the CG (recursively updated) residual ||r||_F / ||y||_F. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "internal.h"
#include "rng.h"

typedef struct {
  struct krr_solver base;
  int64_t n;
  int p, m, r, ready, every;
  krr_precond pc;
  krr_lowrank lr;
  void *res, *z, *d, *Ad; /* n x m: residual, preconditioned residual, direction, A d */
  void *xs;               /* 1 x p: pivot point */
  int64_t *pidx;          /* device, 1 */
  double *rz, *rn;        /* host m: r.z and ||r|| per column */
  double *rlast;          /* host m: true ||r|| at the last replacement */
  int *frozen;            /* host m: column finished (or degenerate) */
  int *restart;           /* host m: restart the direction at the next update */
  double *dh, *col;       /* host n: residual diagonal, factor column (Cholesky) */
  int64_t since;          /* iterations since the last exact residual */
} pcg_t;

#define PREC(s) ((s)->base.pb->prec)
#define CTX(s) ((s)->base.ctx)
#define OP(s, name, ...) KOP(CTX(s), PREC(s), name, __VA_ARGS__)
#define COL(s, buf, j) KAT(buf, (int64_t)(j) * (s)->n, (s)->base.es)

static int pcg_rank(const krr_problem *pb, const krr_solver_opts *o) {
  if (o->precond == KRR_PRECOND_NONE) return 0;
  if (o->rank > 0) return o->rank;
  return pb->n < 100 ? (int)pb->n : 100;
}

size_t krr_pcg_memory(const krr_problem *pb, const krr_solver_opts *o) {
  int64_t n = pb->n, m = pb->m;
  int r = pcg_rank(pb, o);
  size_t es = krr_sizeof(pb->prec);
  size_t lr = r > 0 ? krr_lowrank_memory(pb->prec, n, r, (int)m) : 0;
  return es * (size_t)(5 * n * m + pb->p) + lr + sizeof(int64_t);
}

static void pcg_free(krr_solver *base) {
  pcg_t *s = (pcg_t *)base;
  krr_ctx *ctx = CTX(s);
  void **bufs[] = {&s->base.w, &s->res, &s->z, &s->d, &s->Ad, &s->xs, (void **)&s->pidx};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) krr_dfree(ctx, bufs[i]);
  krr_lowrank_free(ctx, &s->lr);
  free(s->rz); free(s->rn); free(s->rlast); free(s->frozen); free(s->restart); free(s->dh); free(s->col);
  free(s);
}

/* out = (K + lambda I) in, n x m */
static krr_status apply_A(pcg_t *s, const void *in, void *out) {
  const krr_problem *pb = s->base.pb;
  KTRY(OP(s, kernel_mv, &pb->kernel, pb->X, s->n, pb->X, s->n, s->p, in, s->n, s->m, out, s->n));
  return OP(s, axpby, s->n * s->m, pb->lambda, in, 1.0, out);
}

/* Y = K V (n x q): the sketch product of the Nystrom preconditioner */
static krr_status sketch_mv(void *arg, const void *V, int q, void *Y) {
  pcg_t *s = (pcg_t *)arg;
  const krr_problem *pb = s->base.pb;
  return OP(s, kernel_mv, &pb->kernel, pb->X, s->n, pb->X, s->n, s->p, V, s->n, q, Y, s->n);
}

/* next pivot from the host residual diagonal: sampled proportionally to it
 * (RPCholesky) or its argmax (greedy); -1 when it is exhausted */
static int64_t pick_pivot(pcg_t *s, int k, uint64_t stream) {
  int64_t n = s->n, best = -1;
  double tot = 0, mx = 0;
  for (int64_t i = 0; i < n; i++) {
    tot += s->dh[i];
    if (s->dh[i] > mx) { mx = s->dh[i]; best = i; }
  }
  double floor_ = (PREC(s) == KRR_DOUBLE ? DBL_EPSILON : FLT_EPSILON) * 1e3;
  if (!(mx > floor_)) return -1;
  if (s->pc == KRR_PRECOND_GREEDY) return best;
  double u = krr_rng_unif(stream, (uint64_t)k) * tot, c = 0;
  for (int64_t i = 0; i < n; i++) {
    c += s->dh[i];
    if (c >= u && s->dh[i] > 0) return i;
  }
  return best;
}

/* partial Cholesky F (n x r) into lr->U; P = F F^T (lam = 1), rho = lambda */
static krr_status partial_cholesky(pcg_t *s) {
  krr_ctx *ctx = CTX(s);
  const krr_problem *pb = s->base.pb;
  krr_lowrank *lr = &s->lr;
  int64_t n = s->n;
  size_t es = s->base.es;
  uint64_t stream = krr_rng_stream(s->base.o.seed, 0, 11);
  for (int64_t i = 0; i < n; i++) s->dh[i] = 1.0; /* k(x, x) = 1 */
  int k = 0;
  for (; k < s->r; k++) {
    int64_t piv = pick_pivot(s, k, stream);
    if (piv < 0) break;
    void *f = KAT(lr->U, (int64_t)k * n, es);
    KTRY(ctx->ops->upload(ctx, s->pidx, &piv, sizeof(int64_t)));
    KTRY(OP(s, gather_points, pb->X, s->p, s->pidx, 1, s->xs));
    KTRY(OP(s, kernel_block, &pb->kernel, pb->X, n, s->xs, 1, s->p, f, n));
    if (k > 0) KTRY(OP(s, gemm, 0, 1, n, 1, k, -1.0, lr->U, n, KAT(lr->U, piv, es), n, 1.0, f, n));
    KTRY(krr_download_vec(ctx, PREC(s), f, n, s->col));
    double g = s->col[piv];
    if (!(g > 0) || !isfinite(g)) break;
    double sg = sqrt(g);
    KTRY(OP(s, axpby, n, 0.0, f, 1.0 / sg, f));
    for (int64_t i = 0; i < n; i++) {
      double c = s->col[i] / sg;
      s->dh[i] -= c * c;
      if (s->dh[i] < 0) s->dh[i] = 0;
    }
    s->dh[piv] = 0;
  }
  lr->r_eff = k;
  lr->orth = 0;
  for (int j = 0; j < k; j++) lr->lam[j] = 1.0;
  s->base.diag.passes += (double)k / (double)n;
  return krr_lowrank_prepare(ctx, lr, pb->lambda);
}

static krr_status precond(pcg_t *s, const void *in, void *out) {
  if (s->pc == KRR_PRECOND_NONE)
    return CTX(s)->ops->copy(CTX(s), out, in, s->base.es * (size_t)(s->n * s->m));
  return krr_lowrank_inv(CTX(s), &s->lr, in, out, s->m);
}

/* z = M^{-1} r; per column: rz, ||r||, d = z + beta d (beta = 0 at the start
 * and for columns flagged in restart) */
static krr_status update_direction(pcg_t *s, int first) {
  KTRY(precond(s, s->res, s->z));
  double sum = 0;
  int live = 0;
  for (int j = 0; j < s->m; j++) {
    if (!s->frozen[j]) {
      double rz = 0;
      KTRY(OP(s, dot, s->n, COL(s, s->res, j), COL(s, s->z, j), &rz));
      KTRY(OP(s, nrm2, s->n, COL(s, s->res, j), &s->rn[j]));
      if (!isfinite(s->rn[j]))
        return krr_fail(CTX(s), KRR_ERR_NUMERIC, "PCG diverged (non-finite residual)");
      if (!(rz > 0) || s->rn[j] == 0) {
        s->frozen[j] = 1;
      } else {
        double beta = first || s->restart[j] ? 0.0 : rz / s->rz[j];
        KTRY(OP(s, axpby, s->n, 1.0, COL(s, s->z, j), beta, COL(s, s->d, j)));
        s->rz[j] = rz;
      }
    }
    s->restart[j] = 0;
    live += !s->frozen[j];
    sum += s->rn[j] * s->rn[j];
  }
  krr_diag *dg = &s->base.diag;
  dg->resid_est = s->base.pb->ynorm > 0 ? sqrt(sum) / s->base.pb->ynorm : sqrt(sum);
  dg->done = live == 0;
  return KRR_OK;
}

static krr_status pcg_setup(pcg_t *s) {
  krr_ctx *ctx = CTX(s);
  const krr_problem *pb = s->base.pb;
  const krr_solver_opts *o = &s->base.o;
  double t0 = krr_now();
  if (s->pc == KRR_PRECOND_NYSTROM) {
    KTRY(krr_nystrom_sketch(ctx, &s->lr, sketch_mv, s, (double)s->n, krr_rng_stream(o->seed, 0, 10)));
    s->base.diag.passes += 1;
    KTRY(krr_lowrank_prepare(ctx, &s->lr, krr_lowrank_rho(&s->lr, o->rho_mode, o->rho_value, pb->lambda)));
  } else if (s->pc != KRR_PRECOND_NONE) {
    KTRY(partial_cholesky(s));
  }
  s->base.diag.rank = s->pc == KRR_PRECOND_NONE ? 0 : s->lr.r_eff;
  s->base.diag.rho = s->pc == KRR_PRECOND_NONE ? NAN : s->lr.rho;
  KTRY(ctx->ops->copy(ctx, s->res, pb->y, s->base.es * (size_t)(s->n * s->m))); /* w0 = 0 */
  KTRY(update_direction(s, 1));
  KTRY(ctx->ops->sync(ctx));
  s->base.diag.t_nystrom += krr_now() - t0;
  s->ready = 1;
  return KRR_OK;
}

/* residual replacement r = y - (K + lambda I) w against drift.  A column whose
 * true residual exceeds twice the recursive one, or did not decrease since the
 * previous replacement, has lost conjugacy (typical in float near its accuracy
 * floor): restart its direction (beta = 0).  Without this, float CG on an
 * ill-conditioned K slowly diverges once it stagnates. */
static krr_status replace_residual(pcg_t *s) {
  int64_t n = s->n;
  for (int j = 0; j < s->m; j++) KTRY(OP(s, nrm2, n, COL(s, s->res, j), &s->rn[j]));
  KTRY(apply_A(s, s->base.w, s->res));
  KTRY(OP(s, axpby, n * s->m, 1.0, s->base.pb->y, -1.0, s->res));
  for (int j = 0; j < s->m; j++) {
    double tr = 0;
    KTRY(OP(s, nrm2, n, COL(s, s->res, j), &tr));
    s->restart[j] = !(tr <= 2.0 * s->rn[j]) || !(tr < s->rlast[j]);
    s->rlast[j] = tr;
  }
  s->base.diag.passes += 1;
  s->since = 0;
  return KRR_OK;
}

static krr_status pcg_iter(pcg_t *s) {
  krr_ctx *ctx = CTX(s);
  krr_diag *dg = &s->base.diag;
  int64_t n = s->n;
  double t0 = krr_now();
  KTRY(apply_A(s, s->d, s->Ad));
  KTRY(ctx->ops->sync(ctx));
  double t1 = krr_now();
  for (int j = 0; j < s->m; j++) {
    if (s->frozen[j]) continue;
    double dAd = 0;
    KTRY(OP(s, dot, n, COL(s, s->d, j), COL(s, s->Ad, j), &dAd));
    double alpha = s->rz[j] / dAd;
    if (!(dAd > 0) || !isfinite(alpha)) { s->frozen[j] = 1; continue; }
    KTRY(OP(s, axpby, n, alpha, COL(s, s->d, j), 1.0, COL(s, s->base.w, j)));
    KTRY(OP(s, axpby, n, -alpha, COL(s, s->Ad, j), 1.0, COL(s, s->res, j)));
  }
  dg->iter++;
  dg->passes += 1;
  if (++s->since >= s->every) KTRY(replace_residual(s));
  KTRY(update_direction(s, 0));
  KTRY(ctx->ops->sync(ctx));
  dg->t_block += t1 - t0;
  dg->t_update += krr_now() - t1;
  return KRR_OK;
}

static krr_status pcg_step(krr_solver *base, int64_t iters) {
  pcg_t *s = (pcg_t *)base;
  if (!s->ready) KTRY(pcg_setup(s));
  for (int64_t i = 0; i < iters && !s->base.diag.done; i++) KTRY(pcg_iter(s));
  return KRR_OK;
}

static const krr_solver_vt pcg_vt = {pcg_step, pcg_free, NULL, NULL, NULL, NULL};

static krr_status pcg_check(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o) {
  if ((int)o->precond < 0 || (int)o->precond >= KRR_N_PRECONDS)
    return krr_fail(ctx, KRR_ERR_INPUT, "unknown PCG preconditioner code %d", (int)o->precond);
  if (o->rank < 0 || o->rank > pb->n)
    return krr_fail(ctx, KRR_ERR_INPUT, "rank (%d) must be between 0 and the number of observations (%lld)",
                    o->rank, (long long)pb->n);
  if ((int)o->rho_mode < 0 || (int)o->rho_mode > KRR_RHO_VALUE)
    return krr_fail(ctx, KRR_ERR_INPUT, "unknown rho mode %d", (int)o->rho_mode);
  if (o->rho_mode == KRR_RHO_VALUE && !(o->rho_value > 0 && isfinite(o->rho_value)))
    return krr_fail(ctx, KRR_ERR_INPUT, "rho must be positive and finite");
  if (o->resid_every < 0)
    return krr_fail(ctx, KRR_ERR_INPUT, "resid_every must be >= 0");
  size_t fr = 0, tot = 0;
  KTRY(ctx->ops->mem_info(ctx, &fr, &tot));
  size_t avail = o->mem_limit > 0 ? o->mem_limit : (size_t)((double)fr * 0.9);
  size_t need = krr_pcg_memory(pb, o);
  if (need > avail)
    return krr_fail(ctx, KRR_ERR_MEMORY, "PCG needs %.1f MiB beyond the data but only %.1f MiB "
                    "are available; try a smaller rank", need / 1048576.0, avail / 1048576.0);
  return KRR_OK;
}

static krr_status pcg_alloc(pcg_t *s) {
  krr_ctx *ctx = CTX(s);
  int64_t nm = s->n * (int64_t)s->m;
  size_t es = s->base.es;
  int ok = 1;
#define ALLOC(ptr, count) ok = ok && ((ptr) = krr_dalloc(ctx, (count), es)) != NULL
  ALLOC(s->base.w, nm); ALLOC(s->res, nm); ALLOC(s->z, nm); ALLOC(s->d, nm); ALLOC(s->Ad, nm);
  ALLOC(s->xs, s->p);
#undef ALLOC
  ok = ok && (s->pidx = (int64_t *)krr_dalloc(ctx, 1, sizeof(int64_t))) != NULL;
  if (!ok) return ctx->status;
  if (s->r > 0) KTRY(krr_lowrank_alloc(ctx, PREC(s), s->n, s->r, s->m, &s->lr));
  s->rz = (double *)calloc((size_t)s->m, sizeof(double));
  s->rn = (double *)calloc((size_t)s->m, sizeof(double));
  s->frozen = (int *)calloc((size_t)s->m, sizeof(int));
  s->restart = (int *)calloc((size_t)s->m, sizeof(int));
  s->rlast = (double *)malloc(sizeof(double) * (size_t)s->m);
  for (int j = 0; s->rlast && j < s->m; j++) s->rlast[j] = INFINITY;
  int chol = s->pc == KRR_PRECOND_RPCHOLESKY || s->pc == KRR_PRECOND_GREEDY;
  if (chol) {
    s->dh = (double *)malloc(sizeof(double) * (size_t)s->n);
    s->col = (double *)malloc(sizeof(double) * (size_t)s->n);
  }
  if (!s->rz || !s->rn || !s->rlast || !s->frozen || !s->restart || (chol && (!s->dh || !s->col)))
    return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  KTRY(ctx->ops->zero(ctx, s->base.w, es * (size_t)nm));
  return ctx->ops->zero(ctx, s->d, es * (size_t)nm);
}

krr_status krr_pcg_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                        krr_solver **out) {
  KTRY(pcg_check(ctx, pb, o));
  pcg_t *s = (pcg_t *)calloc(1, sizeof(pcg_t));
  if (!s) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  s->base.vt = &pcg_vt;
  s->base.ctx = ctx;
  s->base.pb = pb;
  s->base.o = *o;
  s->base.o.centers = NULL;
  s->base.es = krr_sizeof(pb->prec);
  s->n = pb->n; s->p = pb->p; s->m = pb->m;
  s->pc = o->precond;
  s->r = pcg_rank(pb, o);
  s->base.o.rank = s->r;
  s->every = o->resid_every > 0 ? o->resid_every : 50;
  krr_status st = pcg_alloc(s);
  if (st != KRR_OK) { pcg_free(&s->base); return st; }
  s->base.diag.block_size = pb->n;
  s->base.diag.rank = s->r;
  s->base.diag.resid_est = 1.0;
  s->base.diag.block_resid = NAN;
  s->base.diag.rho = NAN;
  *out = &s->base;
  return KRR_OK;
}
