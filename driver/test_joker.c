/* Joker's DBCD-TR (solver "joker") and the losses beyond the squared one:
 *  (a) every loss reaches a relative duality gap < 1e-8, and its dual and
 *      primal values match a dense coordinate-descent solution of the box-
 *      constrained dual computed here, on the materialised K;
 *      the same for "dcd" (coordinate descent on the formed K, with its
 *      CG steps on the free variables), double and single precision;
 *  (b) squared loss: the weights solve (K + lambda I) a = y (Cholesky);
 *  (c) m = 3 columns give the three m = 1 fits;
 *  (d) float logistic on separable data with a tiny lambda: finite, gap < 1e-3;
 *  (e) the same seed gives the same bits;
 *  (f) bad options, parameters and targets are input errors.
 * Usage: test_joker [--backend cpu|cuda] [--threads T] [--n N] */
#include "test_common.h"

/* ---- the dual, written independently of the library ------------------------ */
enum { SQ, HUBER, SVR, HINGE, SQHINGE, LOGIT };
static const char *lname[] = {"squared", "huber", "svr", "hinge", "squared_hinge", "logistic"};

static double bent(double t) {
  double r = 0;
  if (t > 0) r += t * log(t);
  if (t < 1) r += (1 - t) * log(1 - t);
  return r;
}
/* f_i(a) = xi*(-lambda a) / lambda */
static double fdual(int l, double lam, double p, double y, double a) {
  switch (l) {
    case HINGE: return -a * y;
    case SVR: return p * fabs(a) - a * y;
    case LOGIT: return bent(fmin(fmax(lam * a * y, 0), 1)) / lam;
    default: return 0.5 * lam * a * a - a * y;
  }
}
static double xi(int l, double p, double y, double F) {
  double r = y - F, t = 1 - y * F;
  switch (l) {
    case SQ: return 0.5 * r * r;
    case HUBER: return fabs(r) <= p ? 0.5 * r * r : p * fabs(r) - 0.5 * p * p;
    case SVR: return fmax(fabs(r) - p, 0);
    case HINGE: return fmax(t, 0);
    case SQHINGE: return t > 0 ? 0.5 * t * t : 0;
    default: return fmax(-y * F, 0) + log1p(exp(-fabs(y * F)));
  }
}
static void box(int l, double lam, double p, double y, double *lo, double *hi) {
  *lo = -INFINITY; *hi = INFINITY;
  if (l == HUBER) { *lo = -p / lam; *hi = p / lam; }
  if (l == SVR) { *lo = -1 / lam; *hi = 1 / lam; }
  if (l == HINGE || l == LOGIT) { if (y > 0) { *lo = 0; *hi = 1 / lam; } else { *lo = -1 / lam; *hi = 0; } }
  if (l == SQHINGE) { if (y > 0) *lo = 0; else *hi = 0; }
}
/* P and D at a (host K, n x n) */
static void objectives(int l, const double *K, int64_t n, double lam, double p, const double *y,
                       const double *a, double *P, double *D) {
  double aKa = 0, ls = 0, fs = 0;
  for (int64_t i = 0; i < n; i++) {
    double F = 0;
    for (int64_t k = 0; k < n; k++) F += K[i + k * n] * a[k];
    aKa += a[i] * F;
    ls += xi(l, p, y[i], F);
    fs += fdual(l, lam, p, y[i], a[i]);
  }
  *P = 0.5 * aKa + ls / lam;
  *D = 0.5 * aKa + fs;
}
/* exact coordinate descent on the dual: each coordinate minimised exactly */
static void cd_solve(int l, const double *K, int64_t n, double lam, double p, const double *y,
                     double *a) {
  double *Ka = calloc((size_t)n, sizeof(double));
  for (int64_t i = 0; i < n; i++) a[i] = 0;
  for (int sweep = 0; sweep < 100000; sweep++) {
    double dmax = 0, amax = 0;
    for (int64_t i = 0; i < n; i++) {
      double kii = K[i + i * n], c = Ka[i] - kii * a[i], lo, hi, t;
      box(l, lam, p, y[i], &lo, &hi);
      if (l == HINGE) t = (y[i] - c) / kii;
      else if (l == SVR) {
        double z = y[i] - c;
        t = (z > p ? z - p : (z < -p ? z + p : 0)) / kii;
      } else if (l == LOGIT) { /* y phi'(u) = kii u / lam + c y + log(u / (1 - u)), u = lam t y */
        double ul = 0, uh = 1;
        for (int it = 0; it < 200; it++) {
          double u = 0.5 * (ul + uh);
          if (kii * u / lam + c * y[i] + log(u) - log1p(-u) > 0) uh = u; else ul = u;
        }
        t = 0.5 * (ul + uh) * y[i] / lam;
      } else t = (y[i] - c) / (kii + lam);
      t = fmin(fmax(t, lo), hi);
      double dt = t - a[i];
      if (dt != 0) {
        for (int64_t k = 0; k < n; k++) Ka[k] += K[k + i * n] * dt;
        a[i] = t;
      }
      dmax = fmax(dmax, fabs(dt));
      amax = fmax(amax, fabs(t));
    }
    if (dmax <= 1e-15 * (amax + 1)) break;
  }
  free(Ka);
}

/* ---- fits through the public API ------------------------------------------ */
static krr_status setup(krr_ctx *ctx, krr_precision prec, const double *X, int64_t n, int p,
                        const double *y, int m, double lambda, int loss, double param, tfit *f) {
  krr_kernel k = {.type = KRR_RBF, .bandwidth = 1.0};
  krr_status st0 = tfit_make(ctx, prec, X, n, p, y, m, k, lambda, f);
  if (st0 != KRR_OK) return st0;
  krr_objective_free(ctx, &f->obj);
  krr_status st = krr_objective_init(ctx, f->op, krr_loss_lookup(lname[loss]), lambda, y, m, &f->obj);
  if (st == KRR_OK && krr_loss_param_name(f->obj.loss)) st = krr_objective_set_param(ctx, &f->obj, param);
  if (st != KRR_OK) { printf("setup: %s\n", ctx->msg); tfit_free(f); }
  return st;
}

/* (a-rows) dcd with rows held out (krr_solver_set_rows): three columns, column c
 * holding out the rows i = c mod 3, each against coordinate descent on its own rows
 * alone, at lambda and then warm-started at lambda / 3 (krr_solver_set_lambda: a and
 * F = K a rescaled, no kernel pass); the held-out weights are 0 and the products there
 * K(X_out, X_in) a_in.  A relative gap of 1e-11 leaves the weights of a strongly convex
 * dual about its square root off (hinge and SVR find their face exactly). */
