/* Uniform sampling of distinct indices (Floyd's algorithm: O(b) expected
 * time, membership in a bitmap); sorted so that gathers walk memory forward. */
#include "sampling.h"
#include "../rng.h"

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

void krr_sample_permutation(uint64_t stream, int64_t n, int64_t *out) {
  for (int64_t i = 0; i < n; i++) out[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t k = (int64_t)(krr_rng_unif(stream, (uint64_t)i) * (double)(i + 1));
    if (k > i) k = i;
    int64_t t = out[i]; out[i] = out[k]; out[k] = t;
  }
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
