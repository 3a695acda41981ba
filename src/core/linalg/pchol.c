/* Greedy partial (pivoted) Cholesky of a kernel operator, pivots taken in
 * blocks so that the work is matrix-matrix (Harbrecht, Peters and Schneider
 * 2012 for the greedy rule; the blocked update as in Chen, Epperly, Tropp and
 * Webber's block RPCholesky).  K ~ L L^T with E = K - L L^T psd and its
 * diagonal known exactly: the Nystrom approximation K_{:S} K_SS^{-1} K_{S:}
 * of the chosen pivots S, whatever rule chose them.
 *
 * Each block takes the c largest (weighted) residual diagonal entries as
 * candidates C and forms their residual columns R = K(X, X_C) - L L_C^T (one
 * operator product and one GEMM).  The greedy steps run on the c x c matrix
 * G = R[C, :] alone (a pivoted Cholesky on the host, O(c^3)): candidates are
 * accepted in greedy order (largest current residual first) while the
 * residual is at least a quarter of the largest one outside the block (an
 * upper bound: the outside residuals as they were when the block began), so
 * a near-duplicate of an accepted pivot ends the block and the pivots stay
 * close to the one-at-a-time greedy ones.  The a accepted columns are then
 * L_A = R[:, A] T^{-T}, T the a x a Cholesky factor of G[A, A] (one
 * triangular solve), and the residual diagonal drops by the squared row
 * norms of L_A.  The block size adapts (halved when fewer than half its
 * candidates are taken, doubled when three quarters are, up to 256 and to
 * n x size <= 2^24 numbers): each block reads all of L once, so blocks
 * that one near-duplicate candidate halved made the build memory-bound. */
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

/* the pivot weight pw_i (1 without weights) */
static inline double wgt(const double *pw, int64_t i) { return pw ? pw[i] : 1.0; }

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
  /* R, L[cand, ], G and T^T on the device; the accepted columns, G, its
   * factor, score, cand and flags on the host; the operator's block of cap rows */
  return (double)op->es * ((double)n * cap + cap * (double)r + cap * cap) +
         8.0 * ((double)n * cap + 2.0 * cap * cap + (double)n + 2.0 * cap) + 5.0 * cap +
         krr_block_bytes(op, (int64_t)cap);
}

