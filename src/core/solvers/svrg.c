/* Sketched preconditioned SVRG (Gonen, Orabona and Shalev-Shwartz, ICML
 * 2016: Algorithm 3 with the Block Lanczos of Algorithm 2 and the SVRG of
 * Algorithm 1), and plain SVRG, for ridge regression on explicit features
 * phi(x_i) (the columns of Zt, d x n), m right-hand sides at once.
 *
 * Conventions.  The package solves (Z'Z + lambda I) w = Z'y.  The paper
 * minimises L(w) = (1/n) sum 1/2 (w'x_i - y_i)^2 + lambda_G/2 ||w||^2,
 * whose minimiser solves (Z'Z + n lambda_G I) w = Z'y: lambda_G = lambda / n.
 * Below "lam" is lambda_G.
 *
 * Sketch (Alg. 2 on n^{-1/2} Z', so that its Gram is C = Z'Z / n): a Krylov
 * space [G, C G, ..., C^q G] of a d x k Gaussian G, built block by block with
 * full (twice repeated) block Gram-Schmidt and a QR per block, capped at d
 * columns; the Rayleigh-Ritz matrix Q'CQ gives the top k eigenpairs
 * (sigma_i^2, u_i) of C.  q = ceil(log(d) / sqrt(eps)), eps = 1/2.
 *
 * Preconditioner (eq. (8)), never formed:
 *   P = U (S^2 + lam) U' + (sigma_k^2 + lam)(I - U U'),
 *   P^{-1} v = v / s_k + U diag(1 / (sigma_i^2 + lam) - 1 / s_k) U' v,
 *   s_k = sigma_k^2 + lam.
 * SVRG runs on u = P^{1/2} w, the preconditioned problem L(P^{-1/2} u)
 * (eq. (2)), with the data preprocessed once, x~_i = P^{-1/2} x_i (Alg. 3
 * line 7; n d numbers more), so a data step costs O(d m) as in plain SVRG;
 * a regulariser step forms b_j = P^{-1/2} e_j in O(d k).  w = P^{-1/2} u is
 * formed once per epoch, for the full gradient and the criterion.
 *
 * Splitting (Section 5.1), N = n + d terms, F = (1/N) sum_i f_i:
 *   f_i     = (N/n) 1/2 (u'x~_i - y_i)^2,      x~_i = P^{-1/2} x_i, i <= n,
 *   f_{n+j} = N lam 1/2 (u'b_j)^2,             b_j  = P^{-1/2} e_j,
 * smoothness beta_i = (N/n) x_i'P^{-1}x_i and beta_{n+j} = N lam e_j'P^{-1}e_j
 * (Alg. 3 prints ||b_j|| unsquared and drops the 1/2), beta_hat = (1/N) sum
 * beta_i (Alg. 3 prints 1/n).  Sampling q_i = beta_i / sum beta (or 1/N);
 * the variance-reduced gradient (grad f_i(u) - grad f_i(u~)) / (N q_i) + mu
 * (Alg. 1 prints q_i: dividing by N q_i makes it unbiased for grad F).
 * Steps eta = step / beta_hat (Theorem 2: step = 0.1).  Each epoch starts
 * from the last iterate of the previous one (Johnson and Zhang's option I;
 * Xiao and Zhang average the iterates).  precondition = 0: P = I (plain
 * SVRG, uniform or smoothness sampling, the paper's baseline).
 *
 * Random numbers: counter-based (rng.h), draw t of epoch s from a stream of
 * the seed, so a fit is reproducible by seed whatever the thread count.
 *
 * Two entry points share the steps below: krr_svrg_solve (svrg.h: explicit
 * features given as a host matrix) and the registry entry krr_solver_svrg
 * (the end of this file), which takes its features from any operator with a
 * finite feature map (op->nfeat > 0: random Fourier features, ...) and runs
 * one epoch per iteration of the generic solver loop. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "svrg.h"
#include "solver.h"

/* the double-precision op (this solver works on host doubles) */
#define DOP(ctx, name, ...) ((ctx)->ops->name##_d((ctx), __VA_ARGS__))

static double *dnew(krr_ctx *ctx, int64_t count, krr_status *st) {
  if (*st != KRR_OK) return NULL;
  double *p = (double *)calloc((size_t)(count > 0 ? count : 1), sizeof(double));
  if (!p) *st = krr_fail(ctx, KRR_ERR_MEMORY, "svrg: cannot allocate %.0f numbers", (double)count);
  return p;
}

/* y = C x = Zt (Zt' x) / n for x d x w; T: n x w scratch */
static krr_status cov_mul(krr_ctx *ctx, const double *Zt, int64_t n, int64_t d, int64_t w,
                          const double *x, double *T, double *y) {
  KTRY(DOP(ctx, gemm, 1, 0, n, w, d, 1.0, Zt, d, x, d, 0.0, T, n));
  return DOP(ctx, gemm, 0, 0, d, w, n, 1.0 / (double)n, Zt, d, T, n, 0.0, y, d);
}

/* B (d x w) <- B - Q (Q' B) for Q d x c (twice: classical Gram-Schmidt, repeated) */
static krr_status orth_against(krr_ctx *ctx, const double *Q, int64_t d, int64_t c, double *B,
                               int64_t w, double *H) {
  if (c == 0) return KRR_OK;
  for (int rep = 0; rep < 2; rep++) {
    KTRY(DOP(ctx, gemm, 1, 0, c, w, d, 1.0, Q, d, B, d, 0.0, H, c));
    KTRY(DOP(ctx, gemm, 0, 0, d, w, c, -1.0, Q, d, H, c, 1.0, B, d));
  }
  return KRR_OK;
}

/* Block Lanczos (Alg. 2): V (d x k) top-k eigenvectors of C, s2 (k) its
 * eigenvalues descending, ZV (n x k) = Zt' V. */
