/* Approximate ridge-leverage-score (ARLS) block sampling for ASkotch / Skotch
 * (Rathore et al., journal version, section 5.1.1; askotch option sampling =
 * "rls"), written once over void* device buffers.
 *
 * Estimator (computed at setup, and again after a change of lambda).  The lambda-ridge leverage scores are
 * l_i = [K (K + lambda I)^{-1}]_ii = (1/lambda) [K - K (K + lambda I)^{-1} K]_ii.
 * Writing K = Phi Phi^T and replacing Phi^T Phi = sum_i phi_i phi_i^T by the
 * reweighted uniform dictionary estimate (n/s) Phi_J^T Phi_J (J: s distinct
 * indices drawn uniformly), Woodbury gives the one-level BLESS / Alaoui-Mahoney
 * estimate with a uniform dictionary
 *     l~_i = (1/lambda) (K_ii - K_iJ (K_JJ + (lambda s / n) I)^{-1} K_Ji),
 * with K_ii the operator's diagonal.  Cost: one s x s Cholesky and n s kernel
 * evaluations (rows streamed in chunks of c columns, c s <= 2^21), host O(n).
 * With s >= a few times the effective dimension these are constant-factor
 * approximations (Rudi et al. 2018, Lemma 1 of BLESS with a uniform
 * dictionary); BLESS proper refines the dictionary over a decreasing lambda
 * path, which we do not do (one level, s = min(n, 2000) by default).
 * Scores are clipped to [0, 1] and floored at 1% of their mean so that every
 * coordinate keeps a positive probability (sketch-and-project needs it).
 * In single precision the cancellation in 1 - q_i limits the accuracy of small
 * scores to ~1e-6 / lambda; the floor keeps the sampler valid regardless.
 *
 * Sampling: b distinct indices with probabilities ~ scores, without
 * replacement, by exponential races (Efraimidis-Spirakis): key_i = E_i / w_i
 * with E_i = -log U_i standard exponential from the counter-based stream, and
 * the b smallest keys win (kept in a size-b max-heap: O(n log b) worst case,
 * O(n) typical, O(b) extra memory).  Deterministic given (seed, iteration);
 * the result is sorted ascending like krr_sample_uniform's. */
#include <math.h>
#include <string.h>
#include "sampling.h"
#include "../rng.h"

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

krr_status krr_rls_scores(krr_op *op, double lambda, int64_t s, uint64_t seed, double *scores) {
  krr_ctx *ctx = op->ctx;
  int64_t n = op->n;
  krr_precision prec = op->prec;
  if (s < 1 || s > n)
    return krr_fail(ctx, KRR_ERR_INPUT, "`rls_subsample` (%lld) must be in 1..n (%lld)",
                    (long long)s, (long long)n);
  int64_t c = ((int64_t)1 << 21) / s;
  if (c < 1) c = 1;
  if (c > n) c = n;
  krr_arena a;
  krr_arena_init(&a, ctx);
  krr_block J, C;
  uint64_t *mark = (uint64_t *)krr_arena_host(&a, n / 64 + 1, sizeof(uint64_t));
  double *hb = (double *)krr_arena_host(&a, s * c, sizeof(double));
  double *dg = (double *)krr_arena_host(&a, c, sizeof(double));
  void *KJJ = krr_arena_dev(&a, s * s, op->es), *KJc = krr_arena_dev(&a, s * c, op->es);
  krr_status st = KRR_ALLOCATED(&a, mark, hb, dg, KJJ, KJc);
#define T(expr) do { if (st == KRR_OK) st = (expr); } while (0)
  T(krr_block_alloc(op, &a, s, &J));
  T(krr_block_alloc(op, &a, c, &C));
  if (st == KRR_OK) krr_sample_uniform(krr_rng_stream(seed, 0x5e5, 21), n, s, mark, J.idx_h);
  T(krr_block_set(op, &J, J.idx_h, s));
  int info = 1;
  double shift = lambda * (double)s / (double)n, trJ = 0;
  T(krr_op_trace(op, &J, &trJ)); /* s for a unit diagonal */
  double jit = (prec == KRR_DOUBLE ? 1e-13 : 1e-6) * trJ;
  for (int attempt = 0; st == KRR_OK && attempt < 6 && info != 0; attempt++) {
    T(krr_op_mat(op, &J, &J, KJJ, s));
    T(KOP(ctx, prec, add_diag, s, KJJ, s, shift + (attempt ? jit * pow(10.0, attempt - 1) : 0.0), NULL));
    T(krr_potrf_polled(ctx, prec, s, KJJ, s, &info));
  }
  if (st == KRR_OK && info != 0)
    st = krr_fail(ctx, KRR_ERR_NUMERIC, "RLS scores: Cholesky of the %lld x %lld dictionary kernel "
                  "failed; increase lambda or use precision = \"double\"", (long long)s, (long long)s);
  for (int64_t i0 = 0; st == KRR_OK && i0 < n; i0 += c) {
    int64_t cc = n - i0 < c ? n - i0 : c;
    T(krr_poll(ctx));
    T(krr_block_range(op, &C, i0, cc));
    T(krr_op_mat(op, &J, &C, KJc, s));
    T(KOP(ctx, prec, trsm, 0, 1, s, cc, 1.0, KJJ, s, KJc, s)); /* R^{-T} K_Jc */
    T(krr_download_vec(ctx, prec, KJc, s * cc, hb));
    T(krr_op_diag(op, &C, dg));
    for (int64_t j = 0; st == KRR_OK && j < cc; j++) {
      const double *col = hb + j * s;
      double q = 0;
      for (int64_t k = 0; k < s; k++) q += col[k] * col[k];
      double l = (dg[j] - q) / lambda;
      scores[i0 + j] = l < 0 ? 0 : (l > 1 ? 1 : l);
    }
  }
#undef T
  krr_arena_free(&a);
  return st;
}

