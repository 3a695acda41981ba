/* The Gaussian-process log marginal likelihood on all n points, without
 * forming K: stochastic Lanczos quadrature and Hutchinson estimates from one
 * preconditioned CG run with many right-hand sides (krr.h, krr_gp_slq).
 *
 * A = K + lambda I.  One CG run (cg.c) on A [X_y, X_z] = [Y, Z] with the
 * probes Z = P^{1/2} G, G ~ N(0, I), gives the solves alpha = A^{-1} Y and
 * A^{-1} Z and, from each probe column's CG coefficients, the Lanczos
 * tridiagonal T_i of P^{-1/2} A P^{-1/2} started at P^{-1/2} z_i (the
 * modified batched CG of Gardner et al. 2018, "GPyTorch: blackbox
 * matrix-matrix Gaussian process inference", sec. 4).  Then
 *   log det A = log det P + tr log(P^{-1/2} A P^{-1/2})
 *            ~ log det P + mean_i (z_i^T P^{-1} z_i) e_1^T log(T_i) e_1
 * (stochastic Lanczos quadrature, Ubaru, Chen and Saad 2017), and
 * tr(A^{-1} B) = tr(P^{-1} B) + tr((A^{-1} - P^{-1}) B), the first term
 * exact and the second by Hutchinson's estimator mean_i (A^{-1} z_i -
 * P^{-1} z_i)^T B P^{-1} z_i (E z z^T = P): the preconditioner is a control
 * variate, and the better P approximates A the smaller the estimates'
 * variance (Wenger et al. 2022, "Preconditioning for scalable Gaussian
 * process hyperparameter optimization").
 *
 * P = U diag(s) U^T + lambda I with orthonormal U (n x r): from the greedy
 * pivoted Cholesky factor L (K ~ L L^T, pchol.c), L^T L = Q diag(s) Q^T and
 * U = L Q diag(s)^{-1/2}.  P does not depend on lambda beyond the shift, and
 * a P built at other kernel hyperparameters stays a valid (if weaker)
 * preconditioner and control variate, so a caller may keep it across the
 * steps of an optimiser: with the probes G fixed by the seed, the estimates
 * are then one smooth function of the hyperparameters (common random
 * numbers).
 *
 * The profile likelihood of y_k ~ N(0, s_k^2 A) (s_k^2 = y_k^T alpha_k / n)
 * and its gradient (Rasmussen and Williams 2006, eq. 5.9):
 *   d/dtheta = sum_k n / (2 y_k^T alpha_k) alpha_k^T dA alpha_k - m/2 tr(A^{-1} dA),
 * with dA = lambda I for log lambda and dA = dK for the log bandwidth (or the
 * log length scale of one column).  The products dK V are central
 * differences of two kernel products at the hyperparameter times e^{+-h}
 * (h = fd_step): in double precision their relative error is about
 * h^2 / 6 + 1e-16 / h (below 1e-9 at the default h), far below the
 * estimates' stochastic error, on every kernel and backend the exact
 * operator has.  Everything runs in double precision. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "linalg.h"

#define DOP(ctx, name, ...) (ctx)->ops->name##_d((ctx), __VA_ARGS__)
#define COLD(buf, j, n) ((double *)(buf) + (int64_t)(j) * (n))

typedef struct {
  krr_ctx *ctx;
  krr_op *op;
  int64_t n;
  int r;
  double lambda;
  double *U;    /* device n x r */
  double *wdev; /* device r: scratch diagonal */
  double *t;    /* device r x qmax */
  double *s;    /* host r */
} slq_t;

/* out = (K + lambda I) in, q columns */
static krr_status apply_A(void *arg, const void *in, void *out, int q) {
  slq_t *w = (slq_t *)arg;
  KTRY(krr_op_mv(w->op, NULL, NULL, in, w->n, q, out, w->n));
  return DOP(w->ctx, axpby, w->n * q, w->lambda, (const double *)in, 1.0, (double *)out);
}