static krr_status block_lanczos(krr_ctx *ctx, const double *Zt, int64_t n, int64_t d, int k, int q,
                                uint64_t seed, double *V, double *s2, double *ZV) {
  krr_status st = KRR_OK;
  int64_t ncols = KRR_MIN((int64_t)k * (q + 1), d);
  double *Q = dnew(ctx, d * ncols, &st), *T = dnew(ctx, n * ncols, &st),
         *H = dnew(ctx, ncols * (int64_t)k, &st), *M = dnew(ctx, ncols * ncols, &st),
         *ev = dnew(ctx, ncols, &st);
  if (st != KRR_OK) goto done;
  const uint64_t sg = krr_rng_stream(seed, 0x5A46, 1);
  int64_t c = 0; /* columns of Q so far */
  for (int b = 0; c < ncols; b++) {
    int64_t w = KRR_MIN((int64_t)k, ncols - c);
    double *B = Q + c * d;
    if (b == 0) {
      for (int64_t i = 0; i < d * w; i++) B[i] = krr_rng_normal(sg, (uint64_t)i);
    } else {
      /* C times the first w columns of the previous block */
      if ((st = cov_mul(ctx, Zt, n, d, w, Q + (c - k) * d, T, B)) != KRR_OK) goto done;
    }
    if ((st = orth_against(ctx, Q, d, c, B, w, H)) != KRR_OK) goto done;
    if ((st = DOP(ctx, qr_q, d, w, B, d)) != KRR_OK) goto done;
    c += w;
  }
  /* Rayleigh-Ritz: M = (Zt'Q)'(Zt'Q) / n */
  if ((st = DOP(ctx, gemm, 1, 0, n, ncols, d, 1.0, Zt, d, Q, d, 0.0, T, n)) != KRR_OK) goto done;
  if ((st = DOP(ctx, gemm, 1, 0, ncols, ncols, n, 1.0 / (double)n, T, n, T, n, 0.0, M, ncols)) !=
      KRR_OK)
    goto done;
  if ((st = DOP(ctx, syev, ncols, M, ncols, ev)) != KRR_OK) goto done;
  /* eigenvalues ascending: the top k are the last, reversed; reuse H (ncols x k) for U_k */
  for (int l = 0; l < k; l++) {
    int64_t src = ncols - 1 - l;
    s2[l] = ev[src] > 0 ? ev[src] : 0.0;
    memcpy(H + (int64_t)l * ncols, M + src * ncols, (size_t)ncols * sizeof(double));
  }
  if ((st = DOP(ctx, gemm, 0, 0, d, k, ncols, 1.0, Q, d, H, ncols, 0.0, V, d)) != KRR_OK) goto done;
  st = DOP(ctx, gemm, 0, 0, n, k, ncols, 1.0, T, n, H, ncols, 0.0, ZV, n);
done:
  free(Q); free(T); free(H); free(M); free(ev);
  return st;
}

/* The preconditioner's powers P^t (t = -1/2, 1/2) of eq. (8) on the d x m
 * columns of v: out = v s_k^t + U diag((sigma_i^2 + lam)^t - s_k^t) U'v.
 * h: k x m scratch.  Without a sketch (k = 0) the identity. */
typedef struct {
  int64_t d;
  int k;
  const double *V;
  double sk;
  double *cm, *cp; /* k: (sigma_i^2 + lam)^t - s_k^t for t = -1/2, +1/2 */
} precond_t;

static krr_status pc_apply(krr_ctx *ctx, const precond_t *P, int sign, const double *v, int m,
                           double *h, double *out) {
  const int64_t d = P->d;
  const double f = sign < 0 ? 1.0 / sqrt(P->sk) : sqrt(P->sk);
  const double *c = sign < 0 ? P->cm : P->cp;
  if (out != v) memcpy(out, v, (size_t)(d * m) * sizeof(double));
  if (P->k == 0) return KRR_OK;
  KTRY(DOP(ctx, gemm, 1, 0, P->k, m, d, 1.0, P->V, d, v, d, 0.0, h, P->k));
  for (int j = 0; j < m; j++)
    for (int l = 0; l < P->k; l++) h[l + (int64_t)j * P->k] *= c[l];
  for (int64_t i = 0; i < d * (int64_t)m; i++) out[i] *= f;
  return DOP(ctx, gemm, 0, 0, d, m, P->k, 1.0, P->V, d, h, P->k, 1.0, out, d);
}

/* b = P^{-1/2} e_j (column j of the symmetric P^{-1/2}) */
static void pc_column(const precond_t *P, int64_t j, double *b) {
  const int64_t d = P->d;
  for (int64_t r = 0; r < d; r++) b[r] = 0;
  b[j] = 1.0 / sqrt(P->sk);
  for (int l = 0; l < P->k; l++) {
    const double t = P->cm[l] * P->V[j + l * d];
    const double *vl = P->V + (int64_t)l * d;
    for (int64_t r = 0; r < d; r++) b[r] += t * vl[r];
  }
}

/* At u (d x m): W = P^{-1/2} u, R = Xp'u - Y = Z W - Y (n x m), Gd = Xp R
 * (= P^{-1/2} Z'R), the objective (1/2n)(||R||^2 + lambda ||W||^2) and the
 * criterion max_j ||Z'R_j + lambda W_j|| / ||Z'y_j|| (Z'R = P^{1/2} Gd). */
