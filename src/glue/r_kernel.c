/* The R glue of the kernels: products on host data (K(x1, x2) v, the kernel
 * matrix, the greedy pivoted Cholesky of K(x, x), the predictions of a
 * random-features model) and the kernel list (what R reads of each kernel,
 * its rate, values and derivatives). */
#include <limits.h>
#include <string.h>
#include <math.h>
#include "glue.h"
#include "r_dist.h"
#include "../core/kcomp_math.h"

/* ---- the kernel of a call -----------------------------------------------
 * A listed kernel is (code, bandwidth); a composite (code KRR_COMPOSITE) is
 * (code, spec) with spec the numbers R's kernel_args() writes:
 *   nterm, ncomp, amp[nterm], then per component
 *   term, family, base, metric, bw, par[0..2], nd, dims[nd] (0-based).
 * The spec is checked against the points' p columns (krr_kspec_invalid). */
static krr_kernel kernel_spec(SEXP bandwidth, int p) {
  krr_kernel k;
  memset(&k, 0, sizeof k);
  k.type = KRR_COMPOSITE;
  k.bandwidth = 1.0;
  if (!Rf_isReal(bandwidth)) askotch_glue_raise_status(KRR_ERR_INPUT, "bad composite kernel");
  const double *v = REAL(bandwidth);
  const R_xlen_t n = XLENGTH(bandwidth);
  R_xlen_t at = 2;
  krr_kspec *s = &k.spec;
  if (n < 2 || !(v[0] >= 1 && v[0] <= KRR_KS_MAXC) || !(v[1] >= v[0] && v[1] <= KRR_KS_MAXC))
    askotch_glue_raise_status(KRR_ERR_INPUT, "bad composite kernel");
  s->nterm = (int)v[0];
  s->ncomp = (int)v[1];
  if (n < at + s->nterm) askotch_glue_raise_status(KRR_ERR_INPUT, "bad composite kernel");
  for (int t = 0; t < s->nterm; t++) s->amp[t] = v[at++];
  for (int c = 0; c < s->ncomp; c++) {
    krr_kcomp *cp = &s->comp[c];
    if (n < at + 9) askotch_glue_raise_status(KRR_ERR_INPUT, "bad composite kernel");
    cp->term = (int)v[at];
    cp->family = (int)v[at + 1];
    cp->base = (int)v[at + 2];
    cp->metric = (int)v[at + 3];
    cp->bw = v[at + 4];
    for (int j = 0; j < 3; j++) cp->par[j] = v[at + 5 + j];
    const double nd = v[at + 8];
    at += 9;
    if (!(nd >= 0 && nd <= KRR_KS_MAXD) || n < at + (R_xlen_t)nd)
      askotch_glue_raise_status(KRR_ERR_INPUT, "bad composite kernel");
    cp->nd = (int)nd;
    for (int d = 0; d < cp->nd; d++) cp->dims[d] = (int)v[at++];
  }
  if (at != n) askotch_glue_raise_status(KRR_ERR_INPUT, "bad composite kernel");
  const char *bad = krr_kspec_invalid(s, p);
  if (bad) askotch_glue_raise_status(KRR_ERR_INPUT, bad);
  return k;
}

krr_kernel askotch_glue_kernel(SEXP kernel, SEXP bandwidth, int p) {
  const int code = askotch_glue_int1(kernel, "kernel");
  if (code == (int)KRR_COMPOSITE) return kernel_spec(bandwidth, p);
  krr_kernel k;
  memset(&k, 0, sizeof k);
  k.type = (krr_kernel_type)code;
  k.bandwidth = askotch_glue_num1(bandwidth, "bandwidth");
  return k;
}

/* ---- kernel products on host data ----------------------------------------*/
SEXP ffi_kernel_apply(SEXP x1, SEXP x2, SEXP v, SEXP kernel, SEXP bandwidth, SEXP precision,
                      SEXP device, SEXP threads) {
  askotch_glue_check_matrix(x1, "x1");
  askotch_glue_check_matrix(x2, "x2");
  askotch_glue_check_matrix(v, "v");
  if (Rf_ncols(x1) != Rf_ncols(x2))
    askotch_glue_raise_status(KRR_ERR_INPUT, "x1 and x2 must have the same columns");
  if (Rf_nrows(v) != Rf_nrows(x2))
    askotch_glue_raise_status(KRR_ERR_INPUT, "v must have nrow(x2) rows");
  krr_kernel k = askotch_glue_kernel(kernel, bandwidth, Rf_ncols(x1));
  krr_precision prec = askotch_glue_precision_of(precision);
  int dev = askotch_glue_device_of(device);
  const krr_ops *ops = askotch_glue_pick_ops(dev);
  int64_t n1 = Rf_nrows(x1), n2 = Rf_nrows(x2);
  int q = Rf_ncols(v);
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)n1, q));
  if (n1 == 0 || q == 0) {
    UNPROTECT(1);
    return out;
  }
  krr_ctx ctx;
  int nth = askotch_glue_threads(askotch_glue_int1(threads, "threads"));
  askotch_glue_blas_save();
  krr_status st =
      krr_ctx_init(&ctx, ops, krr_cpu_ops(), nth, dev == DEVICE_CUDA ? askotch_r_device_id() : 0);
  askotch_glue_poll_attach(&ctx);
  if (st == KRR_OK)
    st = krr_kernel_apply_host(&ctx, prec, &k, REAL(x1), n1, REAL(x2), n2, Rf_ncols(x1), REAL(v), q,
                               REAL(out));
  askotch_glue_ctx_done(&ctx, st, 1);
  UNPROTECT(1);
  return out;
}

