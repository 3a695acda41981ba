/* Solver front: options, dispatch on kind, sampling, memory planning. */
#include <math.h>
#include <string.h>
#include "internal.h"
#include "rng.h"

void krr_solver_opts_default(krr_solver_opts *o) {
  memset(o, 0, sizeof *o);
  o->kind = KRR_SOLVER_ASKOTCH;
  o->rho_mode = KRR_RHO_DAMPED;
  o->power_iters = 10;
}

size_t krr_solver_memory(const krr_problem *pb, const krr_solver_opts *o, int materialize) {
  if (o->kind == KRR_SOLVER_CHOLESKY)
    return krr_sizeof(pb->prec) * (size_t)(pb->n * pb->n + 2 * pb->n * (int64_t)pb->m);
  if (o->kind == KRR_SOLVER_PCG) return krr_pcg_memory(pb, o);
  if (o->kind == KRR_SOLVER_FALKON) return krr_falkon_memory(pb, o);
  if (o->kind == KRR_SOLVER_EIGENPRO) return krr_eigenpro_memory(pb, o);
  if (o->kind == KRR_SOLVER_ASKOTCH_V1) return krr_askotch_v1_memory(pb, o);
  krr_solver_opts r = *o;
  krr_askotch_resolve(pb, &r);
  return krr_askotch_memory(pb, &r, r.block_size, r.rank, materialize);
}

int64_t krr_suggest_block(const krr_problem *pb, const krr_solver_opts *o, size_t avail) {
  krr_solver_opts r = *o;
  krr_askotch_resolve(pb, &r);
  int64_t lo = 0, hi = r.block_size;
  while (lo < hi) { /* largest b with memory(b) <= avail (matrix-free K_BB) */
    int64_t mid = lo + (hi - lo + 1) / 2;
    int rk = r.rank < mid ? r.rank : (int)mid;
    if (krr_askotch_memory(pb, &r, mid, rk, 0) <= avail) lo = mid; else hi = mid - 1;
  }
  return lo;
}

krr_status krr_solver_init(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                           krr_solver **out) {
  *out = NULL;
  switch (o->kind) {
    case KRR_SOLVER_ASKOTCH:
    case KRR_SOLVER_SKOTCH:
    case KRR_SOLVER_SAP:
    case KRR_SOLVER_NSAP: return krr_askotch_init(ctx, pb, o, out);
    case KRR_SOLVER_CHOLESKY: return krr_cholesky_init(ctx, pb, o, out);
    case KRR_SOLVER_PCG: return krr_pcg_init(ctx, pb, o, out);
    case KRR_SOLVER_FALKON: return krr_falkon_init(ctx, pb, o, out);
    case KRR_SOLVER_EIGENPRO: return krr_eigenpro_init(ctx, pb, o, out);
    case KRR_SOLVER_ASKOTCH_V1: return krr_askotch_v1_init(ctx, pb, o, out);
    default: return krr_fail(ctx, KRR_ERR_INPUT, "unknown solver kind %d", (int)o->kind);
  }
}

krr_status krr_solver_step(krr_solver *s, int64_t iters) {
  if (!s) return KRR_ERR_INTERNAL;
  if (iters < 1) return KRR_OK;
  s->ctx->status = KRR_OK;
  s->ctx->msg[0] = '\0';
  return s->vt->step(s, iters);
}

void krr_solver_diag(const krr_solver *s, krr_diag *out) { *out = s->diag; }

krr_status krr_solver_weights(krr_solver *s, double *w_out) {
  if (s->vt->weights) return s->vt->weights(s, w_out);
  return krr_download_vec(s->ctx, s->pb->prec, s->w, s->pb->n * (int64_t)s->pb->m, w_out);
}

krr_status krr_solver_residual(krr_solver *s, double *rel) {
  if (s->vt->residual) return s->vt->residual(s, rel);
  return krr_problem_residual(s->ctx, s->pb, s->w, rel);
}

int64_t krr_solver_ncenters(const krr_solver *s) {
  return s && s->vt->ncenters ? s->vt->ncenters(s) : 0;
}

krr_status krr_solver_centers(krr_solver *s, int64_t *idx_out) {
  if (!s) return KRR_ERR_INTERNAL;
  return s->vt->centers ? s->vt->centers(s, idx_out) : KRR_OK;
}

void krr_solver_free(krr_solver *s) {
  if (s) s->vt->free(s);
}

/* Floyd's algorithm: b distinct uniform draws from 0..n-1 in O(b) expected
 * time, membership in a bitmap; the result is sorted so that gathers walk
 * memory forward. */
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

void krr_sample_uniform(uint64_t seed, int64_t n, int64_t b, uint64_t *mark, int64_t *out) {
  int64_t k = 0;
  for (int64_t j = n - b; j < n; j++) {
    uint64_t t = krr_rng_bits(seed, (uint64_t)k) % (uint64_t)(j + 1);
    uint64_t pick = (mark[t >> 6] >> (t & 63)) & 1u ? (uint64_t)j : t;
    mark[pick >> 6] |= (uint64_t)1 << (pick & 63);
    out[k++] = (int64_t)pick;
  }
  for (int64_t i = 0; i < b; i++) mark[(uint64_t)out[i] >> 6] = 0; /* leave bitmap zeroed */
  qsort(out, (size_t)b, sizeof(int64_t), cmp_i64);
}

krr_status krr_block_residual(krr_ctx *ctx, const krr_problem *pb, const void *XB,
                              const int64_t *idx, int64_t b, const void *w, void *g, void *gb,
                              double *gnorm, double *ynorm) {
  krr_precision prec = pb->prec;
  int64_t n = pb->n;
  int m = pb->m;
  KTRY(KOP(ctx, prec, kernel_mv, &pb->kernel, XB, b, pb->X, n, pb->p, w, n, m, g, b));
  KTRY(KOP(ctx, prec, gather_rows, w, n, m, idx, b, gb, b));
  KTRY(KOP(ctx, prec, axpby, b * m, pb->lambda, gb, 1.0, g));
  KTRY(KOP(ctx, prec, gather_rows, pb->y, n, m, idx, b, gb, b));
  KTRY(KOP(ctx, prec, axpby, b * m, -1.0, gb, 1.0, g));
  KTRY(KOP(ctx, prec, nrm2, b * m, g, gnorm));
  KTRY(KOP(ctx, prec, nrm2, b * m, gb, ynorm));
  if (!isfinite(*gnorm))
    return krr_fail(ctx, KRR_ERR_NUMERIC, "the iterate diverged (non-finite residual)");
  return KRR_OK;
}