static krr_status full_gradient(krr_ctx *ctx, const precond_t *P, const double *Xp, int64_t n,
                                int m, const double *Y, double lambda, const double *U, double *W,
                                double *R, double *Gd, double *T, double *h, const double *zy,
                                double *obj, double *crit) {
  const int64_t d = P->d;
  KTRY(pc_apply(ctx, P, -1, U, m, h, W));
  KTRY(DOP(ctx, gemm, 1, 0, n, m, d, 1.0, Xp, d, U, d, 0.0, R, n));
  for (int64_t i = 0; i < n * (int64_t)m; i++) R[i] -= Y[i];
  KTRY(DOP(ctx, gemm, 0, 0, d, m, n, 1.0, Xp, d, R, n, 0.0, Gd, d));
  KTRY(pc_apply(ctx, P, 1, Gd, m, h, T));
  double o = 0, worst = 0;
  for (int j = 0; j < m; j++) {
    double rr = 0, ww = 0, gg = 0;
    for (int64_t i = 0; i < n; i++) rr += R[i + j * n] * R[i + j * n];
    for (int64_t r = 0; r < d; r++) {
      const double wv = W[r + j * d], g = T[r + j * d] + lambda * wv;
      ww += wv * wv;
      gg += g * g;
    }
    o += (rr + lambda * ww) / (2.0 * (double)n);
    const double rel = sqrt(gg) / (zy[j] > 0 ? zy[j] : 1.0);
    if (rel > worst || isnan(rel)) worst = rel;
  }
  *obj = o;
  *crit = worst;
  return KRR_OK;
}

/* The preconditioner of eq. (8) for lam from the sketch (s2, V; P->V = V,
 * P->k = k set): P->sk, cm, cp, and Xp = P^{-1/2} Zt = Zt / sqrt(s_k) + V
 * diag(cm) (Zt'V)' -- the paper's preprocessing (Alg. 3 line 7), so that a
 * step costs O(d), as plain SVRG's.  ZVs (n x k) receives ZV diag(cm); it
 * may be ZV itself (then ZV is lost). */
static krr_status precond_tune(krr_ctx *ctx, const double *Zt, int64_t n, double lam,
                               const double *s2, const double *ZV, double *ZVs, double *Xp,
                               precond_t *P) {
  const int64_t d = P->d;
  const int k = P->k;
  P->sk = s2[k - 1] + lam;
  for (int l = 0; l < k; l++) {
    P->cm[l] = 1.0 / sqrt(s2[l] + lam) - 1.0 / sqrt(P->sk);
    P->cp[l] = sqrt(s2[l] + lam) - sqrt(P->sk);
  }
  for (int64_t i = 0; i < n; i++)
    for (int l = 0; l < k; l++) ZVs[i + l * n] = ZV[i + l * n] * P->cm[l];
  for (int64_t i = 0; i < d * n; i++) Xp[i] = Zt[i] / sqrt(P->sk);
  return DOP(ctx, gemm, 0, 1, d, n, k, 1.0, P->V, d, ZVs, n, 1.0, Xp, d);
}

/* smoothness constants: beta_i = (N/n) ||P^{-1/2} x_i||^2 for the rows of D
 * (d x n), beta_{n+j} = N lam ||P^{-1/2} e_j||^2; cum their running sums;
 * returns the sum */
static double smoothness(const precond_t *P, const double *D, int64_t n, double lam, double *beta,
                         double *cum) {
  const int64_t d = P->d, N = n + d;
  const int k = P->k;
  double bsum = 0;
  for (int64_t i = 0; i < n; i++) {
    const double *xi = D + i * d;
    double s = 0;
    for (int64_t r = 0; r < d; r++) s += xi[r] * xi[r];
    beta[i] = (double)N / (double)n * s;
  }
  for (int64_t j = 0; j < d; j++) {
    double s = 1.0 / P->sk;
    for (int l = 0; l < k; l++) {
      const double e = (P->cm[l] + 1.0 / sqrt(P->sk)) * P->V[j + l * d];
      s += e * e - P->V[j + l * d] * P->V[j + l * d] / P->sk;
    }
    beta[n + j] = (double)N * lam * (s > 0 ? s : 0.0);
  }
  for (int64_t i = 0; i < N; i++) {
    bsum += beta[i];
    cum[i] = bsum;
  }
  return bsum;
}

/* what an epoch reads */
typedef struct {
  const precond_t *P;
  const double *D; /* d x n: P^{-1/2} x_i (Zt without preconditioner) */
  int64_t n;
  int m;
  int64_t N;
  const double *Y;
  double lam, eta;
  const double *beta, *cum;
  double bsum;
  int sampling; /* 1: by the smoothness constants */
  int64_t epoch_length;
  uint64_t sstream; /* the epochs' stream of the seed */
} epoch_t;

/* Epoch number s (>= 1) from the snapshot u~ = U, whose W = P^{-1/2} u~, R
 * and Gd full_gradient left: mu, then epoch_length variance-reduced steps
 * on U (Wt keeps W~). */
