/* Core-internal helpers.  Solvers are written ONCE over void* device buffers
 * and call the precision-specific op through KOP(), which picks the _s or _d
 * entry of the table from the problem's precision (scalars are doubles, so the
 * same call serves both). */
#ifndef KRR_INTERNAL_H
#define KRR_INTERNAL_H
#include <stdlib.h>
#include "ops.h"

#define KOP(ctx, prec, name, ...)                                         \
  ((prec) == KRR_DOUBLE ? (ctx)->ops->name##_d((ctx), __VA_ARGS__)        \
                        : (ctx)->ops->name##_s((ctx), __VA_ARGS__))

/* propagate a failing status */
#define KTRY(expr)                    \
  do {                                \
    krr_status st_ = (expr);          \
    if (st_ != KRR_OK) return st_;    \
  } while (0)

/* byte offset of element i in a prec buffer */
#define KAT(ptr, i, es) ((void *)((char *)(ptr) + (size_t)(i) * (es)))

/* allocate a device buffer of count elements of es bytes (NULL: error set) */
static inline void *krr_dalloc(krr_ctx *ctx, int64_t count, size_t es) {
  return ctx->ops->alloc(ctx, (size_t)(count > 0 ? count : 1) * es);
}
static inline void krr_dfree(krr_ctx *ctx, void **p) {
  if (*p) ctx->ops->dealloc(ctx, *p);
  *p = NULL;
}

/* upload len host doubles into an existing device buffer of prec */
krr_status krr_upload_vec_into(krr_ctx *ctx, krr_precision prec, const double *h, int64_t len,
                               void *dst);
/* host conversions */
void krr_host_to_prec(krr_precision prec, const double *src, int64_t len, void *dst);
void krr_prec_to_host(krr_precision prec, const void *src, int64_t len, double *dst);

/* Solver vtable: each solver kind fills one. */
typedef struct krr_solver_vt {
  krr_status (*step)(krr_solver *s, int64_t iters);
  void (*free)(krr_solver *s);
  /* optional (NULL: the generic n x m versions in solver.c) */
  krr_status (*weights)(krr_solver *s, double *w_out);
  krr_status (*residual)(krr_solver *s, double *relres);
  int64_t (*ncenters)(const krr_solver *s);
  krr_status (*centers)(krr_solver *s, int64_t *idx_out);
} krr_solver_vt;

/* Shared solver header; concrete solvers extend it (first member). */
struct krr_solver {
  const krr_solver_vt *vt;
  krr_ctx *ctx;
  const krr_problem *pb;
  krr_solver_opts o;
  size_t es;
  void *w; /* device n x m: the current weights */
  krr_diag diag;
};

krr_status krr_askotch_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                            krr_solver **out);
krr_status krr_cholesky_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                             krr_solver **out);
size_t krr_askotch_memory(const krr_problem *pb, const krr_solver_opts *o, int64_t b, int r,
                          int materialize);
void krr_askotch_resolve(const krr_problem *pb, krr_solver_opts *o);

krr_status krr_pcg_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                        krr_solver **out);
size_t krr_pcg_memory(const krr_problem *pb, const krr_solver_opts *o);
krr_status krr_falkon_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                           krr_solver **out);
size_t krr_falkon_memory(const krr_problem *pb, const krr_solver_opts *o);

/* Inducing points (falkon.c; shared with EigenPro 3.0): the number of centres
 * (o->n_centers or min(n, 20000, ceil(sqrt(n) log n))), the validation of
 * o->n_centers / o->centers, and the centres themselves (host, 0-based rows:
 * o->centers, or mc drawn uniformly without replacement, sorted). */
int64_t krr_centers_count(const krr_problem *pb, const krr_solver_opts *o);
krr_status krr_centers_check(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o);
krr_status krr_centers_pick(krr_ctx *ctx, const krr_solver_opts *o, int64_t n, int64_t mc,
                            int64_t *out);

/* --- low-rank preconditioners (nystrom.c) ------------------------------------
 * P + rho I on an n-dimensional space with P = U diag(lam) U^T (U n x r_eff on
 * the device).  Built either by the randomized Nystrom sketch of a psd M
 * (ALGORITHMS.md section 2, krr_nystrom_sketch: U orthonormal in exact
 * arithmetic) or from a partial Cholesky factor F (U = F, lam = 1).
 * Inverse: with orth (double-precision Nystrom) U (Lam+rho)^{-1} U^T g +
 * (g - U U^T g)/rho; otherwise the Woodbury form (g - U C^{-1} C^{-T} U^T g)/rho
 * with C^T C = rho diag(1/lam) + U^T U (upper Cholesky). */
typedef struct krr_lowrank {
  krr_precision prec;
  int64_t n;
  int r, r_eff, mmax;
  int orth;           /* U has orthonormal columns (use the orthogonal form) */
  double rho;
  void *U, *Y;        /* n x r: basis / factor, and sketch workspace */
  void *C;            /* r x r */
  void *S, *dinv, *dsq; /* r */
  void *t;            /* r x mmax */
  double *lam, *hv;   /* host r */
} krr_lowrank;