/* out = c0 in + U diag(f(s)) U^T in (q columns), f given per index */
static krr_status apply_lowrank(slq_t *w, const double *in, double *out, int q, double c0,
                                const double *f) {
  krr_ctx *ctx = w->ctx;
  /* out = c0 in (axpby with b = 0 would read out, which may hold NaN) */
  KTRY(ctx->ops->copy(ctx, out, in, sizeof(double) * (size_t)(w->n * q)));
  KTRY(DOP(ctx, axpby, w->n * q, 0.0, in, c0, out));
  if (w->r == 0) return KRR_OK;
  KTRY(krr_upload_vec_into(ctx, KRR_DOUBLE, f, w->r, w->wdev));
  KTRY(DOP(ctx, gemm, 1, 0, w->r, q, w->n, 1.0, w->U, w->n, in, w->n, 0.0, w->t, w->r));
  KTRY(DOP(ctx, scale_rows, w->r, q, w->wdev, w->t, w->r));
  return DOP(ctx, gemm, 0, 0, w->n, q, w->r, 1.0, w->U, w->n, w->t, w->r, 1.0, out, w->n);
}

/* out = P^{-1} in: U diag(1/(s + lambda) - 1/lambda) U^T in + in / lambda */
static krr_status apply_Pinv(slq_t *w, const double *in, double *out, int q, double *fh) {
  for (int j = 0; j < w->r; j++) fh[j] = 1.0 / (w->s[j] + w->lambda) - 1.0 / w->lambda;
  return apply_lowrank(w, in, out, q, 1.0 / w->lambda, fh);
}

typedef struct {
  slq_t *w;
  int q;
  double *fh;
} slq_cg_arg;

static krr_status cg_A(void *arg, const void *in, void *out) {
  slq_cg_arg *a = (slq_cg_arg *)arg;
  return apply_A(a->w, in, out, a->q);
}

static krr_status cg_M(void *arg, const void *in, void *out) {
  slq_cg_arg *a = (slq_cg_arg *)arg;
  return apply_Pinv(a->w, (const double *)in, (double *)out, a->q, a->fh);
}

/* The preconditioner's basis from the greedy pivoted Cholesky factor of K
 * (rank at most r): U = L Q diag(s)^{-1/2}, s the eigenvalues of L^T L
 * above 1e-12 of the largest.  U (device n x r), s (host r); *r_eff. */
static krr_status build_precond(krr_arena *a, slq_t *w, int r, int *r_eff) {
  krr_ctx *ctx = w->ctx;
  int64_t n = w->n;
  double *L = (double *)krr_arena_dev(a, n * r, sizeof(double));
  double *d = (double *)krr_arena_host(a, n, sizeof(double));
  int64_t *piv = (int64_t *)krr_arena_host(a, r, sizeof(int64_t));
  double *G = (double *)krr_arena_dev(a, (int64_t)r * r, sizeof(double));
  double *ev = (double *)krr_arena_dev(a, r, sizeof(double));
  double *evh = (double *)krr_arena_host(a, r, sizeof(double));
  KTRY(KRR_ALLOCATED(a, L, d, piv, G, ev, evh));
  int k = 0;
  KTRY(krr_pivoted_cholesky(w->op, NULL, r, 0.0, 1e-13, 0.0, L, d, piv, &k));
  *r_eff = 0;
  if (k == 0) return KRR_OK;
  KTRY(DOP(ctx, gemm, 1, 0, k, k, n, 1.0, L, n, L, n, 0.0, G, k));
  KTRY(DOP(ctx, syev, k, G, k, ev));
  KTRY(krr_download_vec(ctx, KRR_DOUBLE, ev, k, evh));
  double top = evh[k - 1];
  int keep = 0;
  while (keep < k && evh[k - 1 - keep] > 1e-12 * top) keep++;
  /* the kept eigenvectors are G's last `keep` columns (ascending order) */
  const double *Qk = G + (int64_t)(k - keep) * k;
  KTRY(DOP(ctx, gemm, 0, 0, n, keep, k, 1.0, L, n, Qk, k, 0.0, w->U, n));
  for (int j = 0; j < keep; j++) {
    w->s[j] = evh[k - keep + j];
    KTRY(DOP(ctx, axpby, n, 1.0 / sqrt(w->s[j]), COLD(w->U, j, n), 0.0, COLD(w->U, j, n)));
  }
  *r_eff = keep;
  return KRR_OK;
}