static krr_status svrg_epoch(krr_ctx *ctx, const epoch_t *E, int s, double *U, const double *W,
                             double *Wt, const double *R, const double *Gd, double *mu, double *h,
                             double *b) {
  const precond_t *P = E->P;
  const int64_t d = P->d, n = E->n, N = E->N;
  const int m = E->m;
  const double *D = E->D, *Y = E->Y;
  const double lam = E->lam, eta = E->eta, bsum = E->bsum, invN = 1.0 / (double)N;
  /* snapshot u~ = U (W~ = W, R~ = R hold it): mu = grad of L(P^{-1/2} u) at u~
   * = Gd / n + lam P^{-1/2} W~ */
  memcpy(Wt, W, (size_t)(d * m) * sizeof(double));
  KTRY(pc_apply(ctx, P, -1, W, m, h, mu));
  for (int64_t r = 0; r < d * (int64_t)m; r++) mu[r] = Gd[r] / (double)n + lam * mu[r];
  const uint64_t es = krr_rng_stream(E->sstream, (uint64_t)s, 0);
  for (int64_t t = 0; t < E->epoch_length; t++) {
    const double u = krr_rng_unif(es, (uint64_t)t);
    int64_t i;
    double qi;
    if (E->sampling == 1) {
      const double target = u * bsum;
      int64_t lo = 0, hi = N - 1;
      while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (E->cum[mid] < target) lo = mid + 1;
        else hi = mid;
      }
      i = lo;
      qi = E->beta[i] / bsum;
      if (!(qi > 0)) continue; /* zero-probability terms are not drawn */
    } else {
      i = (int64_t)(u * (double)N);
      if (i >= N) i = N - 1;
      qi = invN;
    }
    /* the variance-reduced step: u -= eta ((grad f_i(u) - grad f_i(u~)) / (N q_i) + mu) */
    if (i < n) {
      /* (N/n)(x~_i'u - x~_i'u~) x~_i / (N q_i), x~_i'u~ = R~_i + y_i */
      const double *xi = D + i * d;
      const double a = eta / ((double)n * qi);
      for (int j = 0; j < m; j++) {
        double *uj = U + (int64_t)j * d;
        double xu = 0;
        for (int64_t r = 0; r < d; r++) xu += xi[r] * uj[r];
        const double ad = a * (xu - (R[i + j * n] + Y[i + j * n]));
        const double *mj = mu + (int64_t)j * d;
        for (int64_t r = 0; r < d; r++) uj[r] -= ad * xi[r] + eta * mj[r];
      }
    } else {
      /* N lam (b'u - b'u~) b / (N q), b = P^{-1/2} e_jj, b'u = w_jj */
      const int64_t jj = i - n;
      pc_column(P, jj, b);
      const double a = eta * lam / qi;
      for (int j = 0; j < m; j++) {
        double *uj = U + (int64_t)j * d;
        double bu = 0;
        for (int64_t r = 0; r < d; r++) bu += b[r] * uj[r];
        const double ad = a * (bu - Wt[jj + j * d]);
        const double *mj = mu + (int64_t)j * d;
        for (int64_t r = 0; r < d; r++) uj[r] -= ad * b[r] + eta * mj[r];
      }
    }
  }
  return KRR_OK;
}

static krr_status svrg_solve(krr_ctx *ctx, const double *Zt, int64_t n, int64_t d, int m,
                             const double *Y, double lambda, const krr_svrg_opts *o, double *W,
                             krr_svrg_info *info) {
  if (!(lambda > 0) || !isfinite(lambda))
    return krr_fail(ctx, KRR_ERR_INPUT, "svrg: `lambda` must be positive and finite");
  if (n < 1 || d < 1 || m < 1) return krr_fail(ctx, KRR_ERR_INPUT, "svrg: empty problem");
  krr_status st = KRR_OK;
  const double t0 = krr_now();
  const double lam = lambda / (double)n; /* lambda_G */
  const int64_t N = n + d;
  const int k = o->precondition ? (int)KRR_MIN((int64_t)o->rank, d) : 0;
  const int64_t k1 = k > 0 ? k : 1;
  int q = o->lanczos_iters;
  if (q <= 0) q = (int)ceil(log((double)(d > 1 ? d : 2)) / sqrt(0.5));
  double *V = dnew(ctx, d * k1, &st), *ZV = dnew(ctx, n * k1, &st), *cm = dnew(ctx, k1, &st),
         *cp = dnew(ctx, k1, &st), *beta = dnew(ctx, N, &st), *cum = dnew(ctx, N, &st),
         *R = dnew(ctx, n * (int64_t)m, &st), *Gd = dnew(ctx, d * (int64_t)m, &st),
         *T = dnew(ctx, d * (int64_t)m, &st), *mu = dnew(ctx, d * (int64_t)m, &st),
         *U = dnew(ctx, d * (int64_t)m, &st), *Wt = dnew(ctx, d * (int64_t)m, &st),
         *b = dnew(ctx, d, &st), *zy = dnew(ctx, m, &st), *h = dnew(ctx, k1 * (int64_t)m, &st),
         *Xp = k > 0 ? dnew(ctx, d * n, &st) : NULL;
  precond_t P = {d, k, V, 1.0, cm, cp};
  if (st != KRR_OK) goto done;
  info->k = k;
  info->q = k > 0 ? q : 0;
  /* ||Z'y_j|| for the criterion */
  if ((st = DOP(ctx, gemm, 0, 0, d, m, n, 1.0, Zt, d, Y, n, 0.0, Gd, d)) != KRR_OK) goto done;
  for (int j = 0; j < m; j++) {
    double s = 0;
    for (int64_t r = 0; r < d; r++) s += Gd[r + j * d] * Gd[r + j * d];
    zy[j] = sqrt(s);
  }
  const double *D = Zt; /* the data SVRG runs on: P^{-1/2} x_i (Section 5.1) */
  if (k > 0) {
    if ((st = block_lanczos(ctx, Zt, n, d, k, q, o->seed, V, info->sigma2, ZV)) != KRR_OK)
      goto done;
    /* ZV is scaled in place: not needed afterwards */
    if ((st = precond_tune(ctx, Zt, n, lam, info->sigma2, ZV, ZV, Xp, &P)) != KRR_OK) goto done;
    D = Xp;
  }
  const double bsum = smoothness(&P, D, n, lam, beta, cum);
  info->beta_hat = bsum / (double)N;
  const double eta = o->step / info->beta_hat;
  info->eta = eta;
  if (!(eta > 0) || !isfinite(eta)) {
    st = krr_fail(ctx, KRR_ERR_NUMERIC, "svrg: the step is not finite (all features zero?)");
    goto done;
  }
  /* u = P^{1/2} w */
  if ((st = pc_apply(ctx, &P, 1, W, m, h, U)) != KRR_OK) goto done;
  double crit;
  if ((st = full_gradient(ctx, &P, D, n, m, Y, lambda, U, W, R, Gd, T, h, zy, &info->objective[0],
                          &crit)) != KRR_OK)
    goto done;
  info->gradient[0] = crit;
  info->seconds[0] = krr_now() - t0;
  info->epochs_run = 0;
  const uint64_t sstream = krr_rng_stream(o->seed, 0x5A46, 2);
  const epoch_t E = {&P,     D, n, m, N, Y, lam, eta, beta, cum, bsum, o->sampling, o->epoch_length,
                     sstream};
  for (int s = 1; s <= o->epochs && !(crit <= o->tol); s++) {
    if ((st = krr_poll(ctx)) != KRR_OK) goto done;
    if ((st = svrg_epoch(ctx, &E, s, U, W, Wt, R, Gd, mu, h, b)) != KRR_OK) goto done;
    if ((st = full_gradient(ctx, &P, D, n, m, Y, lambda, U, W, R, Gd, T, h, zy,
                            &info->objective[s], &crit)) != KRR_OK)
      goto done;
    info->gradient[s] = crit;
    info->seconds[s] = krr_now() - t0;
    info->epochs_run = s;
    if (!isfinite(crit)) {
      st = krr_fail(ctx, KRR_ERR_NUMERIC,
                    "svrg diverged at epoch %d: reduce `step` (now %g / beta_hat)", s, o->step);
      goto done;
    }
  }
done:
  free(V); free(ZV); free(cm); free(cp); free(beta); free(cum); free(R); free(Gd); free(T);
  free(mu); free(U); free(Wt); free(b); free(zy); free(h); free(Xp);
  return st;
}