static int rows_solve(krr_solver *s, double tol) {
  double crit = INFINITY;
  krr_status st = KRR_OK;
  for (int it = 0; st == KRR_OK && it < 400 && crit > tol; it++) {
    st = krr_solver_step(s, 1);
    if (st == KRR_OK) st = krr_solver_residual(s, &crit);
  }
  return st == KRR_OK && crit <= tol;
}

static void rows_check(int l, const double *K, int64_t n, int m, double lam, double param,
                       const double *yy, const double *ww, const double *FF) {
  double werr = 0, ferr = 0, zero = 0, wsc = 0, derr = 0;
  double *Ks = malloc(sizeof(double) * (size_t)(n * n)), *ys = malloc(sizeof(double) * (size_t)n);
  double *wc = malloc(sizeof(double) * (size_t)n), *a = malloc(sizeof(double) * (size_t)n);
  int64_t *in = malloc(sizeof(int64_t) * (size_t)n);
  for (int c = 0; c < m; c++) {
    int64_t ns = 0;
    double Pw, Dw, Pc, Dc;
    for (int64_t i = 0; i < n; i++)
      if (i % m != c) in[ns++] = i;
    for (int64_t j = 0; j < ns; j++) {
      ys[j] = yy[in[j] + c * n];
      wc[j] = ww[in[j] + c * n];
      for (int64_t i = 0; i < ns; i++) Ks[i + j * ns] = K[in[i] + in[j] * n];
    }
    cd_solve(l, Ks, ns, lam, param, ys, a);
    for (int64_t j = 0; j < ns; j++)
      werr = fmax(werr, fabs(wc[j] - a[j])), wsc = fmax(wsc, fabs(a[j]));
    objectives(l, Ks, ns, lam, param, ys, wc, &Pw, &Dw);
    objectives(l, Ks, ns, lam, param, ys, a, &Pc, &Dc);
    derr = fmax(derr, fabs(Dw - Dc) / fmax(fabs(Dc), 1e-300));
    for (int64_t i = c; i < n; i += m) {
      double Fo = 0;
      for (int64_t j = 0; j < ns; j++) Fo += K[i + in[j] * n] * a[j];
      ferr = fmax(ferr, fabs(FF[i + c * n] - Fo) / fmax(fabs(Fo), 1.0));
      zero = fmax(zero, fabs(ww[i + c * n]));
    }
  }
  printf(
      "  dcd rows held out %-13s lambda %.3g: |D - D_cd| / |D_cd| %.1e, |w - w_cd| / "
      "max|w_cd| %.1e, held-out products %.1e\n",
      lname[l], lam, derr, werr / fmax(wsc, 1e-300), ferr);
  CHECK(zero == 0, "(a-rows) %s: a held-out weight is %.3e, not 0", lname[l], zero);
  CHECK(derr <= 1e-9 && werr <= 1e-4 * wsc && ferr <= 1e-4,
        "(a-rows) %s, lambda %g: dual %.2e, weights %.2e, products %.2e", lname[l], lam, derr,
        werr / fmax(wsc, 1e-300), ferr);
  free(Ks);
  free(ys);
  free(wc);
  free(a);
  free(in);
}

static void rows_case(krr_ctx *ctx, const double *K, const double *X, const double *Y, int64_t n,
                      int p, int l, double lam, double param) {
  const int m = 3;
  double *yy = malloc(sizeof(double) * (size_t)(m * n)),
         *rows = malloc(sizeof(double) * (size_t)(m * n));
  double *ww = malloc(sizeof(double) * (size_t)(m * n)),
         *FF = malloc(sizeof(double) * (size_t)(m * n));
  for (int c = 0; c < m; c++)
    for (int64_t i = 0; i < n; i++) {
      yy[i + c * n] = l >= HINGE ? (Y[i] > 0 ? 1.0 : -1.0) : Y[i] + 0.1 * c;
      rows[i + c * n] = i % m == c ? 0.0 : 1.0;
    }
  tfit f;
  if (setup(ctx, KRR_DOUBLE, X, n, p, yy, m, lam, l, param, &f) != KRR_OK) {
    n_fail++;
    free(yy);
    free(rows);
    free(ww);
    free(FF);
    return;
  }
  krr_solver *s = NULL;
  int ok = tinit(&f, "dcd", "", &s) == KRR_OK && krr_solver_set_rows(s, rows) == KRR_OK;
  for (int k = 0; k < 2; k++) {
    double lr = k ? lam / 3 : lam;
    ok = ok && (k == 0 || krr_solver_set_lambda(s, lr) == KRR_OK) && rows_solve(s, 1e-11) &&
         krr_solver_weights(s, ww) == KRR_OK && krr_solver_products(s, FF) == KRR_OK;
    CHECK(ok, "(a-rows) %s, lambda %g: dcd with rows held out: %s", lname[l], lr, ctx->msg);
    if (ok) rows_check(l, K, n, m, lr, param, yy, ww, FF);
  }
  if (s) krr_solver_free(s);
  /* refused: a value other than 0 or 1, a solver that cannot hold rows out */
  rows[0] = 0.5;
  s = NULL;
  krr_clear(ctx);
  CHECK(tinit(&f, "dcd", "", &s) == KRR_OK && krr_solver_set_rows(s, rows) == KRR_ERR_INPUT,
        "(a-rows) %s: rows marked 0.5 refused", lname[l]);
  if (s) krr_solver_free(s);
  rows[0] = 1.0;
  s = NULL;
  krr_clear(ctx);
  CHECK(tinit(&f, "joker", "", &s) == KRR_OK && krr_solver_set_rows(s, rows) == KRR_ERR_INPUT &&
            strstr(ctx->msg, "joker"),
        "(a-rows) %s: joker refuses held-out rows", lname[l]);
  if (s) krr_solver_free(s);
  tfit_free(&f);
  free(yy);
  free(rows);
  free(ww);
  free(FF);
}

