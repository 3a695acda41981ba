/* Falkon (Rudi et al. 2017; Meanti et al. 2020): inducing-point KRR with m
 * centres (ALGORITHMS.md section 5), written once against the krr_ops table.
 *
 * Solves the normal equations  H a = b,  H = K_nm^T K_nm + lambda K_mm,
 * b = K_nm^T y  (lambda absolute, as in the full problem (K + lambda I) w = y)
 * by CG on  B^T H B beta = B^T b,  a = B beta,  with the Falkon preconditioner
 *   T = chol(K_mm + eps m I)            (upper, K_mm ~ T^T T)
 *   R = chol((n/m) T T^T + lambda I)    (upper)
 *   B = T^{-1} R^{-1}
 * so that B^T H B ~ I when K_nm^T K_nm ~ (n/m) K_mm^2 (uniform centres).  The
 * paper's B = (1/sqrt(n)) T^{-1} R^{-1} belongs to its n-scaled lambda; a scalar
 * in B changes neither the CG iterates of a nor the solution.  lambda K_mm u is
 * applied with the exact K_mm (not T^T T), so the jitter only affects the
 * preconditioner, never the solution.
 *
 * Precision safeguards: everything of size m x m and the CG vectors (m x out)
 * live in double even for a single-precision problem (converted by small host
 * round trips); only the two kernel products K_nm u and K_nm^T v (2 n m pairs
 * per iteration) run in the problem's precision.  Passes count kernel pairs
 * over n^2: 2 m / n per iteration.  resid_est is the relative residual of the
 * normal equations ||H a - b|| / ||b||, with H a updated recursively and
 * recomputed exactly every resid_every (50) iterations.
 * Weights: the m x out centre coefficients a (krr_solver_weights), centres by
 * krr_solver_centers. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "internal.h"
#include "rng.h"

typedef struct {
  struct krr_solver base;
  int64_t n, mc;
  int p, m, every, ready;
  int64_t *cidx_h, *cidx;  /* centres (host, device) */
  void *Xc;                /* mc x p, prec */
  void *vn;                /* n x m, prec: K_nm u */
  void *up, *op;           /* mc x m, prec */
  void *Kmm, *T, *R;       /* mc x mc, double */
  void *a, *res, *pd, *q, *hp, *ha, *bk, *u; /* mc x m, double */
  double *hbuf;            /* host mc * max(mc, m) */
  double *rz, bnorm;
  int *frozen;
  int64_t since;
} falkon_t;

#define PREC(s) ((s)->base.pb->prec)
#define CTX(s) ((s)->base.ctx)
#define OP(s, name, ...) KOP(CTX(s), PREC(s), name, __VA_ARGS__)
#define DOP(s, name, ...) KOP(CTX(s), KRR_DOUBLE, name, __VA_ARGS__)
#define DCOL(s, buf, j) KAT(buf, (int64_t)(j) * (s)->mc, sizeof(double))

static int64_t falkon_centers_default(int64_t n) {
  double m = ceil(sqrt((double)n) * log((double)n));
  if (m > 20000) m = 20000;
  if (m < 1) m = 1;
  return (int64_t)m < n ? (int64_t)m : n;
}

int64_t krr_centers_count(const krr_problem *pb, const krr_solver_opts *o) {
  return o->n_centers > 0 ? o->n_centers : falkon_centers_default(pb->n);
}

size_t krr_falkon_memory(const krr_problem *pb, const krr_solver_opts *o) {
  int64_t mc = krr_centers_count(pb, o), n = pb->n, m = pb->m;
  size_t es = krr_sizeof(pb->prec);
  double pe = (double)(mc * pb->p + n * m + 2 * mc * m) + (double)mc * mc; /* + setup temp */
  double de = 3.0 * (double)mc * mc + 8.0 * (double)(mc * m);
  return (size_t)(pe * (double)es + de * sizeof(double)) + sizeof(int64_t) * (size_t)mc;
}

static void falkon_free(krr_solver *base) {
  falkon_t *s = (falkon_t *)base;
  krr_ctx *ctx = CTX(s);
  void **bufs[] = {(void **)&s->cidx, &s->Xc, &s->vn, &s->up, &s->op, &s->Kmm, &s->T, &s->R,
                   &s->a, &s->res, &s->pd, &s->q, &s->hp, &s->ha, &s->bk, &s->u, &s->base.w};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) krr_dfree(ctx, bufs[i]);
  free(s->cidx_h); free(s->hbuf); free(s->rz); free(s->frozen);
  free(s);
}