SEXP ffi_kernel_matrix(SEXP x1, SEXP x2, SEXP kernel, SEXP bandwidth, SEXP precision,
                       SEXP threads) {
  askotch_glue_check_matrix(x1, "x1");
  askotch_glue_check_matrix(x2, "x2");
  if (Rf_ncols(x1) != Rf_ncols(x2))
    askotch_glue_raise_status(KRR_ERR_INPUT, "x1 and x2 must have the same columns");
  krr_kernel k = askotch_glue_kernel(kernel, bandwidth, Rf_ncols(x1));
  krr_precision prec = askotch_glue_precision_of(precision);
  int64_t n1 = Rf_nrows(x1), n2 = Rf_nrows(x2);
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)n1, (int)n2));
  if (n1 == 0 || n2 == 0) {
    UNPROTECT(1);
    return out;
  }
  krr_ctx ctx;
  int nth = askotch_glue_threads(askotch_glue_int1(threads, "threads"));
  askotch_glue_blas_save();
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), nth, 0);
  askotch_glue_poll_attach(&ctx);
  if (st == KRR_OK)
    st =
        krr_kernel_matrix_host(&ctx, prec, &k, REAL(x1), n1, REAL(x2), n2, Rf_ncols(x1), REAL(out));
  askotch_glue_ctx_done(&ctx, st, 1);
  UNPROTECT(1);
  return out;
}

/* The prior variances K(x_i, x_i) of the rows of x, in double on the CPU. */
SEXP ffi_kernel_diag(SEXP x, SEXP kernel, SEXP bandwidth) {
  askotch_glue_check_matrix(x, "x");
  const krr_kernel k = askotch_glue_kernel(kernel, bandwidth, Rf_ncols(x));
  const int64_t n = Rf_nrows(x);
  SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
  krr_ctx ctx;
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), 1, 0);
  askotch_glue_poll_attach(&ctx);
  if (st == KRR_OK && n > 0)
    st = krr_kernel_diag_host(&ctx, KRR_DOUBLE, &k, REAL(x), n, Rf_ncols(x), REAL(out));
  askotch_glue_ctx_done(&ctx, st, 0);
  UNPROTECT(1);
  return out;
}

/* The median distance between the rows of x (Euclidean, or L1 when l1;
 * data/median.c): the median-heuristic bandwidth's scale. */
SEXP ffi_median_distance(SEXP x, SEXP l1) {
  askotch_glue_check_matrix(x, "x");
  int use_l1 = Rf_asLogical(l1);
  if (use_l1 == NA_LOGICAL) askotch_glue_raise_status(KRR_ERR_INPUT, "l1 must be TRUE or FALSE");
  double med = 0;
  krr_ctx ctx;
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), 1, 0);
  if (st == KRR_OK) st = krr_median_distance(&ctx, REAL(x), Rf_nrows(x), Rf_ncols(x), use_l1, &med);
  askotch_glue_ctx_done(&ctx, st, 0);
  return Rf_ScalarReal(med);
}

/* Greedy partial Cholesky of K(x, x) (linalg/pchol.c) in double on the CPU:
 * list(L = n x r (columns past rank unused), d = diag(K - L L^T), rank,
 * pivots = 1-based).  pw: pivot weights (length n) or NULL. */
SEXP ffi_pivoted_cholesky(SEXP x, SEXP kernel, SEXP bandwidth, SEXP pw, SEXP rank, SEXP stop_trace,
                          SEXP tiny, SEXP threads) {
  askotch_glue_check_matrix(x, "x");
  krr_kernel k = askotch_glue_kernel(kernel, bandwidth, Rf_ncols(x));
  int64_t n = Rf_nrows(x);
  int p = Rf_ncols(x);
  int r = askotch_glue_int1(rank, "rank must be a number");
  if (r < 0 || r > n) askotch_glue_raise_status(KRR_ERR_INPUT, "rank must lie in [0, nrow(x)]");
  if (!Rf_isNull(pw) && (!Rf_isReal(pw) || XLENGTH(pw) != n))
    askotch_glue_raise_status(KRR_ERR_INPUT,
                              "pivot weights must be a double vector of length nrow(x)");
  double stop = askotch_glue_num1(stop_trace, "stop_trace must be a number"),
         tn = askotch_glue_num1(tiny, "tiny must be a number");
  SEXP Lr = PROTECT(Rf_allocMatrix(REALSXP, (int)n, r));
  SEXP d = PROTECT(Rf_allocVector(REALSXP, n));
  SEXP pv = PROTECT(Rf_allocVector(REALSXP, r));
  krr_ctx ctx;
  int64_t *piv = (int64_t *)calloc((size_t)(r > 0 ? r : 1), sizeof(int64_t));
  int got = 0;
  askotch_glue_blas_save();
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(),
                               askotch_glue_threads(askotch_glue_int1(threads, "threads")), 0);
  askotch_glue_poll_attach(&ctx);
  if (st == KRR_OK && !piv) st = krr_fail(&ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK)
    st = krr_kernel_pchol_host(&ctx, &k, REAL(x), n, p, Rf_isNull(pw) ? NULL : REAL(pw), r, stop,
                               tn, REAL(Lr), REAL(d), piv, &got);
  for (int j = 0; j < got; j++) REAL(pv)[j] = (double)piv[j] + 1.0;
  free(piv);
  askotch_glue_ctx_done(&ctx, st, 1);
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 4));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, 4));
  const char *names[] = {"L", "d", "rank", "pivots"};
  for (int i = 0; i < 4; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
  Rf_setAttrib(out, R_NamesSymbol, nm);
  SET_VECTOR_ELT(out, 0, Lr);
  SET_VECTOR_ELT(out, 1, d);
  SET_VECTOR_ELT(out, 2, Rf_ScalarInteger(got));
  SET_VECTOR_ELT(out, 3, Rf_lengthgets(pv, got));
  UNPROTECT(5);
  return out;
}