int main(int argc, char **argv) {
  krr_ctx ctx;
  int64_t n;
  double *X, *Y;
  if (test_start(argc, argv, 200, &ctx, &n, &X, &Y)) return 1;
  const int p = 3;
  double lam = 0.1;
  double *K = malloc(sizeof(double) * (size_t)(n * n)), *y = malloc(sizeof(double) * (size_t)(3 * n));
  double *w = malloc(sizeof(double) * (size_t)(3 * n)), *a = malloc(sizeof(double) * (size_t)n);
  krr_kernel kr = {.type = KRR_RBF, .bandwidth = 1.0};
  krr_kernel_matrix_host(&ctx, KRR_DOUBLE, &kr, X, n, X, n, p, K);
  double params[] = {0, 0.05, 0.1, 0, 0, 0}; /* Huber's box |a| <= 0.5 binds */

  /* (a) every loss: gap, dual and primal values against coordinate descent */
  for (int l = 0; l < 6; l++) {
    for (int64_t i = 0; i < n; i++) y[i] = l >= HINGE ? (Y[i] > 0 ? 1.0 : -1.0) : Y[i];
    tfit f;
    if (setup(&ctx, KRR_DOUBLE, X, n, p, y, 1, lam, l, params[l], &f) != KRR_OK) { n_fail++; continue; }
    double crit = INFINITY, Pj, Dj, Pc, Dc;
    krr_diag dg;
    krr_status st = trun(&f, "joker", "", 1e-10, 60, 1, w, &crit, &dg, NULL);
    CHECK(st == KRR_OK, "(a) %s: joker failed: %s", lname[l], ctx.msg);
    cd_solve(l, K, n, lam, params[l], y, a);
    objectives(l, K, n, lam, params[l], y, w, &Pj, &Dj);
    objectives(l, K, n, lam, params[l], y, a, &Pc, &Dc);
    double sc = fmax(fabs(Dc), 1e-300);
    printf("  %-13s iters %3lld crit %.2e  D %.12e (cd %.12e)  P %.12e (cd %.12e) gap_cd %.1e\n",
           lname[l], (long long)dg.iter, crit, Dj, Dc, Pj, Pc, (Pc + Dc) / sc);
    CHECK(crit < (l == SQ ? 1e-9 : 1e-8), "(a) %s: criterion %.3e", lname[l], crit);
    CHECK(fabs(Dj - Dc) <= 1e-7 * sc, "(a) %s: dual %.15e vs cd %.15e", lname[l], Dj, Dc);
    CHECK(fabs(Pj - Pc) <= 1e-7 * sc, "(a) %s: primal %.15e vs cd %.15e", lname[l], Pj, Pc);
    CHECK(fabs(Pj + Dj) <= 1e-7 * sc, "(a) %s: gap from the test's formulas %.3e", lname[l], Pj + Dj);
    tfit_free(&f);
  }

  /* (a-dcd) the same for the dual coordinate descent on the formed kernel
   * matrix (solver "dcd"), with lambda = 0.1 and 0.005 (C = 200: its CG
   * steps on the free variables), double and single precision */
  for (int l = 0; l < 6; l++) {
    for (int v = 0; v < 3; v++) {
      double lv = v == 1 ? 0.005 : lam, ctol = v == 2 ? 1e-4 : 1e-10;
      krr_precision pr = v == 2 ? KRR_FLOAT : KRR_DOUBLE;
      for (int64_t i = 0; i < n; i++) y[i] = l >= HINGE ? (Y[i] > 0 ? 1.0 : -1.0) : Y[i];
      tfit f;
      if (setup(&ctx, pr, X, n, p, y, 1, lv, l, params[l], &f) != KRR_OK) {
        n_fail++;
        continue;
      }
      double crit = INFINITY, Pj, Dj, Pc, Dc;
      krr_diag dg;
      krr_status st = trun(&f, "dcd", "", ctol, 2000, 1, w, &crit, &dg, NULL);
      CHECK(st == KRR_OK, "(a-dcd) %s: dcd failed: %s", lname[l], ctx.msg);
      cd_solve(l, K, n, lv, params[l], y, a);
      objectives(l, K, n, lv, params[l], y, w, &Pj, &Dj);
      objectives(l, K, n, lv, params[l], y, a, &Pc, &Dc);
      double sc = fmax(fabs(Dc), 1e-300), rt = v == 2 ? 1e-4 : 1e-7;
      printf("  dcd %-13s lambda %.3g %s: passes %6.1f crit %.2e |D - D_cd| / |D_cd| %.1e\n",
             lname[l], lv, v == 2 ? "float" : "double", dg.passes, crit, fabs(Dj - Dc) / sc);
      CHECK(crit < 1.5 * ctol, "(a-dcd) %s: criterion %.3e", lname[l], crit);
      CHECK(fabs(Dj - Dc) <= rt * sc, "(a-dcd) %s: dual %.15e vs cd %.15e", lname[l], Dj, Dc);
      CHECK(fabs(Pj - Pc) <= rt * sc, "(a-dcd) %s: primal %.15e vs cd %.15e", lname[l], Pj, Pc);
      tfit_free(&f);
    }
  }

  /* (a-rows) dcd with rows held out (krr_solver_set_rows), then a new lambda */
  for (int l = HUBER; l <= LOGIT; l++) rows_case(&ctx, K, X, Y, n, p, l, lam, params[l]);
  /* the squared loss has no duality gap to stop on: refused */
  {
    tfit f;
    double *rows = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) rows[i] = i % 2;
    if (setup(&ctx, KRR_DOUBLE, X, n, p, Y, 1, lam, SQ, 0, &f) == KRR_OK) {
      krr_solver *s = NULL;
      CHECK(tinit(&f, "dcd", "", &s) == KRR_OK && krr_solver_set_rows(s, rows) == KRR_ERR_INPUT,
            "(a-rows) the squared loss refuses held-out rows");
      if (s) krr_solver_free(s);
      tfit_free(&f);
    } else n_fail++;
    free(rows);
  }

  /* (a') several blocks (b = 100, lambda = 1: unaccelerated block coordinate
   * descent converges slowly when lambda is small against K's spectrum) */
  for (int l = HUBER; l <= SQHINGE; l++) {
    double lam = 1.0;
    for (int64_t i = 0; i < n; i++) y[i] = l >= HINGE ? (Y[i] > 0 ? 1.0 : -1.0) : Y[i];
    tfit f;
    if (setup(&ctx, KRR_DOUBLE, X, n, p, y, 1, lam, l, params[l], &f) != KRR_OK) { n_fail++; continue; }
    double crit = INFINITY, Pj, Dj, Pc, Dc;
    krr_diag dg;
    krr_status st = trun(&f, "joker", "block_size=100", 1e-9, l == SVR ? 3000 : 400, 4, w, &crit, &dg, NULL);
    cd_solve(l, K, n, lam, params[l], y, a);
    objectives(l, K, n, lam, params[l], y, w, &Pj, &Dj);
    objectives(l, K, n, lam, params[l], y, a, &Pc, &Dc);
    printf("  %-13s b = 100: iters %3lld crit %.2e  |D - D_cd| / |D_cd| %.1e\n", lname[l],
           (long long)dg.iter, crit, fabs(Dj - Dc) / fabs(Dc));
    CHECK(st == KRR_OK && crit < 1e-8 && fabs(Dj - Dc) <= 1e-7 * fabs(Dc),
          "(a') %s, b = 100: criterion %.3e, dual %.15e vs %.15e", lname[l], crit, Dj, Dc);
    tfit_free(&f);
  }

  /* (b) squared loss: (K + lambda I) a = y by Cholesky */
  {
    tfit f;
    double *A = malloc(sizeof(double) * (size_t)(n * n)), crit;
    krr_diag dg;
    memcpy(A, K, sizeof(double) * (size_t)(n * n));
    for (int64_t i = 0; i < n; i++) { A[i + i * n] += lam; a[i] = Y[i]; }
    int info = LAPACKE_dposv(LAPACK_COL_MAJOR, 'U', (int)n, 1, A, (int)n, a, (int)n);
    if (setup(&ctx, KRR_DOUBLE, X, n, p, Y, 1, lam, SQ, 0, &f) == KRR_OK) {
      krr_status st = trun(&f, "joker", "", 1e-13, 60, 1, w, &crit, &dg, NULL);
      double rd = rel_diff(w, a, n);
      printf("  squared vs Cholesky: rel diff %.2e (residual %.2e, %lld iters)\n", rd, crit,
             (long long)dg.iter);
      CHECK(st == KRR_OK && info == 0 && rd < 1e-8, "(b) squared: rel diff %.3e", rd);
      tfit_free(&f);
    }
    free(A);
  }

  /* (c) m = 3 columns (one-vs-rest style +-1 targets) = three m = 1 fits; smaller blocks */
  /* The one product K_{B:} a for m columns rounds differently from m products
   * of one column (the kernel product blocks over q), and the trust region's
   * discrete decisions (CG truncation, acceptance) amplify that while the
   * iterate is inexact; so the fits are compared where they have converged. */
  for (int l = HINGE; l <= LOGIT; l++) {
    for (int64_t i = 0; i < n; i++) {
      y[i] = Y[i] > 0 ? 1 : -1;
      y[i + n] = Y[i + n] > 0 ? 1 : -1;
      y[i + 2 * n] = X[i] * X[i + n] > 0 ? 1 : -1;
    }
    tfit f;
    double crit, *w1 = malloc(sizeof(double) * (size_t)n);
    krr_diag dg;
    const char *spec = l == LOGIT ? "seed=5" : "block_size=64 seed=5";
    int64_t its = l == LOGIT ? 3 : 40;
    if (setup(&ctx, KRR_DOUBLE, X, n, p, y, 3, lam, l, 0, &f) != KRR_OK) { n_fail++; free(w1); continue; }
    krr_status st = trun(&f, "joker", spec, 0, its, its, w, &crit, &dg, NULL);
    tfit_free(&f);
    double dmax = 0, wmax = 0;
    for (int c = 0; c < 3 && st == KRR_OK; c++) {
      if (setup(&ctx, KRR_DOUBLE, X, n, p, y + c * n, 1, lam, l, 0, &f) != KRR_OK) { st = KRR_ERR_INPUT; break; }
      st = trun(&f, "joker", spec, 0, its, its, w1, &crit, &dg, NULL);
      tfit_free(&f);
      for (int64_t i = 0; i < n; i++) {
        dmax = fmax(dmax, fabs(w1[i] - w[i + c * n]));
        wmax = fmax(wmax, fabs(w1[i]));
      }
    }
    printf("  %s m = 3 vs m = 1: max diff %.2e (max |w| %.2e)\n", lname[l], dmax, wmax);
    /* logistic: the gap is ~1e-16 in both, but K (RBF, n = 200, p = 3) has
     * eigenvalues near 1e-10, so alpha itself is determined only to ~1e-9 */
    double rtol = l == LOGIT ? 1e-8 : 1e-12;
    CHECK(st == KRR_OK && dmax <= rtol * wmax, "(c) %s: m = 3 differs from m = 1 by %.3e", lname[l], dmax);
    free(w1);
  }

  /* (d) float logistic, separable data, tiny lambda */
  {
    double *Xs = malloc(sizeof(double) * (size_t)(n * p));
    for (int64_t i = 0; i < n; i++) {
      double s = krr_rng_unif(9, (uint64_t)i) < 0.5 ? -1 : 1;
      Xs[i] = s * (0.5 + krr_rng_unif(10, (uint64_t)i));
      Xs[i + n] = krr_rng_normal(11, (uint64_t)i);
      Xs[i + 2 * n] = krr_rng_normal(12, (uint64_t)i);
      y[i] = s;
    }
    tfit f;
    double crit = INFINITY;
    krr_diag dg;
    double lt = 1e-4; /* lambda 1e-6 is tried below for finiteness only: in float, K a
                         (entries up to n / lambda) cannot resolve an O(1) gradient */
    if (setup(&ctx, KRR_FLOAT, Xs, n, p, y, 1, lt, LOGIT, 0, &f) == KRR_OK) {
      krr_status st = trun(&f, "joker", "", 1e-3, 300, 5, w, &crit, &dg, NULL);
      int finite = st == KRR_OK;
      for (int64_t i = 0; i < n && finite; i++) finite = isfinite(w[i]);
      printf("  float logistic, lambda 1e-4: gap %.2e after %lld iterations (%s)\n", crit,
             (long long)dg.iter, st == KRR_OK ? "ok" : ctx.msg);
      CHECK(finite && crit < 1e-3, "(d) float logistic: gap %.3e, status %d", crit, (int)st);
      tfit_free(&f);
    }
    if (setup(&ctx, KRR_FLOAT, Xs, n, p, y, 1, 1e-6, LOGIT, 0, &f) == KRR_OK) {
      krr_status st = trun(&f, "joker", "", 1e-3, 20, 5, w, &crit, &dg, NULL);
      int finite = st == KRR_OK && isfinite(crit);
      for (int64_t i = 0; i < n && finite; i++) finite = isfinite(w[i]);
      printf("  float logistic, lambda 1e-6: gap %.2e after %lld iterations (%s)\n", crit,
             (long long)dg.iter, st == KRR_OK ? "ok" : ctx.msg);
      CHECK(finite, "(d) float logistic, lambda 1e-6: non-finite (status %d)", (int)st);
      tfit_free(&f);
    }
    free(Xs);
  }

  /* (e) the same seed gives the same bits (several blocks) */
  {
    tfit f;
    double crit, *w2 = malloc(sizeof(double) * (size_t)n);
    krr_diag dg;
    if (setup(&ctx, KRR_DOUBLE, X, n, p, Y, 1, lam, SVR, 0.1, &f) == KRR_OK) {
      krr_status s1 = trun(&f, "joker", "block_size=50 seed=3", 0, 10, 10, w, &crit, &dg, NULL);
      krr_status s2 = trun(&f, "joker", "block_size=50 seed=3", 0, 10, 10, w2, &crit, &dg, NULL);
      CHECK(s1 == KRR_OK && s2 == KRR_OK && memcmp(w, w2, sizeof(double) * (size_t)n) == 0,
            "(e) same seed, different bits");
      s2 = trun(&f, "joker", "block_size=50 seed=4", 0, 10, 10, w2, &crit, &dg, NULL);
      CHECK(s2 == KRR_OK && memcmp(w, w2, sizeof(double) * (size_t)n) != 0,
            "(e) another seed gives the same weights");
      tfit_free(&f);
    }
    free(w2);
  }

  /* (g) inexact mode: joker on the random-feature operator (theta = Z^T a kept
   * incrementally) reaches the dual optimum of the kernel Z Z^T computed here
   * from the operator's own features, for a box loss and several blocks */
  {
    const int64_t M = 300;
    int ls[] = {HINGE, SVR, LOGIT};
    for (int li = 0; li < 3; li++) {
      int l = ls[li];
      double lamg = 1.0;
      for (int64_t i = 0; i < n; i++) y[i] = l >= HINGE ? (Y[i] > 0 ? 1.0 : -1.0) : Y[i];
      tfit f;
      if (setup(&ctx, KRR_DOUBLE, X, n, p, y, 1, lamg, l, params[l], &f) != KRR_OK) { n_fail++; continue; }
      krr_op_free(f.op);
      f.op = NULL;
      krr_kernel kf = {.type = KRR_RBF, .bandwidth = 1.0};
      krr_status st = krr_op_features_create(&ctx, &f.pb, &kf, M, 77, &f.op);
      CHECK(st == KRR_OK, "(g) features operator: %s", ctx.msg);
      if (st != KRR_OK) { tfit_free(&f); continue; }
      /* Z^T (M x n) from the public theta of the identity, then K = Z Z^T on the host */
      double *Kf = calloc((size_t)(n * n), sizeof(double)), *Zt = malloc(sizeof(double) * (size_t)(M * n));
      for (int64_t i = 0; i < n; i++) Kf[i + i * n] = 1.0;
      void *Id = ctx.ops->alloc(&ctx, sizeof(double) * (size_t)(n * n));
      st = Id ? ctx.ops->upload(&ctx, Id, Kf, sizeof(double) * (size_t)(n * n)) : ctx.status;
      if (st == KRR_OK) st = krr_op_features_theta(f.op, Id, (int)n, Zt);
      ctx.ops->dealloc(&ctx, Id);
      for (int64_t i = 0; i < n; i++)
        for (int64_t k2 = 0; k2 < n; k2++) {
          double acc = 0;
          for (int64_t q = 0; q < M; q++) acc += Zt[q + i * M] * Zt[q + k2 * M];
          Kf[i + k2 * n] = acc;
        }
      free(Zt);
      CHECK(st == KRR_OK, "(g) features K: %s", ctx.msg);
      double crit = INFINITY, Pj, Dj, Pc, Dc;
      krr_diag dg;
      krr_solver *sv = NULL;
      st = trun(&f, "joker", "block_size=100", 1e-9, 3000, 4, w, &crit, &dg, &sv);
      if (sv) { /* the model's theta: the one kept along the blocks = Z^T a recomputed */
        double *th = malloc(sizeof(double) * (size_t)M), *th2 = malloc(sizeof(double) * (size_t)M);
        krr_status s1 = krr_solver_has_theta(sv) ? krr_solver_theta(sv, th) : KRR_ERR_INTERNAL;
        krr_status s2 = krr_op_features_theta_host(f.op, w, 1, th2);
        double e = s1 == KRR_OK && s2 == KRR_OK ? rel_diff(th, th2, M) : INFINITY;
        CHECK(e <= 1e-12, "(g) %s: kept theta vs Z^T a: %.3e (%d %d %s)", lname[l], e, s1, s2, ctx.msg);
        /* before a restart (a new lambda pending) it comes from the weights,
         * which the new lambda scaled by lambda / (2 lambda) (alpha seeding) */
        s1 = krr_solver_set_lambda(sv, 2.0 * lamg);
        if (s1 == KRR_OK) s1 = krr_solver_theta(sv, th);
        for (int64_t k = 0; k < M; k++) th2[k] *= 0.5;
        e = s1 == KRR_OK ? rel_diff(th, th2, M) : INFINITY;
        CHECK(e <= 1e-14, "(g) %s: theta before a restart vs Z^T a: %.3e (%s)", lname[l], e, ctx.msg);
        free(th);
        free(th2);
        krr_solver_free(sv);
      }
      cd_solve(l, Kf, n, lamg, params[l], y, a);
      objectives(l, Kf, n, lamg, params[l], y, w, &Pj, &Dj);
      objectives(l, Kf, n, lamg, params[l], y, a, &Pc, &Dc);
      printf("  %-13s features M = %lld, b = 100: iters %lld crit %.2e |D - D_cd| / |D_cd| %.1e\n",
             lname[l], (long long)M, (long long)dg.iter, crit, fabs(Dj - Dc) / fabs(Dc));
      /* SVR's gap closes slowly by blocks (its primal is piecewise linear): 1e-6 */
      CHECK(st == KRR_OK && crit < (l == SVR ? 1e-6 : 1e-8) && fabs(Dj - Dc) <= 1e-7 * fabs(Dc),
            "(g) %s on features: criterion %.3e, dual %.15e vs %.15e (%s)", lname[l], crit, Dj, Dc,
            st == KRR_OK ? "" : ctx.msg);
      free(Kf);
      tfit_free(&f);
    }
  }

  /* (h) one block (b = n), where every trust-region step must decrease the
   * model: hinge at C = 50 and SVR with epsilon = 0 on a 2-D problem stalled at
   * the start when CG steps to the trust-region boundary were projected onto
   * the box afterwards (every step then increased the model) */
  {
    const int p2 = 2;
    double *x2 = malloc(sizeof(double) * (size_t)(n * p2)), *y2 = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n * p2; i++) x2[i] = krr_rng_normal(99, (uint64_t)i);
    struct { int l; double lam, prm; } cs[] = {{HINGE, 0.02, 0}, {SVR, 0.5, 0}, {SVR, 0.5, 0.1}};
    for (int t = 0; t < 3; t++) {
      int l = cs[t].l;
      for (int64_t i = 0; i < n; i++) {
        double u = x2[i], v = x2[i + n];
        y2[i] = l == SVR ? sin(2 * u) + v * v + 0.1 * krr_rng_normal(5, (uint64_t)i)
                         : (u * u + v + 0.3 * krr_rng_normal(5, (uint64_t)i) > 1 ? 1.0 : -1.0);
      }
      tfit f;
      krr_kernel k1 = {.type = KRR_RBF, .bandwidth = 1.0};
      if (tfit_make(&ctx, KRR_DOUBLE, x2, n, p2, y2, 1, k1, cs[t].lam, &f) != KRR_OK) { n_fail++; continue; }
      krr_objective_free(&ctx, &f.obj);
      krr_status st = krr_objective_init(&ctx, f.op, krr_loss_lookup(lname[l]), cs[t].lam, y2, 1, &f.obj);
      if (st == KRR_OK && l == SVR) st = krr_objective_set_param(&ctx, &f.obj, cs[t].prm);
      double crit = INFINITY;
      krr_diag dg;
      if (st == KRR_OK) st = trun(&f, "joker", "", 1e-10, 200, 1, w, &crit, &dg, NULL);
      printf("  %-13s one block, lambda %g, param %g: iters %lld crit %.2e\n", lname[l], cs[t].lam,
             cs[t].prm, (long long)dg.iter, crit);
      CHECK(st == KRR_OK && crit < 1e-10, "(h) %s lambda %g param %g: criterion %.3e after %lld",
            lname[l], cs[t].lam, cs[t].prm, crit, (long long)dg.iter);
      tfit_free(&f);
    }
    free(x2);
    free(y2);
  }

  /* (i) on a context whose table is not its host table (a device) the
   * trust-region loops run on a host context (ctx->host_ops), on copies of
   * K_BB and the block's vectors: a copy of the CPU table as the device
   * table, with the CPU table as host, takes that path on the CPU, and must give the
   * weights of the direct path up to rounding (the same operations, the
   * block data passing through download / upload) */
  if (ctx.ops == krr_cpu_ops()) {
    krr_ops alt = *krr_cpu_ops();
    krr_ctx actx;
    if (krr_ctx_init(&actx, &alt, krr_cpu_ops(), ctx.threads, 0) == KRR_OK) {
      const int ls[] = {SVR, HINGE, LOGIT};
      for (int t = 0; t < 6; t++) {
        int l = ls[t % 3];
        krr_precision prec = t < 3 ? KRR_DOUBLE : KRR_FLOAT;
        for (int64_t i = 0; i < n; i++) {
          y[i] = l >= HINGE ? (Y[i] > 0 ? 1.0 : -1.0) : Y[i];
          y[i + n] = l >= HINGE ? (X[i] * X[i + n] > 0 ? 1.0 : -1.0) : Y[i + n];
        }
        tfit f, g;
        double c1 = INFINITY, c2 = INFINITY, *w2 = malloc(sizeof(double) * (size_t)(2 * n));
        krr_diag d1, d2;
        int m1 = setup(&ctx, prec, X, n, p, y, 2, lam, l, params[l], &f) == KRR_OK;
        int m2 = setup(&actx, prec, X, n, p, y, 2, lam, l, params[l], &g) == KRR_OK;
        krr_status s1 = m1 ? trun(&f, "joker", "block_size=64 seed=4", 0, 25, 25, w, &c1, &d1, NULL)
                           : KRR_ERR_INPUT;
        krr_status s2 = m2 ? trun(&g, "joker", "block_size=64 seed=4", 0, 25, 25, w2, &c2, &d2, NULL)
                           : KRR_ERR_INPUT;
        double e = s1 == KRR_OK && s2 == KRR_OK ? rel_diff(w2, w, 2 * n) : INFINITY;
        double tol = prec == KRR_DOUBLE ? 1e-12 : 1e-5;
        printf("  %-13s %s, host trust region vs direct: rel diff %.2e (crit %.2e vs %.2e)\n", lname[l],
               prec == KRR_DOUBLE ? "double" : "float ", e, c2, c1);
        CHECK(s1 == KRR_OK && s2 == KRR_OK && e <= tol && fabs(c2 - c1) <= tol * (fabs(c1) + 1e-3),
              "(i) %s %s: host trust region %d (%s) differs by %.3e", lname[l],
              prec == KRR_DOUBLE ? "double" : "float", s2, actx.msg, e);
        if (m2 && t == 0) { /* the host copies are in the memory estimate */
          krr_solver *sv = NULL;
          krr_status sm = tinit(&g, "joker", "block_size=64 seed=4", &sv);
          if (sm == KRR_OK) sm = krr_solver_step(sv, 2);
          double used = sv ? krr_solver_memory_used(sv) : INFINITY,
                 est = sv ? krr_solver_memory_estimate(sv) : 0;
          CHECK(sm == KRR_OK && used <= est, "(i) host trust region: memory %.0f held > estimate %.0f (%s)",
                used, est, actx.msg);
          krr_solver_free(sv);
        }
        if (m1) tfit_free(&f);
        if (m2) tfit_free(&g);
        free(w2);
      }
      krr_ctx_free(&actx);
    } else {
      CHECK(0, "(i) a context on a copy of the CPU table: %s", actx.msg);
    }
  }

  /* (j) support products: K_{B:} a summed over the rows with a nonzero weight
   * equals the sum over all rows (support = 0) up to the order of its terms,
   * for support = 1 (always; every block but the first, whose weights are all
   * zero) and 0.5 (SVR's 130 of 200 nonzero rows cross the 100 it holds: the
   * product falls back to all rows and returns) -- 40 blocks from zero and 20
   * more after a new lambda (a warm start: the support taken from the
   * weights); three losses, both precisions, and two columns (hinge) */
  {
    const int ls[] = {SVR, HINGE, SQHINGE};
    double *w0 = malloc(sizeof(double) * (size_t)(2 * n)), *w1 = malloc(sizeof(double) * (size_t)(2 * n));
    for (int t = 0; t < 7; t++) {
      int l = t < 6 ? ls[t % 3] : HINGE, mm = t < 6 ? 1 : 2;
      krr_precision prec = t < 3 || t == 6 ? KRR_DOUBLE : KRR_FLOAT;
      const char *pn = prec == KRR_DOUBLE ? "double" : "float";
      for (int64_t i = 0; i < n; i++) {
        y[i] = l >= HINGE ? (Y[i] > 0 ? 1.0 : -1.0) : Y[i];
        y[i + n] = X[i] * X[i + n] > 0 ? 1.0 : -1.0;
      }
      /* the order of a sum's terms moves the iterates by rounding, which the
       * box and orthant decisions of 60 blocks amplify (SVR: 4e-10 / 1e-5) */
      double tol = prec == KRR_DOUBLE ? 1e-8 : 1e-4;
      const char *specs[] = {"block_size=32 seed=4 support=1", "block_size=32 seed=4 support=0.5"};
      for (int v = 0; v < 2; v++) {
        tfit f; /* fresh: a new lambda changes the fit's objective */
        if (setup(&ctx, prec, X, n, p, y, mm, lam, l, params[l], &f) != KRR_OK) { n_fail++; continue; }
        krr_solver *s1 = NULL, *sz = NULL;
        double c1 = 0, cz = 0, e1 = INFINITY, e2 = INFINITY, used = 0, none = 0;
        krr_diag d1, dz;
        krr_status b = trun(&f, "joker", specs[v], 0, 40, 40, w1, &c1, &d1, &s1);
        krr_status z = trun(&f, "joker", "block_size=32 seed=4 support=0", 0, 40, 40, w0, &cz, &dz, &sz);
        int64_t nnz = 0;
        if (b == KRR_OK && z == KRR_OK) {
          e1 = rel_diff(w1, w0, n * mm);
          for (int64_t i = 0; i < n; i++) nnz += w1[i] != 0 || (mm > 1 && w1[i + n] != 0);
          /* the objective values R records: K a over the nonzero rows where
           * they are at most half (hinge, squared hinge here), against K a here */
          if (mm == 1) {
            double Pv = NAN, Dv = NAN, Pj, Dj, vt = prec == KRR_DOUBLE ? 1e-12 : 1e-5;
            krr_status sv = krr_objective_values_host(f.op, &f.obj, w1, &Pv, &Dv);
            objectives(l, K, n, lam, params[l], y, w1, &Pj, &Dj);
            CHECK(sv == KRR_OK && fabs(Pv - Pj) <= vt * (fabs(Pj) + 1) && fabs(Dv - Dj) <= vt * (fabs(Dj) + 1),
                  "(j) %s %s: objective values %.15e %.15e vs %.15e %.15e (%s)", lname[l], pn, Pv, Dv,
                  Pj, Dj, ctx.msg);
          }
          /* the criterion (duality gap) from K(X, X_S) a_S, against K a over all rows */
          CHECK(fabs(c1 - cz) <= tol * fabs(cz), "(j) %s %s m=%d %s: criterion %.15e vs %.15e",
                lname[l], pn, mm, specs[v], c1, cz);
          /* the two solvers share f's objective: the first set_lambda scales
           * s1's weights (alpha seeding) and changes the lambda of both, so
           * both restart from s1's scaled weights */
          b = krr_solver_set_lambda(s1, 0.5 * lam);
          z = krr_solver_set_lambda(sz, 0.5 * lam);
          if (b == KRR_OK) b = krr_solver_weights(s1, w1);
          if (z == KRR_OK) z = krr_solver_set_weights(sz, w1);
          if (b == KRR_OK) b = krr_solver_step(s1, 20);
          if (z == KRR_OK) z = krr_solver_step(sz, 20);
          if (b == KRR_OK) b = krr_solver_weights(s1, w1);
          if (z == KRR_OK) z = krr_solver_weights(sz, w0);
          if (b == KRR_OK && z == KRR_OK) e2 = rel_diff(w1, w0, n * mm);
          used = textra(s1, "support_products");
          none = textra(sz, "support_products");
        }
        printf("  %-13s %s m=%d %s: vs all rows %.2e, after a new lambda %.2e "
               "(%lld of %lld rows nonzero; %g support products)\n", lname[l], pn, mm, specs[v] + 20,
               e1, e2, (long long)nnz, (long long)n, used);
        /* support = 1: every block but the first; 0.5: some, not all, where
         * the rows cross half (SVR, two columns), else every one but the first */
        int expect_used = v == 0 ? used >= 55 : (nnz > n / 2 ? used >= 1 && used < 59 : used >= 55);
        CHECK(b == KRR_OK && z == KRR_OK && e1 <= tol && e2 <= tol && expect_used && !(none > 0) && nnz < n,
              "(j) %s %s m=%d %s: %d %d (%s): %.3e / %.3e, %g support products", lname[l], pn, mm,
              specs[v], b, z, ctx.msg, e1, e2, used);
        krr_solver_free(s1);
        krr_solver_free(sz);
        tfit_free(&f);
      }
    }
    free(w0);
    free(w1);
  }

  /* (k) the objective values over the support in more than one piece of
   * 4096 rows (n = 9000, 4500 nonzero weights), against K a summed here over
   * the nonzero rows; a loss without exact zeros (logistic) takes all rows */
  {
    const int64_t nk = 9000;
    const int pk = 3;
    double *Xk = malloc(sizeof(double) * (size_t)(nk * pk)), *yk = malloc(sizeof(double) * (size_t)nk),
           *ak = calloc((size_t)nk, sizeof(double)), *Kr = malloc(sizeof(double) * (size_t)(64 * nk));
    make_data(nk, pk, 1, 11, Xk, yk);
    for (int64_t i = 0; i < nk; i++) yk[i] = yk[i] > 0 ? 1.0 : -1.0;
    for (int64_t i = 0; i < nk; i += 2) ak[i] = yk[i] * (0.1 + 0.8 * (double)(i % 7) / 7.0);
    for (int li = 0; li < 2; li++) {
      int l = li == 0 ? HINGE : LOGIT;
      if (l == LOGIT) /* its box excludes 0: weights strictly inside */
        for (int64_t i = 0; i < nk; i++) ak[i] = yk[i] * (0.1 + 0.8 * (double)(i % 7) / 7.0);
      tfit f;
      if (setup(&ctx, KRR_DOUBLE, Xk, nk, pk, yk, 1, lam, l, params[l], &f) != KRR_OK) { n_fail++; continue; }
      double Pv = NAN, Dv = NAN, aKa = 0, lsum = 0, fsum = 0;
      krr_status sv = krr_objective_values_host(f.op, &f.obj, ak, &Pv, &Dv);
      /* K a row by row (the kernel of rows i against all, 64 rows at a time) */
      double *Xr = malloc(sizeof(double) * (size_t)(64 * pk));
      for (int64_t r0 = 0; r0 < nk; r0 += 64) {
        int64_t cnt = nk - r0 < 64 ? nk - r0 : 64;
        for (int64_t i = 0; i < cnt; i++)
          for (int d2 = 0; d2 < pk; d2++) Xr[i + d2 * cnt] = Xk[r0 + i + d2 * nk];
        krr_kernel_matrix_host(&ctx, KRR_DOUBLE, &kr, Xr, cnt, Xk, nk, pk, Kr);
        for (int64_t i = 0; i < cnt; i++) {
          double F = 0;
          for (int64_t k2 = 0; k2 < nk; k2++) if (ak[k2] != 0) F += Kr[i + k2 * cnt] * ak[k2];
          aKa += ak[r0 + i] * F;
          lsum += xi(l, params[l], yk[r0 + i], F);
          fsum += fdual(l, lam, params[l], yk[r0 + i], ak[r0 + i]);
        }
      }
      free(Xr);
      double Pj = 0.5 * aKa + lsum / lam, Dj = 0.5 * aKa + fsum;
      printf("  %-13s n = %lld objective values %.15e %.15e vs %.15e %.15e\n", lname[l], (long long)nk,
             Pv, Dv, Pj, Dj);
      CHECK(sv == KRR_OK && fabs(Pv - Pj) <= 1e-11 * (fabs(Pj) + 1) && fabs(Dv - Dj) <= 1e-11 * (fabs(Dj) + 1),
            "(k) %s: objective values %.15e %.15e vs %.15e %.15e (%s)", lname[l], Pv, Dv, Pj, Dj, ctx.msg);
      tfit_free(&f);
    }
    free(Xk); free(yk); free(ak); free(Kr);
  }

  /* (f) input errors */
  {
    tfit f;
    krr_solver *s = NULL;
    if (setup(&ctx, KRR_DOUBLE, X, n, p, Y, 1, lam, HUBER, 1.0, &f) == KRR_OK) {
      CHECK(tinit(&f, "joker", "block_size=100000", &s) == KRR_ERR_INPUT && strstr(ctx.msg, "block_size"),
            "(f) block_size > n: %s", ctx.msg);
      krr_solver_free(s);
      CHECK(tinit(&f, "joker", "tr_iters=0", &s) == KRR_ERR_INPUT && strstr(ctx.msg, "tr_iters"),
            "(f) tr_iters = 0: %s", ctx.msg);
      krr_solver_free(s);
      CHECK(tinit(&f, "joker", "cg_iters=-1", &s) == KRR_ERR_INPUT && strstr(ctx.msg, "cg_iters"),
            "(f) cg_iters = -1: %s", ctx.msg);
      krr_solver_free(s);
      CHECK(tinit(&f, "joker", "block_size=2.5", &s) == KRR_ERR_INPUT, "(f) block_size = 2.5");
      krr_solver_free(s);
      CHECK(tinit(&f, "joker", "support=1.5", &s) == KRR_ERR_INPUT && strstr(ctx.msg, "support"),
            "(f) support = 1.5: %s", ctx.msg);
      krr_solver_free(s);
      krr_clear(&ctx);
      CHECK(krr_objective_set_param(&ctx, &f.obj, 0.0) == KRR_ERR_INPUT && strstr(ctx.msg, "delta"),
            "(f) huber delta = 0: %s", ctx.msg);
      CHECK(krr_objective_set_param(&ctx, &f.obj, -1.0) == KRR_ERR_INPUT, "(f) huber delta = -1");
      CHECK(krr_objective_set_param(&ctx, &f.obj, NAN) == KRR_ERR_INPUT, "(f) huber delta = NaN");
      CHECK(f.obj.param == 1.0, "(f) a refused delta changed the objective");
      krr_clear(&ctx);
      f.obj.param = -2.0; /* set behind the setter's back: the solver refuses it */
      CHECK(tinit(&f, "joker", "", &s) == KRR_ERR_INPUT && strstr(ctx.msg, "delta"),
            "(f) solver with delta = -2: %s", ctx.msg);
      krr_solver_free(s);
      tfit_free(&f);
    }
    if (setup(&ctx, KRR_DOUBLE, X, n, p, Y, 1, lam, SVR, 0.0, &f) == KRR_OK) {
      CHECK(f.obj.param == 0.0, "(f) svr epsilon = 0 accepted");
      krr_clear(&ctx);
      CHECK(krr_objective_set_param(&ctx, &f.obj, -0.1) == KRR_ERR_INPUT && strstr(ctx.msg, "epsilon"),
            "(f) svr epsilon < 0: %s", ctx.msg);
      CHECK(krr_objective_set_param(&ctx, &f.obj, INFINITY) == KRR_ERR_INPUT, "(f) svr epsilon = Inf");
      tfit_free(&f);
    }
    krr_objective o;
    if (tfit_make(&ctx, KRR_DOUBLE, X, n, p, Y, 1, kr, lam, &f) == KRR_OK) {
      krr_clear(&ctx);
      CHECK(krr_objective_init(&ctx, f.op, krr_loss_lookup("logistic"), lam, Y, 1, &o) == KRR_ERR_INPUT,
            "(f) logistic with targets other than +-1");
      krr_objective_free(&ctx, &o);
      CHECK(krr_loss_lookup("squared_hinge") && krr_loss_lookup("svr") && krr_loss_lookup("huber"),
            "(f) loss names");
      CHECK(krr_solver_supports(krr_solver_lookup("joker"), krr_loss_lookup("logistic")) &&
            !krr_solver_supports(krr_solver_lookup("askotch"), krr_loss_lookup("hinge")),
            "(f) supports");
      tfit_free(&f);
    }
  }

  free(K); free(y); free(w); free(a); free(X); free(Y);
  krr_ctx_free(&ctx);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
