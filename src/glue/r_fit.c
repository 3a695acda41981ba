/* The R glue of a solver state (the fit): created from R data by
 * ffi_fit_init (problem -> composed operator -> objective -> solver), held in
 * an external pointer with a finalizer, run under a stop policy
 * (ffi_fit_stop, ffi_fit_run), queried (diagnostics, weights, options,
 * centres, objective values, random-feature theta) and solved again (new
 * targets, lambda or starting weights). */
#include <string.h>
#include <math.h>
#include "glue.h"
#include "../core/loss/loss.h"
#include "r_dist.h"

/* the number named nm in an R list (dflt when absent or not a number) */
static double list_num(SEXP list, const char *nm, double dflt) {
  if (TYPEOF(list) != VECSXP) return dflt;
  SEXP names = Rf_getAttrib(list, R_NamesSymbol);
  if (names == R_NilValue) return dflt;
  for (R_xlen_t i = 0; i < XLENGTH(list); i++) {
    SEXP v = VECTOR_ELT(list, i);
    if (strcmp(CHAR(STRING_ELT(names, i)), nm) == 0 && Rf_isNumeric(v) && XLENGTH(v) == 1)
      return Rf_asReal(v);
  }
  return dflt;
}

/* ---- fit state --------------------------------------------------------- */
typedef struct {
  krr_ctx ctx;
  krr_problem pb;
  krr_op *op;       /* what the solver sees (krr_op_compose) */
  int64_t features; /* the features code of krr_op_compose (0: the exact kernel) */
  double *obsd;     /* observation weights: d = sqrt(w) per training row (host), or NULL */
  krr_objective obj;
  krr_solver *solver;
  int ctx_ok;
  krr_stop stop; /* the stop policy of the current solve (ffi_fit_stop) */
  SEXP x;        /* the training points (R's x, preserved while the state lives): the
                  * precision floor's measurement (krr_stop.floor_X) */
  double pd[3];  /* P, D and their relative gap at the last exact check (NaN: none) */
} fit_state;

static void state_release(fit_state *fs) {
  if (!fs) return;
  krr_solver_free(fs->solver);
  fs->solver = NULL;
  if (fs->ctx_ok) {
    krr_objective_free(&fs->ctx, &fs->obj);
    krr_op_free(fs->op);
    fs->op = NULL;
    krr_problem_free(&fs->ctx, &fs->pb);
    krr_ctx_free(&fs->ctx);
  }
  free(fs->obsd);
  fs->obsd = NULL;
  fs->ctx_ok = 0;
  if (fs->x) R_ReleaseObject(fs->x);
  fs->x = NULL;
}

static void state_finalizer(SEXP ptr) {
  fit_state *fs = (fit_state *)R_ExternalPtrAddr(ptr);
  if (!fs) return;
  state_release(fs);
  free(fs);
  R_ClearExternalPtr(ptr);
}

static fit_state *get_state(SEXP ptr) {
  if (TYPEOF(ptr) != EXTPTRSXP)
    askotch_glue_raise_status(KRR_ERR_INPUT, "not an askotch solver state");
  fit_state *fs = (fit_state *)R_ExternalPtrAddr(ptr);
  if (!fs || !fs->solver)
    askotch_glue_raise_status(KRR_ERR_INPUT, "the solver state has been freed");
  askotch_glue_poll_attach(&fs->ctx);
  return fs;
}

/* Observation weights: the solver works on v = D^{-1} alpha (scaled
 * system, op/compose.c).  Multiply (inverse = 0) or divide (inverse = 1) the
 * rows of W (rows x m, host) by the scalings of the rows the weights live
 * on (the training rows, or an inducing-point solver's centres). */
static krr_status obs_rescale(fit_state *fs, double *W, int m, int inverse) {
  if (!fs->obsd) return KRR_OK;
  int64_t rows = krr_solver_weights_rows(fs->solver), nc = krr_solver_ncenters(fs->solver);
  int64_t *idx = NULL;
  if (nc > 0) {
    if (nc != rows)
      return krr_fail(&fs->ctx, KRR_ERR_INTERNAL, "weights rows %lld != centres %lld",
                      (long long)rows, (long long)nc);
    idx = (int64_t *)R_alloc((size_t)nc, sizeof(int64_t));
    krr_status st = krr_solver_centers(fs->solver, idx);
    if (st != KRR_OK) return st;
  }
  krr_obs_scale_rows(fs->obsd, idx, rows, m, W, inverse);
  return KRR_OK;
}