/* Y(n x q, ld n) = M V(n x q, ld n) for the psd M being sketched */
typedef krr_status (*krr_matmul_fn)(void *arg, const void *V, int q, void *Y);

krr_status krr_lowrank_alloc(krr_ctx *ctx, krr_precision prec, int64_t n, int r, int mmax,
                             krr_lowrank *lr);
void krr_lowrank_free(krr_ctx *ctx, krr_lowrank *lr);
size_t krr_lowrank_memory(krr_precision prec, int64_t n, int r, int mmax);
/* Nystrom sketch of M (trace tr) into U, lam, r_eff (Alg. 2 with shift retries) */
krr_status krr_nystrom_sketch(krr_ctx *ctx, krr_lowrank *lr, krr_matmul_fn mv, void *arg,
                              double trace, uint64_t seed);
/* rho from the mode: damped lambda + lam_r, regularization lambda, or value */
double krr_lowrank_rho(const krr_lowrank *lr, krr_rho_mode mode, double value, double lambda);
/* set rho; precompute the diagonal factors and (unless orth in double) C */
krr_status krr_lowrank_prepare(krr_ctx *ctx, krr_lowrank *lr, double rho);
/* out = (P + rho I)^{-1} in, in/out n x m (ld n), m <= mmax; out may equal in */
krr_status krr_lowrank_inv(krr_ctx *ctx, krr_lowrank *lr, const void *in, void *out, int m);
/* out = (P + rho I)^{-1/2} in (orthonormal U only) */
krr_status krr_lowrank_invsqrt(krr_ctx *ctx, krr_lowrank *lr, const void *in, void *out, int m);

/* --- approximate ridge-leverage-score sampling (rls.c) -------------------- */
typedef struct krr_rls krr_rls;
/* scores (host n doubles) with a uniform dictionary of s points; once at init */
krr_status krr_rls_scores(krr_ctx *ctx, const krr_problem *pb, int64_t s, uint64_t seed,
                          double *scores);
int64_t krr_rls_subsample(const krr_problem *pb, const krr_solver_opts *o);
/* sampler for blocks of up to b indices (validates o->rls_subsample) */
krr_status krr_rls_create(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                          int64_t b, krr_rls **out);
/* b distinct indices ~ scores without replacement, sorted ascending */
void krr_rls_sample(krr_rls *r, uint64_t stream, int64_t b, int64_t *out);
double krr_rls_deff(const krr_rls *r);
void krr_rls_free(krr_rls *r);

/* --- EigenPro 2.0 / 3.0 (eigenpro.c), ASkotch v1 (askotch_v1.c) ---------- */
krr_status krr_eigenpro_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                             krr_solver **out);
size_t krr_eigenpro_memory(const krr_problem *pb, const krr_solver_opts *o);
/* EigenPro 3.0 (eigenpro3.c; ep_version = 3) and the EigenPro 2.0 iteration it
 * uses as its projection: an EigenPro 2.0 solver for pb whose automatic step is
 * multiplied by step_scale (options validated as for ep_version = 2). */
krr_status krr_eigenpro3_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                              krr_solver **out);
size_t krr_eigenpro3_memory(const krr_problem *pb, const krr_solver_opts *o);
krr_status krr_ep2_create(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                          double step_scale, krr_solver **out);
/* ep_batch in [0, n], ep_step >= 0 and finite (input errors otherwise) */
krr_status krr_ep_check_batch_step(krr_ctx *ctx, const krr_solver_opts *o, int64_t n);
/* Top-q eigensystem of K(Xs, Xs), S points: U (device S x q, largest first),
 * w (host, S eigenvalues ascending). */
krr_status krr_ep_eigensystem(krr_ctx *ctx, const krr_problem *pb, const void *Xs, int64_t S,
                              int q, void *U, double *w);
krr_status krr_askotch_v1_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                               krr_solver **out);
size_t krr_askotch_v1_memory(const krr_problem *pb, const krr_solver_opts *o);

/* Block residual of (K + lambda I) w = y on the rows idx (b of them, points
 * XB already gathered): g(b x m) = K(XB, X) w + lambda w_B - y_B, using gb
 * (b x m) as scratch (it holds y_B on return).  *gnorm = ||g||_F,
 * *ynorm = ||y_B||_F; a non-finite residual is a KRR_ERR_NUMERIC. */
krr_status krr_block_residual(krr_ctx *ctx, const krr_problem *pb, const void *XB,
                              const int64_t *idx, int64_t b, const void *w, void *g, void *gb,
                              double *gnorm, double *ynorm);

/* Uniform sample of b distinct indices from 0..n-1, sorted ascending
 * (Floyd's algorithm; mark is a zeroed bitmap of n bits, left zeroed). */
void krr_sample_uniform(uint64_t seed, int64_t n, int64_t b, uint64_t *mark, int64_t *out);
#endif