static krr_status svrg_rff(krr_ctx *ctx, const krr_kernel *k, const double *X, int64_t n, int p,
                           int64_t M, uint64_t seed, double *Zt) {
  krr_status st = KRR_OK;
  double *Wf = dnew(ctx, M * (int64_t)p, &st), *c = dnew(ctx, M, &st);
  if (st == KRR_OK) st = krr_features_draw(ctx, k, p, M, seed, Wf, c);
  /* Wf is M x p row-major = p x M column-major: Zt = Wf' X' (M x n) */
  if (st == KRR_OK) st = DOP(ctx, gemm, 1, 1, M, n, p, 1.0, Wf, p, X, n, 0.0, Zt, M);
  if (st == KRR_OK) {
    const double sc = sqrt(2.0 * krr_features_variance(k) / (double)M);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < M; j++) Zt[j + i * M] = sc * cos(Zt[j + i * M] + c[j]);
  }
  free(Wf);
  free(c);
  return st;
}

/* The solver's data and iterates are host arrays and its epochs are
 * sequential O(d m) steps (latency bound on a device), so on a device
 * context it runs on a host twin of it (base/ctx.c). */
krr_status krr_svrg_solve(krr_ctx *ctx, const double *Zt, int64_t n, int64_t d, int m,
                          const double *Y, double lambda, const krr_svrg_opts *o, double *W,
                          krr_svrg_info *info) {
  if (krr_ctx_on_host(ctx)) return svrg_solve(ctx, Zt, n, d, m, Y, lambda, o, W, info);
  krr_ctx h;
  KTRY(krr_ctx_host_twin(ctx, &h));
  krr_status st = krr_ctx_forward(ctx, &h, svrg_solve(&h, Zt, n, d, m, Y, lambda, o, W, info));
  krr_ctx_free(&h);
  return st;
}

krr_status krr_svrg_rff(krr_ctx *ctx, const krr_kernel *k, const double *X, int64_t n, int p,
                        int64_t M, uint64_t seed, double *Zt) {
  if (krr_ctx_on_host(ctx)) return svrg_rff(ctx, k, X, n, p, M, seed, Zt);
  krr_ctx h;
  KTRY(krr_ctx_host_twin(ctx, &h));
  krr_status st = krr_ctx_forward(ctx, &h, svrg_rff(&h, k, X, n, p, M, seed, Zt));
  krr_ctx_free(&h);
  return st;
}

/* --- the registry entry --------------------------------------------------------
 * SVRG as a solver of the registry, on an operator with a finite feature map
 * K = Z Z^T (op->nfeat = d > 0 with feature columns: random Fourier
 * features, x itself (op/linear.c), or features given as the points of a
 * linear operator, e.g. Nystrom features): the ridge problem
 * (Z'Z + lambda I) w = Z'Y of bcd_features, one epoch per iteration.
 *   prepare  Zt (d x n, host doubles) from the operator's feature columns;
 *            the Block Lanczos sketch (lambda-free, kept across lambdas)
 *   tune     the preconditioner of eq. (8), Xp, the smoothness constants
 *            and the step for lambda_G = lambda / n
 *   start    the targets, and w = Z'a from the starting dual weights a
 *   iterate  one epoch (svrg_epoch), then the full gradient at its end
 * The weights the package keeps are the dual ones, a = (Y - Z w) / lambda
 * (as bcd_features'), so a fit predicts, refits and reports like any solver
 * on the same operator; theta (the model in feature space) is w.  The
 * running estimate is the generic criterion of these dual weights (the
 * relative residual of (Z Z' + lambda I) a = Y, worst column), exact at the
 * end of every epoch: (Z Z' + lambda I) a - Y = -Z g / lambda with
 * g = Z'(Z w - Y) + lambda w, one n x d x m product; the paper's
 * criterion max_j ||g_j|| / ||Z'y_j|| is the extra diagnostic "gradient".
 * The stop is the one policy of every solver (stop.c) on that generic
 * criterion: it bounds the error of the fitted function as for any solver
 * (R's automatic tolerance), and it is exact at the end of each epoch, so
 * a stop at "tol" needs no second rule; the paper's criterion (the
 * generic one is at most ||Z||^2 / lambda times it) is reported, not used
 * to stop.
 * A bound on the epochs is the policy's max_iter (one epoch an iteration).
 * The result vectors: "sigma2" (the sketch's eigenvalues), "objective"
 * and "gradient" (the paper's objective and criterion at the start and
 * after each epoch of the solve: a trace of one row per epoch).
 * Epoch s draws from the seed's stream s, as krr_svrg_solve's epoch s: from
 * zero weights both give the same iterates.  The epochs are sequential
 * O(d m) steps on host arrays, so on a device they run on a host context
 * (ctx->host_ops); the operator's features are read once, on the device.
 * Passes: an epoch counts 1 + epoch_length / N (a full gradient and
 * epoch_length of the N = n + d terms), a start 1 (its full gradient). */