/* The eigenvalues d[0 .. J-1] of the symmetric tridiagonal matrix with
 * diagonal d and off-diagonal e (e[i] couples i and i + 1; e[J - 1] is
 * scratch) and, in z, the first component of each eigenvector: the
 * implicit QL iteration with Wilkinson shifts (EISPACK imtql2; Golub and
 * Welsch 1969 for the first components), rotating only the first row of
 * the eigenvector matrix, O(J^2).  -1 if an eigenvalue needs more than 60
 * sweeps. */
static int tridiag_first(int J, double *d, double *e, double *z) {
  for (int i = 0; i < J; i++) z[i] = i == 0 ? 1.0 : 0.0;
  e[J - 1] = 0.0;
  for (int l = 0; l < J; l++) {
    int iter = 0, m;
    do {
      for (m = l; m < J - 1; m++)
        if (fabs(e[m]) <= DBL_EPSILON * (fabs(d[m]) + fabs(d[m + 1]))) break;
      if (m == l) break;
      if (iter++ == 60) return -1;
      double g = (d[l + 1] - d[l]) / (2.0 * e[l]);
      double r = hypot(g, 1.0);
      g = d[m] - d[l] + e[l] / (g + copysign(r, g));
      double sn = 1.0, c = 1.0, pp = 0.0;
      int i;
      for (i = m - 1; i >= l; i--) {
        double f = sn * e[i], bb = c * e[i];
        r = hypot(f, g);
        e[i + 1] = r;
        if (r == 0.0) { /* deflation: d[i + 1] is an eigenvalue */
          d[i + 1] -= pp;
          e[m] = 0.0;
          break;
        }
        sn = f / r;
        c = g / r;
        g = d[i + 1] - pp;
        r = (d[i] - g) * sn + 2.0 * c * bb;
        pp = sn * r;
        d[i + 1] = g + pp;
        g = c * r - bb;
        f = z[i + 1];
        z[i + 1] = sn * z[i] + c * f;
        z[i] = c * z[i] - sn * f;
      }
      if (r == 0.0 && i >= l) continue;
      d[l] -= pp;
      e[l] = g;
      e[m] = 0.0;
    } while (m != l);
  }
  return 0;
}

/* e_1^T log(T) e_1 of the Lanczos tridiagonal of one probe column from its
 * CG coefficients (alpha_t, beta_t; NaN after the column finished):
 * T_tt = 1/alpha_t + beta_{t-1}/alpha_{t-1}, T_{t,t+1} = sqrt(beta_t)/alpha_t
 * (Saad, "Iterative methods for sparse linear systems", sec. 6.7.3), as
 * sum_k z_k^2 log(theta_k) over T's eigenvalues theta_k and the first
 * components z_k of its eigenvectors (Gauss quadrature).  w: 3 cap doubles. */
static krr_status lanczos_quad(krr_ctx *ctx, const double *ra, const double *rb, int m, int j,
                               int cap, double *w, double *out) {
  int J = 0;
  while (J < cap && !isnan(ra[(int64_t)J * m + j])) J++;
  *out = 0.0;
  if (J == 0) return KRR_OK;
  double *d = w, *e = w + cap, *z = w + 2 * (int64_t)cap;
  for (int t = 0; t < J; t++) {
    double at = ra[(int64_t)t * m + j];
    d[t] = 1.0 / at;
    if (t > 0) {
      double ap = ra[(int64_t)(t - 1) * m + j], bp = rb[(int64_t)(t - 1) * m + j];
      d[t] += bp / ap;
      e[t - 1] = sqrt(bp) / ap;
    }
  }
  if (tridiag_first(J, d, e, z) != 0)
    return krr_fail(ctx, KRR_ERR_NUMERIC,
                    "slq: the Lanczos tridiagonal's eigenvalues did not "
                    "converge");
  double s = 0.0;
  for (int t = 0; t < J; t++) s += z[t] * z[t] * log(d[t] > 1e-300 ? d[t] : 1e-300);
  *out = s;
  return KRR_OK;
}

static double mean_sd(const double *v, int k, double *sd) {
  double mu = 0, ss = 0;
  for (int i = 0; i < k; i++) mu += v[i];
  mu /= k;
  for (int i = 0; i < k; i++) ss += (v[i] - mu) * (v[i] - mu);
  *sd = k > 1 ? sqrt(ss / (k - 1)) : 0.0;
  return mu;
}

