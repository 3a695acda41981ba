/* sampling/: which rows a solver touches -- uniform blocks, ridge-leverage-
 * score blocks, and the centres of the inducing-point solvers. */
#ifndef KRR_SAMPLING_H
#define KRR_SAMPLING_H
#include "../op/op.h"

/* out = a random permutation of 0..n-1 (Fisher-Yates on the counter-based
 * stream: the same on every device and thread count) */
void krr_sample_permutation(uint64_t stream, int64_t n, int64_t *out);

/* b distinct indices uniformly from 0..n-1, sorted ascending (Floyd's
 * algorithm; mark is a zeroed bitmap of n bits, left zeroed). */
void krr_sample_uniform(uint64_t seed, int64_t n, int64_t b, uint64_t *mark, int64_t *out);

/* --- approximate ridge-leverage-score sampling (rls.c) ----------------------- */
typedef struct krr_rls {
  int64_t n, hcap;
  double *invw;   /* host n: 1 / (floored score) */
  double *hkey;   /* host b-heap keys */
  int64_t *hidx;  /* host b-heap indices */
  double deff;    /* sum of the (unfloored) scores: estimate of the effective dimension */
} krr_rls;

/* host n scores of the operator at lambda with a uniform dictionary of s rows */
krr_status krr_rls_scores(krr_op *op, double lambda, int64_t s, uint64_t seed, double *scores);
double krr_rls_memory(int64_t n, int64_t b);
krr_status krr_rls_alloc(krr_arena *a, int64_t n, int64_t b, krr_rls *r);
/* the sampling weights for lambda (again after a change of lambda) */
krr_status krr_rls_compute(krr_rls *r, krr_op *op, double lambda, int64_t s, uint64_t seed);
/* b distinct indices ~ scores without replacement, sorted ascending */
void krr_rls_sample(krr_rls *r, uint64_t stream, int64_t b, int64_t *out);

/* --- centres of the inducing-point solvers (centers.c) ----------------------- */
/* the default count min(n, 20000, ceil(sqrt(n) log n)) */
int64_t krr_centers_default(int64_t n);
/* given rows (idx, len >= 2: the centres; else count, 0: the default):
 * validated (input errors name `centers`), the count resolved */
krr_status krr_centers_resolve(krr_ctx *ctx, int64_t n, const int64_t *idx, int64_t len,
                               int64_t *count);
/* the centres (host, 0-based rows): the given ones, or mc drawn uniformly
 * without replacement, sorted (stream 20 of seed: Falkon and EigenPro 3.0
 * draw the same centres for the same seed) */
krr_status krr_centers_pick(krr_ctx *ctx, const int64_t *idx, int64_t len, uint64_t seed,
                            int64_t n, int64_t mc, int64_t *out);
#endif