/* The Gaussian posterior of the prior covariance K and Gaussian sites
 * (tau, nu) (krr_gp_sites_host): list(var, mean, alpha, L), L the upper
 * Cholesky factor of I + S^1/2 K S^1/2 as R's chol() returns it, var NULL
 * unless want_var. Expectation propagation's step and the Laplace
 * approximation's Newton step (R/ep.R, R/tune-laplace.R). */
SEXP ffi_gp_sites(SEXP k, SEXP tau, SEXP nu, SEXP want_var, SEXP threads) {
  askotch_glue_check_matrix(k, "K");
  const int n = Rf_nrows(k);
  if (Rf_ncols(k) != n) askotch_glue_raise_status(KRR_ERR_INPUT, "K must be square");
  if (!Rf_isReal(tau) || !Rf_isReal(nu) || XLENGTH(tau) != n || XLENGTH(nu) != n)
    askotch_glue_raise_status(KRR_ERR_INPUT, "tau and nu must be double vectors of K's size");
  const int var = askotch_glue_int1(want_var, "want_var") != 0;
  const int nt = askotch_glue_threads(askotch_glue_int1(threads, "threads"));
  const char *nm[] = {"var", "mean", "alpha", "L", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
  for (int i = var ? 0 : 1; i < 3; i++) SET_VECTOR_ELT(out, i, Rf_allocVector(REALSXP, n));
  SET_VECTOR_ELT(out, 3, Rf_allocMatrix(REALSXP, n, n));
  krr_ctx ctx;
  askotch_glue_blas_save();
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), nt, 0);
  askotch_glue_poll_attach(&ctx);
  if (st == KRR_OK)
    st = krr_gp_sites_host(&ctx, n, REAL(k), REAL(tau), REAL(nu), REAL(VECTOR_ELT(out, 3)),
                           var ? REAL(VECTOR_ELT(out, 0)) : NULL, REAL(VECTOR_ELT(out, 1)),
                           REAL(VECTOR_ELT(out, 2)));
  askotch_glue_ctx_done(&ctx, st, 1);
  UNPROTECT(1);
  return out;
}

/* The logistic likelihood's tilted moments (krr_ep_tilted_logistic): an
 * n x 3 matrix of log Z, mean and variance. Expectation propagation's
 * site updates (R/ep.R). */
SEXP ffi_ep_tilted(SEXP y, SEXP m, SEXP v) {
  const R_xlen_t n = XLENGTH(y);
  if (!Rf_isReal(y) || !Rf_isReal(m) || !Rf_isReal(v) || XLENGTH(m) != n || XLENGTH(v) != n)
    askotch_glue_raise_status(KRR_ERR_INPUT, "y, m and v must be double vectors of one length");
  if (n > INT_MAX) askotch_glue_raise_status(KRR_ERR_INPUT, "too many sites");
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)n, 3));
  krr_ctx ctx;
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), 1, 0);
  askotch_glue_poll_attach(&ctx);
  if (st == KRR_OK) st = krr_ep_tilted_logistic(&ctx, n, REAL(y), REAL(m), REAL(v), REAL(out));
  askotch_glue_ctx_done(&ctx, st, 0);
  UNPROTECT(1);
  return out;
}

/* The eigendecomposition of a symmetric matrix (its lower triangle read) by
 * the CPU backend's polled eigensolver, so that R's interrupt reaches it
 * between steps (the GP likelihood's eigendecomposition of a kernel
 * matrix): list(values, vectors), the values decreasing as R's eigen(). */
SEXP ffi_sym_eigen(SEXP a, SEXP threads) {
  askotch_glue_check_matrix(a, "A");
  const int n = Rf_nrows(a);
  if (Rf_ncols(a) != n) askotch_glue_raise_status(KRR_ERR_INPUT, "A must be square");
  SEXP V = PROTECT(Rf_allocMatrix(REALSXP, n, n));
  SEXP w = PROTECT(Rf_allocVector(REALSXP, n));
  memcpy(REAL(V), REAL(a), sizeof(double) * (size_t)n * (size_t)n);
  krr_ctx ctx;
  askotch_glue_blas_save();
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(),
                               askotch_glue_threads(askotch_glue_int1(threads, "threads")), 0);
  askotch_glue_poll_attach(&ctx);
  if (st == KRR_OK) st = krr_sym_eigen_host(&ctx, n, REAL(V), REAL(w));
  askotch_glue_ctx_done(&ctx, st, 1);
  /* ascending -> decreasing: reverse the values and the vectors' columns */
  double *v = REAL(V), *x = REAL(w);
  for (int i = 0, j = n - 1; i < j; i++, j--) {
    const double t = x[i];
    x[i] = x[j];
    x[j] = t;
    for (int r = 0; r < n; r++) {
      const double u = v[r + (int64_t)i * n];
      v[r + (int64_t)i * n] = v[r + (int64_t)j * n];
      v[r + (int64_t)j * n] = u;
    }
  }
  const char *nm[] = {"values", "vectors", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
  SET_VECTOR_ELT(out, 0, w);
  SET_VECTOR_ELT(out, 1, V);
  UNPROTECT(3);
  return out;
}

