/* The R glue of SVRG on explicit features (its own entry point, apart from
 * the solver registry). */
#include <string.h>
#include "glue.h"
#include "../core/solvers/svrg.h"

/* ---- sketched preconditioned SVRG on explicit features (core/solvers/svrg.c) ----
 * x: n x p standardised points; features 0: phi(x) = x (linear ridge), else
 * M random Fourier features of the kernel (the draws of ffi_features_apply
 * for the same seed); opts: rank, lanczos_iters, epochs, epoch_length, step,
 * precondition, sampling, tol, seed; w0: NULL or the d x m start. */
SEXP ffi_svrg(SEXP x, SEXP y, SEXP lambda, SEXP features, SEXP kernel, SEXP bandwidth, SEXP opts,
              SEXP threads, SEXP w0) {
  askotch_glue_check_matrix(x, "x");
  askotch_glue_check_matrix(y, "y");
  if (!Rf_isReal(opts) || XLENGTH(opts) != 9)
    askotch_glue_raise_status(KRR_ERR_INPUT, "svrg: opts must be 9 numbers");
  const double *ov = REAL(opts);
  int64_t n = Rf_nrows(x);
  int p = Rf_ncols(x), m = Rf_ncols(y);
  if (Rf_nrows(y) != n)
    askotch_glue_raise_status(KRR_ERR_INPUT, "svrg: y must have one row per point");
  double M = askotch_glue_num1(features, "features"), lam = askotch_glue_num1(lambda, "lambda");
  krr_kernel k = {(krr_kernel_type)askotch_glue_int1(kernel, "kernel"),
                  askotch_glue_num1(bandwidth, "bandwidth")};
  int64_t d = M > 0 ? (int64_t)M : p;
  krr_svrg_opts o = {(int)ov[0], (int)ov[1], (int)ov[2], (int64_t)ov[3], ov[4],
                     (int)ov[5], (int)ov[6], ov[7],      (uint64_t)ov[8]};
  if (Rf_isNull(w0) == 0) {
    askotch_glue_check_matrix(w0, "w0");
    if (Rf_nrows(w0) != d || Rf_ncols(w0) != m)
      askotch_glue_raise_status(KRR_ERR_INPUT, "svrg: w0 has the wrong shape");
  }
  const char *nm[] = {"weights", "objective", "gradient",      "sigma2",  "beta_hat", "eta",
                      "epochs",  "rank",      "lanczos_iters", "seconds", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
  SEXP W = PROTECT(Rf_allocMatrix(REALSXP, (int)d, m));
  SEXP obj = PROTECT(Rf_allocVector(REALSXP, o.epochs + 1));
  SEXP grd = PROTECT(Rf_allocVector(REALSXP, o.epochs + 1));
  int kk = o.precondition ? (int)(o.rank < d ? o.rank : d) : 0;
  SEXP s2 = PROTECT(Rf_allocVector(REALSXP, kk));
  SEXP secs = PROTECT(Rf_allocVector(REALSXP, o.epochs + 1));
  if (Rf_isNull(w0)) memset(REAL(W), 0, sizeof(double) * (size_t)(d * m));
  else memcpy(REAL(W), REAL(w0), sizeof(double) * (size_t)(d * m));
  for (int i = 0; i <= o.epochs; i++) REAL(obj)[i] = REAL(grd)[i] = REAL(secs)[i] = NA_REAL;
  krr_svrg_info info;
  memset(&info, 0, sizeof info);
  info.sigma2 = REAL(s2);
  info.objective = REAL(obj);
  info.gradient = REAL(grd);
  info.seconds = REAL(secs);
  krr_ctx ctx;
  int nth = askotch_glue_threads(askotch_glue_int1(threads, "threads"));
  askotch_glue_blas_save();
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), nth, 0);
  askotch_glue_poll_attach(&ctx);
  double *Zt = NULL;
  if (st == KRR_OK) {
    Zt = (double *)malloc(sizeof(double) * (size_t)(d * n));
    if (!Zt)
      st = krr_fail(&ctx, KRR_ERR_MEMORY, "svrg: cannot hold the %.0f x %.0f features", (double)n,
                    (double)d);
  }
  if (st == KRR_OK) {
    if (M > 0) {
      st = krr_svrg_rff(&ctx, &k, REAL(x), n, p, d, (uint64_t)ov[8], Zt);
    } else {
      const double *X = REAL(x);
      for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < p; j++) Zt[j + i * (int64_t)p] = X[i + (int64_t)j * n];
    }
  }
  if (st == KRR_OK) st = krr_svrg_solve(&ctx, Zt, n, d, m, REAL(y), lam, &o, REAL(W), &info);
  free(Zt);
  askotch_glue_ctx_done(&ctx, st, 1);
  SET_VECTOR_ELT(out, 0, W);
  SET_VECTOR_ELT(out, 1, obj);
  SET_VECTOR_ELT(out, 2, grd);
  SET_VECTOR_ELT(out, 3, s2);
  SET_VECTOR_ELT(out, 4, Rf_ScalarReal(info.beta_hat));
  SET_VECTOR_ELT(out, 5, Rf_ScalarReal(info.eta));
  SET_VECTOR_ELT(out, 6, Rf_ScalarInteger(info.epochs_run));
  SET_VECTOR_ELT(out, 7, Rf_ScalarInteger(info.k));
  SET_VECTOR_ELT(out, 8, Rf_ScalarInteger(info.q));
  SET_VECTOR_ELT(out, 9, secs);
  UNPROTECT(6);
  return out;
}