#define OPTIONS(X)                                                                            \
  X(rank, INT, 30, 1, 1e9, 0, NULL,                                                           \
    "sketch rank k of the preconditioner (capped at the features d)")                         \
  X(lanczos_iters, INT, 0, 1, 1e9, 0, NULL,                                                   \
    "Krylov blocks after the first (0: ceil(log(d) / sqrt(1/2)), the paper's epsilon = 1/2)") \
  X(epoch_length, INT, 0, 1, INFINITY, 0, NULL, "stochastic steps per epoch (0: 2 (n + d))")  \
  X(step, REAL, 0.1, 0, INFINITY, 1, NULL,                                                    \
    "step in units of 1 / beta_hat (0.1: the paper's Theorem 2)")                             \
  X(precondition, FLAG, 1, 0, 1, 0, NULL,                                                     \
    "the sketched preconditioner of eq. (8) (1) or plain SVRG (0)")                           \
  X(sampling, CHOICE, 0, 0, 0, 0, "smoothness|uniform",                                       \
    "draw the N = n + d terms by their smoothness constants or uniformly")
typedef struct {
  krr_common_opts common;
  KRR_OPT_FIELDS(OPTIONS)
} opts_t;
static const krr_optdef optdefs[] = {KRR_OPT_DEFS(OPTIONS)};

static const char *const extras[] = {"gradient", "objective",     "beta_hat", "eta",
                                     "rank",     "lanczos_iters", "features", NULL};

typedef struct {
  krr_ctx *hc; /* the context of the host work: the fit's, or hctx on a device */
  krr_ctx hctx;
  int host;
  int64_t d, N, len; /* features, terms, steps per epoch */
  int k, q, ncols;   /* rank (0: plain SVRG), Krylov blocks, sketch columns */
  precond_t P;
  const double *D; /* Zt or Xp */
  double *Zt, *Xp, *V, *ZV, *ZVs, *s2, *cm, *cp, *beta, *cum, *Y, *A;
  double *R, *Gd, *T, *G, *mu, *U, *W, *Wt, *b, *zy, *h, *ZG;
  double bsum, eta;
  double *hist; /* (objective, gradient) at the start and after each epoch of the solve */
  int64_t hlen, hcap;
} sv_t;

#define SV(s) ((sv_t *)(s)->st)
#define SO(s) SOPT(s, opts_t)

static krr_status sv_status(krr_solver *s, krr_status st) {
  sv_t *v = SV(s);
  return v->host ? krr_ctx_forward(s->ctx, &v->hctx, st) : st;
}

static void sv_release(krr_solver *s) {
  sv_t *v = SV(s);
  free(v->hist);
  v->hist = NULL;
  v->hlen = v->hcap = 0;
  if (v->host) krr_ctx_free(&v->hctx);
  v->host = 0;
  v->hc = NULL;
}

static krr_status sv_resolve(krr_solver *s) {
  opts_t *o = SO(s);
  sv_t *v = SV(s);
  if (s->data_free) return KRR_OK;
  if (s->op->nfeat <= 0 || !s->op->vt->feature_cols)
    return krr_fail(s->ctx, KRR_ERR_INPUT,
                    "svrg solves ridge regression in explicit features: "
                    "the %s operator has no finite feature map",
                    s->op->vt->name);
  v->d = s->op->nfeat;
  v->N = s->n + v->d;
  v->k = o->precondition ? (int)KRR_MIN(o->rank, v->d) : 0;
  v->q = o->lanczos_iters > 0 ? (int)o->lanczos_iters
                              : (int)ceil(log((double)(v->d > 1 ? v->d : 2)) / sqrt(0.5));
  if (v->k == 0) v->q = 0;
  v->ncols = (int)KRR_MIN((int64_t)v->k * (v->q + 1), v->d);
  v->len = o->epoch_length > 0 ? o->epoch_length : 2 * v->N;
  if (o->epoch_length == 0) o->epoch_length = v->len;
  if (o->lanczos_iters == 0 && v->k > 0) o->lanczos_iters = v->q;
  return KRR_OK;
}

/* the feature columns fetched per device product: at most 256 */
static int64_t sv_chunk(int64_t d) { return d < 256 ? d : 256; }

static double sv_memory(const krr_solver *s) {
  const sv_t *v = SV(s);
  double n = (double)s->n, d = (double)v->d, m = s->m, k = v->k > 0 ? v->k : 1, N = n + d;
  double c = (double)v->ncols, ch = (double)sv_chunk(v->d);
  double host = d * n * (v->k > 0 ? 2.0 : 1.0) + 2.0 * n * k + d * k + 3.0 * k + 2.0 * N +
                4.0 * n * m + 8.0 * d * m + d + m + k * m;
  double lanczos = v->k > 0 ? d * c + n * c + c * k + c * c + c : 0.0; /* block_lanczos's own */
  double fetch = n * ch * ((double)s->es + 8.0);                       /* features, chunked */
  return 8.0 * (host + lanczos) + fetch + (double)s->es * n * m;       /* + the dual weights */
}