/* Targets as the solver sees them: D y (a copy, R_alloc) with observation
 * weights, else y itself. */
static const double *obs_targets(fit_state *fs, SEXP y) {
  if (!fs->obsd) return REAL(y);
  int64_t n = Rf_nrows(y);
  int m = Rf_ncols(y);
  double *ys = (double *)R_alloc((size_t)(n * m > 0 ? n * m : 1), sizeof(double));
  krr_obs_targets(fs->obsd, REAL(y), n, m, ys);
  return ys;
}

/* A new solver state: x (n x p, standardised points), y (n x m targets),
 * the kernel's code and bandwidth, lambda (one, or one per column of y: a
 * path), the precision and device codes, the solver's name and options
 * (an R list), the loss's name and parameter; features: the operator's
 * features code (krr_op_compose): 0 the exact kernel, M > 0 M random
 * Fourier features, -1 the linear operator K = x x^T whose features are the
 * columns of x (linear ridge regression, or any explicit features given as
 * x, e.g. svrg()'s Nystrom features); intercept: the constant c of
 * K + c 1 1^T (0: none); obs_weights: one per row or none; threads. */
SEXP ffi_fit_init(SEXP x, SEXP y, SEXP kernel, SEXP bandwidth, SEXP lambda, SEXP precision,
                  SEXP device, SEXP solver, SEXP options, SEXP loss, SEXP loss_param, SEXP features,
                  SEXP intercept, SEXP obs_weights, SEXP threads) {
  askotch_glue_check_matrix(x, "x");
  askotch_glue_check_matrix(y, "y");
  int64_t n = Rf_nrows(x);
  int p = Rf_ncols(x), m = Rf_ncols(y);
  if ((int64_t)Rf_nrows(y) != n)
    askotch_glue_raise_status(KRR_ERR_INPUT, "x and y must have the same number of rows");
  krr_kernel k = askotch_glue_kernel(kernel, bandwidth, p);
  /* one lambda, or one per column of y (a path solved at once) */
  int path = TYPEOF(lambda) == REALSXP && XLENGTH(lambda) > 1;
  if (path && XLENGTH(lambda) != m)
    askotch_glue_raise_status(KRR_ERR_INPUT, "a lambda path needs one lambda per column of y");
  double lam = path ? REAL(lambda)[0] : askotch_glue_num1(lambda, "lambda must be a number");
  krr_precision prec = askotch_glue_precision_of(precision);
  int dev = askotch_glue_device_of(device);
  const krr_solver_def *def = askotch_glue_solver_def(solver);
  const krr_loss *ls = krr_loss_lookup(askotch_glue_str1(loss, "`loss` must be a loss name"));
  if (!ls)
    askotch_glue_raise_status(KRR_ERR_NOT_BUILT,
                              "this loss is not compiled into this build of askotch");
  double lparam = askotch_glue_num1(loss_param, "the loss parameter must be a number");
  double M = askotch_glue_num1(features, "features must be a number");
  double cshift = askotch_glue_num1(intercept, "intercept must be a number");
  if (!(M >= -1) || M != floor(M) || M > 9007199254740992.0)
    askotch_glue_raise_status(KRR_ERR_INPUT,
                              "`features` must be NULL or a positive whole number (-1: linear)");
  if (!(cshift >= 0) || !isfinite(cshift))
    askotch_glue_raise_status(KRR_ERR_INPUT,
                              "`intercept` must be TRUE, FALSE or a positive number");
  int nth = askotch_glue_threads(askotch_glue_int1(threads, "threads must be a number"));
  const krr_ops *ops = askotch_glue_pick_ops(dev);
  R_xlen_t nw = XLENGTH(obs_weights);
  if (TYPEOF(obs_weights) != REALSXP || (nw != 0 && nw != n))
    askotch_glue_raise_status(KRR_ERR_INPUT,
                              "observation weights must be a double vector with one value per row");
  if (nw > 0 && strcmp(krr_loss_name(ls), "squared") != 0)
    askotch_glue_raise_status(KRR_ERR_INPUT,
                              "observation weights are supported for the squared loss only");
  for (R_xlen_t i = 0; i < nw; i++)
    if (!(REAL(obs_weights)[i] > 0) || !isfinite(REAL(obs_weights)[i]))
      askotch_glue_raise_status(KRR_ERR_INPUT, "observation weights must be positive and finite");

  fit_state *fs = (fit_state *)calloc(1, sizeof(fit_state));
  if (!fs) askotch_glue_raise_status(KRR_ERR_MEMORY, "out of host memory");
  if (nw > 0) {
    fs->obsd = (double *)malloc(sizeof(double) * (size_t)nw);
    if (!fs->obsd) {
      free(fs);
      askotch_glue_raise_status(KRR_ERR_MEMORY, "out of host memory");
    }
    for (R_xlen_t i = 0; i < nw; i++) fs->obsd[i] = sqrt(REAL(obs_weights)[i]);
  }
  krr_options *o = NULL;
  askotch_glue_blas_save();
  krr_status st = krr_ctx_init(&fs->ctx, ops, krr_cpu_ops(), nth,
                               dev == DEVICE_CUDA ? askotch_r_device_id() : 0);
  fs->ctx_ok = 1;
  askotch_glue_poll_attach(&fs->ctx);
  if (st == KRR_OK) st = krr_options_new(&fs->ctx, def, &o);
  if (st == KRR_OK) st = askotch_glue_set_options(&fs->ctx, o, options);
  if (st == KRR_OK) st = krr_problem_create(&fs->ctx, prec, REAL(x), n, p, &fs->pb);
  /* the exact kernel or features -> sharded (a distributed fit) -> intercept
   * -> observation weights */
  if (st == KRR_OK)
    st = krr_op_compose(&fs->ctx, &fs->pb, k, (int64_t)M, (uint64_t)list_num(options, "seed", 0.0),
                        cshift, fs->obsd, askotch_r_dist_comm(), &fs->op);
  fs->features = (int64_t)M;
  if (st == KRR_OK)
    st = krr_objective_init(&fs->ctx, fs->op, ls, lam, obs_targets(fs, y), m, &fs->obj);
  if (st == KRR_OK && krr_loss_param_name(ls))
    st = krr_objective_set_param(&fs->ctx, &fs->obj, lparam);
  if (st == KRR_OK && path) st = krr_objective_set_lambdas(&fs->ctx, &fs->obj, REAL(lambda));
  if (st == KRR_OK) st = krr_solver_init(&fs->ctx, fs->op, &fs->obj, o, &fs->solver);
  /* a random-features model is theta = Z^T w over the training rows: the
   * inducing-point solvers' weights live on their centres */
  if (st == KRR_OK && M != 0 && krr_solver_weights_rows(fs->solver) != n)
    st = krr_fail(&fs->ctx, KRR_ERR_INPUT,
                  "`features`: the solver `%s` fits weights on inducing points, not on the "
                  "training points; use random features with joker(), askotch(), pcg() or "
                  "cholesky()",
                  krr_solver_name(def));
  krr_options_free(o);
  if (st != KRR_OK) {
    char buf[sizeof fs->ctx.msg];
    memcpy(buf, fs->ctx.msg, sizeof buf);
    state_release(fs);
    free(fs);
    askotch_glue_raise_status(st, buf);
  }
  askotch_glue_blas_restore();
  /* x stays with the state, unchanged (R copies it before any change); not
   * in the pointer's protected slot, which saveRDS() would write out */
  MARK_NOT_MUTABLE(x);
  R_PreserveObject(x);
  fs->x = x;
  SEXP ptr = PROTECT(R_MakeExternalPtr(fs, Rf_install("askotch_state"), R_NilValue));
  R_RegisterCFinalizerEx(ptr, state_finalizer, TRUE);
  UNPROTECT(1);
  return ptr;
}

