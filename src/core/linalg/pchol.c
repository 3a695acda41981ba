/* Greedy partial (pivoted) Cholesky of a kernel operator, pivots taken in
 * blocks so that the work is matrix-matrix (Harbrecht, Peters and Schneider
 * 2012 for the greedy rule; the blocked update as in Chen, Epperly, Tropp and
 * Webber's block RPCholesky).  K ~ L L^T with E = K - L L^T psd and its
 * diagonal known exactly: the Nystrom approximation K_{:S} K_SS^{-1} K_{S:}
 * of the chosen pivots S, whatever rule chose them.
 *
 * Each block takes the c largest (weighted) residual diagonal entries as
 * candidates, forms their kernel columns K(X, X_C) (one operator product),
 * subtracts the factor so far in one GEMM, L L_C^T, and then accepts the
 * candidates one at a time on the host in greedy order (largest current
 * residual first), each against the candidates accepted before it in the
 * block.  A candidate whose residual has fallen below a quarter of the
 * largest residual anywhere (a near-duplicate of an accepted pivot) ends
 * the block, so the pivots stay close to the one-at-a-time greedy ones; the
 * block size adapts (halved when a block ends early, doubled when it is used
 * up, up to 256 and to n x size <= 2^24 numbers). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "linalg.h"

#define PCHOL_MAX_BLOCK 256

/* the c largest of score over i with score[i] > 0, into idx (descending);
 * returns how many */
static int top_scores(const double *score, int64_t n, int c, int64_t *idx) {
  int got = 0;
  for (int64_t i = 0; i < n; i++) {
    double v = score[i];
    if (!(v > 0)) continue;
    if (got == c && v <= score[idx[got - 1]]) continue;
    int k = got < c ? got++ : c - 1;
    while (k > 0 && score[idx[k - 1]] < v) { idx[k] = idx[k - 1]; k--; }
    idx[k] = i;
  }
  return got;
}

/* the weighted residual pw_i d_i */
static inline double wres(const double *pw, const double *d, int64_t i) {
  return pw ? pw[i] * d[i] : d[i];
}

/* candidates per block: at most 256 and n x cap buffers of at most 2^24
 * numbers, at least 8, at most r */
static int block_cap(int64_t n, int r) {
  int64_t cap = ((int64_t)1 << 24) / (n > 0 ? n : 1);
  if (cap < 8) cap = 8;
  if (cap > PCHOL_MAX_BLOCK) cap = PCHOL_MAX_BLOCK;
  return r < cap ? r : (int)cap;
}

double krr_pivoted_cholesky_memory(const krr_op *op, int r) {
  const int64_t n = op->n;
  double cap = (double)block_cap(n, r);
  /* C and L[cand, ] on the device, Ch and Lb, score, cand and flags on the
   * host, and the operator's block of cap rows */
  return (double)op->es * ((double)n * cap + cap * (double)r) +
         8.0 * (2.0 * (double)n * cap + (double)n + cap) + cap + krr_block_bytes(op, (int64_t)cap);
}