/* The upper Cholesky factor of a symmetric positive definite matrix (its
 * upper triangle read; krr_chol_host), as R's chol() without pivoting,
 * or NULL where the factorisation breaks down (krr_chol_host's info): the exact
 * GP likelihood tells such a point from an error, an interrupt or
 * setTimeLimit()'s, without a handler that would catch those too. */
SEXP ffi_chol(SEXP a, SEXP threads) {
  askotch_glue_check_matrix(a, "A");
  const int n = Rf_nrows(a);
  if (Rf_ncols(a) != n) askotch_glue_raise_status(KRR_ERR_INPUT, "A must be square");
  SEXP R = PROTECT(Rf_allocMatrix(REALSXP, n, n));
  memcpy(REAL(R), REAL(a), sizeof(double) * (size_t)n * (size_t)n);
  krr_ctx ctx;
  int info = 0;
  askotch_glue_blas_save();
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(),
                               askotch_glue_threads(askotch_glue_int1(threads, "threads")), 0);
  askotch_glue_poll_attach(&ctx);
  if (st == KRR_OK) st = krr_chol_host(&ctx, n, REAL(R), &info);
  askotch_glue_ctx_done(&ctx, st, 1);
  UNPROTECT(1);
  return info == 0 ? R : R_NilValue;
}

/* predictions psi(xnew)^T theta of a random-features model (host data, CPU) */
SEXP ffi_features_apply(SEXP xnew, SEXP theta, SEXP kernel, SEXP bandwidth, SEXP features,
                        SEXP seed, SEXP precision, SEXP device, SEXP threads) {
  askotch_glue_check_matrix(xnew, "xnew");
  askotch_glue_check_matrix(theta, "theta");
  const krr_kernel k = askotch_glue_kernel(kernel, bandwidth, Rf_ncols(xnew));
  double M = askotch_glue_num1(features, "features");
  (void)precision; /* krr_features_apply works in double */
  int dev = askotch_glue_device_of(device);
  const krr_ops *ops = askotch_glue_pick_ops(dev);
  if (!(M >= 1) || (double)Rf_nrows(theta) != M)
    askotch_glue_raise_status(KRR_ERR_INPUT, "theta must have one row per random feature");
  int64_t nn = Rf_nrows(xnew);
  int m = Rf_ncols(theta);
  /* one seed for every column, or one per column (a draw of the features each) */
  if (TYPEOF(seed) != REALSXP || (XLENGTH(seed) != 1 && XLENGTH(seed) != m))
    askotch_glue_raise_status(KRR_ERR_INPUT, "seed must be one number or one per column of theta");
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)nn, m));
  if (nn == 0 || m == 0) {
    UNPROTECT(1);
    return out;
  }
  uint64_t *seeds = (uint64_t *)R_alloc((size_t)XLENGTH(seed), sizeof(uint64_t));
  for (R_xlen_t j = 0; j < XLENGTH(seed); j++) seeds[j] = (uint64_t)REAL(seed)[j];
  krr_ctx ctx;
  int nth = askotch_glue_threads(askotch_glue_int1(threads, "threads"));
  askotch_glue_blas_save();
  krr_status st =
      krr_ctx_init(&ctx, ops, krr_cpu_ops(), nth, dev == DEVICE_CUDA ? askotch_r_device_id() : 0);
  askotch_glue_poll_attach(&ctx);
  if (st == KRR_OK && XLENGTH(seed) == 1)
    st = krr_features_apply(&ctx, &k, Rf_ncols(xnew), (int64_t)M, seeds[0], REAL(xnew), nn,
                            REAL(theta), m, REAL(out));
  else if (st == KRR_OK)
    st = krr_features_draws(&ctx, &k, Rf_ncols(xnew), (int64_t)M, seeds, REAL(xnew), nn,
                            REAL(theta), m, REAL(out));
  askotch_glue_ctx_done(&ctx, st, 1);
  UNPROTECT(1);
  return out;
}

/* ---- the kernel list (core/kernel_math.h) ---------------------------------
 * What R reads of each kernel (ffi_info()$kernels), and the kernel's rate,
 * values and matrix derivatives that R's numeric checks and Gaussian-process
 * likelihood use, so that no kernel formula is written in R. */
/* list(name, metric, label, formula, rate_unit, rate_power): one element
 * per kernel in code order (code = position - 1); the rate of a bandwidth s
 * is rate_unit / s^rate_power */