static const char *generic_names[] = {"iter", "passes",  "resid_est", "block_resid",
                                      "done", "t_setup", "t_iter"};
#define N_GENERIC ((int)(sizeof generic_names / sizeof generic_names[0]))

/* the generic diagnostics and the solver's named extras */
static SEXP diag_vector(krr_solver *s) {
  krr_diag d;
  krr_solver_diag(s, &d);
  const krr_solver_def *def = krr_options_solver(krr_solver_options(s));
  int ne = krr_solver_extra_count(def), k = N_GENERIC + ne;
  SEXP out = PROTECT(Rf_allocVector(REALSXP, k));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, k));
  double v[N_GENERIC] = {(double)d.iter, d.passes,  d.resid_est, d.block_resid,
                         (double)d.done, d.t_setup, d.t_iter};
  for (int i = 0; i < N_GENERIC; i++) {
    REAL(out)[i] = v[i];
    SET_STRING_ELT(nm, i, Rf_mkChar(generic_names[i]));
  }
  for (int i = 0; i < ne; i++) {
    REAL(out)[N_GENERIC + i] = krr_solver_extra(s, i);
    SET_STRING_ELT(nm, N_GENERIC + i, Rf_mkChar(krr_solver_extra_name(def, i)));
  }
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

/* The exact check of a fit that records the objective values: P and D at
 * the weights (one per training row) and their relative duality gap
 * (krr_duality_gap), and the criterion -- the relative residual for the
 * squared loss, the worst column's gap with rows held out, else that gap. */