/* Column-wise dots: out[j] = x_j^T y_j for q columns of n */
static krr_status coldots(krr_ctx *ctx, int64_t n, int q, const double *x, const double *y,
                          double *out) {
  for (int j = 0; j < q; j++) KTRY(DOP(ctx, dot, n, COLD(x, j, n), COLD(y, j, n), &out[j]));
  return KRR_OK;
}

/* out = dK V (q columns) by central differences of two kernel products at
 * the hyperparameter c (0: the bandwidth; j >= 1: the length scale of
 * column j, whose points are x_j / ell_j) times e^{+h} and e^{-h}; pb: the
 * problem of X (reused for c = 0); Xh: host scratch n x p */
static krr_status deriv_product(krr_ctx *ctx, const krr_problem *pb, const double *X, int p,
                                krr_kernel k, int c, double h, const double *V, int q, double *out,
                                double *tmp, double *Xh) {
  int64_t n = pb->n;
  for (int sgn = 1; sgn >= -1; sgn -= 2) {
    krr_kernel kk = k;
    krr_problem pc = {0};
    const krr_problem *use = pb;
    if (c == 0) {
      kk.bandwidth = k.bandwidth * exp(sgn * h);
    } else {
      memcpy(Xh, X, sizeof(double) * (size_t)(n * p));
      double f = exp(-sgn * h);
      for (int64_t i = 0; i < n; i++) Xh[(int64_t)(c - 1) * n + i] *= f;
      KTRY(krr_problem_create(ctx, KRR_DOUBLE, Xh, n, p, &pc));
      use = &pc;
    }
    krr_op *op = NULL;
    krr_status st = krr_op_exact_create(ctx, use, kk, &op);
    if (st == KRR_OK) st = krr_op_mv(op, NULL, NULL, V, n, q, sgn > 0 ? out : tmp, n);
    krr_op_free(op);
    if (c != 0) krr_problem_free(ctx, &pc);
    KTRY(st);
  }
  return DOP(ctx, axpby, n * q, -0.5 / h, tmp, 0.5 / h, out);
}

static krr_status slq_check(krr_ctx *ctx, int64_t n, int p, int m, double lambda, int nk,
                            const krr_slq_opts *o, int pcr) {
  if (n < 2 || p < 1 || m < 1)
    return krr_fail(ctx, KRR_ERR_INPUT, "slq: need n >= 2 points, p >= 1 and m >= 1 outputs");
  if (!(lambda > 0) || !isfinite(lambda))
    return krr_fail(ctx, KRR_ERR_INPUT, "slq: lambda must be positive and finite");
  if (nk != 0 && nk != 1 && nk != p)
    return krr_fail(ctx, KRR_ERR_INPUT, "slq: nk must be 0, 1 or p");
  if (o->probes < 2 || o->rank < 0 || o->rank > n || o->maxit < 1 || !(o->tol > 0) ||
      !(o->fd_step > 0 && o->fd_step < 0.1) || pcr < 0 || pcr > n)
    return krr_fail(ctx, KRR_ERR_INPUT,
                    "slq: probes >= 2, 0 <= rank <= n, maxit >= 1, tol > 0, 0 < fd_step < 0.1");
  return KRR_OK;
}

/* the CG run on A [x_y, x_z] = [Y, Z]: sets the solutions X (n x q), rz0
 * (host q), the record and *iters, *converged */
static krr_status slq_solve(krr_arena *a, slq_t *w, const krr_slq_opts *o, int m, const double *B,
                            double *Xs, int x_zero, double *rz0, double *fh, krr_cg *cg, int *iters,
                            int *converged) {
  krr_ctx *ctx = w->ctx;
  int q = m + o->probes;
  slq_cg_arg arg = {w, q, fh};
  KTRY(krr_cg_alloc(cg, a, KRR_DOUBLE, w->n, q, NULL, cg_A, cg_M, &arg, 1 << 30));
  cg->rec_alpha = (double *)krr_arena_host(a, (int64_t)o->maxit * q, sizeof(double));
  cg->rec_beta = (double *)krr_arena_host(a, (int64_t)o->maxit * q, sizeof(double));
  double *bn = (double *)krr_arena_host(a, q, sizeof(double));
  KTRY(KRR_ALLOCATED(a, cg->rec_alpha, cg->rec_beta, bn));
  cg->rec_cap = o->maxit;
  for (int j = 0; j < q; j++) KTRY(DOP(ctx, nrm2, w->n, COLD(B, j, w->n), &bn[j]));
  KTRY(krr_cg_start(cg, Xs, B, x_zero));
  for (int j = 0; j < q; j++) rz0[j] = cg->rz[j];
  int it = 0, live = 1;
  while (live && it < o->maxit) {
    int done = 0;
    KTRY(krr_poll(ctx));
    KTRY(krr_cg_iter(cg, B, &done));
    it++;
    live = 0;
    for (int j = 0; j < q; j++) {
      if (!cg->frozen[j] && cg->rn[j] <= o->tol * bn[j]) cg->frozen[j] = 1;
      live += !cg->frozen[j];
    }
  }
  *iters = it;
  *converged = live == 0;
  return KRR_OK;
}