SEXP askotch_glue_kernel_info(void) {
  static const char *fields[] = {"name", "metric", "label", "formula", "rate_unit", "rate_power"};
  const int nf = (int)(sizeof fields / sizeof *fields), nk = KRR_N_KERNELS;
  SEXP out = PROTECT(Rf_allocVector(VECSXP, nf));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, nf));
  for (int i = 0; i < nf; i++) SET_STRING_ELT(nm, i, Rf_mkChar(fields[i]));
  Rf_setAttrib(out, R_NamesSymbol, nm);
  SEXP name = PROTECT(Rf_allocVector(STRSXP, nk)), metric = PROTECT(Rf_allocVector(STRSXP, nk));
  SEXP label = PROTECT(Rf_allocVector(STRSXP, nk)), formula = PROTECT(Rf_allocVector(STRSXP, nk));
  SEXP unit = PROTECT(Rf_allocVector(REALSXP, nk)), power = PROTECT(Rf_allocVector(INTSXP, nk));
  for (int i = 0; i < nk; i++) {
    const krr_kernel k1 = {.type = (krr_kernel_type)i, .bandwidth = 1.0};
    SET_STRING_ELT(name, i, Rf_mkChar(krr_kernel_name(k1.type)));
    SET_STRING_ELT(metric, i, Rf_mkChar(krr_kernel_is_l1(i) ? "L1" : "L2"));
    SET_STRING_ELT(label, i, Rf_mkChar(krr_kernel_label(k1.type)));
    SET_STRING_ELT(formula, i, Rf_mkChar(krr_kernel_formula(k1.type)));
    REAL(unit)[i] = krr_kparams_make(&k1).a;
    INTEGER(power)[i] = krr_kernel_rate_power(k1.type);
  }
  SEXP cols[] = {name, metric, label, formula, unit, power};
  for (int i = 0; i < nf; i++) SET_VECTOR_ELT(out, i, cols[i]);
  UNPROTECT(8);
  return out;
}

/* list(code, families = c(name = code), npar = learnable hyperparameters
 * per family, max_components, max_dims, max_nu, earth_km): the composite
 * kernels' codes and limits (krr.h, kcomp_math.h) */
SEXP askotch_glue_composite_info(void) {
  static const char *fields[] = {"code",     "families", "npar",     "max_components",
                                 "max_dims", "max_nu",   "earth_km", ""};
  static const char *fam[] = {"listed", "matern", "periodic", "linear", "polynomial"};
  static const int famc[] = {KRR_KF_LISTED, KRR_KF_MATERN, KRR_KF_PERIODIC, KRR_KF_LINEAR,
                             KRR_KF_POLY};
  const int nf = KRR_N_KFAMILIES;
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, fields));
  SEXP codes = PROTECT(Rf_allocVector(INTSXP, nf)), npar = PROTECT(Rf_allocVector(INTSXP, nf));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, nf));
  for (int i = 0; i < nf; i++) {
    INTEGER(codes)[i] = famc[i];
    INTEGER(npar)[i] = krr_kc_npar(famc[i]);
    SET_STRING_ELT(nm, i, Rf_mkChar(fam[i]));
  }
  Rf_setAttrib(codes, R_NamesSymbol, nm);
  Rf_setAttrib(npar, R_NamesSymbol, nm);
  SET_VECTOR_ELT(out, 0, Rf_ScalarInteger((int)KRR_COMPOSITE));
  SET_VECTOR_ELT(out, 1, codes);
  SET_VECTOR_ELT(out, 2, npar);
  SET_VECTOR_ELT(out, 3, Rf_ScalarInteger(KRR_KS_MAXC));
  SET_VECTOR_ELT(out, 4, Rf_ScalarInteger(KRR_KS_MAXD));
  SET_VECTOR_ELT(out, 5, Rf_ScalarReal(KRR_KC_MAX_NU));
  SET_VECTOR_ELT(out, 6, Rf_ScalarReal(KRR_EARTH_KM));
  UNPROTECT(4);
  return out;
}

/* a listed kernel code and a positive finite bandwidth, or an input error */
static krr_kernel kernel_of(SEXP kernel, SEXP bandwidth) {
  if (!Rf_isNumeric(kernel) || XLENGTH(kernel) != 1 || !Rf_isNumeric(bandwidth) ||
      XLENGTH(bandwidth) != 1)
    askotch_glue_raise_status(KRR_ERR_INPUT, "kernel and bandwidth must be single numbers");
  krr_kernel k = {.type = (krr_kernel_type)Rf_asInteger(kernel), .bandwidth = Rf_asReal(bandwidth)};
  if (!KRR_KERNEL_LISTED((int)k.type))
    askotch_glue_raise_status(KRR_ERR_INPUT, "unknown kernel code");
  if (!(k.bandwidth > 0) || !isfinite(k.bandwidth))
    askotch_glue_raise_status(KRR_ERR_INPUT, "the bandwidth must be positive and finite");
  return k;
}

/* kernel_of(), or a composite kernel for points of p columns unless
 * `refused` (then that input error) */
static krr_kernel kernel_or_composite(SEXP kernel, SEXP bandwidth, int p, const char *refused) {
  if (askotch_glue_int1(kernel, "kernel") != (int)KRR_COMPOSITE)
    return kernel_of(kernel, bandwidth);
  if (refused) askotch_glue_raise_status(KRR_ERR_INPUT, refused);
  return askotch_glue_kernel(kernel, bandwidth, p);
}

/* The kernel's rate a (kernel_math.h: k = POLY(u) exp(-u), u = a t or
 * a sqrt(t)) as the compiled code forms it from the bandwidth. */
SEXP ffi_kernel_rate(SEXP kernel, SEXP bandwidth) {
  krr_kernel k = kernel_of(kernel, bandwidth);
  return Rf_ScalarReal(krr_kparams_make(&k).a);
}