static krr_status objective_exact(krr_solver *s, void *data, double *crit) {
  fit_state *fs = (fit_state *)data;
  int64_t len = krr_solver_weights_rows(s) * (int64_t)fs->obj.m;
  double *w = (double *)malloc(sizeof(double) * (size_t)(len > 0 ? len : 1)), P = NAN, D = NAN;
  krr_status st =
      w ? krr_solver_weights(s, w) : krr_fail(&fs->ctx, KRR_ERR_MEMORY, "out of memory");
  if (st == KRR_OK) st = krr_objective_values_host(fs->op, &fs->obj, w, &P, &D);
  free(w);
  if (st != KRR_OK) return st;
  fs->pd[0] = P;
  fs->pd[1] = D;
  fs->pd[2] = krr_duality_gap(P, D);
  if (!strcmp(krr_loss_name(fs->obj.loss), "squared") || fs->obj.rows)
    return krr_solver_residual(s, crit);
  *crit = fs->pd[2];
  return KRR_OK;
}

/* A new stop policy for the next solve (krr_stop in krr.h): rule =
 * c(tol, max_passes, time_limit, elapsed, gap, exact_ok, direct, use_floor,
 * objective, max_iter), `elapsed` the seconds the fit's clock has run
 * already; use_floor = 1 lets the solve stop at the precision floor where it
 * applies (measured by the policy on the state's points); objective = 1
 * records P and D at each exact check; max_iter (Inf: none) bounds the
 * iterations (svrg()'s epochs). */
SEXP ffi_fit_stop(SEXP ptr, SEXP rule) {
  fit_state *fs = get_state(ptr);
  if (!Rf_isReal(rule) || XLENGTH(rule) != 10)
    askotch_glue_raise_status(KRR_ERR_INPUT, "rule must be 10 numbers");
  const double *r = REAL(rule);
  krr_stop *p = &fs->stop;
  krr_stop_init(p, r[0], r[1], r[2]);
  p->t0 -= isfinite(r[3]) ? r[3] : 0;
  p->gap = r[4] != 0;
  p->exact_ok = r[5] != 0;
  p->direct = r[6] != 0;
  p->use_floor = r[7] != 0;
  p->floor_X = REAL(fs->x);
  if (r[9] >= 1) p->max_iter = r[9];
  if (r[8] != 0) {
    if (krr_solver_weights_rows(fs->solver) != fs->pb.n)
      askotch_glue_raise_status(KRR_ERR_INPUT,
                                "the objective values need one weight per training point");
    p->exact = objective_exact;
    p->exact_data = fs;
  }
  return R_NilValue;
}