/* the gradient's kernel entries: for each hyperparameter c < nk, with
 * V = [alpha, P^{-1} Z, U] and D = dK V,
 *   g_c = sum_k wy_k alpha_k^T D_k - m/2 (tr(P^{-1} dK) + mean_i h_i),
 *   h_i = (A^{-1} z_i - P^{-1} z_i)^T D_{m+i},
 * tr(P^{-1} dK) = sum_j (1/(s_j + lambda) - 1/lambda) u_j^T D_{m+s+j} (dK
 * has a zero diagonal: every kernel is 1 at distance 0). */
static krr_status slq_gradient(krr_arena *a, slq_t *w, const krr_problem *pb, const double *X,
                               int p, krr_kernel kernel, int nk, const krr_slq_opts *o, int m,
                               const double *Xs, const double *PZ, const double *wy, double *grad,
                               double *grad_se) {
  krr_ctx *ctx = w->ctx;
  int64_t n = w->n;
  int s = o->probes, qv = m + s + w->r;
  double *V = (double *)krr_arena_dev(a, n * qv, sizeof(double));
  double *D = (double *)krr_arena_dev(a, n * qv, sizeof(double));
  double *T = (double *)krr_arena_dev(a, n * qv, sizeof(double));
  double *Xh = (double *)krr_arena_host(a, nk > 1 ? n * p : 1, sizeof(double));
  double *dots = (double *)krr_arena_host(a, 2 * qv, sizeof(double));
  KTRY(KRR_ALLOCATED(a, V, D, T, Xh, dots));
  size_t nb = sizeof(double) * (size_t)n;
  KTRY(ctx->ops->copy(ctx, V, Xs, nb * (size_t)m));
  KTRY(ctx->ops->copy(ctx, COLD(V, m, n), PZ, nb * (size_t)s));
  if (w->r > 0) KTRY(ctx->ops->copy(ctx, COLD(V, m + s, n), w->U, nb * (size_t)w->r));
  for (int c = 0; c < nk; c++) {
    KTRY(deriv_product(ctx, pb, X, p, kernel, nk == 1 ? 0 : c + 1, o->fd_step, V, qv, D, T, Xh));
    KTRY(coldots(ctx, n, qv, V, D, dots));                              /* V_j^T D_j */
    KTRY(coldots(ctx, n, s, COLD(Xs, m, n), COLD(D, m, n), dots + qv)); /* (A^-1 z_i)^T D */
    double at = 0, tp = 0;
    for (int k = 0; k < m; k++) at += wy[k] * dots[k];
    for (int j = 0; j < w->r; j++)
      tp += (1.0 / (w->s[j] + w->lambda) - 1.0 / w->lambda) * dots[m + s + j];
    for (int i = 0; i < s; i++) dots[qv + i] -= dots[m + i];
    double sd = 0, mu = mean_sd(dots + qv, s, &sd);
    grad[c] = at - 0.5 * m * (tp + mu);
    grad_se[c] = 0.5 * m * sd / sqrt((double)s);
  }
  return KRR_OK;
}

/* After the CG run: log det A by quadrature, tr(A^{-1}) by Hutchinson with
 * P as control variate, y^T A^{-1} y, the log likelihood and edf (res, yAy,
 * terms_out), *tr_inv and *gl = sum_k wy_k alpha_k^T alpha_k (the log
 * lambda gradient's data term); wy (n / (2 y_k^T alpha_k)) in h + 3 q.
 * h: 4 q + 3 maxit host doubles. */
