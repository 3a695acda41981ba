/* base/: what every core file uses -- the precision dispatch of the ops
 * table, status propagation, the buffer arena and the option tables.
 * Includes nothing of src/core but the public headers, and declares only
 * what base/ defines. */
#ifndef KRR_BASE_H
#define KRR_BASE_H
#include <stddef.h>
#include <stdlib.h>
#include "../ops.h"

/* Core code is written ONCE over void* device buffers and calls the
 * precision-specific op through KOP(), which picks the _s or _d entry of the
 * table (scalars are doubles, so the same call serves both). */
#define KOP(ctx, prec, name, ...)                                         \
  ((prec) == KRR_DOUBLE ? (ctx)->ops->name##_d((ctx), __VA_ARGS__)        \
                        : (ctx)->ops->name##_s((ctx), __VA_ARGS__))

/* propagate a failing status */
#define KTRY(expr)                    \
  do {                                \
    krr_status st_ = (expr);          \
    if (st_ != KRR_OK) return st_;    \
  } while (0)

/* byte offset of element i in a buffer of es-byte elements */
#define KAT(ptr, i, es) ((void *)((char *)(ptr) + (size_t)(i) * (es)))

#define KRR_MIN(a, b) ((a) < (b) ? (a) : (b))
#define KRR_MAX(a, b) ((a) > (b) ? (a) : (b))

/* a device buffer outside an arena (data, objective, host-level products) */
static inline void *krr_dalloc(krr_ctx *ctx, int64_t count, size_t es) {
  return ctx->ops->alloc(ctx, (size_t)(count > 0 ? count : 1) * es);
}
static inline void krr_dfree(krr_ctx *ctx, void **p) {
  if (*p) ctx->ops->dealloc(ctx, *p);
  *p = NULL;
}

/* --- long factorisations (factor.c) -------------------------------------------
 * Upper Cholesky A = R^T R (n x n, ld lda) in panels with krr_poll between
 * them (one potrf call when n is small); *info > 0: not positive definite at
 * that column (KRR_OK), as the ops table's potrf. */
krr_status krr_potrf_polled(krr_ctx *ctx, krr_precision prec, int64_t n, void *A, int64_t lda,
                            int *info);
/* C = alpha op(A) op(B) + beta C and B = alpha op(A)^{-1} B / B op(A)^{-1},
 * as the ops table's gemm and trsm, in pieces of bounded work with krr_poll
 * between them (one call when the whole is small).  Splitting the inner
 * dimension of a large product changes its rounding, not its result. */
double krr_piece_flops(const krr_ctx *ctx); /* ctx->piece_flops or its default */
krr_status krr_gemm_polled(krr_ctx *ctx, krr_precision prec, int ta, int tb, int64_t m,
                           int64_t n, int64_t k, double alpha, const void *A, int64_t lda,
                           const void *B, int64_t ldb, double beta, void *C, int64_t ldc);
krr_status krr_trsm_polled(krr_ctx *ctx, krr_precision prec, int right, int trans, int64_t m,
                           int64_t n, double alpha, const void *A, int64_t lda, void *B,
                           int64_t ldb);
/* The upper triangle of the symmetric r x r product C = A^T B (A and B
 * k x r, ld lda and ldb): for a Gram matrix (B = A) by syrk over pieces of
 * the inner dimension, else with the diagonal blocks whole, by block
 * columns of polled products (krr_gemm_polled): about half the work of the
 * full product; nothing below the diagonal blocks is written.  For the
 * products whose result is symmetric and read through the upper triangle
 * (potrf). */
krr_status krr_gram_upper_polled(krr_ctx *ctx, krr_precision prec, int64_t r, int64_t k,
                                 const void *A, int64_t lda, const void *B, int64_t ldb, void *C,
                                 int64_t ldc);
/* The upper triangle of C = alpha U U^T (n x n; U upper triangular, ld ldu;
 * the diagonal blocks whole, the rest of C not written), as LAPACK's lauum:
 * by block columns of polled products over the inner indices where U is
 * not zero, about n^3 / 3 flops (a full product: 2 n^3). */
krr_status krr_uut_polled(krr_ctx *ctx, krr_precision prec, int64_t n, double alpha, const void *U,
                          int64_t ldu, void *C, int64_t ldc);
/* KRR_ERR_TIME_LIMIT, up front, when `flops` cannot fit in the time left
 * before the context's deadline even at an optimistic rate ("what" names
 * the work in the message); KRR_OK without a deadline. */
krr_status krr_refuse_flops(krr_ctx *ctx, double flops, const char *what);

/* --- the buffer arena (arena.c) ---------------------------------------------
 * Every buffer a solver (or an operator block, a preconditioner) holds comes
 * from one arena and is freed in one place, krr_arena_free, whatever path the
 * code took: no per-buffer cleanup code.  Device buffers through the ops
 * table, host buffers zeroed.  A NULL return has recorded KRR_ERR_MEMORY in
 * the context. */
typedef struct krr_arena_item krr_arena_item;
typedef struct krr_arena {
  krr_ctx *ctx;
  krr_arena_item *items;
  double bytes;  /* held now */
  double peak;   /* most held at once */
} krr_arena;

void krr_arena_init(krr_arena *a, krr_ctx *ctx);
void *krr_arena_dev(krr_arena *a, int64_t count, size_t es);
void *krr_arena_host(krr_arena *a, int64_t count, size_t es);
/* free one buffer early (no-op for NULL) */
void krr_arena_release(krr_arena *a, void *p);
void krr_arena_free(krr_arena *a);
/* KRR_ERR_MEMORY unless every pointer of the list is non-NULL */
#define KRR_ALLOCATED(a, ...) krr_arena_check((a), (const void *[]){__VA_ARGS__}, \
  sizeof((const void *[]){__VA_ARGS__}) / sizeof(const void *))
