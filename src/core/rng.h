/* Counter-based random numbers shared by every backend: draw i of stream seed
 * depends on (seed, i) only, so results do not depend on thread count or on
 * the device.  KRR_HD lets a device compiler mark these host+device. */
#ifndef KRR_RNG_H
#define KRR_RNG_H
#include <stdint.h>
#include <math.h>

#ifndef KRR_HD
#define KRR_HD static inline
#endif

KRR_HD uint64_t krr_mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* 64 random bits for draw i of stream seed */
KRR_HD uint64_t krr_rng_bits(uint64_t seed, uint64_t i) {
  return krr_mix64(krr_mix64(seed) ^ (i * 0xD1B54A32D192ED03ULL + 0x8CB92BA72F3D8DD7ULL));
}

/* uniform in (0, 1): 53 random bits, never 0 */
KRR_HD double krr_rng_unif(uint64_t seed, uint64_t i) {
  return ((double)(krr_rng_bits(seed, i) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* standard normal, Box-Muller on draws 2i and 2i+1 */
KRR_HD double krr_rng_normal(uint64_t seed, uint64_t i) {
  double u1 = krr_rng_unif(seed, 2 * i), u2 = krr_rng_unif(seed, 2 * i + 1);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* derive an independent stream id from (seed, a, b) */
KRR_HD uint64_t krr_rng_stream(uint64_t seed, uint64_t a, uint64_t b) {
  return krr_mix64(krr_mix64(seed ^ krr_mix64(a)) + 0x632BE59BD9B4E019ULL * (b + 1));
}
#endif