static krr_status sv_init(krr_solver *s) {
  sv_t *v = SV(s);
  krr_arena *a = &s->arena;
  const int64_t n = s->n, d = v->d, m = s->m, k1 = v->k > 0 ? v->k : 1;
  KTRY(krr_solver_alloc_weights(s, n, s->prec));
  double **buf[] = {&v->Zt,  &v->V, &v->ZV, &v->ZVs, &v->s2, &v->cm, &v->cp, &v->beta,
                    &v->cum, &v->Y, &v->A,  &v->R,   &v->Gd, &v->T,  &v->G,  &v->mu,
                    &v->U,   &v->W, &v->Wt, &v->b,   &v->zy, &v->h,  &v->ZG};
  const int64_t len[] = {d * n, d * k1, n * k1, n * k1, k1,    k1,     k1,    v->N,
                         v->N,  n * m,  n * m,  n * m,  d * m, d * m,  d * m, d * m,
                         d * m, d * m,  d * m,  d,      m,     k1 * m, n * m};
  for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++)
    if (!(*buf[i] = (double *)krr_arena_host(a, len[i], sizeof(double)))) return s->ctx->status;
  if (v->k > 0 && !(v->Xp = (double *)krr_arena_host(a, d * n, sizeof(double))))
    return s->ctx->status;
  v->P = (precond_t){d, v->k, v->V, 1.0, v->cm, v->cp};
  v->D = v->k > 0 ? v->Xp : v->Zt;
  v->hc = s->ctx;
  if (!krr_ctx_on_host(s->ctx)) {
    KTRY(krr_ctx_host_twin(s->ctx, &v->hctx));
    v->host = 1;
    v->hc = &v->hctx;
  }
  krr_solver_set_extra(s, "features", (double)d);
  krr_solver_set_extra(s, "rank", (double)v->k);
  krr_solver_set_extra(s, "lanczos_iters", (double)v->q);
  return KRR_OK;
}

/* Zt from the operator's feature columns (chunks of columns on the device,
 * downloaded as doubles), then the sketch */
static krr_status sv_prepare(krr_solver *s) {
  sv_t *v = SV(s);
  const int64_t n = s->n, d = v->d, ch = sv_chunk(d);
  void *Zc = krr_arena_dev(&s->arena, n * ch, s->es);
  double *hz = (double *)krr_arena_host(&s->arena, n * ch, sizeof(double));
  krr_status st = Zc && hz ? KRR_OK : s->ctx->status;
  for (int64_t j0 = 0; st == KRR_OK && j0 < d; j0 += ch) {
    const int64_t c = KRR_MIN(ch, d - j0);
    st = krr_op_feature_cols(s->op, j0, c, Zc, n);
    if (st == KRR_OK) st = krr_download_vec(s->ctx, s->prec, Zc, n * c, hz);
    for (int64_t j = 0; st == KRR_OK && j < c; j++)
      for (int64_t i = 0; i < n; i++) v->Zt[j0 + j + i * d] = hz[i + j * n];
    if (st == KRR_OK) st = krr_poll(s->ctx);
  }
  krr_arena_release(&s->arena, Zc);
  krr_arena_release(&s->arena, hz);
  KTRY(st);
  if (v->k == 0) return KRR_OK;
  KTRY(sv_status(s, block_lanczos(v->hc, v->Zt, n, d, v->k, v->q, krr_options_seed(s->opts), v->V,
                                  v->s2, v->ZV)));
  return KRR_OK;
}

static krr_status sv_tune(krr_solver *s) {
  sv_t *v = SV(s);
  const double lam = s->obj->lambda / (double)s->n;
  if (v->k > 0)
    KTRY(sv_status(s, precond_tune(v->hc, v->Zt, s->n, lam, v->s2, v->ZV, v->ZVs, v->Xp, &v->P)));
  v->bsum = smoothness(&v->P, v->D, s->n, lam, v->beta, v->cum);
  v->eta = SO(s)->step / (v->bsum / (double)v->N);
  krr_solver_set_extra(s, "beta_hat", v->bsum / (double)v->N);
  krr_solver_set_extra(s, "eta", v->eta);
  if (!(v->eta > 0) || !isfinite(v->eta))
    return krr_fail(s->ctx, KRR_ERR_NUMERIC, "svrg: the step is not finite (all features zero?)");
  return KRR_OK;
}

/* At U: the full gradient (full_gradient), the dual weights a = -R / lambda
 * into s->w, the criteria */