/* Up to `iters` iterations under the stop policy (krr_solver_run):
 * list(diag, reason (NA: go on), exact, floor (the precision floor, NaN
 * until measured), objective = c(P, D, gap) of an exact check of this
 * call, or NAs). */
SEXP ffi_fit_run(SEXP ptr, SEXP iters) {
  fit_state *fs = get_state(ptr);
  int it = askotch_glue_int1(iters, "iters must be a number");
  fs->pd[0] = fs->pd[1] = fs->pd[2] = NAN;
  krr_stop_result res;
  askotch_glue_blas_save();
  krr_status st = krr_solver_run(fs->solver, &fs->stop, it < 1 ? 1 : it, &res);
  if (st != KRR_OK) askotch_glue_raise_ctx(&fs->ctx, st); /* state stays valid; R frees it */
  askotch_glue_blas_restore();
  const char *why = krr_stop_reason_name(res.reason);
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 5)), nm = PROTECT(Rf_allocVector(STRSXP, 5));
  SET_VECTOR_ELT(out, 0, diag_vector(fs->solver));
  SET_VECTOR_ELT(out, 1, why ? Rf_mkString(why) : Rf_ScalarString(NA_STRING));
  SET_VECTOR_ELT(out, 2, Rf_ScalarReal(res.exact));
  SET_VECTOR_ELT(out, 3, Rf_ScalarReal(fs->stop.floor));
  SEXP pd = Rf_allocVector(REALSXP, 3);
  SET_VECTOR_ELT(out, 4, pd);
  for (int i = 0; i < 3; i++) REAL(pd)[i] = fs->pd[i];
  const char *names[] = {"diag", "reason", "exact", "floor", "objective"};
  for (int i = 0; i < 5; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

/* theta = Z^T alpha of a fit in features (random features, or the linear
 * operator's): nfeat x m, with an intercept one more row, the last
 * sqrt(c) colSums(alpha); a solver with a theta hook gives its own */
SEXP ffi_fit_features_theta(SEXP ptr) {
  fit_state *fs = get_state(ptr);
  if (fs->features == 0) askotch_glue_raise_status(KRR_ERR_INPUT, "not a fit in features");
  int64_t n = fs->pb.n, nf = krr_op_nfeat(fs->op);
  int m = fs->obj.m;
  if (krr_solver_weights_rows(fs->solver) != n)
    askotch_glue_raise_status(KRR_ERR_INPUT, "the weights do not live on the training points");
  SEXP theta = PROTECT(Rf_allocMatrix(REALSXP, (int)nf, m));
  askotch_glue_blas_save();
  /* not bound by a solve's deadline (a validation check or the fit's end) */
  double deadline = fs->ctx.deadline;
  fs->ctx.deadline = 0;
  krr_status st;
  if (krr_solver_has_theta(fs->solver)) {
    st = krr_solver_theta(fs->solver, REAL(theta));
  } else {
    double *w = (double *)R_alloc((size_t)(n * m), sizeof(double));
    st = krr_solver_weights(fs->solver, w);
    if (st == KRR_OK) st = krr_op_features_theta_host(fs->op, w, m, REAL(theta));
  }
  fs->ctx.deadline = deadline;
  if (st != KRR_OK) askotch_glue_raise_ctx(&fs->ctx, st);
  askotch_glue_blas_restore();
  UNPROTECT(1);
  return theta;
}

/* the solver's result vectors (krr_solver_vector): a named list */
SEXP ffi_fit_vectors(SEXP ptr) {
  fit_state *fs = get_state(ptr);
  const krr_solver_def *def = krr_options_solver(krr_solver_options(fs->solver));
  int k = krr_solver_vector_count(def);
  SEXP out = PROTECT(Rf_allocVector(VECSXP, k)), nm = PROTECT(Rf_allocVector(STRSXP, k));
  for (int i = 0; i < k; i++) {
    SEXP v = Rf_allocVector(REALSXP, (R_xlen_t)krr_solver_vector(fs->solver, i, NULL));
    SET_VECTOR_ELT(out, i, v);
    if (XLENGTH(v) > 0) krr_solver_vector(fs->solver, i, REAL(v));
    SET_STRING_ELT(nm, i, Rf_mkChar(krr_solver_vector_name(def, i)));
  }
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

SEXP ffi_fit_weights(SEXP ptr) {
  fit_state *fs = get_state(ptr);
  int64_t rows = krr_solver_weights_rows(fs->solver);
  SEXP w = PROTECT(Rf_allocMatrix(REALSXP, (int)rows, fs->obj.m));
  askotch_glue_blas_save();
  krr_status st = krr_solver_weights(fs->solver, REAL(w));
  if (st == KRR_OK) st = obs_rescale(fs, REAL(w), fs->obj.m, 0);
  if (st != KRR_OK) askotch_glue_raise_ctx(&fs->ctx, st);
  askotch_glue_blas_restore();
  UNPROTECT(1);
  return w;
}

/* 1-based training-row indices of the centres (inducing-point solvers), integer(0) otherwise */
SEXP ffi_fit_centers(SEXP ptr) {
  fit_state *fs = get_state(ptr);
  int64_t nc = krr_solver_ncenters(fs->solver);
  SEXP out = PROTECT(Rf_allocVector(INTSXP, (R_xlen_t)nc));
  if (nc > 0) {
    int64_t *idx = (int64_t *)R_alloc((size_t)nc, sizeof(int64_t));
    krr_status st = krr_solver_centers(fs->solver, idx);
    if (st != KRR_OK) askotch_glue_raise_ctx(&fs->ctx, st);
    for (int64_t i = 0; i < nc; i++) INTEGER(out)[i] = (int)(idx[i] + 1);
  }
  UNPROTECT(1);
  return out;
}

/* one option's value as R data */
static SEXP option_value(const krr_options *o, int i) {
  const krr_solver_def *def = krr_options_solver(o);
  krr_optinfo in;
  krr_options_info(def, i, &in);
  double num = NAN, v = krr_options_value(o, i, &num);
  int nch = 0;
  for (const char *c = in.choices; c && *c; c++) nch += *c == '|';
  nch += in.choices && *in.choices;
  if (in.type == KRR_OPT_CHOICE || (in.type == KRR_OPT_RHO && v < nch)) {
    const char *c = in.choices;
    for (int k = 0; c && k < (int)v; k++) c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL;
    if (!c) return Rf_ScalarReal(v);
    const char *e = strchr(c, '|');
    size_t len = e ? (size_t)(e - c) : strlen(c);
    char b[64];
    if (len >= sizeof b) len = sizeof b - 1;
    memcpy(b, c, len);
    b[len] = '\0';
    return Rf_mkString(b);
  }
  if (in.type == KRR_OPT_RHO) return Rf_ScalarReal(num);
  if (in.type == KRR_OPT_FLAG) return Rf_ScalarLogical(v != 0);
  if (in.type == KRR_OPT_INDICES) {
    int64_t len = 0;
    const int64_t *idx = krr_options_indices(o, i, &len);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)len));
    for (int64_t j = 0; j < len; j++) REAL(out)[j] = (double)(idx[j] + 1);
    UNPROTECT(1);
    return out;
  }
  return Rf_ScalarReal(v);
}

