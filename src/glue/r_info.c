/* The R glue of what R reads at load and of the session settings: the
 * registry (solvers with their options and capabilities, losses, kernels,
 * codes), the early check of a solver's options and what they allow, the
 * CUDA devices, the session's thread count and the BLAS thread count. */
#include <string.h>
#include <math.h>
#include "glue.h"
#include "r_dist.h"
#include "../core/loss/loss.h"

#define N_CODES(tab) ((int)(sizeof tab / sizeof tab[0]))

/* A solver's options set from R's list, then (check) its data-free rules
 * checked; returns whether the options take a lambda path.  Errors are
 * raised as classed R conditions. */
static int options_eval(SEXP solver, SEXP options, int check) {
  const krr_solver_def *def = askotch_glue_solver_def(solver);
  krr_ctx ctx;
  krr_options *o = NULL;
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), 1, 0);
  if (st == KRR_OK) st = krr_options_new(&ctx, def, &o);
  if (st == KRR_OK) st = askotch_glue_set_options(&ctx, o, options);
  if (st == KRR_OK && check) st = krr_options_check(&ctx, o);
  int path = st == KRR_OK && krr_options_lambda_path(o);
  krr_options_free(o);
  askotch_glue_ctx_done(&ctx, st, 0);
  return path;
}

/* check a solver's options without data (the constructors' early check) */
SEXP ffi_check_options(SEXP solver, SEXP options) {
  options_eval(solver, options, 1);
  return R_NilValue;
}

static SEXP named_list(int k, const char **names);

/* What a solver with these options can do: list(lambda_path) (the rule of
 * the compiled solver, which R reads instead of knowing it). */
SEXP ffi_options_caps(SEXP solver, SEXP options) {
  int path = options_eval(solver, options, 0);
  static const char *fields[] = {"lambda_path"};
  SEXP out = PROTECT(named_list(1, fields));
  SET_VECTOR_ELT(out, 0, Rf_ScalarLogical(path));
  UNPROTECT(1);
  return out;
}

/* ---- the registry for R ----------------------------------------------------
 * list(solvers = list(<name> = list(name, title, losses, extras, options =
 * list(name, type, default, lo, hi, lo_open, choices, doc))), losses, kernels) */
static SEXP named_list(int k, const char **names) {
  SEXP out = PROTECT(Rf_allocVector(VECSXP, k));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, k));
  for (int i = 0; i < k; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

static SEXP solver_info(const krr_solver_def *def) {
  static const char *fields[] = {"name",    "title",       "losses",     "extras",
                                 "options", "distributed", "lambda_path"};
  static const char *ofields[] = {"name", "type",    "default", "lo",
                                  "hi",   "lo_open", "choices", "doc"};
  static const char *types[] = {"int", "real", "flag", "choice", "rho", "indices"};
  SEXP out = PROTECT(named_list(7, fields));
  SET_VECTOR_ELT(out, 0, Rf_mkString(krr_solver_name(def)));
  SET_VECTOR_ELT(out, 5, Rf_ScalarLogical(krr_solver_distributed(def) != 0));
  SET_VECTOR_ELT(out, 6, Rf_ScalarLogical(krr_solver_lambda_path(def) != 0));
  SET_VECTOR_ELT(out, 1, Rf_mkString(krr_solver_title(def)));
  int nl = 0;
  for (int i = 0; i < krr_loss_count(); i++) nl += krr_solver_supports(def, krr_loss_get(i));
  SEXP ls = PROTECT(Rf_allocVector(STRSXP, nl));
  for (int i = 0, j = 0; i < krr_loss_count(); i++)
    if (krr_solver_supports(def, krr_loss_get(i)))
      SET_STRING_ELT(ls, j++, Rf_mkChar(krr_loss_name(krr_loss_get(i))));
  SET_VECTOR_ELT(out, 2, ls);
  int ne = krr_solver_extra_count(def);
  SEXP ex = PROTECT(Rf_allocVector(STRSXP, ne));
  for (int i = 0; i < ne; i++) SET_STRING_ELT(ex, i, Rf_mkChar(krr_solver_extra_name(def, i)));
  SET_VECTOR_ELT(out, 3, ex);
  int no = krr_options_count(def);
  SEXP opts = PROTECT(named_list(8, ofields));
  SEXP on = PROTECT(Rf_allocVector(STRSXP, no)), ot = PROTECT(Rf_allocVector(STRSXP, no));
  SEXP od = PROTECT(Rf_allocVector(REALSXP, no)), olo = PROTECT(Rf_allocVector(REALSXP, no));
  SEXP ohi = PROTECT(Rf_allocVector(REALSXP, no)), oop = PROTECT(Rf_allocVector(LGLSXP, no));
  SEXP och = PROTECT(Rf_allocVector(STRSXP, no)), odc = PROTECT(Rf_allocVector(STRSXP, no));
  for (int i = 0; i < no; i++) {
    krr_optinfo in;
    krr_options_info(def, i, &in);
    SET_STRING_ELT(on, i, Rf_mkChar(in.name));
    SET_STRING_ELT(ot, i, Rf_mkChar(types[in.type]));
    REAL(od)[i] = in.def;
    REAL(olo)[i] = in.lo;
    REAL(ohi)[i] = in.hi;
    LOGICAL(oop)[i] = in.lo_open;
    SET_STRING_ELT(och, i, in.choices ? Rf_mkChar(in.choices) : NA_STRING);
    SET_STRING_ELT(odc, i, Rf_mkChar(in.doc));
  }
  SEXP cols[] = {on, ot, od, olo, ohi, oop, och, odc};
  for (int i = 0; i < 8; i++) SET_VECTOR_ELT(opts, i, cols[i]);
  SET_VECTOR_ELT(out, 4, opts);
  UNPROTECT(12);
  return out;
}

/* a code table as a named integer vector */
static SEXP code_vector(const code_entry *tab, int k) {
  SEXP v = PROTECT(Rf_allocVector(INTSXP, k));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, k));
  for (int i = 0; i < k; i++) {
    SET_STRING_ELT(nm, i, Rf_mkChar(tab[i].name));
    INTEGER(v)[i] = tab[i].code;
  }
  Rf_setAttrib(v, R_NamesSymbol, nm);
  UNPROTECT(2);
  return v;
}

