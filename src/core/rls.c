/* Approximate ridge-leverage-score (ARLS) block sampling for ASkotch / Skotch
 * (journal paper, section 5.1.1; sampling = KRR_SAMPLING_RLS), written once
 * over void* device buffers.
 *
 * Estimator (computed once at init).  The lambda-ridge leverage scores are
 * l_i = [K (K + lambda I)^{-1}]_ii = (1/lambda) [K - K (K + lambda I)^{-1} K]_ii.
 * Writing K = Phi Phi^T and replacing Phi^T Phi = sum_i phi_i phi_i^T by the
 * reweighted uniform dictionary estimate (n/s) Phi_J^T Phi_J (J: s distinct
 * indices drawn uniformly), Woodbury gives the one-level BLESS / Alaoui-Mahoney
 * estimate with a uniform dictionary
 *     l~_i = (1/lambda) (K_ii - K_iJ (K_JJ + (lambda s / n) I)^{-1} K_Ji),
 * K_ii = 1 for every kernel here.  Cost: one s x s Cholesky and n s kernel
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
#include "internal.h"
#include "rng.h"

struct krr_rls {
  int64_t n, s;
  double *invw;   /* host n: 1 / (floored score) */
  double *hkey;   /* host b-heap keys */
  int64_t *hidx;  /* host b-heap indices */
  int64_t hcap;
  double deff;    /* sum of the (unfloored) scores: estimate of the effective dimension */
};

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int64_t krr_rls_subsample(const krr_problem *pb, const krr_solver_opts *o) {
  int64_t s = o->rls_subsample > 0 ? o->rls_subsample : 2000;
  return s < pb->n ? s : pb->n;
}

