/* The median distance between the rows of host data: the scale of the
 * median-heuristic bandwidth (Schölkopf and Smola, "Learning with Kernels",
 * and Gretton et al.'s kernel two-sample test).  All n (n - 1) / 2 pair
 * distances are formed once, O(n^2 p); the median is found by a radix pass
 * on their top bits and a selection (Hoare's FIND with a median-of-three
 * pivot) inside one bin, O(n^2) expected, where sorting them would cost
 * O(n^2 log n). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "data.h"

static void swap(double *a, int64_t i, int64_t j) {
  double t = a[i];
  a[i] = a[j];
  a[j] = t;
}

/* a[k] in place as in sorted order, a[0 .. k) <= a[k] <= a[k + 1 .. len) */
static void select_kth(double *a, int64_t len, int64_t k) {
  int64_t lo = 0, hi = len - 1;
  while (hi > lo) {
    int64_t mid = lo + (hi - lo) / 2;
    /* the median of a[lo], a[mid], a[hi] as the pivot, put at a[mid] */
    if (a[mid] < a[lo]) swap(a, mid, lo);
    if (a[hi] < a[lo]) swap(a, hi, lo);
    if (a[hi] < a[mid]) swap(a, hi, mid);
    double piv = a[mid];
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (a[i] < piv) i++;
      while (piv < a[j]) j--;
      if (i <= j) swap(a, i++, j--);
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return; /* a[j + 1 .. i) all equal the pivot, k among them */
  }
}

/* the top 16 bits of a non-negative double (sign, exponent, 4 bits of the
 * fraction): increasing with its value */
static uint32_t top16(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return (uint32_t)(b >> 48);
}

/* moves the elements of a[0 .. len) whose top16 is `bin` to the front (a
 * permutation of a); their count */
static int64_t gather_bin(double *a, int64_t len, uint32_t bin) {
  int64_t c = 0;
  for (int64_t i = 0; i < len; i++)
    if (top16(a[i]) == bin) swap(a, c++, i);
  return c;
}

/* the k-th and (k+1)-th smallest (0-based; *hi only when k + 1 < len) of
 * the non-negative a[0 .. len), a permuted: a radix pass on the top 16 bits
 * (counts, no branches on the data) finds the bin of the k-th, which the
 * selection then searches alone; the (k+1)-th is the least of the rest of
 * that bin or of the next bin that has any */
static void select_two(double *a, int64_t len, int64_t k, uint32_t *hist, double *lo, double *hi) {
  memset(hist, 0, sizeof(uint32_t) * 65536);
  for (int64_t i = 0; i < len; i++) hist[top16(a[i])]++;
  uint32_t b = 0;
  int64_t before = 0;
  while (before + hist[b] <= k) before += hist[b++];
  int64_t kk = k - before, c = gather_bin(a, len, b);
  select_kth(a, c, kk);
  *lo = a[kk];
  if (k + 1 >= len) return;
  if (kk + 1 < c) {
    double m = a[kk + 1];
    for (int64_t i = kk + 2; i < c; i++) m = a[i] < m ? a[i] : m;
    *hi = m;
    return;
  }
  uint32_t b2 = b + 1;
  while (hist[b2] == 0) b2++;
  double m = INFINITY;
  for (int64_t i = c; i < len; i++)
    if (top16(a[i]) == b2 && a[i] < m) m = a[i];
  *hi = m;
}

/* the median of the non-negative a[0 .. len) (the mean of the two middle
 * values for an even len, as R's median()), of the distances: the
 * statistics themselves (L1) or their square roots */
static double median_of(double *a, int64_t len, int l1, uint32_t *hist) {
  int64_t k = (len - 1) / 2;
  double lo = 0, hi = 0;
  select_two(a, len, k, hist, &lo, &hi);
  if (len % 2) return l1 ? lo : sqrt(lo);
  return l1 ? 0.5 * (lo + hi) : 0.5 * (sqrt(lo) + sqrt(hi));
}

krr_status krr_median_distance(krr_ctx *ctx, const double *X, int64_t n, int p, int l1,
                               double *med) {
  *med = 0;
  if (n < 2) return KRR_OK;
  int64_t len = n * (n - 1) / 2;
  double *d = malloc(sizeof(double) * (size_t)len);
  uint32_t *hist = malloc(sizeof(uint32_t) * 65536);
  if (!d || !hist) {
    free(d);
    free(hist);
    return krr_fail(ctx, KRR_ERR_MEMORY, "median distance: out of host memory");
  }
  /* squared Euclidean (or L1) distances of rows j + 1 .. n - 1 to row j,
   * summed over the columns in order as R's dist(), down each column (the
   * rows of a column are contiguous: the loop over them vectorises) */
  double *dj = d;
  for (int64_t j = 0; j < n - 1; j++) {
    int64_t m = n - 1 - j;
    for (int64_t i = 0; i < m; i++) dj[i] = 0;
    for (int k = 0; k < p; k++) {
      const double *col = X + k * n + j + 1, xj = X[k * n + j];
      if (l1)
        for (int64_t i = 0; i < m; i++) dj[i] += fabs(col[i] - xj);
      else
        for (int64_t i = 0; i < m; i++) dj[i] += (col[i] - xj) * (col[i] - xj);
    }
    dj += m;
  }
  double m = median_of(d, len, l1, hist);
  if (!(m > 0)) { /* many duplicated rows: the median of the positive distances */
    int64_t pos = 0;
    for (int64_t i = 0; i < len; i++)
      if (d[i] > 0) d[pos++] = d[i];
    m = pos > 0 ? median_of(d, pos, l1, hist) : 0.0;
  }
  free(d);
  free(hist);
  *med = m;
  return KRR_OK;
}