/* device prec <-> device double (len elements) */
static krr_status to_double(falkon_t *s, const void *src, void *dst, int64_t len) {
  krr_ctx *ctx = CTX(s);
  if (PREC(s) == KRR_DOUBLE) return ctx->ops->copy(ctx, dst, src, sizeof(double) * (size_t)len);
  KTRY(krr_download_vec(ctx, KRR_FLOAT, src, len, s->hbuf));
  return ctx->ops->upload(ctx, dst, s->hbuf, sizeof(double) * (size_t)len);
}

static krr_status to_prec(falkon_t *s, const void *src, void *dst, int64_t len) {
  krr_ctx *ctx = CTX(s);
  if (PREC(s) == KRR_DOUBLE) return ctx->ops->copy(ctx, dst, src, sizeof(double) * (size_t)len);
  KTRY(ctx->ops->download(ctx, s->hbuf, src, sizeof(double) * (size_t)len));
  return krr_upload_vec_into(ctx, KRR_FLOAT, s->hbuf, len, dst);
}

/* h = (K_nm^T K_nm + lambda K_mm) u, u and h mc x m double */
static krr_status apply_H(falkon_t *s, const void *u, void *h) {
  const krr_problem *pb = s->base.pb;
  int64_t n = s->n, mc = s->mc;
  KTRY(to_prec(s, u, s->up, mc * s->m));
  KTRY(OP(s, kernel_mv, &pb->kernel, pb->X, n, s->Xc, mc, s->p, s->up, mc, s->m, s->vn, n));
  KTRY(OP(s, kernel_mv, &pb->kernel, s->Xc, mc, pb->X, n, s->p, s->vn, n, s->m, s->op, mc));
  KTRY(to_double(s, s->op, h, mc * s->m));
  return DOP(s, gemm, 0, 0, mc, s->m, mc, pb->lambda, s->Kmm, mc, u, mc, 1.0, h, mc);
}

/* in place: x <- B x = T^{-1} R^{-1} x  (trans = 0) or B^T x = R^{-T} T^{-T} x */
static krr_status apply_B(falkon_t *s, int trans, void *x) {
  void *first = trans ? s->T : s->R, *second = trans ? s->R : s->T;
  KTRY(DOP(s, trsm, 0, trans, s->mc, s->m, 1.0, first, s->mc, x, s->mc));
  return DOP(s, trsm, 0, trans, s->mc, s->m, 1.0, second, s->mc, x, s->mc);
}

/* upper Cholesky of A + jitter I in place (copy of src), raising the jitter on failure */
static krr_status chol_jitter(falkon_t *s, const void *src, void *A, double jitter, const char *what) {
  krr_ctx *ctx = CTX(s);
  int64_t mc = s->mc;
  int info = 1;
  for (int attempt = 0; attempt < 6 && info != 0; attempt++, jitter *= 10) {
    if (src != A) KTRY(ctx->ops->copy(ctx, A, src, sizeof(double) * (size_t)(mc * mc)));
    KTRY(DOP(s, add_diag, mc, A, mc, jitter, NULL));
    KTRY(DOP(s, potrf, mc, A, mc, &info));
    if (src == A && info != 0) break;
  }
  if (info != 0)
    return krr_fail(ctx, KRR_ERR_NUMERIC, "Falkon preconditioner: Cholesky of %s failed "
                    "(column %d); use fewer centres or a larger lambda", what, info);
  return KRR_OK;
}

/* K_mm (double), T, R */
static krr_status falkon_precond(falkon_t *s) {
  krr_ctx *ctx = CTX(s);
  const krr_problem *pb = s->base.pb;
  int64_t mc = s->mc;
  if (PREC(s) == KRR_DOUBLE) {
    KTRY(OP(s, kernel_block, &pb->kernel, s->Xc, mc, s->Xc, mc, s->p, s->Kmm, mc));
  } else {
    void *tmp = krr_dalloc(ctx, mc * mc, s->base.es);
    if (!tmp) return ctx->status;
    krr_status st = OP(s, kernel_block, &pb->kernel, s->Xc, mc, s->Xc, mc, s->p, tmp, mc);
    if (st == KRR_OK) st = to_double(s, tmp, s->Kmm, mc * mc);
    krr_dfree(ctx, &tmp);
    KTRY(st);
  }
  double eps = PREC(s) == KRR_DOUBLE ? DBL_EPSILON : FLT_EPSILON;
  KTRY(chol_jitter(s, s->Kmm, s->T, eps * (double)mc, "K_mm + eps m I"));
  /* zero T's strict lower triangle (potrf leaves it) before forming T T^T */
  KTRY(ctx->ops->download(ctx, s->hbuf, s->T, sizeof(double) * (size_t)(mc * mc)));
  for (int64_t j = 0; j < mc; j++)
    for (int64_t i = j + 1; i < mc; i++) s->hbuf[i + j * mc] = 0.0;
  KTRY(ctx->ops->upload(ctx, s->T, s->hbuf, sizeof(double) * (size_t)(mc * mc)));
  KTRY(DOP(s, gemm, 0, 1, mc, mc, mc, (double)s->n / (double)mc, s->T, mc, s->T, mc, 0.0, s->R, mc));
  return chol_jitter(s, s->R, s->R, pb->lambda, "(n/m) T T^T + lambda I");
}