double krr_rls_memory(int64_t n, int64_t b) {
  return 8.0 * (double)n + 16.0 * (double)b + 64.0;
}

krr_status krr_rls_alloc(krr_arena *a, int64_t n, int64_t b, krr_rls *r) {
  memset(r, 0, sizeof *r);
  r->n = n;
  r->hcap = b;
  r->invw = (double *)krr_arena_host(a, n, sizeof(double));
  r->hkey = (double *)krr_arena_host(a, b, sizeof(double));
  r->hidx = (int64_t *)krr_arena_host(a, b, sizeof(int64_t));
  return KRR_ALLOCATED(a, r->invw, r->hkey, r->hidx);
}

krr_status krr_rls_compute(krr_rls *r, krr_op *op, double lambda, int64_t s, uint64_t seed) {
  KTRY(krr_rls_scores(op, lambda, s, seed, r->invw));
  int64_t n = r->n;
  double sum = 0;
  for (int64_t i = 0; i < n; i++) sum += r->invw[i];
  r->deff = sum;
  double fl = 0.01 * sum / (double)n;
  if (!(fl > 0)) fl = 1.0; /* all scores zero: uniform */
  for (int64_t i = 0; i < n; i++) r->invw[i] = 1.0 / (r->invw[i] > fl ? r->invw[i] : fl);
  return KRR_OK;
}

/* max-heap on hkey */
static void sift_down(double *k, int64_t *ix, int64_t m, int64_t i) {
  for (;;) {
    int64_t l = 2 * i + 1, big = i;
    if (l < m && k[l] > k[big]) big = l;
    if (l + 1 < m && k[l + 1] > k[big]) big = l + 1;
    if (big == i) return;
    double tk = k[i]; k[i] = k[big]; k[big] = tk;
    int64_t ti = ix[i]; ix[i] = ix[big]; ix[big] = ti;
    i = big;
  }
}

void krr_rls_sample(krr_rls *r, uint64_t stream, int64_t b, int64_t *out) {
  int64_t n = r->n;
  if (b > r->hcap) b = r->hcap;
  double *k = r->hkey;
  int64_t *ix = r->hidx, m = 0;
  for (int64_t i = 0; i < n; i++) {
    double key = -log(krr_rng_unif(stream, (uint64_t)i)) * r->invw[i];
    if (m < b) {
      /* sift up */
      int64_t j = m++;
      k[j] = key; ix[j] = i;
      while (j > 0 && k[(j - 1) / 2] < k[j]) {
        int64_t pj = (j - 1) / 2;
        double tk = k[pj]; k[pj] = k[j]; k[j] = tk;
        int64_t ti = ix[pj]; ix[pj] = ix[j]; ix[j] = ti;
        j = pj;
      }
    } else if (key < k[0]) {
      k[0] = key; ix[0] = i;
      sift_down(k, ix, m, 0);
    }
  }
  memcpy(out, ix, sizeof(int64_t) * (size_t)m);
  qsort(out, (size_t)m, sizeof(int64_t), cmp_i64);
}