krr_status krr_pivoted_cholesky(krr_op *op, const double *pw, int r, double stop_trace, double tiny,
                                double stop_at, void *L, double *d, int64_t *piv, int *rank) {
  krr_ctx *ctx = op->ctx;
  const int64_t n = op->n;
  const size_t es = op->es;
  *rank = 0;
  if (op->nloc != n)
    return krr_fail(ctx, KRR_ERR_INTERNAL, "pivoted Cholesky needs the whole operator on one process");
  if (r < 0 || r > n) return krr_fail(ctx, KRR_ERR_INPUT, "rank %d outside [0, %lld]", r, (long long)n);
  if (r == 0) return krr_op_diag(op, NULL, d);
  const int cap = block_cap(n, r); /* two n x cap buffers: <= 256 MiB in double */
  krr_arena a;
  krr_arena_init(&a, ctx);
  krr_block blk;
  void *C = krr_arena_dev(&a, n * cap, es);           /* residual columns of the candidates */
  void *LC = krr_arena_dev(&a, (int64_t)cap * r, es); /* rows C of L */
  void *Gd = krr_arena_dev(&a, (int64_t)cap * cap, es); /* G = R[C, :], then T^T */
  double *Lh = (double *)krr_arena_host(&a, n * cap, sizeof(double)); /* accepted columns */
  double *G = (double *)krr_arena_host(&a, (int64_t)cap * cap, sizeof(double));
  double *T = (double *)krr_arena_host(&a, (int64_t)cap * cap, sizeof(double));
  double *score = (double *)krr_arena_host(&a, n, sizeof(double));
  int64_t *cand = (int64_t *)krr_arena_host(&a, cap, sizeof(int64_t));
  int *acc_t = (int *)krr_arena_host(&a, cap, sizeof(int)); /* accepted candidates, in order */
  char *used = (char *)krr_arena_host(&a, cap, 1);
  double *g = (double *)krr_arena_host(&a, cap, sizeof(double)); /* candidates' residuals */
  krr_status st = KRR_ALLOCATED(&a, C, LC, Gd, Lh, G, T, score, cand, acc_t, used, g);
  if (st == KRR_OK) st = krr_block_alloc(op, &a, cap, &blk);
  if (st == KRR_OK) st = krr_op_diag(op, NULL, d);
  int j = 0, bs = cap < 32 ? cap : 32;
  while (st == KRR_OK && j < r) {
    if ((st = krr_poll(ctx)) != KRR_OK) break;
    if (j > 0 && stop_at > 0 && krr_now() >= stop_at) break;
    double tot = 0;
    for (int64_t i = 0; i < n; i++) {
      score[i] = wgt(pw, i) * d[i];
      tot += score[i];
    }
    int want = r - j < bs ? r - j : bs;
    int c = top_scores(score, n, want, cand);
    if (tot <= stop_trace || c == 0 || !(score[cand[0]] > tiny)) break;
    /* the largest weighted residual outside the candidates */
    double dout = 0;
    for (int t = 0; t < c; t++) score[cand[t]] = -1;
    for (int64_t i = 0; i < n; i++) dout = fmax(dout, score[i]);
    /* R = K(X, X_cand) - L L[cand, ]^T; G = R[cand, ] */
    if ((st = krr_block_set(op, &blk, cand, c)) != KRR_OK) break;
    if ((st = krr_op_mat(op, NULL, &blk, C, n)) != KRR_OK) break;
    if (j > 0) {
      if ((st = krr_op_gather(op, &blk, L, j, LC, c)) != KRR_OK) break;
      st = krr_gemm_polled(ctx, op->prec, 0, 1, n, c, j, -1.0, L, n, LC, c, 1.0, C, n);
      if (st != KRR_OK) break;
    }
    if ((st = krr_op_gather(op, &blk, C, c, Gd, c)) != KRR_OK) break;
    if ((st = krr_download_vec(ctx, op->prec, Gd, (int64_t)c * c, G)) != KRR_OK) break;
    /* greedy pivoted Cholesky of G: T (c x acc, column q = the q-th accepted
     * pivot's column over the candidates) */
    memset(used, 0, (size_t)c);
    for (int t = 0; t < c; t++) g[t] = G[(int64_t)t * c + t];
    int acc = 0;
    for (;;) {
      int u = -1;
      double best = 0;
      for (int t = 0; t < c; t++) {
        double v = wgt(pw, cand[t]) * g[t];
        if (!used[t] && v > best) { best = v; u = t; }
      }
      /* (the block's first pivot is not held to dout: rounding may leave the
       * fresh residual below the stale bound, and each block must progress) */
      if (u < 0 || !(best > tiny) || (acc > 0 && best < 0.25 * dout) || j + acc >= r) break;
      used[u] = 1;
      double *tc = T + (int64_t)acc * c;
      for (int t = 0; t < c; t++) tc[t] = G[(int64_t)u * c + t];
      for (int q = 0; q < acc; q++) {
        const double *tq = T + (int64_t)q * c;
        const double f = tq[u];
        for (int t = 0; t < c; t++) tc[t] -= f * tq[t];
      }
      const double gu = tc[u];
      if (!(wgt(pw, cand[u]) * gu > tiny) || !isfinite(gu)) {
        /* numerically dependent on the pivots so far: its residual is gu */
        g[u] = gu > 0 && isfinite(gu) ? gu : 0;
        used[u] = 2;
        continue;
      }
      const double sg = sqrt(gu);
      for (int t = 0; t < c; t++) {
        tc[t] /= sg;
        g[t] -= tc[t] * tc[t];
        if (g[t] < 0) g[t] = 0;
      }
      g[u] = 0;
      piv[j + acc] = cand[u];
      acc_t[acc++] = u;
    }
    if (acc > 0) {
      /* L[:, j .. j + acc) = R[:, A] T_AA^{-T}: T_AA^T (upper, acc x acc) into Gd */
      for (int q = 0; q < acc; q++)
        for (int k = 0; k < acc; k++)
          G[(int64_t)q * acc + k] = k <= q ? T[(int64_t)k * c + acc_t[q]] : 0.0;
      void *Lj = KAT(L, (int64_t)j * n, es);
      for (int q = 0; q < acc && st == KRR_OK; q++)
        st = ctx->ops->copy(ctx, KAT(Lj, (int64_t)q * n, es), KAT(C, (int64_t)acc_t[q] * n, es),
                            es * (size_t)n);
      if (st == KRR_OK) st = krr_upload_vec_into(ctx, op->prec, G, (int64_t)acc * acc, Gd);
      if (st == KRR_OK)
        st = krr_trsm_polled(ctx, op->prec, 1, 0, n, acc, 1.0, Gd, acc, Lj, n);
      if (st == KRR_OK) st = krr_download_vec(ctx, op->prec, Lj, n * acc, Lh);
      if (st != KRR_OK) break;
      for (int q = 0; q < acc; q++) {
        const double *lq = Lh + (int64_t)q * n;
        for (int64_t i = 0; i < n; i++) d[i] -= lq[i] * lq[i];
      }
      for (int64_t i = 0; i < n; i++)
        if (d[i] < 0) d[i] = 0;
      for (int q = 0; q < acc; q++) d[piv[j + q]] = 0;
      j += acc;
    }
    /* the candidates not taken keep the smaller of the two residuals: the
     * fresh one from G (after this block's pivots) is the more accurate when
     * it is tiny, and a dependent candidate (or one whose fresh residual is
     * below tiny) is not picked again, so every block makes progress */
    for (int t = 0; t < c; t++)
      if (used[t] != 1) d[cand[t]] = fmin(d[cand[t]], g[t]);
    /* adapt the block: a mostly unused one halves it, a mostly used one doubles it */
    if (2 * acc < c && bs > 1) bs /= 2;
    else if (4 * acc >= 3 * c && bs < cap) bs = bs * 2 < cap ? bs * 2 : cap;
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
  if (st == KRR_OK) st = krr_pivoted_cholesky(op, pw, r, stop_trace, tiny, 0.0, dL, d, piv, rank);
  if (st == KRR_OK && *rank > 0) st = krr_download_vec(ctx, KRR_DOUBLE, dL, n * (int64_t)*rank, L);
  krr_dfree(ctx, &dL);
  if (op) krr_op_free(op);
  krr_problem_free(ctx, &pb);
  return st;
}