/* one loss of the compiled table: its criterion, whether it classifies,
 * whether its dual is sparse, and its parameter (name NA: none) */
static SEXP loss_info(const krr_loss *ls) {
  static const char *fields[] = {"name",       "criterion",     "classification", "sparse",
                                 "param_name", "param_default", "param_lo",       "param_lo_open"};
  SEXP out = PROTECT(named_list(8, fields));
  SET_VECTOR_ELT(out, 0, Rf_mkString(ls->name));
  const char *crit = ls->crit == KRR_CRIT_RESIDUAL ? "relative residual" : "relative duality gap";
  SET_VECTOR_ELT(out, 1, Rf_mkString(crit));
  SET_VECTOR_ELT(out, 2, Rf_ScalarLogical(ls->classification != 0));
  SET_VECTOR_ELT(out, 3, Rf_ScalarLogical(ls->sparse != 0));
  SEXP pn = PROTECT(Rf_allocVector(STRSXP, 1));
  SET_STRING_ELT(pn, 0, ls->param_name ? Rf_mkChar(ls->param_name) : NA_STRING);
  SET_VECTOR_ELT(out, 4, pn);
  SET_VECTOR_ELT(out, 5, Rf_ScalarReal(ls->param_name ? ls->param_default : NA_REAL));
  SET_VECTOR_ELT(out, 6, Rf_ScalarReal(ls->param_name ? ls->param_lo : NA_REAL));
  SET_VECTOR_ELT(out, 7, Rf_ScalarLogical(ls->param_lo_open != 0));
  UNPROTECT(2);
  return out;
}

/* The bound of the dual box |alpha_i| <= bound of a loss at lambda and its
 * parameter (krr_loss_dual_bound): Inf when unbounded, NA for a loss
 * without support vectors to count. */
SEXP ffi_loss_bound(SEXP loss, SEXP param, SEXP lambda) {
  const krr_loss *ls = krr_loss_lookup(askotch_glue_str1(loss, "`loss` must be a loss name"));
  if (!ls) askotch_glue_raise_status(KRR_ERR_INPUT, "unknown loss");
  double b = krr_loss_dual_bound(ls, askotch_glue_num1(lambda, "lambda must be a number"),
                                 askotch_glue_num1(param, "param must be a number"));
  return Rf_ScalarReal(isnan(b) ? NA_REAL : b);
}

/* What R reads at load: the solvers (options, losses, capabilities), the
 * losses, the kernels (r_kernel.c: names in code order, metric, text, rate)
 * and the codes of precision and device. */
