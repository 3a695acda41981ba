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

/* Uniform sample of b distinct indices from 0..n-1, sorted ascending
 * (Floyd's algorithm; mark is a zeroed bitmap of n bits, left zeroed). */
void krr_sample_uniform(uint64_t seed, int64_t n, int64_t b, uint64_t *mark, int64_t *out);
#endif
