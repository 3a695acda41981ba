/* R glue of the kernel list (src/core/kernel_math.h): what R reads of each
 * kernel (ffi_info()$kernels), and the kernel's rate, values and matrix
 * derivatives that R's numeric checks and Gaussian-process likelihood use,
 * so that no kernel formula is written in R. */
#include <string.h>
#define R_NO_REMAP
#include <R.h>
#include <Rinternals.h>
#include "core/krr.h"
#include "core/kernel_math.h"
#include "r_glue.h"

/* list(name, metric, label, formula, rate_unit, rate_power): one element
 * per kernel in code order (code = position - 1); the rate of a bandwidth s
 * is rate_unit / s^rate_power */
SEXP askotch_r_kernel_info(void) {
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
    const krr_kernel k1 = {(krr_kernel_type)i, 1.0};
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

/* a listed kernel code and a positive finite bandwidth, or an input error */
static krr_kernel kernel_of(SEXP kernel, SEXP bandwidth) {
  if (!Rf_isNumeric(kernel) || XLENGTH(kernel) != 1 || !Rf_isNumeric(bandwidth) ||
      XLENGTH(bandwidth) != 1)
    askotch_r_raise(KRR_ERR_INPUT, "kernel and bandwidth must be single numbers");
  krr_kernel k = {(krr_kernel_type)Rf_asInteger(kernel), Rf_asReal(bandwidth)};
  if (!KRR_KERNEL_LISTED((int)k.type)) askotch_r_raise(KRR_ERR_INPUT, "unknown kernel code");
  if (!(k.bandwidth > 0) || !isfinite(k.bandwidth))
    askotch_r_raise(KRR_ERR_INPUT, "the bandwidth must be positive and finite");
  return k;
}

/* The kernel's rate a (kernel_math.h: k = POLY(u) exp(-u), u = a t or
 * a sqrt(t)) as the compiled code forms it from the bandwidth. */
SEXP ffi_kernel_rate(SEXP kernel, SEXP bandwidth) {
  krr_kernel k = kernel_of(kernel, bandwidth);
  return Rf_ScalarReal(krr_kparams_make(&k).a);
}

/* The kernel's values (double) at the statistics t: squared Euclidean
 * distances, or L1 distances for an L1 kernel (ffi_info()$kernels$metric). */
SEXP ffi_kernel_eval(SEXP kernel, SEXP bandwidth, SEXP t) {
  krr_kernel k = kernel_of(kernel, bandwidth);
  if (!Rf_isReal(t)) askotch_r_raise(KRR_ERR_INPUT, "t must be a double vector");
  const krr_kparams kp = krr_kparams_make(&k);
  const R_xlen_t n = XLENGTH(t);
  SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
  for (R_xlen_t i = 0; i < n; i++) REAL(out)[i] = krr_kernel_eval(kp, REAL(t)[i]);
  UNPROTECT(1);
  return out;
}

/* K(x1, x2) and its derivatives (krr_kernel_deriv_host): an n1 x n2 x
 * length(deriv) array, slice c for the code deriv[c] (0 the kernel, -1
 * d/dlog bandwidth, j d/dlog ell_j). */
SEXP ffi_kernel_deriv(SEXP x1, SEXP x2, SEXP kernel, SEXP bandwidth, SEXP deriv) {
  if (!Rf_isReal(x1) || !Rf_isMatrix(x1) || !Rf_isReal(x2) || !Rf_isMatrix(x2))
    askotch_r_raise(KRR_ERR_INPUT, "x1 and x2 must be double matrices");
  if (Rf_ncols(x1) != Rf_ncols(x2))
    askotch_r_raise(KRR_ERR_INPUT, "x1 and x2 must have the same columns");
  if (!Rf_isInteger(deriv)) askotch_r_raise(KRR_ERR_INPUT, "deriv must be an integer vector");
  krr_kernel k = kernel_of(kernel, bandwidth);
  const int64_t n1 = Rf_nrows(x1), n2 = Rf_nrows(x2);
  const int nd = (int)XLENGTH(deriv);
  if ((double)n1 * (double)n2 * (double)nd > (double)R_XLEN_T_MAX)
    askotch_r_raise(KRR_ERR_MEMORY, "kernel derivative: the result is too large for R");
  SEXP dim = PROTECT(Rf_allocVector(INTSXP, 3));
  INTEGER(dim)[0] = (int)n1;
  INTEGER(dim)[1] = (int)n2;
  INTEGER(dim)[2] = nd;
  SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)(n1 * n2 * nd)));
  Rf_setAttrib(out, R_DimSymbol, dim);
  krr_ctx ctx;
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), 1, 0);
  askotch_r_poll_attach(&ctx);
  if (st == KRR_OK)
    st = krr_kernel_deriv_host(&ctx, &k, REAL(x1), n1, REAL(x2), n2, Rf_ncols(x1), INTEGER(deriv),
                               nd, REAL(out));
  askotch_r_ctx_done(&ctx, st);
  UNPROTECT(2);
  return out;
}