static krr_status slq_estimates(slq_t *w, const krr_slq_opts *o, int m, const double *B,
                                const double *Xs, double *PZ, const double *rz0, const krr_cg *cg,
                                double *h, double *fh, krr_slq_result *res, double *yAy,
                                double *terms_out, double *tr_inv_out, double *gl_out) {
  krr_ctx *ctx = w->ctx;
  int64_t n = w->n;
  int s = o->probes, q = m + s;
  double lambda = w->lambda;
  double *terms = h + q, *tr = h + 2 * q, *wy = h + 3 * q, *Tw = h + 4 * q;
  /* log det A by quadrature; tr(A^{-1}) by Hutchinson with P as control variate */
  double ldp = (double)(n - w->r) * log(lambda), trp = (double)(n - w->r) / lambda;
  for (int j = 0; j < w->r; j++) {
    ldp += log(w->s[j] + lambda);
    trp += 1.0 / (w->s[j] + lambda);
  }
  for (int i = 0; i < s; i++) {
    KTRY(lanczos_quad(ctx, cg->rec_alpha, cg->rec_beta, q, m + i, res->iterations, Tw, &terms[i]));
    terms[i] *= rz0[m + i];
  }
  KTRY(apply_Pinv(w, COLD(B, m, n), PZ, s, fh));
  KTRY(coldots(ctx, n, s, COLD(Xs, m, n), PZ, tr));
  KTRY(coldots(ctx, n, s, PZ, PZ, wy));
  for (int i = 0; i < s; i++) tr[i] -= wy[i];
  double sd_ld = 0, sd_tr = 0;
  res->logdet = ldp + mean_sd(terms, s, &sd_ld);
  if (terms_out) memcpy(terms_out, terms, sizeof(double) * (size_t)s);
  double tr_inv = trp + mean_sd(tr, s, &sd_tr);
  *tr_inv_out = tr_inv;
  KTRY(coldots(ctx, n, m, B, Xs, yAy)); /* y_k^T alpha_k */
  double ll = 0, gl = 0;
  for (int k = 0; k < m; k++) {
    if (!(yAy[k] > 0)) return krr_fail(ctx, KRR_ERR_NUMERIC, "slq: y^T A^{-1} y is not positive");
    ll += -0.5 * (double)n * (log(2.0 * M_PI * yAy[k] / (double)n) + 1.0);
    wy[k] = (double)n / (2.0 * yAy[k]);
    double aa = 0;
    KTRY(DOP(ctx, dot, n, COLD(Xs, k, n), COLD(Xs, k, n), &aa));
    gl += wy[k] * aa;
  }
  res->loglik = ll - 0.5 * m * res->logdet;
  res->logdet_se = sd_ld / sqrt((double)s);
  res->loglik_se = 0.5 * m * res->logdet_se;
  res->edf = (double)n - lambda * tr_inv;
  res->edf_se = lambda * sd_tr / sqrt((double)s);
  res->rank = w->r;
  *gl_out = gl;
  return KRR_OK;
}

