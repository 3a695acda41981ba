/* Centres of the inducing-point solvers (Falkon, EigenPro 3.0). */
#include <math.h>
#include <string.h>
#include "sampling.h"
#include "../rng.h"

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int64_t krr_centers_default(int64_t n) {
  double m = ceil(sqrt((double)n) * log((double)n));
  if (m > 20000) m = 20000;
  if (m < 1) m = 1;
  return (int64_t)m < n ? (int64_t)m : n;
}

krr_status krr_centers_resolve(krr_ctx *ctx, int64_t n, const int64_t *idx, int64_t len,
                               int64_t *count) {
  if (len >= 2) {
    for (int64_t i = 0; i < len; i++)
      if (idx[i] < 0 || idx[i] >= n)
        return krr_fail(ctx, KRR_ERR_INPUT, "`centers`: centre %lld (row %lld) is out of range 1..%lld",
                        (long long)i + 1, (long long)idx[i] + 1, (long long)n);
    int64_t *c = (int64_t *)malloc(sizeof(int64_t) * (size_t)len); /* sorted copy: O(len) memory */
    if (!c) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
    memcpy(c, idx, sizeof(int64_t) * (size_t)len);
    qsort(c, (size_t)len, sizeof(int64_t), cmp_i64);
    int64_t dup = -1;
    for (int64_t i = 1; i < len && dup < 0; i++)
      if (c[i] == c[i - 1]) dup = c[i];
    free(c);
    if (dup >= 0)
      return krr_fail(ctx, KRR_ERR_INPUT, "`centers` must not repeat a row (row %lld appears twice)",
                      (long long)dup + 1);
    *count = len;
    return KRR_OK;
  }
  if (len == 1)
    return krr_fail(ctx, KRR_ERR_INPUT, "`centers` must hold at least two rows (a number of centres "
                    "is n_centers)");
  int64_t c = *count > 0 ? *count : krr_centers_default(n);
  if (c > n)
    return krr_fail(ctx, KRR_ERR_INPUT, "`centers` (%lld) must be at most the number of training "
                    "points (%lld)", (long long)c, (long long)n);
  *count = c;
  return KRR_OK;
}

krr_status krr_centers_pick(krr_ctx *ctx, const int64_t *idx, int64_t len, uint64_t seed,
                            int64_t n, int64_t mc, int64_t *out) {
  if (len >= 2) {
    memcpy(out, idx, sizeof(int64_t) * (size_t)mc);
    return KRR_OK;
  }
  uint64_t *mark = (uint64_t *)calloc((size_t)(n / 64 + 1), sizeof(uint64_t));
  if (!mark) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  krr_sample_uniform(krr_rng_stream(seed, 0, 20), n, mc, mark, out);
  free(mark);
  return KRR_OK;
}