/* The kernel's values (double) at the statistics t: squared Euclidean
 * distances, or L1 distances for an L1 kernel (ffi_info()$kernels$metric);
 * with deriv = -1 its derivative in the log bandwidth (deriv 0: the values).
 * The result keeps t's dimensions. */
SEXP ffi_kernel_eval(SEXP kernel, SEXP bandwidth, SEXP t, SEXP deriv) {
  krr_kernel k = kernel_of(kernel, bandwidth);
  if (!Rf_isReal(t)) askotch_glue_raise_status(KRR_ERR_INPUT, "t must be a double vector");
  const int d = Rf_asInteger(deriv);
  if (d != 0 && d != -1) askotch_glue_raise_status(KRR_ERR_INPUT, "deriv must be 0 or -1");
  const krr_kparams kp = krr_kparams_make(&k);
  const R_xlen_t n = XLENGTH(t);
  SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
  const double *tv = REAL(t);
  double *o = REAL(out);
  if (d == 0)
    for (R_xlen_t i = 0; i < n; i++) o[i] = krr_kernel_eval(kp, tv[i]);
  else
    for (R_xlen_t i = 0; i < n; i++) o[i] = krr_kernel_dlog_s(kp, tv[i]);
  Rf_setAttrib(out, R_DimSymbol, Rf_getAttrib(t, R_DimSymbol));
  UNPROTECT(1);
  return out;
}

/* K(x1, x2) and its derivatives (krr_kernel_deriv2_host): an n1 x n2 x nd
 * array, slice c for the code deriv[c] (0 the kernel, -1 d/dlog bandwidth,
 * j d/dlog ell_j), or with deriv an nd x 2 matrix the second derivative of
 * row c's two codes. */
SEXP ffi_kernel_deriv(SEXP x1, SEXP x2, SEXP kernel, SEXP bandwidth, SEXP deriv) {
  if (!Rf_isReal(x1) || !Rf_isMatrix(x1) || !Rf_isReal(x2) || !Rf_isMatrix(x2))
    askotch_glue_raise_status(KRR_ERR_INPUT, "x1 and x2 must be double matrices");
  if (Rf_ncols(x1) != Rf_ncols(x2))
    askotch_glue_raise_status(KRR_ERR_INPUT, "x1 and x2 must have the same columns");
  const int pairs = Rf_isMatrix(deriv) && Rf_ncols(deriv) == 2;
  if (!Rf_isInteger(deriv) || (Rf_isMatrix(deriv) && !pairs))
    askotch_glue_raise_status(KRR_ERR_INPUT,
                              "deriv must be an integer vector or a two-column integer matrix");
  krr_kernel k =
      kernel_or_composite(kernel, bandwidth, Rf_ncols(x1),
                          pairs ? "a composite kernel has first derivatives only" : NULL);
  const int comp = k.type == KRR_COMPOSITE;
  const int64_t n1 = Rf_nrows(x1), n2 = Rf_nrows(x2);
  const int nd = pairs ? Rf_nrows(deriv) : (int)XLENGTH(deriv);
  if ((double)n1 * (double)n2 * (double)nd > (double)R_XLEN_T_MAX)
    askotch_glue_raise_status(KRR_ERR_MEMORY, "kernel derivative: the result is too large for R");
  SEXP dim = PROTECT(Rf_allocVector(INTSXP, 3));
  INTEGER(dim)[0] = (int)n1;
  INTEGER(dim)[1] = (int)n2;
  INTEGER(dim)[2] = nd;
  SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)(n1 * n2 * nd)));
  Rf_setAttrib(out, R_DimSymbol, dim);
  krr_ctx ctx;
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), 1, 0);
  askotch_glue_poll_attach(&ctx);
  if (st == KRR_OK && comp)
    st = krr_kcomp_deriv_host(&ctx, &k, REAL(x1), n1, REAL(x2), n2, Rf_ncols(x1), INTEGER(deriv),
                              nd, REAL(out));
  else if (st == KRR_OK)
    st = krr_kernel_deriv2_host(&ctx, &k, REAL(x1), n1, REAL(x2), n2, Rf_ncols(x1), INTEGER(deriv),
                                pairs ? INTEGER(deriv) + nd : NULL, nd, REAL(out));
  askotch_glue_ctx_done(&ctx, st, 0);
  UNPROTECT(2);
  return out;
}

/* The statistic of component `comp` (0-based) of a composite kernel
 * between the rows of x1 and x2 (krr_kcomp_stat_host): an n1 x n2 matrix,
 * what R's median heuristic of a component reads. */
SEXP ffi_kcomp_stat(SEXP x1, SEXP x2, SEXP kernel, SEXP spec, SEXP comp) {
  askotch_glue_check_matrix(x1, "x1");
  askotch_glue_check_matrix(x2, "x2");
  if (Rf_ncols(x1) != Rf_ncols(x2))
    askotch_glue_raise_status(KRR_ERR_INPUT, "x1 and x2 must have the same columns");
  const krr_kernel k = askotch_glue_kernel(kernel, spec, Rf_ncols(x1));
  const int64_t n1 = Rf_nrows(x1), n2 = Rf_nrows(x2);
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)n1, (int)n2));
  krr_ctx ctx;
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), 1, 0);
  askotch_glue_poll_attach(&ctx);
  if (st == KRR_OK)
    st = krr_kcomp_stat_host(&ctx, &k, askotch_glue_int1(comp, "comp"), REAL(x1), n1, REAL(x2), n2,
                             Rf_ncols(x1), REAL(out));
  askotch_glue_ctx_done(&ctx, st, 0);
  UNPROTECT(1);
  return out;
}