krr_status krr_pivoted_cholesky(krr_op *op, const double *pw, int r, double stop_trace,
                                double tiny, void *L, double *d, int64_t *piv, int *rank) {
  krr_ctx *ctx = op->ctx;
  const int64_t n = op->n;
  const size_t es = op->es;
  *rank = 0;
  if (op->nloc != n)
    return krr_fail(ctx, KRR_ERR_INTERNAL, "pivoted Cholesky needs the whole operator on one process");
  if (r < 0 || r > n) return krr_fail(ctx, KRR_ERR_INPUT, "rank %d outside [0, %lld]", r, (long long)n);
  if (r == 0) return krr_op_diag(op, NULL, d);
  const int cap = block_cap(n, r); /* three n x cap buffers: <= 384 MiB in double */
  krr_arena a;
  krr_arena_init(&a, ctx);
  krr_block blk;
  void *C = krr_arena_dev(&a, n * cap, es);     /* candidate columns */
  void *LC = krr_arena_dev(&a, (int64_t)cap * r, es); /* rows C of L */
  double *Ch = (double *)krr_arena_host(&a, n * cap, sizeof(double));
  double *Lb = (double *)krr_arena_host(&a, n * cap, sizeof(double));
  double *score = (double *)krr_arena_host(&a, n, sizeof(double));
  int64_t *cand = (int64_t *)krr_arena_host(&a, cap, sizeof(int64_t));
  char *used = (char *)krr_arena_host(&a, cap, 1);
  krr_status st = KRR_ALLOCATED(&a, C, LC, Ch, Lb, score, cand, used);
  if (st == KRR_OK) st = krr_block_alloc(op, &a, cap, &blk);
  if (st == KRR_OK) st = krr_op_diag(op, NULL, d);
  int j = 0, bs = cap < 32 ? cap : 32;
  while (st == KRR_OK && j < r) {
    if ((st = krr_poll(ctx)) != KRR_OK) break;
    double tot = 0;
    for (int64_t i = 0; i < n; i++) {
      score[i] = wres(pw, d, i);
      tot += score[i];
    }
    int want = r - j < bs ? r - j : bs;
    int c = top_scores(score, n, want, cand);
    if (tot <= stop_trace || c == 0 || !(score[cand[0]] > tiny)) break;
    /* C = K(X, X_cand) - L L[cand, ]^T */
    if ((st = krr_block_set(op, &blk, cand, c)) != KRR_OK) break;
    if ((st = krr_op_mat(op, NULL, &blk, C, n)) != KRR_OK) break;
    if (j > 0) {
      if ((st = krr_op_gather(op, &blk, L, j, LC, c)) != KRR_OK) break;
      st = KOP(ctx, op->prec, gemm, 0, 1, n, c, j, -1.0, L, n, LC, c, 1.0, C, n);
      if (st != KRR_OK) break;
    }
    if ((st = krr_download_vec(ctx, op->prec, C, n * c, Ch)) != KRR_OK) break;
    memset(used, 0, (size_t)c);
    int acc = 0;
    double dmax = score[cand[0]]; /* the largest residual anywhere, kept current */
    for (;;) {
      /* the unused candidate of largest current residual, against dmax */
      int u = -1;
      double best = 0;
      for (int t = 0; t < c; t++) {
        double v = wres(pw, d, cand[t]);
        if (!used[t] && v > best) { best = v; u = t; }
      }
      if (u < 0 || !(best > tiny) || best < 0.25 * dmax || j + acc >= r) break;
      used[u] = 1;
      const int64_t s = cand[u];
      double *col = Lb + (int64_t)acc * n, *cu = Ch + (int64_t)u * n;
      memcpy(col, cu, sizeof(double) * (size_t)n);
      for (int q = 0; q < acc; q++) {
        const double *lq = Lb + (int64_t)q * n;
        const double f = lq[s];
        for (int64_t i = 0; i < n; i++) col[i] -= f * lq[i];
      }
      const double g = col[s];
      if (!((pw ? pw[s] : 1.0) * g > tiny) || !isfinite(g)) {
        /* numerically dependent on the pivots so far: its residual is g */
        d[s] = g > 0 && isfinite(g) ? g : 0;
        dmax = 0;
        for (int64_t i = 0; i < n; i++) dmax = fmax(dmax, wres(pw, d, i));
        continue;
      }
      const double sg = sqrt(g);
      d[s] = 0;
      dmax = 0;
      for (int64_t i = 0; i < n; i++) {
        col[i] /= sg;
        d[i] -= col[i] * col[i];
        if (d[i] < 0 || i == s) d[i] = 0;
        dmax = fmax(dmax, wres(pw, d, i));
      }
      piv[j + acc] = s;
      acc++;
    }
    if (acc > 0) {
      st = krr_upload_vec_into(ctx, op->prec, Lb, n * acc, KAT(L, (int64_t)j * n, es));
      j += acc;
    }
    /* adapt the block: early end halves it, a used-up one doubles it */
    if (acc < c && bs > 1) bs /= 2;
    else if (acc == c && bs < cap) bs = bs * 2 < cap ? bs * 2 : cap;
  }
  krr_arena_free(&a);
  *rank = j;
  return st;
}

krr_status krr_kernel_pchol_host(krr_ctx *ctx, const krr_kernel *k, const double *X, int64_t n,
                                 int p, const double *pw, int r, double stop_trace, double tiny,
                                 double *L, double *d, int64_t *piv, int *rank) {
  krr_problem pb = {0};
  krr_op *op = NULL;
  void *dL = NULL;
  *rank = 0;
  krr_status st = krr_problem_create(ctx, KRR_DOUBLE, X, n, p, &pb);
  if (st == KRR_OK) st = krr_op_exact_create(ctx, &pb, *k, &op);
  if (st == KRR_OK && !(dL = krr_dalloc(ctx, n * (int64_t)(r > 0 ? r : 1), sizeof(double))))
    st = ctx->status;
  if (st == KRR_OK) st = krr_pivoted_cholesky(op, pw, r, stop_trace, tiny, dL, d, piv, rank);
  if (st == KRR_OK && *rank > 0) st = krr_download_vec(ctx, KRR_DOUBLE, dL, n * (int64_t)*rank, L);
  krr_dfree(ctx, &dL);
  if (op) krr_op_free(op);
  krr_problem_free(ctx, &pb);
  return st;
}