/* host n scores (double) of problem pb at lambda with a uniform dictionary of s points */
krr_status krr_rls_scores(krr_ctx *ctx, const krr_problem *pb, int64_t s, uint64_t seed,
                          double *scores) {
  int64_t n = pb->n;
  int p = pb->p;
  size_t es = krr_sizeof(pb->prec);
  krr_precision prec = pb->prec;
  if (s < 1 || s > n) return krr_fail(ctx, KRR_ERR_INPUT, "rls_subsample (%lld) must be in 1..n (%lld)",
                                      (long long)s, (long long)n);
  int64_t c = ((int64_t)1 << 21) / s;
  if (c < 1) c = 1;
  if (c > n) c = n;
  int64_t *J = (int64_t *)malloc(sizeof(int64_t) * (size_t)s);
  uint64_t *mark = (uint64_t *)calloc((size_t)(n / 64 + 1), sizeof(uint64_t));
  double *hb = (double *)malloc(sizeof(double) * (size_t)(s * c));
  int64_t *dJ = NULL;
  void *XJ = NULL, *KJJ = NULL, *KJc = NULL;
  krr_status st = KRR_OK;
  if (!J || !mark || !hb) { st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory (RLS scores)"); goto done; }
  krr_sample_uniform(krr_rng_stream(seed, 0x5e5, 21), n, s, mark, J);
  if (!(dJ = (int64_t *)krr_dalloc(ctx, s, sizeof(int64_t))) || !(XJ = krr_dalloc(ctx, s * p, es)) ||
      !(KJJ = krr_dalloc(ctx, s * s, es)) || !(KJc = krr_dalloc(ctx, s * c, es))) {
    st = ctx->status ? ctx->status : KRR_ERR_MEMORY;
    goto done;
  }
#define T(expr) do { if ((st = (expr)) != KRR_OK) goto done; } while (0)
  T(ctx->ops->upload(ctx, dJ, J, sizeof(int64_t) * (size_t)s));
  T(KOP(ctx, prec, gather_points, pb->X, p, dJ, s, XJ));
  {
    int info = 1;
    double shift = pb->lambda * (double)s / (double)n;
    double jit = (prec == KRR_DOUBLE ? 1e-13 : 1e-6) * (double)s;
    for (int attempt = 0; attempt < 6 && info != 0; attempt++) {
      T(KOP(ctx, prec, kernel_block, &pb->kernel, XJ, s, XJ, s, p, KJJ, s));
      T(KOP(ctx, prec, add_diag, s, KJJ, s, shift + (attempt ? jit * pow(10.0, attempt - 1) : 0.0), NULL));
      T(KOP(ctx, prec, potrf, s, KJJ, s, &info));
    }
    if (info != 0) {
      st = krr_fail(ctx, KRR_ERR_NUMERIC, "RLS scores: Cholesky of the %lld x %lld dictionary kernel "
                    "failed; increase lambda or use precision = \"double\"", (long long)s, (long long)s);
      goto done;
    }
  }
  for (int64_t i0 = 0; i0 < n; i0 += c) {
    int64_t cc = n - i0 < c ? n - i0 : c;
    T(KOP(ctx, prec, kernel_block, &pb->kernel, XJ, s, KAT(pb->X, i0 * p, es), cc, p, KJc, s));
    T(KOP(ctx, prec, trsm, 0, 1, s, cc, 1.0, KJJ, s, KJc, s)); /* R^{-T} K_Jc */
    T(krr_download_vec(ctx, prec, KJc, s * cc, hb));
    for (int64_t j = 0; j < cc; j++) {
      const double *col = hb + j * s;
      double q = 0;
      for (int64_t k = 0; k < s; k++) q += col[k] * col[k];
      double l = (1.0 - q) / pb->lambda;
      scores[i0 + j] = l < 0 ? 0 : (l > 1 ? 1 : l);
    }
  }
#undef T
done:
  if (dJ) ctx->ops->dealloc(ctx, dJ);
  krr_dfree(ctx, &XJ); krr_dfree(ctx, &KJJ); krr_dfree(ctx, &KJc);
  free(J); free(mark); free(hb);
  return st;
}

krr_status krr_rls_create(krr_ctx *ctx, const krr_problem *pb, const krr_solver_opts *o,
                          int64_t b, krr_rls **out) {
  *out = NULL;
  int64_t n = pb->n;
  if (o->rls_subsample < 0 || o->rls_subsample > n)
    return krr_fail(ctx, KRR_ERR_INPUT, "rls_subsample (%lld) must be between 0 and the number of "
                    "observations (%lld)", (long long)o->rls_subsample, (long long)n);
  krr_rls *r = (krr_rls *)calloc(1, sizeof *r);
  if (!r) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  r->n = n;
  r->s = krr_rls_subsample(pb, o);
  r->hcap = b;
  r->invw = (double *)malloc(sizeof(double) * (size_t)n);
  r->hkey = (double *)malloc(sizeof(double) * (size_t)(b > 0 ? b : 1));
  r->hidx = (int64_t *)malloc(sizeof(int64_t) * (size_t)(b > 0 ? b : 1));
  if (!r->invw || !r->hkey || !r->hidx) {
    krr_rls_free(r);
    return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory (RLS sampling needs %.1f MiB)",
                    8.0 * (double)n / 1048576.0);
  }
  krr_status st = krr_rls_scores(ctx, pb, r->s, o->seed, r->invw);
  if (st != KRR_OK) { krr_rls_free(r); return st; }
  double sum = 0;
  for (int64_t i = 0; i < n; i++) sum += r->invw[i];
  r->deff = sum;
  double fl = 0.01 * sum / (double)n;
  if (!(fl > 0)) fl = 1.0; /* all scores zero: uniform */
  for (int64_t i = 0; i < n; i++) r->invw[i] = 1.0 / (r->invw[i] > fl ? r->invw[i] : fl);
  *out = r;
  return KRR_OK;
}

double krr_rls_deff(const krr_rls *r) { return r ? r->deff : 0.0; }

void krr_rls_free(krr_rls *r) {
  if (!r) return;
  free(r->invw); free(r->hkey); free(r->hidx);
  free(r);
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