/* resid_est = ||H a - b|| / ||b|| from the tracked H a (uses q as scratch) */
static krr_status normal_resid(falkon_t *s, const void *ha, double *rel) {
  int64_t len = s->mc * s->m;
  double nr = 0;
  KTRY(CTX(s)->ops->copy(CTX(s), s->q, ha, sizeof(double) * (size_t)len));
  KTRY(DOP(s, axpby, len, -1.0, s->bk, 1.0, s->q));
  KTRY(DOP(s, nrm2, len, s->q, &nr));
  *rel = s->bnorm > 0 ? nr / s->bnorm : nr;
  return KRR_OK;
}

/* per column: rz = r.r, d = r + beta d; freeze finished columns */
static krr_status falkon_direction(falkon_t *s, int first) {
  int live = 0;
  for (int j = 0; j < s->m; j++) {
    if (s->frozen[j]) continue;
    double rz = 0;
    KTRY(DOP(s, dot, s->mc, DCOL(s, s->res, j), DCOL(s, s->res, j), &rz));
    if (!isfinite(rz)) return krr_fail(CTX(s), KRR_ERR_NUMERIC, "Falkon CG diverged (non-finite residual)");
    if (!(rz > 0)) { s->frozen[j] = 1; continue; }
    double beta = first ? 0.0 : rz / s->rz[j];
    KTRY(DOP(s, axpby, s->mc, 1.0, DCOL(s, s->res, j), beta, DCOL(s, s->pd, j)));
    s->rz[j] = rz;
    live++;
  }
  s->base.diag.done = live == 0;
  return normal_resid(s, s->ha, &s->base.diag.resid_est);
}

static krr_status falkon_setup(falkon_t *s) {
  krr_ctx *ctx = CTX(s);
  const krr_problem *pb = s->base.pb;
  int64_t mc = s->mc, n = s->n, len = mc * s->m;
  double t0 = krr_now();
  KTRY(falkon_precond(s));
  KTRY(OP(s, kernel_mv, &pb->kernel, s->Xc, mc, pb->X, n, s->p, pb->y, n, s->m, s->op, mc));
  KTRY(to_double(s, s->op, s->bk, len)); /* b = K_nm^T y */
  KTRY(DOP(s, nrm2, len, s->bk, &s->bnorm));
  KTRY(ctx->ops->copy(ctx, s->res, s->bk, sizeof(double) * (size_t)len));
  KTRY(apply_B(s, 1, s->res)); /* r = B^T b (beta0 = 0) */
  s->base.diag.passes += ((double)mc * mc + (double)mc * n) / ((double)n * n);
  KTRY(falkon_direction(s, 1));
  KTRY(ctx->ops->sync(ctx));
  s->base.diag.t_nystrom += krr_now() - t0;
  s->ready = 1;
  return KRR_OK;
}