SEXP ffi_info(void) {
  static const char *fields[] = {"solvers", "losses", "kernels", "codes", "loss_info", "composite"};
  static const char *cfields[] = {"precision", "device", "reduce"};
  SEXP out = PROTECT(named_list(6, fields));
  int ns = krr_solver_count();
  const char **snames = (const char **)R_alloc((size_t)(ns > 0 ? ns : 1), sizeof(char *));
  for (int i = 0; i < ns; i++) snames[i] = krr_solver_name(krr_solver_get(i));
  SEXP sv = PROTECT(named_list(ns, snames));
  for (int i = 0; i < ns; i++) SET_VECTOR_ELT(sv, i, solver_info(krr_solver_get(i)));
  SET_VECTOR_ELT(out, 0, sv);
  SEXP ls = PROTECT(Rf_allocVector(STRSXP, krr_loss_count()));
  for (int i = 0; i < krr_loss_count(); i++)
    SET_STRING_ELT(ls, i, Rf_mkChar(krr_loss_name(krr_loss_get(i))));
  SET_VECTOR_ELT(out, 1, ls);
  SET_VECTOR_ELT(out, 2, askotch_glue_kernel_info());
  SEXP codes = PROTECT(named_list(3, cfields));
  code_entry reduce[ASKOTCH_R_N_REDUCE];
  for (int i = 0; i < ASKOTCH_R_N_REDUCE; i++)
    reduce[i] = (code_entry){askotch_r_reduce_names[i], i};
  SET_VECTOR_ELT(codes, 0,
                 code_vector(askotch_glue_precision_codes, N_CODES(askotch_glue_precision_codes)));
  SET_VECTOR_ELT(codes, 1,
                 code_vector(askotch_glue_device_codes, N_CODES(askotch_glue_device_codes)));
  SET_VECTOR_ELT(codes, 2, code_vector(reduce, ASKOTCH_R_N_REDUCE));
  SET_VECTOR_ELT(out, 3, codes);
  int nl = krr_loss_count();
  const char **lnames = (const char **)R_alloc((size_t)(nl > 0 ? nl : 1), sizeof(char *));
  for (int i = 0; i < nl; i++) lnames[i] = krr_loss_name(krr_loss_get(i));
  SEXP li = PROTECT(named_list(nl, lnames));
  for (int i = 0; i < nl; i++) SET_VECTOR_ELT(li, i, loss_info(krr_loss_get(i)));
  SET_VECTOR_ELT(out, 4, li);
  SET_VECTOR_ELT(out, 5, askotch_glue_composite_info());
  UNPROTECT(5);
  return out;
}

SEXP ffi_threads(SEXP n) {
  int t = askotch_glue_int1(n, "threads must be a number");
  if (t > 0) askotch_glue_threads_set(krr_cpu_threads_cap(t));
  return Rf_ScalarInteger(askotch_glue_threads(0));
}

SEXP ffi_devices(void) {
  const char *why = NULL;
  krr_status cst = krr_cuda_status(&why);
  int nd = cst == KRR_OK ? krr_cuda_device_count() : 0;
  SEXP name = PROTECT(Rf_allocVector(STRSXP, nd));
  SEXP mem = PROTECT(Rf_allocVector(REALSXP, nd));
  SEXP cc = PROTECT(Rf_allocVector(STRSXP, nd));
  for (int i = 0; i < nd; i++) {
    char nm[256] = "", ccs[32];
    size_t tot = 0;
    int ma = 0, mi = 0;
    krr_cuda_device_info(i, nm, sizeof nm, &tot, &ma, &mi);
    snprintf(ccs, sizeof ccs, "%d.%d", ma, mi);
    SET_STRING_ELT(name, i, Rf_mkChar(nm));
    REAL(mem)[i] = (double)tot;
    SET_STRING_ELT(cc, i, Rf_mkChar(ccs));
  }
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 3));
  SEXP nms = PROTECT(Rf_allocVector(STRSXP, 3));
  SET_VECTOR_ELT(out, 0, name);
  SET_STRING_ELT(nms, 0, Rf_mkChar("name"));
  SET_VECTOR_ELT(out, 1, mem);
  SET_STRING_ELT(nms, 1, Rf_mkChar("memory"));
  SET_VECTOR_ELT(out, 2, cc);
  SET_STRING_ELT(nms, 2, Rf_mkChar("cc"));
  Rf_setAttrib(out, R_NamesSymbol, nms);
  /* status: "ok", "not_built" or "device" (krr_status_name); why: the reason */
  if (cst == KRR_OK && nd == 0) cst = KRR_ERR_DEVICE;
  Rf_setAttrib(out, Rf_install("status"), PROTECT(Rf_mkString(krr_status_name(cst))));
  UNPROTECT(1);
  if (cst != KRR_OK) {
    SEXP w = PROTECT(Rf_mkString(why ? why : "no CUDA device found"));
    Rf_setAttrib(out, Rf_install("why"), w);
    UNPROTECT(1);
  }
  UNPROTECT(5);
  return out;
}

/* ---- BLAS thread count: set it when n >= 1 (capped by the cores, as the
 * fits' own count is); the count now, NA when the BLAS has no thread control */
SEXP ffi_blas_threads(SEXP n) {
  int t = askotch_glue_int1(n, "n must be a number");
  if (t != NA_INTEGER && t >= 1) krr_cpu_blas_threads_restore(askotch_glue_threads(t));
  int cur = krr_cpu_blas_threads_get();
  return Rf_ScalarInteger(cur >= 1 ? cur : NA_INTEGER);
}