static krr_status sv_measure(krr_solver *s) {
  sv_t *v = SV(s);
  krr_ctx *hc = v->hc;
  const int64_t n = s->n, d = v->d, m = s->m, nm = n * m;
  const double lambda = s->obj->lambda;
  double obj, crit;
  KTRY(full_gradient(hc, &v->P, v->D, n, (int)m, v->Y, lambda, v->U, v->W, v->R, v->Gd, v->T, v->h,
                     v->zy, &obj, &crit));
  /* g = Z'R + lambda W (T holds Z'R), and Z g */
  for (int64_t i = 0; i < d * m; i++) v->G[i] = v->T[i] + lambda * v->W[i];
  KTRY(DOP(hc, gemm, 1, 0, n, m, d, 1.0, v->Zt, d, v->G, d, 0.0, v->ZG, n));
  /* the generic criterion's form (loss/loss.c): the worst column's
   * ||r_j|| / ||y_j|| when the objective keeps the column norms, else
   * ||R||_F / ||Y||_F, with r = Z g / lambda */
  const krr_objective *ob = s->obj;
  const double yn = ob->ynorm > 0 ? ob->ynorm : 1.0;
  double est = 0, all = 0;
  for (int64_t j = 0; j < m; j++) {
    double t = 0;
    for (int64_t i = 0; i < n; i++) t += v->ZG[i + j * n] * v->ZG[i + j * n];
    all += t;
    const double den = m > 1 && ob->ycol && ob->ycol[j] > 0 ? ob->ycol[j] : yn;
    if (sqrt(t) / (lambda * den) > est) est = sqrt(t) / (lambda * den);
  }
  if (!(m > 1 && ob->ycol)) est = sqrt(all) / (lambda * yn);
  for (int64_t i = 0; i < nm; i++) v->A[i] = -v->R[i] / lambda;
  KTRY(krr_upload_vec_into(s->ctx, s->wprec, v->A, nm, s->w));
  s->diag.resid_est = est;
  krr_solver_set_extra(s, "gradient", crit);
  krr_solver_set_extra(s, "objective", obj);
  if (v->hlen == v->hcap) { /* the history: two numbers an epoch */
    int64_t cap = v->hcap > 0 ? 2 * v->hcap : 64;
    double *h = (double *)realloc(v->hist, sizeof(double) * (size_t)(2 * cap));
    if (!h) return krr_fail(s->ctx, KRR_ERR_MEMORY, "svrg: out of host memory");
    v->hist = h;
    v->hcap = cap;
  }
  v->hist[2 * v->hlen] = obj;
  v->hist[2 * v->hlen + 1] = crit;
  v->hlen++;
  if (!isfinite(crit) || !isfinite(s->diag.resid_est))
    return krr_fail(s->ctx, KRR_ERR_NUMERIC,
                    "svrg diverged at epoch %lld: reduce `step` (now %g "
                    "/ beta_hat)",
                    (long long)s->diag.iter, SO(s)->step);
  return KRR_OK;
}

static krr_status sv_start(krr_solver *s) {
  sv_t *v = SV(s);
  krr_ctx *hc = v->hc;
  const int64_t n = s->n, d = v->d, m = s->m;
  if (s->obj->lcol) return krr_fail(s->ctx, KRR_ERR_INPUT, "svrg solves one `lambda` at a time");
  v->hlen = 0; /* a new solve: a new history */
  KTRY(krr_download_vec(s->ctx, s->prec, s->obj->y, n * m, v->Y));
  /* ||Z'y_j|| for the paper's criterion */
  KTRY(sv_status(s, DOP(hc, gemm, 0, 0, d, m, n, 1.0, v->Zt, d, v->Y, n, 0.0, v->Gd, d)));
  for (int64_t j = 0; j < m; j++) {
    double t = 0;
    for (int64_t r = 0; r < d; r++) t += v->Gd[r + j * d] * v->Gd[r + j * d];
    v->zy[j] = sqrt(t);
  }
  /* w = Z'a from the starting dual weights (zero for a fresh fit), u = P^{1/2} w */
  if (s->w_zero) {
    memset(v->W, 0, sizeof(double) * (size_t)(d * m));
  } else {
    KTRY(krr_download_vec(s->ctx, s->wprec, s->w, n * m, v->A));
    KTRY(sv_status(s, DOP(hc, gemm, 0, 0, d, m, n, 1.0, v->Zt, d, v->A, n, 0.0, v->W, d)));
  }
  KTRY(sv_status(s, pc_apply(hc, &v->P, 1, v->W, (int)m, v->h, v->U)));
  KTRY(sv_status(s, sv_measure(s)));
  s->diag.passes += 1.0;
  return KRR_OK;
}

static krr_status sv_iterate(krr_solver *s) {
  sv_t *v = SV(s);
  const opts_t *o = SO(s);
  const epoch_t E = {&v->P,
                     v->D,
                     s->n,
                     s->m,
                     v->N,
                     v->Y,
                     s->obj->lambda / (double)s->n,
                     v->eta,
                     v->beta,
                     v->cum,
                     v->bsum,
                     o->sampling == 0,
                     v->len,
                     krr_rng_stream(krr_options_seed(s->opts), 0x5A46, 2)};
  krr_solver_tick(s);
  KTRY(sv_status(s, svrg_epoch(v->hc, &E, (int)s->diag.iter, v->U, v->W, v->Wt, v->R, v->Gd, v->mu,
                               v->h, v->b)));
  s->diag.passes += 1.0 + (double)v->len / (double)v->N;
  return sv_status(s, sv_measure(s));
}

static krr_status sv_theta(krr_solver *s, double *host) {
  sv_t *v = SV(s);
  memcpy(host, v->W, sizeof(double) * (size_t)(v->d * s->m));
  return KRR_OK;
}

static const char *const vectors[] = {"sigma2", "objective", "gradient", NULL};

/* sigma2: the sketch's eigenvalue estimates of C = Z'Z / n (k, descending;
 * empty before the sketch or without preconditioner); objective, gradient:
 * the paper's objective and criterion at the start (epoch 0) and after each
 * epoch of the current solve */
static int64_t sv_vector(krr_solver *s, int i, double *out) {
  const sv_t *v = SV(s);
  if (i == 0) {
    const int64_t k = s->prepared ? v->k : 0;
    if (out && k > 0) memcpy(out, v->s2, sizeof(double) * (size_t)k);
    return k;
  }
  for (int64_t e = 0; out && e < v->hlen; e++) out[e] = v->hist[2 * e + (i - 1)];
  return v->hlen;
}

const krr_solver_def krr_solver_svrg = {
    .name = "svrg",
    .title = "Sketched preconditioned SVRG",
    .losses = "squared",
    .options = {optdefs, KRR_NOPTS(optdefs), sizeof(opts_t)},
    .extras = extras,
    .state_size = sizeof(sv_t),
    .mem_advice = "use fewer features, a smaller rank or precondition = 0",
    .resolve = sv_resolve,
    .memory = sv_memory,
    .init = sv_init,
    .prepare = sv_prepare,
    .tune = sv_tune,
    .start = sv_start,
    .iterate = sv_iterate,
    .theta = sv_theta,
    .vectors = vectors,
    .vector = sv_vector,
    .release = sv_release,
};