/* sum_{i,l} w_il dK_c(x_i, x_l) for each code deriv[c] (0, -1 or 1..p, or
 * a composite's codes, as for ffi_kernel_deriv), w = scale W + U U^T (u:
 * NULL or an n x r matrix), the pairs' statistics from tstat when given
 * (kernel_stat_matrix() in R; a composite kernel takes scale 1 and neither): the
 * likelihood gradient's traces tr(w dK_c) for a symmetric w, without
 * forming the derivative matrices or w; a listed kernel's on `threads`
 * threads (the same bits on any number). */
SEXP ffi_kernel_deriv_dot(SEXP x, SEXP kernel, SEXP bandwidth, SEXP deriv, SEXP w, SEXP scale,
                          SEXP u, SEXP tstat, SEXP threads) {
  if (!Rf_isReal(x) || !Rf_isMatrix(x))
    askotch_glue_raise_status(KRR_ERR_INPUT, "x must be a double matrix");
  if (!Rf_isInteger(deriv))
    askotch_glue_raise_status(KRR_ERR_INPUT, "deriv must be an integer vector");
  const int64_t n = Rf_nrows(x);
  if (!Rf_isReal(w) || !Rf_isMatrix(w) || Rf_nrows(w) != n || Rf_ncols(w) != n)
    askotch_glue_raise_status(KRR_ERR_INPUT, "w must be an n x n double matrix");
  if (u != R_NilValue && (!Rf_isReal(u) || !Rf_isMatrix(u) || Rf_nrows(u) != n))
    askotch_glue_raise_status(KRR_ERR_INPUT, "u must be NULL or a double matrix of n rows");
  if (tstat != R_NilValue &&
      (!Rf_isReal(tstat) || !Rf_isMatrix(tstat) || Rf_nrows(tstat) != n || Rf_ncols(tstat) != n))
    askotch_glue_raise_status(KRR_ERR_INPUT, "tstat must be NULL or an n x n double matrix");
  const double sc = askotch_glue_num1(scale, "scale");
  const int r = u == R_NilValue ? 0 : Rf_ncols(u);
  krr_kernel k = kernel_or_composite(kernel, bandwidth, Rf_ncols(x), NULL);
  if (k.type == KRR_COMPOSITE && (sc != 1 || r > 0 || tstat != R_NilValue))
    askotch_glue_raise_status(KRR_ERR_INPUT,
                              "a composite kernel's contraction takes scale 1, no u and no tstat");
  const int nd = (int)XLENGTH(deriv);
  SEXP out = PROTECT(Rf_allocVector(REALSXP, nd));
  krr_ctx ctx;
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(),
                               askotch_glue_threads(askotch_glue_int1(threads, "threads")), 0);
  askotch_glue_poll_attach(&ctx);
  if (st == KRR_OK && k.type == KRR_COMPOSITE)
    st = krr_kcomp_deriv_dot_host(&ctx, &k, REAL(x), n, Rf_ncols(x), INTEGER(deriv), nd, REAL(w),
                                  REAL(out));
  else if (st == KRR_OK)
    st = krr_kernel_deriv_dot_host(&ctx, &k, REAL(x), n, Rf_ncols(x), INTEGER(deriv), nd, REAL(w),
                                   sc, r > 0 ? REAL(u) : NULL, r,
                                   tstat == R_NilValue ? NULL : REAL(tstat), REAL(out));
  askotch_glue_ctx_done(&ctx, st, 0);
  UNPROTECT(1);
  return out;
}