/* the resolved options of the fit (automatic values filled in) */
SEXP ffi_fit_options(SEXP ptr) {
  fit_state *fs = get_state(ptr);
  const krr_options *o = krr_solver_options(fs->solver);
  const krr_solver_def *def = krr_options_solver(o);
  int k = krr_options_count(def);
  SEXP out = PROTECT(Rf_allocVector(VECSXP, k));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, k));
  for (int i = 0; i < k; i++) {
    krr_optinfo in;
    krr_options_info(def, i, &in);
    SET_VECTOR_ELT(out, i, option_value(o, i));
    SET_STRING_ELT(nm, i, Rf_mkChar(in.name));
  }
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

SEXP ffi_fit_set_targets(SEXP ptr, SEXP y) {
  fit_state *fs = get_state(ptr);
  askotch_glue_check_matrix(y, "y");
  if ((int64_t)Rf_nrows(y) != fs->pb.n)
    askotch_glue_raise_status(KRR_ERR_INPUT,
                              "the new targets must have one row per training point");
  askotch_glue_blas_save();
  krr_status st = krr_solver_set_targets(fs->solver, obs_targets(fs, y), Rf_ncols(y));
  if (st != KRR_OK) askotch_glue_raise_ctx(&fs->ctx, st);
  askotch_glue_blas_restore();
  return R_NilValue;
}