static krr_status falkon_iter(falkon_t *s) {
  krr_ctx *ctx = CTX(s);
  krr_diag *dg = &s->base.diag;
  int64_t mc = s->mc, len = mc * s->m;
  double t0 = krr_now();
  KTRY(ctx->ops->copy(ctx, s->u, s->pd, sizeof(double) * (size_t)len));
  KTRY(apply_B(s, 0, s->u));        /* u = B d */
  KTRY(apply_H(s, s->u, s->hp));    /* hp = H B d */
  KTRY(ctx->ops->copy(ctx, s->q, s->hp, sizeof(double) * (size_t)len));
  KTRY(apply_B(s, 1, s->q));        /* q = B^T H B d */
  double t1 = krr_now();
  for (int j = 0; j < s->m; j++) {
    if (s->frozen[j]) continue;
    double dq = 0;
    KTRY(DOP(s, dot, mc, DCOL(s, s->pd, j), DCOL(s, s->q, j), &dq));
    double alpha = s->rz[j] / dq;
    if (!(dq > 0) || !isfinite(alpha)) { s->frozen[j] = 1; continue; }
    KTRY(DOP(s, axpby, mc, alpha, DCOL(s, s->u, j), 1.0, DCOL(s, s->a, j)));
    KTRY(DOP(s, axpby, mc, alpha, DCOL(s, s->hp, j), 1.0, DCOL(s, s->ha, j)));
    KTRY(DOP(s, axpby, mc, -alpha, DCOL(s, s->q, j), 1.0, DCOL(s, s->res, j)));
  }
  dg->iter++;
  dg->passes += 2.0 * (double)mc / (double)s->n;
  if (++s->since >= s->every) { /* exact H a and r = B^T (b - H a) */
    KTRY(apply_H(s, s->a, s->ha));
    KTRY(ctx->ops->copy(ctx, s->res, s->bk, sizeof(double) * (size_t)len));
    KTRY(DOP(s, axpby, len, -1.0, s->ha, 1.0, s->res));
    KTRY(apply_B(s, 1, s->res));
    dg->passes += 2.0 * (double)mc / (double)s->n;
    s->since = 0;
  }
  KTRY(falkon_direction(s, 0));
  KTRY(ctx->ops->sync(ctx));
  dg->t_block += t1 - t0;
  dg->t_update += krr_now() - t1;
  return KRR_OK;
}

static krr_status falkon_step(krr_solver *base, int64_t iters) {
  falkon_t *s = (falkon_t *)base;
  if (!s->ready) KTRY(falkon_setup(s));
  for (int64_t i = 0; i < iters && !s->base.diag.done; i++) KTRY(falkon_iter(s));
  return to_prec(s, s->a, s->base.w, s->mc * s->m); /* keep w (prec) in step with a */
}

static krr_status falkon_weights(krr_solver *base, double *w_out) {
  falkon_t *s = (falkon_t *)base;
  return krr_download_vec(CTX(s), KRR_DOUBLE, s->a, s->mc * s->m, w_out);
}

static krr_status falkon_residual(krr_solver *base, double *rel) {
  falkon_t *s = (falkon_t *)base;
  if (!s->ready) KTRY(falkon_setup(s));
  KTRY(apply_H(s, s->a, s->u));
  return normal_resid(s, s->u, rel);
}

static int64_t falkon_ncenters(const krr_solver *base) { return ((const falkon_t *)base)->mc; }

static krr_status falkon_centers(krr_solver *base, int64_t *idx) {
  falkon_t *s = (falkon_t *)base;
  memcpy(idx, s->cidx_h, sizeof(int64_t) * (size_t)s->mc);
  return KRR_OK;
}

static const krr_solver_vt falkon_vt = {falkon_step, falkon_free, falkon_weights,
                                        falkon_residual, falkon_ncenters, falkon_centers};

krr_status krr_centers_check(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o) {
  int64_t n = pb->n;
  if (o->n_centers < 0 || o->n_centers > n)
    return krr_fail(ctx, KRR_ERR_INPUT, "the number of centres (%lld) must be between 1 and the "
                    "number of observations (%lld)", (long long)o->n_centers, (long long)n);
  if (o->centers && o->n_centers < 1)
    return krr_fail(ctx, KRR_ERR_INPUT, "centres given but their count is %lld", (long long)o->n_centers);
  if (o->resid_every < 0) return krr_fail(ctx, KRR_ERR_INPUT, "resid_every must be >= 0");
  if (o->centers) {
    uint64_t *mark = (uint64_t *)calloc((size_t)(n / 64 + 1), sizeof(uint64_t));
    if (!mark) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
    for (int64_t i = 0; i < o->n_centers; i++) {
      int64_t c = o->centers[i];
      int bad = c < 0 || c >= n || ((mark[c >> 6] >> (c & 63)) & 1u);
      if (bad) {
        free(mark);
        return krr_fail(ctx, KRR_ERR_INPUT, "centre %lld (row %lld) is out of range or repeated",
                        (long long)i + 1, (long long)c);
      }
      mark[c >> 6] |= (uint64_t)1 << (c & 63);
    }
    free(mark);
  }
  return KRR_OK;
}

