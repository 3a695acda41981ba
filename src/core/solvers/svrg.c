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
 * SVRG runs on u = P^{1/2} w (the preconditioned problem L(P^{-1/2} u)),
 * written in w: a u-step u -= eta g_u with g_u = P^{-1/2} g_w is the w-step
 * w -= eta P^{-1} g_w, so only P^{-1} is applied (O(dk) per step).
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
 * the seed, so a fit is reproducible by seed whatever the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "svrg.h"
#include "../base/base.h"
#include "../op/op.h"
#include "../rng.h"

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

/* out = P^{-1} v for a d-vector v whose U'v is uv (k): v / s_k + U (c .* uv) */
static void pinv_apply(int64_t d, int k, const double *V, const double *cc, double sk,
                       const double *v, const double *uv, double *out) {
  for (int64_t r = 0; r < d; r++) out[r] = v[r] / sk;
  for (int l = 0; l < k; l++) {
    const double t = cc[l] * uv[l];
    if (t == 0) continue;
    const double *vl = V + (int64_t)l * d;
    for (int64_t r = 0; r < d; r++) out[r] += t * vl[r];
  }
}

/* R = Zt'W - Y (n x m), G = Zt R (d x m); objective and criterion */
static krr_status full_gradient(krr_ctx *ctx, const double *Zt, int64_t n, int64_t d, int m,
                                const double *Y, double lambda, const double *W, double *R,
                                double *G, const double *zy, double *obj, double *crit) {
  KTRY(DOP(ctx, gemm, 1, 0, n, m, d, 1.0, Zt, d, W, d, 0.0, R, n));
  for (int64_t i = 0; i < n * (int64_t)m; i++) R[i] -= Y[i];
  KTRY(DOP(ctx, gemm, 0, 0, d, m, n, 1.0, Zt, d, R, n, 0.0, G, d));
  double o = 0, worst = 0;
  for (int j = 0; j < m; j++) {
    double rr = 0, ww = 0, gg = 0;
    for (int64_t i = 0; i < n; i++) rr += R[i + j * n] * R[i + j * n];
    for (int64_t r = 0; r < d; r++) {
      const double wv = W[r + j * d], g = G[r + j * d] + lambda * wv;
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

krr_status krr_svrg_solve(krr_ctx *ctx, const double *Zt, int64_t n, int64_t d, int m,
                          const double *Y, double lambda, const krr_svrg_opts *o, double *W,
                          krr_svrg_info *info) {
  if (!(lambda > 0) || !isfinite(lambda))
    return krr_fail(ctx, KRR_ERR_INPUT, "svrg: `lambda` must be positive and finite");
  if (n < 1 || d < 1 || m < 1) return krr_fail(ctx, KRR_ERR_INPUT, "svrg: empty problem");
  krr_status st = KRR_OK;
  const double lam = lambda / (double)n; /* lambda_G */
  const int64_t N = n + d;
  const int k = o->precondition ? (int)KRR_MIN((int64_t)o->rank, d) : 0;
  int q = o->lanczos_iters;
  if (q <= 0) q = (int)ceil(log((double)(d > 1 ? d : 2)) / sqrt(0.5));
  double *V = dnew(ctx, d * (int64_t)(k > 0 ? k : 1), &st),
         *ZV = dnew(ctx, n * (int64_t)(k > 0 ? k : 1), &st), *cc = dnew(ctx, k > 0 ? k : 1, &st),
         *beta = dnew(ctx, N, &st), *cum = dnew(ctx, N, &st), *R = dnew(ctx, n * (int64_t)m, &st),
         *G = dnew(ctx, d * (int64_t)m, &st), *nu = dnew(ctx, d * (int64_t)m, &st),
         *Wt = dnew(ctx, d * (int64_t)m, &st), *p = dnew(ctx, d, &st),
         *uv = dnew(ctx, k > 0 ? k : 1, &st), *zy = dnew(ctx, m, &st),
         *un = dnew(ctx, (k > 0 ? k : 1) * (int64_t)m, &st);
  if (st != KRR_OK) goto done;
  info->k = k;
  info->q = k > 0 ? q : 0;
  /* ||Z'y_j|| for the criterion */
  if ((st = DOP(ctx, gemm, 0, 0, d, m, n, 1.0, Zt, d, Y, n, 0.0, G, d)) != KRR_OK) goto done;
  for (int j = 0; j < m; j++) {
    double s = 0;
    for (int64_t r = 0; r < d; r++) s += G[r + j * d] * G[r + j * d];
    zy[j] = sqrt(s);
  }
  double sk = 1.0;
  if (k > 0) {
    if ((st = block_lanczos(ctx, Zt, n, d, k, q, o->seed, V, info->sigma2, ZV)) != KRR_OK)
      goto done;
    sk = info->sigma2[k - 1] + lam;
    for (int l = 0; l < k; l++) cc[l] = 1.0 / (info->sigma2[l] + lam) - 1.0 / sk;
  }
  /* smoothness constants */
  double bsum = 0;
  for (int64_t i = 0; i < n; i++) {
    const double *xi = Zt + i * d;
    double s = 0;
    for (int64_t r = 0; r < d; r++) s += xi[r] * xi[r];
    s /= sk;
    for (int l = 0; l < k; l++) s += cc[l] * ZV[i + l * n] * ZV[i + l * n];
    beta[i] = (double)N / (double)n * (s > 0 ? s : 0.0);
  }
  for (int64_t j = 0; j < d; j++) {
    double s = 1.0 / sk;
    for (int l = 0; l < k; l++) s += cc[l] * V[j + l * d] * V[j + l * d];
    beta[n + j] = (double)N * lam * (s > 0 ? s : 0.0);
  }
  for (int64_t i = 0; i < N; i++) {
    bsum += beta[i];
    cum[i] = bsum;
  }
  info->beta_hat = bsum / (double)N;
  const double eta = o->step / info->beta_hat;
  info->eta = eta;
  if (!(eta > 0) || !isfinite(eta)) {
    st = krr_fail(ctx, KRR_ERR_NUMERIC, "svrg: the step is not finite (all features zero?)");
    goto done;
  }
  double crit;
  if ((st = full_gradient(ctx, Zt, n, d, m, Y, lambda, W, R, G, zy, &info->objective[0], &crit)) !=
      KRR_OK)
    goto done;
  info->gradient[0] = crit;
  info->epochs_run = 0;
  const uint64_t sstream = krr_rng_stream(o->seed, 0x5A46, 2);
  const double invN = 1.0 / (double)N;
  for (int s = 1; s <= o->epochs && !(crit <= o->tol); s++) {
    if ((st = krr_poll(ctx)) != KRR_OK) goto done;
    /* snapshot: W~ = W, mu = G/n + lam W~ (the gradient of L), nu = P^{-1} mu */
    memcpy(Wt, W, (size_t)(d * m) * sizeof(double));
    for (int64_t r = 0; r < d * (int64_t)m; r++) G[r] = G[r] / (double)n + lam * W[r];
    if (k > 0) {
      if ((st = DOP(ctx, gemm, 1, 0, k, m, d, 1.0, V, d, G, d, 0.0, un, k)) != KRR_OK) goto done;
      for (int j = 0; j < m; j++)
        pinv_apply(d, k, V, cc, sk, G + (int64_t)j * d, un + (int64_t)j * k, nu + (int64_t)j * d);
    } else {
      memcpy(nu, G, (size_t)(d * m) * sizeof(double));
    }
    const uint64_t es = krr_rng_stream(sstream, (uint64_t)s, 0);
    for (int64_t t = 0; t < o->epoch_length; t++) {
      const double u = krr_rng_unif(es, (uint64_t)t);
      int64_t i;
      double qi;
      if (o->sampling == 1) {
        const double target = u * bsum;
        int64_t lo = 0, hi = N - 1;
        while (lo < hi) {
          int64_t mid = lo + (hi - lo) / 2;
          if (cum[mid] < target) lo = mid + 1; else hi = mid;
        }
        i = lo;
        qi = beta[i] / bsum;
        if (!(qi > 0)) continue; /* not reachable: zero-probability terms are never drawn */
      } else {
        i = (int64_t)(u * (double)N);
        if (i >= N) i = N - 1;
        qi = invN;
      }
      if (i < n) {
        const double *xi = Zt + i * d;
        if (k > 0) for (int l = 0; l < k; l++) uv[l] = cc[l] * ZV[i + l * n];
        /* p = P^{-1} x_i */
        for (int64_t r = 0; r < d; r++) p[r] = xi[r] / sk;
        for (int l = 0; l < k; l++) {
          const double tl = uv[l];
          const double *vl = V + (int64_t)l * d;
          for (int64_t r = 0; r < d; r++) p[r] += tl * vl[r];
        }
        const double a = eta / ((double)n * qi);
        for (int j = 0; j < m; j++) {
          double *wj = W + (int64_t)j * d;
          double xw = 0;
          for (int64_t r = 0; r < d; r++) xw += xi[r] * wj[r];
          /* x_i'W~ = R~_i + y_i */
          const double delta = xw - (R[i + j * n] + Y[i + j * n]);
          const double ad = a * delta;
          const double *nj = nu + (int64_t)j * d;
          for (int64_t r = 0; r < d; r++) wj[r] -= ad * p[r] + eta * nj[r];
        }
      } else {
        const int64_t jj = i - n;
        /* p = P^{-1} e_jj */
        for (int64_t r = 0; r < d; r++) p[r] = 0;
        p[jj] = 1.0 / sk;
        for (int l = 0; l < k; l++) {
          const double tl = cc[l] * V[jj + l * d];
          const double *vl = V + (int64_t)l * d;
          for (int64_t r = 0; r < d; r++) p[r] += tl * vl[r];
        }
        /* (grad f(w) - grad f(w~)) / (N q) = lam (w_jj - w~_jj) e_jj / q */
        const double a = eta * lam / qi;
        for (int j = 0; j < m; j++) {
          double *wj = W + (int64_t)j * d;
          const double ad = a * (wj[jj] - Wt[jj + j * d]);
          const double *nj = nu + (int64_t)j * d;
          for (int64_t r = 0; r < d; r++) wj[r] -= ad * p[r] + eta * nj[r];
        }
      }
    }
    if ((st = full_gradient(ctx, Zt, n, d, m, Y, lambda, W, R, G, zy, &info->objective[s],
                            &crit)) != KRR_OK)
      goto done;
    info->gradient[s] = crit;
    info->epochs_run = s;
    if (!isfinite(crit)) {
      st = krr_fail(ctx, KRR_ERR_NUMERIC,
                    "svrg diverged at epoch %d: reduce `step` (now %g / beta_hat)", s, o->step);
      goto done;
    }
  }
done:
  free(V); free(ZV); free(cc); free(beta); free(cum); free(R); free(G); free(nu); free(Wt);
  free(p); free(uv); free(zy); free(un);
  return st;
}

krr_status krr_svrg_rff(krr_ctx *ctx, const krr_kernel *k, const double *X, int64_t n, int p,
                        int64_t M, uint64_t seed, double *Zt) {
  krr_status st = KRR_OK;
  double *Wf = dnew(ctx, M * (int64_t)p, &st), *c = dnew(ctx, M, &st);
  if (st == KRR_OK) st = krr_features_draw(ctx, k, p, M, seed, Wf, c);
  /* Wf is M x p row-major = p x M column-major: Zt = Wf' X' (M x n) */
  if (st == KRR_OK) st = DOP(ctx, gemm, 1, 1, M, n, p, 1.0, Wf, p, X, n, 0.0, Zt, M);
  if (st == KRR_OK) {
    const double sc = sqrt(2.0 / (double)M);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < M; j++) Zt[j + i * M] = sc * cos(Zt[j + i * M] + c[j]);
  }
  free(Wf);
  free(c);
  return st;
}