/* ---- the stochastic GP likelihood on all points (krr_gp_slq) ------------ */
static SEXP slq_result(const krr_slq_result *r, SEXP yaa, SEXP grad, SEXP gse, SEXP alpha, SEXP pc,
                       SEXP terms) {
  const char *nm[] = {"loglik",      "se",         "logdet",    "logdet_se", "edf",
                      "edf_se",      "iterations", "converged", "yAy",       "gradient",
                      "gradient_se", "alpha",      "precond",   "terms",     ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
  const double v[] = {r->loglik, r->loglik_se, r->logdet, r->logdet_se, r->edf, r->edf_se};
  for (int i = 0; i < 6; i++) SET_VECTOR_ELT(out, i, Rf_ScalarReal(v[i]));
  SET_VECTOR_ELT(out, 6, Rf_ScalarInteger(r->iterations));
  SET_VECTOR_ELT(out, 7, Rf_ScalarLogical(r->converged));
  SET_VECTOR_ELT(out, 8, yaa);
  SET_VECTOR_ELT(out, 9, grad);
  SET_VECTOR_ELT(out, 10, gse);
  SET_VECTOR_ELT(out, 11, alpha);
  SET_VECTOR_ELT(out, 12, pc);
  SET_VECTOR_ELT(out, 13, terms);
  UNPROTECT(1);
  return out;
}

/* x (n x p double), y (n x m double), lambda, nk (0, 1 or p), opts =
 * c(probes, rank, maxit, tol, seed, fd_step), pc = list(U, s) or NULL (a
 * kept preconditioner), alpha (n x m warm start) or NULL.  The result:
 * the estimates, the gradient (nk + 1, log lambda last; NULL for nk < 0),
 * the solve alpha and the preconditioner list(U, s) used. */
SEXP ffi_gp_slq(SEXP x, SEXP y, SEXP kernel, SEXP bandwidth, SEXP lambda, SEXP nk, SEXP opts,
                SEXP pc, SEXP alpha, SEXP device, SEXP threads) {
  askotch_glue_check_matrix(x, "x");
  askotch_glue_check_matrix(y, "y");
  const int64_t n = Rf_nrows(x);
  const int p = Rf_ncols(x), m = Rf_ncols(y), g = askotch_glue_int1(nk, "nk");
  if (Rf_nrows(y) != n) askotch_glue_raise_status(KRR_ERR_INPUT, "y must have nrow(x) rows");
  if (!Rf_isReal(opts) || XLENGTH(opts) != 6)
    askotch_glue_raise_status(KRR_ERR_INPUT, "opts must be 6 numbers");
  const double *ov = REAL(opts);
  krr_slq_opts o = {(int)ov[0], (int)ov[1], (int)ov[2], ov[3], (uint64_t)ov[4], ov[5]};
  int pcr = 0;
  if (!Rf_isNull(pc)) {
    if (TYPEOF(pc) != VECSXP || XLENGTH(pc) != 2)
      askotch_glue_raise_status(KRR_ERR_INPUT, "pc must be list(U (n x r), s (r))");
    SEXP U = VECTOR_ELT(pc, 0), s = VECTOR_ELT(pc, 1);
    askotch_glue_check_matrix(U, "pc$U");
    if (Rf_nrows(U) != n || !Rf_isReal(s) || XLENGTH(s) != Rf_ncols(U))
      askotch_glue_raise_status(KRR_ERR_INPUT, "pc must be list(U (n x r), s (r))");
    pcr = Rf_ncols(U);
  }
  const int r = pcr > 0 ? pcr : (o.rank > 0 && o.rank <= n ? o.rank : 0);
  const char *pcn[] = {"U", "s", ""};
  SEXP pco = PROTECT(Rf_mkNamed(VECSXP, pcn));
  SET_VECTOR_ELT(pco, 0, pcr > 0 ? VECTOR_ELT(pc, 0) : Rf_allocMatrix(REALSXP, (int)n, r));
  SET_VECTOR_ELT(pco, 1, pcr > 0 ? VECTOR_ELT(pc, 1) : Rf_allocVector(REALSXP, r));
  SEXP al = PROTECT(Rf_allocMatrix(REALSXP, (int)n, m));
  int warm = !Rf_isNull(alpha);
  if (warm) {
    askotch_glue_check_matrix(alpha, "alpha");
    if (Rf_nrows(alpha) != n || Rf_ncols(alpha) != m)
      askotch_glue_raise_status(KRR_ERR_INPUT, "alpha must be n x m");
    memcpy(REAL(al), REAL(alpha), sizeof(double) * (size_t)(n * m));
  }
  SEXP yaa = PROTECT(Rf_allocVector(REALSXP, m));
  SEXP gr = PROTECT(Rf_allocVector(REALSXP, g >= 0 ? g + 1 : 0));
  SEXP gse = PROTECT(Rf_allocVector(REALSXP, g >= 0 ? g + 1 : 0));
  SEXP terms = PROTECT(Rf_allocVector(REALSXP, o.probes > 0 ? o.probes : 0));
  krr_slq_result res = {0};
  const int dev = askotch_glue_device_of(device);
  /* a composite kernel has the likelihood here, its gradient only exactly */
  const krr_kernel k = kernel_or_composite(
      kernel, bandwidth, p, g > 0 ? "a composite kernel has no stochastic gradient" : NULL);
  const double lam = askotch_glue_num1(lambda, "lambda");
  const int nth = askotch_glue_threads(askotch_glue_int1(threads, "threads"));
  krr_ctx ctx;
  askotch_glue_blas_save();
  krr_status st = krr_ctx_init(&ctx, askotch_glue_pick_ops(dev), krr_cpu_ops(), nth,
                               dev == DEVICE_CUDA ? askotch_r_device_id() : 0);
  askotch_glue_poll_attach(&ctx);
  if (st == KRR_OK)
    st = krr_gp_slq(&ctx, REAL(x), n, p, k, REAL(y), m, lam, g < 0 ? 0 : g, &o,
                    REAL(VECTOR_ELT(pco, 0)), REAL(VECTOR_ELT(pco, 1)), &pcr, REAL(al), warm, &res,
                    REAL(yaa), g >= 0 ? REAL(gr) : NULL, g >= 0 ? REAL(gse) : NULL, REAL(terms));
  askotch_glue_ctx_done(&ctx, st, 1);
  if (pcr < r) { /* the factor's numerical rank fell short of r */
    SEXP U = PROTECT(Rf_allocMatrix(REALSXP, (int)n, pcr));
    SEXP s = PROTECT(Rf_allocVector(REALSXP, pcr));
    memcpy(REAL(U), REAL(VECTOR_ELT(pco, 0)), sizeof(double) * (size_t)(n * pcr));
    memcpy(REAL(s), REAL(VECTOR_ELT(pco, 1)), sizeof(double) * (size_t)pcr);
    SET_VECTOR_ELT(pco, 0, U);
    SET_VECTOR_ELT(pco, 1, s);
    UNPROTECT(2);
  }
  SEXP out =
      slq_result(&res, yaa, g >= 0 ? gr : R_NilValue, g >= 0 ? gse : R_NilValue, al, pco, terms);
  UNPROTECT(6);
  return out;
}