static krr_status falkon_check(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o) {
  KTRY(krr_centers_check(ctx, pb, o));
  size_t fr = 0, tot = 0;
  KTRY(ctx->ops->mem_info(ctx, &fr, &tot));
  size_t avail = o->mem_limit > 0 ? o->mem_limit : (size_t)((double)fr * 0.9);
  size_t need = krr_falkon_memory(pb, o);
  if (need > avail)
    return krr_fail(ctx, KRR_ERR_MEMORY, "Falkon with %lld centres needs %.1f MiB beyond the data but "
                    "only %.1f MiB are available; use fewer centres", (long long)krr_centers_count(pb, o),
                    need / 1048576.0, avail / 1048576.0);
  return KRR_OK;
}

/* centres on the host (given or sampled uniformly without replacement, stream 20) */
krr_status krr_centers_pick(krr_ctx *ctx, const krr_solver_opts *o, int64_t n, int64_t mc,
                            int64_t *out) {
  if (o->centers) {
    memcpy(out, o->centers, sizeof(int64_t) * (size_t)mc);
    return KRR_OK;
  }
  uint64_t *mark = (uint64_t *)calloc((size_t)(n / 64 + 1), sizeof(uint64_t));
  if (!mark) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  krr_sample_uniform(krr_rng_stream(o->seed, 0, 20), n, mc, mark, out);
  free(mark);
  return KRR_OK;
}

static krr_status falkon_alloc(falkon_t *s) {
  krr_ctx *ctx = CTX(s);
  int64_t mc = s->mc, len = mc * s->m;
  size_t es = s->base.es, ds = sizeof(double);
  int ok = 1;
#define ALLOC(ptr, count, sz) ok = ok && ((ptr) = krr_dalloc(ctx, (count), (sz))) != NULL
  ALLOC(s->cidx, mc, sizeof(int64_t));
  ALLOC(s->Xc, mc * s->p, es); ALLOC(s->vn, s->n * s->m, es);
  ALLOC(s->up, len, es); ALLOC(s->op, len, es); ALLOC(s->base.w, len, es);
  ALLOC(s->Kmm, mc * mc, ds); ALLOC(s->T, mc * mc, ds); ALLOC(s->R, mc * mc, ds);
  void **vecs[] = {&s->a, &s->res, &s->pd, &s->q, &s->hp, &s->ha, &s->bk, &s->u};
  for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) ALLOC(*vecs[i], len, ds);
#undef ALLOC
  if (!ok) return ctx->status;
  s->cidx_h = (int64_t *)malloc(sizeof(int64_t) * (size_t)mc);
  s->hbuf = (double *)malloc(ds * (size_t)(mc * (mc > s->m ? mc : s->m)));
  s->rz = (double *)calloc((size_t)s->m, ds);
  s->frozen = (int *)calloc((size_t)s->m, sizeof(int));
  if (!s->cidx_h || !s->hbuf || !s->rz || !s->frozen)
    return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  KTRY(krr_centers_pick(ctx, &s->base.o, s->n, mc, s->cidx_h));
  KTRY(ctx->ops->upload(ctx, s->cidx, s->cidx_h, sizeof(int64_t) * (size_t)mc));
  KTRY(OP(s, gather_points, s->base.pb->X, s->p, s->cidx, mc, s->Xc));
  KTRY(ctx->ops->zero(ctx, s->a, ds * (size_t)len));
  KTRY(ctx->ops->zero(ctx, s->ha, ds * (size_t)len));
  KTRY(ctx->ops->zero(ctx, s->pd, ds * (size_t)len));
  return ctx->ops->zero(ctx, s->base.w, es * (size_t)len);
}

krr_status krr_falkon_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                           krr_solver **out) {
  KTRY(falkon_check(ctx, pb, o));
  falkon_t *s = (falkon_t *)calloc(1, sizeof(falkon_t));
  if (!s) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  s->base.vt = &falkon_vt;
  s->base.ctx = ctx;
  s->base.pb = pb;
  s->base.o = *o;
  s->base.es = krr_sizeof(pb->prec);
  s->n = pb->n; s->p = pb->p; s->m = pb->m;
  s->mc = krr_centers_count(pb, o);
  s->base.o.n_centers = s->mc;
  s->every = o->resid_every > 0 ? o->resid_every : 50;
  krr_status st = falkon_alloc(s);
  s->base.o.centers = NULL; /* not kept: the caller's array may go away */
  if (st != KRR_OK) { falkon_free(&s->base); return st; }
  s->base.diag.block_size = pb->n;
  s->base.diag.rank = (int)s->mc;
  s->base.diag.resid_est = 1.0;
  s->base.diag.block_resid = NAN;
  s->base.diag.rho = pb->lambda;
  *out = &s->base;
  return KRR_OK;
}
