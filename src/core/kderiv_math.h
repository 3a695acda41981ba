/* The contraction of the Gaussian-process likelihood's gradient,
 * sum_{i,l} w_il dK_c(x_i, x_l) (Rasmussen and Williams 2006, eq. 5.9:
 * tr(M dK/dtheta) with M = alpha alpha^T - A^{-1}), for the listed kernels
 * without forming dK: the pair loop over one block of columns, written once
 * for the core's loop (data/kernel_deriv.c) and the CPU backend's threads
 * (kernel_deriv_dot in ops.h).  The weights are w = s W + U U^T: the n x n
 * matrix W scaled, plus a low-rank part (the likelihood's data term alpha
 * alpha^T), so that the caller never forms their sum.  Host code (C). */
#ifndef KRR_KDERIV_MATH_H
#define KRR_KDERIV_MATH_H
#include <math.h>
#include "kernel_math.h"

/* Columns per block: the unit whose sums are added in a fixed order after
 * the loop, so that the result does not depend on the thread count; rows
 * per chunk: the pairs whose statistics are accumulated together. */
#define KRR_DDOT_BLOCK 32
#define KRR_DDOT_ROWS 64

typedef struct krr_ddot {
  krr_kparams kp;
  int l1;          /* the kernel accumulates the L1 distance */
  const double *X; /* the n points, n x p column-major */
  int64_t n;
  int p;
  const int *deriv; /* nd codes: 0 the kernel, -1 d/dlog bandwidth, j d/dlog ell_j */
  int nd;
  const double *W; /* n x n column-major */
  double s;        /* W's scale */
  const double *U; /* n x r column-major (r = 0: none) */
  int r;
  const double *T; /* NULL, or the pairs' statistics, n x n column-major */
} krr_ddot;

/* The number of column blocks of n points */
static inline int64_t krr_ddot_blocks(int64_t n) {
  return (n + KRR_DDOT_BLOCK - 1) / KRR_DDOT_BLOCK;
}

/* The first derivative of code c (as krr_ddot's codes) of a pair at its
 * statistic t, dj its points' difference in coordinate c (c >= 1) */
static inline double krr_ddot_deriv(krr_kparams kp, double t, double dj, int c, int l1) {
  if (c == 0) return krr_kernel_eval(kp, t);
  if (c < 0) return krr_kernel_dlog_s(kp, t);
  return krr_kernel_dlog_ell(kp, t, l1 ? fabs(dj) : dj * dj);
}

/* Scratch doubles krr_ddot_block needs for n points */
static inline int64_t krr_ddot_scratch(int64_t n) { return (int64_t)KRR_DDOT_BLOCK * n; }

/* w[k] = the weight of the unordered pair (i0 + k, l), i0 + k <= l, for k <
 * m: w_il + w_li, or w_ll; wc = W's column l, wr = its row l (contiguous) */
static inline void krr_ddot_weights(const krr_ddot *d, const double *wc, const double *wr,
                                    int64_t i0, int64_t l, int m, double *w) {
  const int64_t n = d->n;
  const double s = d->s;
#pragma omp simd
  for (int k = 0; k < m; k++) w[k] = s * (wc[i0 + k] + wr[i0 + k]);
  for (int j = 0; j < d->r; j++) {
    const double *u = d->U + (int64_t)j * n + i0, ul = 2 * d->U[(int64_t)j * n + l];
#pragma omp simd
    for (int k = 0; k < m; k++) w[k] += u[k] * ul;
  }
  if (i0 + m - 1 == l) { /* the diagonal pair counts once */
    double wl = s * wc[l];
    for (int j = 0; j < d->r; j++) wl += d->U[(int64_t)j * n + l] * d->U[(int64_t)j * n + l];
    w[m - 1] = wl;
  }
}

/* acc[c] = the contraction over the columns l of block `blk` and the rows
 * i <= l: each unordered pair once; scratch: krr_ddot_scratch(n) doubles.
 * The block's rows of W are first copied into scratch, each contiguous, so
 * that no pair reads W across its columns (a page apart each).  Per column
 * l, the statistics of a chunk of rows are accumulated coordinate by
 * coordinate (independent sums along X's columns) or read from T, then the
 * chunk's pair weights formed, then its derivatives weighted. */
static inline void krr_ddot_block(const krr_ddot *d, int64_t blk, double *acc, double *scratch) {
  const int64_t lb = blk * KRR_DDOT_BLOCK;
  const int64_t le = lb + KRR_DDOT_BLOCK < d->n ? lb + KRR_DDOT_BLOCK : d->n;
  const int64_t n = d->n;
  double t[KRR_DDOT_ROWS], w[KRR_DDOT_ROWS];
  for (int64_t i = 0; i < le; i++)
    for (int64_t l = lb; l < le; l++) scratch[(l - lb) * le + i] = d->W[i * n + l];
  for (int c = 0; c < d->nd; c++) acc[c] = 0;
  for (int64_t l = lb; l < le; l++) {
    const double *wc = d->W + l * n, *wr = scratch + (l - lb) * le;
    for (int64_t i0 = 0; i0 <= l; i0 += KRR_DDOT_ROWS) {
      const int m = l + 1 - i0 < KRR_DDOT_ROWS ? (int)(l + 1 - i0) : KRR_DDOT_ROWS;
      if (d->T) {
        for (int k = 0; k < m; k++) t[k] = d->T[l * n + i0 + k];
      } else {
        for (int k = 0; k < m; k++) t[k] = 0;
      }
      for (int c = 0; c < (d->T ? 0 : d->p); c++) {
        const double *xc = d->X + (int64_t)c * n + i0, bc = d->X[(int64_t)c * n + l];
        if (d->l1) {
#pragma omp simd
          for (int k = 0; k < m; k++) t[k] += fabs(xc[k] - bc);
        } else {
#pragma omp simd
          for (int k = 0; k < m; k++) t[k] += (xc[k] - bc) * (xc[k] - bc);
        }
      }
      krr_ddot_weights(d, wc, wr, i0, l, m, w);
      for (int k = 0; k < m; k++) {
        if (w[k] == 0) continue;
        const int64_t i = i0 + k;
        for (int c = 0; c < d->nd; c++) {
          const int cd = d->deriv[c];
          const double dj =
              cd > 0 ? d->X[(int64_t)(cd - 1) * n + i] - d->X[(int64_t)(cd - 1) * n + l] : 0;
          acc[c] += w[k] * krr_ddot_deriv(d->kp, t[k], dj, cd, d->l1);
        }
      }
    }
  }
}

#endif