krr_status krr_arena_check(krr_arena *a, const void *const *ptrs, size_t count);

/* the memory budget: mem_limit bytes if > 0, else 90% of the device's free memory */
krr_status krr_memory_budget(krr_ctx *ctx, double mem_limit, double *avail);

/* Whether ctx's device memory is host memory (its table is the host table),
 * so host work can run on ctx itself. */
static inline int krr_ctx_on_host(const krr_ctx *ctx) { return ctx->ops == ctx->host_ops; }
/* A context h on ctx's host table (ctx->host_ops) for the host part of work
 * on ctx (a device's latency-bound loops): ctx's threads, polling and
 * deadline.  On failure the reason is on ctx and h needs no freeing.
 * krr_ctx_forward reports a failure st of work on h on ctx (message,
 * interrupt) and clears h; returns st. */
krr_status krr_ctx_host_twin(krr_ctx *ctx, krr_ctx *h);
krr_status krr_ctx_forward(krr_ctx *ctx, krr_ctx *h, krr_status st);

/* --- option tables (options.c) ----------------------------------------------
 * A solver declares its options with an X-macro list in its own file; the
 * options struct of a solver file is always named opts_t (one per file):
 *
 *   #define OPTIONS(X) \
 *     X(rank, INT, 0, 1, 1e9, 0, NULL, "Nystrom rank r (0: automatic)") \
 *     X(rho, RHO, 0, 0, 0, 0, "damped|regularization", "damping")
 *   typedef struct { krr_common_opts common; KRR_OPT_FIELDS(OPTIONS) } opts_t;
 *   static const krr_optdef optdefs[] = {KRR_OPT_DEFS(OPTIONS)};
 *
 * columns: name, type, default, lo, hi, lo_open, choices, doc.  The default
 * need not lie in [lo, hi] (0 often means "automatic"); given values must. */
typedef struct { int mode; double value; } krr_rho;      /* KRR_OPT_RHO */
typedef struct { int64_t *idx; int64_t len; } krr_indices; /* KRR_OPT_INDICES */

typedef struct krr_optdef {
  krr_optinfo info;
  size_t offset;
} krr_optdef;

/* the options every solver takes (first member of every options struct) */
typedef struct krr_common_opts {
  double seed;      /* random stream (a whole number < 2^53) */
  double mem_limit; /* bytes beyond the data (0: 90% of the free device memory) */
} krr_common_opts;

#define KRR_CTYPE_INT int64_t
#define KRR_CTYPE_REAL double
#define KRR_CTYPE_FLAG int
#define KRR_CTYPE_CHOICE int
#define KRR_CTYPE_RHO krr_rho
#define KRR_CTYPE_INDICES krr_indices
#define KRR_OPT_FIELD_(name, type, def, lo, hi, open, ch, doc) KRR_CTYPE_##type name;
#define KRR_OPT_FIELDS(LIST) LIST(KRR_OPT_FIELD_)
#define KRR_OPT_DEF_(name, type, def, lo, hi, open, ch, doc) \
  {{#name, KRR_OPT_##type, (double)(def), (double)(lo), (double)(hi), (open), (ch), (doc)}, \
   offsetof(opts_t, name)},
#define KRR_OPT_DEFS(LIST) LIST(KRR_OPT_DEF_)
#define KRR_NOPTS(defs) ((int)(sizeof(defs) / sizeof((defs)[0])))

/* A solver's option table (solvers embed one in their registry entry). */
typedef struct krr_optable {
  const krr_optdef *defs; /* the solver's own entries (the common ones come first in the full table) */
  int count;
  size_t size;            /* sizeof(opts_t) */
} krr_optable;

/* The options of a solver: its table's struct, zero-based data. */
struct krr_options {
  const krr_optable *table;
  const krr_solver_def *owner;
  void *data;
};
#define KRR_OPTS(o, T) ((T *)(o)->data)

krr_status krr_options_make(krr_ctx *ctx, const krr_optable *t, const krr_solver_def *owner,
                            krr_options **out);
int krr_optable_count(const krr_optable *t);
const krr_optdef *krr_optable_entry(const krr_optable *t, int i);
/* the seed as a stream key */
uint64_t krr_options_seed(const krr_options *o);

#endif