/* the estimates on the operator op of the problem pb (see krr_gp_slq) */
static krr_status slq_run(krr_arena *a, krr_op *op, const krr_problem *pb, const double *X, int p,
                          krr_kernel kernel, const double *Y, int m, double lambda, int nk,
                          const krr_slq_opts *o, double *pcU, double *pcs, int *pcr, double *alpha,
                          int warm, krr_slq_result *res, double *yAy, double *grad, double *grad_se,
                          double *terms_out) {
  krr_ctx *ctx = op->ctx;
  int64_t n = pb->n;
  int s = o->probes, q = m + s, R = KRR_MAX(o->rank, *pcr);
  slq_t w = {ctx, op, n, 0, lambda, NULL, NULL, NULL, NULL};
  w.U = (double *)krr_arena_dev(a, n * KRR_MAX(R, 1), sizeof(double));
  w.wdev = (double *)krr_arena_dev(a, KRR_MAX(R, 1), sizeof(double));
  w.t = (double *)krr_arena_dev(a, (int64_t)KRR_MAX(R, 1) * q, sizeof(double));
  w.s = (double *)krr_arena_host(a, KRR_MAX(R, 1), sizeof(double));
  double *fh = (double *)krr_arena_host(a, KRR_MAX(R, 1), sizeof(double));
  double *B = (double *)krr_arena_dev(a, n * q, sizeof(double));
  double *Xs = (double *)krr_arena_dev(a, n * q, sizeof(double));
  double *PZ = (double *)krr_arena_dev(a, n * s, sizeof(double));
  double *h = (double *)krr_arena_host(a, 4 * (int64_t)q + 3 * (int64_t)o->maxit, sizeof(double));
  KTRY(KRR_ALLOCATED(a, w.U, w.wdev, w.t, w.s, fh, B, Xs, PZ, h));
  double *rz0 = h;
  if (*pcr > 0) { /* the caller's preconditioner */
    w.r = *pcr;
    memcpy(w.s, pcs, sizeof(double) * (size_t)w.r);
    KTRY(krr_upload_vec_into(ctx, KRR_DOUBLE, pcU, n * w.r, w.U));
  } else if (o->rank > 0) {
    KTRY(build_precond(a, &w, o->rank, &w.r));
  }
  /* probes Z = P^{1/2} G: sqrt(lambda) G + U diag(sqrt(s + lambda) - sqrt(lambda)) U^T G */
  KTRY(DOP(ctx, randn, n * s, o->seed, 0, PZ));
  for (int j = 0; j < w.r; j++) fh[j] = sqrt(w.s[j] + lambda) - sqrt(lambda);
  KTRY(apply_lowrank(&w, PZ, COLD(B, m, n), s, sqrt(lambda), fh));
  KTRY(krr_upload_vec_into(ctx, KRR_DOUBLE, Y, n * m, B));
  KTRY(ctx->ops->zero(ctx, Xs, sizeof(double) * (size_t)(n * q)));
  if (warm) KTRY(krr_upload_vec_into(ctx, KRR_DOUBLE, alpha, n * m, Xs));
  krr_cg cg;
  KTRY(slq_solve(a, &w, o, m, B, Xs, !warm, rz0, fh, &cg, &res->iterations, &res->converged));
  double tr_inv = 0, gl = 0;
  KTRY(slq_estimates(&w, o, m, B, Xs, PZ, rz0, &cg, h, fh, res, yAy, terms_out, &tr_inv, &gl));
  if (nk >= 0 && grad) { /* d/dlog lambda last; its trace's error is edf's */
    grad[nk] = lambda * (gl - 0.5 * m * tr_inv);
    grad_se[nk] = 0.5 * m * res->edf_se;
    if (nk > 0)
      KTRY(slq_gradient(a, &w, pb, X, p, kernel, nk, o, m, Xs, PZ, h + 3 * q, grad, grad_se));
  }
  if (alpha) KTRY(krr_download_vec(ctx, KRR_DOUBLE, Xs, n * m, alpha));
  if (*pcr == 0 && pcU) {
    if (w.r > 0) KTRY(krr_download_vec(ctx, KRR_DOUBLE, w.U, n * w.r, pcU));
    memcpy(pcs, w.s, sizeof(double) * (size_t)w.r);
    *pcr = w.r;
  }
  return KRR_OK;
}

krr_status krr_gp_slq(krr_ctx *ctx, const double *X, int64_t n, int p, krr_kernel kernel,
                      const double *Y, int m, double lambda, int nk, const krr_slq_opts *o,
                      double *pcU, double *pcs, int *pcr, double *alpha, int warm,
                      krr_slq_result *res, double *yAy, double *grad, double *grad_se,
                      double *terms) {
  KTRY(slq_check(ctx, n, p, m, lambda, nk, o, *pcr));
  krr_arena a;
  krr_arena_init(&a, ctx);
  krr_problem pb = {0};
  krr_op *op = NULL;
  krr_status st = krr_problem_create(ctx, KRR_DOUBLE, X, n, p, &pb);
  if (st == KRR_OK) st = krr_op_exact_create(ctx, &pb, kernel, &op);
  if (st == KRR_OK)
    st = slq_run(&a, op, &pb, X, p, kernel, Y, m, lambda, nk, o, pcU, pcs, pcr, alpha, warm, res,
                 yAy, grad, grad_se, terms);
  krr_arena_free(&a);
  krr_op_free(op);
  krr_problem_free(ctx, &pb);
  return st;
}