SEXP ffi_fit_set_lambda(SEXP ptr, SEXP lambda) {
  fit_state *fs = get_state(ptr);
  askotch_glue_blas_save();
  krr_status st =
      krr_solver_set_lambda(fs->solver, askotch_glue_num1(lambda, "lambda must be a number"));
  if (st != KRR_OK) askotch_glue_raise_ctx(&fs->ctx, st);
  askotch_glue_blas_restore();
  return R_NilValue;
}

SEXP ffi_fit_set_weights(SEXP ptr, SEXP w) {
  fit_state *fs = get_state(ptr);
  askotch_glue_check_matrix(w, "weights");
  if ((int64_t)Rf_nrows(w) != krr_solver_weights_rows(fs->solver) || Rf_ncols(w) != fs->obj.m)
    askotch_glue_raise_status(KRR_ERR_INPUT,
                              "the starting weights must have the shape of the fit's weights");
  double *w0 = REAL(w);
  if (fs->obsd) {
    size_t len = (size_t)XLENGTH(w);
    w0 = (double *)R_alloc(len > 0 ? len : 1, sizeof(double));
    memcpy(w0, REAL(w), sizeof(double) * len);
  }
  askotch_glue_blas_save();
  krr_status st = obs_rescale(fs, w0, fs->obj.m, 1);
  if (st == KRR_OK) st = krr_solver_set_weights(fs->solver, w0);
  if (st != KRR_OK) askotch_glue_raise_ctx(&fs->ctx, st);
  askotch_glue_blas_restore();
  return R_NilValue;
}

/* rows (n x m, 0 or 1): the rows each column's fit uses (krr_solver_set_rows) */
SEXP ffi_fit_set_rows(SEXP ptr, SEXP rows) {
  fit_state *fs = get_state(ptr);
  askotch_glue_check_matrix(rows, "rows");
  if ((int64_t)Rf_nrows(rows) != fs->pb.n || Rf_ncols(rows) != fs->obj.m)
    askotch_glue_raise_status(KRR_ERR_INPUT, "the rows to use must have the shape of the targets");
  askotch_glue_blas_save();
  krr_status st = krr_solver_set_rows(fs->solver, REAL(rows));
  if (st != KRR_OK) askotch_glue_raise_ctx(&fs->ctx, st);
  askotch_glue_blas_restore();
  return R_NilValue;
}

/* K w at the training rows (n x m): the fitted scores, held-out rows included */
SEXP ffi_fit_products(SEXP ptr) {
  fit_state *fs = get_state(ptr);
  if (fs->obsd)
    askotch_glue_raise_status(KRR_ERR_INPUT,
                              "the products of a fit with observation weights are "
                              "not kept");
  SEXP F = PROTECT(Rf_allocMatrix(REALSXP, (int)fs->pb.n, fs->obj.m));
  askotch_glue_blas_save();
  krr_status st = krr_solver_products(fs->solver, REAL(F));
  if (st != KRR_OK) askotch_glue_raise_ctx(&fs->ctx, st);
  askotch_glue_blas_restore();
  UNPROTECT(1);
  return F;
}

SEXP ffi_fit_free(SEXP ptr) {
  if (TYPEOF(ptr) == EXTPTRSXP) state_finalizer(ptr);
  return R_NilValue;
}

/* TRUE when the pointer holds a live state (FALSE after saveRDS/readRDS or free) */
SEXP ffi_fit_alive(SEXP ptr) {
  return Rf_ScalarLogical(TYPEOF(ptr) == EXTPTRSXP && R_ExternalPtrAddr(ptr) != NULL);
}
