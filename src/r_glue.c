/* R <-> core glue: SEXP <-> core views, status -> classed R condition,
 * solver state in an external pointer with a finalizer.  The only file (with
 * init.c) that includes R headers. */
#include <string.h>
#include <math.h>
#define R_NO_REMAP
#include <R.h>
#include <Rinternals.h>
#include "core/krr.h"

/* ---- BLAS thread count -------------------------------------------------------
 * The CPU backend sets OpenBLAS's process-wide thread count for its own calls.
 * Every entry point that can run BLAS saves the user's count on entry
 * (blas_save) and puts it back before returning (blas_restore); raise_status
 * restores too, so an R error (a longjmp) never leaves it changed. */
static int g_blas_saved = -1; /* -1: nothing saved */
static void blas_save(void) { g_blas_saved = krr_cpu_blas_threads_get(); }
static void blas_restore(void) {
  if (g_blas_saved >= 1) krr_cpu_blas_threads_restore(g_blas_saved);
  g_blas_saved = -1;
}

/* ---- errors ----------------------------------------------------------------
 * Raise askotch_error_<status> through the R function raise_from_c() of the
 * package namespace.  Callers free their resources BEFORE calling this (it
 * does not return). */
static void raise_status(krr_status st, const char *msg) {
  blas_restore();
  SEXP ns = PROTECT(R_FindNamespace(Rf_mkString("askotch")));
  SEXP fn = PROTECT(Rf_findFun(Rf_install("raise_from_c"), ns));
  SEXP call = PROTECT(Rf_lang3(fn, Rf_mkString(krr_status_name(st)),
                               Rf_mkString(msg && *msg ? msg : krr_status_name(st))));
  Rf_eval(call, ns);
  UNPROTECT(3);
  Rf_error("%s", msg); /* not reached */
}

static void raise_ctx(krr_ctx *ctx, krr_status st) {
  char buf[sizeof ctx->msg];
  memcpy(buf, ctx->msg, sizeof buf);
  raise_status(st, buf);
}

/* ---- argument helpers --------------------------------------------------- */
static double num1(SEXP x, const char *what) {
  if (!Rf_isNumeric(x) || XLENGTH(x) != 1) raise_status(KRR_ERR_INPUT, what);
  return Rf_asReal(x);
}
static int int1(SEXP x, const char *what) {
  if (!Rf_isNumeric(x) || XLENGTH(x) != 1) raise_status(KRR_ERR_INPUT, what);
  return Rf_asInteger(x);
}
static void check_matrix(SEXP x, const char *what) {
  if (!Rf_isReal(x) || !Rf_isMatrix(x)) {
    char b[256];
    snprintf(b, sizeof b, "%s must be a double matrix", what);
    raise_status(KRR_ERR_INPUT, b);
  }
}
static SEXP list_get(SEXP list, const char *name) {
  SEXP names = Rf_getAttrib(list, R_NamesSymbol);
  for (R_xlen_t i = 0; i < XLENGTH(list); i++)
    if (strcmp(CHAR(STRING_ELT(names, i)), name) == 0) return VECTOR_ELT(list, i);
  return R_NilValue;
}
static double list_num(SEXP list, const char *name, double def) {
  SEXP v = list_get(list, name);
  if (v == R_NilValue || XLENGTH(v) < 1) return def;
  if (!Rf_isNumeric(v) && !Rf_isLogical(v)) {
    char b[256];
    snprintf(b, sizeof b, "solver$%s must be numeric", name);
    raise_status(KRR_ERR_INPUT, b);
  }
  return Rf_asReal(v);
}

static const krr_ops *pick_ops(int device) {
  if (device == 1) {
    const char *why = NULL;
    const krr_ops *ops = krr_cuda_ops(&why);
    if (!ops) raise_status(why && strstr(why, "built without") ? KRR_ERR_NOT_BUILT : KRR_ERR_DEVICE,
                           why ? why : "CUDA is not available");
    return ops;
  }
  return krr_cpu_ops();
}

static int g_threads = 0; /* 0: krr_cpu_threads_default() */
static int threads_or_default(int t) { return krr_cpu_threads_cap(t > 0 ? t : g_threads); }

/* ---- fit state --------------------------------------------------------- */
typedef struct {
  krr_ctx ctx;
  krr_problem pb;
  krr_solver *solver;
  int ctx_ok, pb_ok;
} fit_state;

static void state_release(fit_state *fs) {
  if (!fs) return;
  if (fs->solver) krr_solver_free(fs->solver);
  fs->solver = NULL;
  if (fs->pb_ok) krr_problem_free(&fs->ctx, &fs->pb);
  fs->pb_ok = 0;
  if (fs->ctx_ok) krr_ctx_free(&fs->ctx);
  fs->ctx_ok = 0;
}

static void state_finalizer(SEXP ptr) {
  fit_state *fs = (fit_state *)R_ExternalPtrAddr(ptr);
  if (!fs) return;
  state_release(fs);
  free(fs);
  R_ClearExternalPtr(ptr);
}

static fit_state *get_state(SEXP ptr) {
  if (TYPEOF(ptr) != EXTPTRSXP) raise_status(KRR_ERR_INPUT, "not an askotch solver state");
  fit_state *fs = (fit_state *)R_ExternalPtrAddr(ptr);
  if (!fs || !fs->solver) raise_status(KRR_ERR_INPUT, "the solver state has been freed");
  return fs;
}

SEXP ffi_fit_init(SEXP x, SEXP y, SEXP kernel, SEXP bandwidth, SEXP lambda, SEXP precision,
                  SEXP device, SEXP solver) {
  check_matrix(x, "x");
  check_matrix(y, "y");
  if (TYPEOF(solver) != VECSXP) raise_status(KRR_ERR_INPUT, "solver must be a list");
  int64_t n = Rf_nrows(x);
  int p = Rf_ncols(x), m = Rf_ncols(y);
  if ((int64_t)Rf_nrows(y) != n) raise_status(KRR_ERR_INPUT, "x and y must have the same number of rows");
  krr_kernel k = {(krr_kernel_type)int1(kernel, "kernel must be an integer code"),
                  num1(bandwidth, "bandwidth must be a number")};
  double lam = num1(lambda, "lambda must be a number");
  krr_precision prec = int1(precision, "precision must be 0 or 1") == 0 ? KRR_FLOAT : KRR_DOUBLE;
  int dev = int1(device, "device must be 0 or 1");

  krr_solver_opts o;
  krr_solver_opts_default(&o);
  o.kind = (krr_solver_kind)(int)list_num(solver, "kind", 0);
  o.block_size = (int64_t)list_num(solver, "block_size", 0);
  o.rank = (int)list_num(solver, "rank", 0);
  o.rho_mode = (krr_rho_mode)(int)list_num(solver, "rho_mode", 0);
  o.rho_value = list_num(solver, "rho_value", 0);
  o.mu = list_num(solver, "mu", 0);
  o.nu = list_num(solver, "nu", 0);
  o.power_iters = (int)list_num(solver, "power_iters", 10);
  double seed = list_num(solver, "seed", 0);
  o.seed = (uint64_t)(seed >= 0 && seed < 9007199254740992.0 ? seed : 0);
  o.block_mem_limit = (size_t)list_num(solver, "block_mem_limit", 0);
  o.mem_limit = (size_t)list_num(solver, "mem_limit", 0);
  int threads = threads_or_default((int)list_num(solver, "threads", 0));
  o.precond = (krr_precond)(int)list_num(solver, "precond", 0);
  o.n_centers = (int64_t)list_num(solver, "n_centers", 0);
  o.resid_every = (int)list_num(solver, "resid_every", 0);
  o.sampling = (krr_sampling)(int)list_num(solver, "sampling", 0);
  o.rls_subsample = (int64_t)list_num(solver, "rls_subsample", 0);
  o.ep_version = (int)list_num(solver, "ep_version", 0);
  o.ep_subsample = (int64_t)list_num(solver, "ep_subsample", 0);
  o.ep_batch = (int64_t)list_num(solver, "ep_batch", 0);
  o.ep_step = list_num(solver, "ep_step", 0);
  o.v1_beta = list_num(solver, "v1_beta", 0);
  /* Falkon centres: 1-based R indices -> 0-based; the solver copies them */
  int64_t *centers = NULL;
  SEXP cen = list_get(solver, "centers");
  if (cen != R_NilValue && XLENGTH(cen) > 0) {
    if (!Rf_isNumeric(cen)) raise_status(KRR_ERR_INPUT, "solver$centers must be row indices");
    R_xlen_t nc = XLENGTH(cen);
    centers = (int64_t *)R_alloc((size_t)nc, sizeof(int64_t));
    for (R_xlen_t i = 0; i < nc; i++) {
      double v = Rf_isReal(cen) ? REAL(cen)[i] : (double)INTEGER(cen)[i];
      if (!(v >= 1 && v <= (double)n)) raise_status(KRR_ERR_INPUT, "centers must be row indices in 1..nrow(x)");
      centers[i] = (int64_t)v - 1;
    }
    o.centers = centers;
    o.n_centers = nc;
  }

  const krr_ops *ops = pick_ops(dev);
  fit_state *fs = (fit_state *)calloc(1, sizeof(fit_state));
  if (!fs) raise_status(KRR_ERR_MEMORY, "out of host memory");
  blas_save();
  krr_status st = krr_ctx_init(&fs->ctx, ops, threads, 0);
  fs->ctx_ok = 1;
  if (st == KRR_OK) {
    st = krr_problem_create(&fs->ctx, prec, REAL(x), n, p, REAL(y), m, k, lam, &fs->pb);
    fs->pb_ok = st == KRR_OK;
  }
  if (st == KRR_OK) st = krr_solver_init(&fs->ctx, &fs->pb, &o, &fs->solver);
  if (st != KRR_OK) {
    char buf[sizeof fs->ctx.msg];
    memcpy(buf, fs->ctx.msg, sizeof buf);
    state_release(fs);
    free(fs);
    raise_status(st, buf);
  }
  blas_restore();
  SEXP ptr = PROTECT(R_MakeExternalPtr(fs, Rf_install("askotch_state"), R_NilValue));
  R_RegisterCFinalizerEx(ptr, state_finalizer, TRUE);
  UNPROTECT(1);
  return ptr;
}

static const char *diag_names[] = {"iter", "passes", "block_resid", "resid_est", "done",
                                   "block_size", "rank", "step_L", "rho", "materialized",
                                   "t_block", "t_nystrom", "t_power", "t_update"};

static SEXP diag_vector(const krr_diag *d) {
  int k = (int)(sizeof diag_names / sizeof diag_names[0]);
  SEXP out = PROTECT(Rf_allocVector(REALSXP, k));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, k));
  double v[] = {(double)d->iter, d->passes, d->block_resid, d->resid_est, (double)d->done,
                (double)d->block_size, (double)d->rank, d->step_L, d->rho,
                (double)d->materialized, d->t_block, d->t_nystrom, d->t_power, d->t_update};
  for (int i = 0; i < k; i++) {
    REAL(out)[i] = v[i];
    SET_STRING_ELT(nm, i, Rf_mkChar(diag_names[i]));
  }
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

SEXP ffi_fit_step(SEXP ptr, SEXP iters) {
  fit_state *fs = get_state(ptr);
  int it = int1(iters, "iters must be a number");
  blas_save();
  krr_status st = krr_solver_step(fs->solver, it < 1 ? 1 : it);
  if (st != KRR_OK) raise_ctx(&fs->ctx, st); /* state stays valid; R frees it */
  blas_restore();
  krr_diag d;
  krr_solver_diag(fs->solver, &d);
  return diag_vector(&d);
}

SEXP ffi_fit_residual(SEXP ptr) {
  fit_state *fs = get_state(ptr);
  double r = NAN;
  blas_save();
  krr_status st = krr_solver_residual(fs->solver, &r);
  if (st != KRR_OK) raise_ctx(&fs->ctx, st);
  blas_restore();
  return Rf_ScalarReal(r);
}

SEXP ffi_fit_weights(SEXP ptr) {
  fit_state *fs = get_state(ptr);
  int64_t nc = krr_solver_ncenters(fs->solver);
  SEXP w = PROTECT(Rf_allocMatrix(REALSXP, (int)(nc > 0 ? nc : fs->pb.n), fs->pb.m));
  blas_save();
  krr_status st = krr_solver_weights(fs->solver, REAL(w));
  if (st != KRR_OK) raise_ctx(&fs->ctx, st);
  blas_restore();
  UNPROTECT(1);
  return w;
}

/* 1-based training-row indices of the centres (Falkon), integer(0) otherwise */
SEXP ffi_fit_centers(SEXP ptr) {
  fit_state *fs = get_state(ptr);
  int64_t nc = krr_solver_ncenters(fs->solver);
  SEXP out = PROTECT(Rf_allocVector(INTSXP, (R_xlen_t)nc));
  if (nc > 0) {
    int64_t *idx = (int64_t *)R_alloc((size_t)nc, sizeof(int64_t));
    krr_status st = krr_solver_centers(fs->solver, idx);
    if (st != KRR_OK) raise_ctx(&fs->ctx, st);
    for (int64_t i = 0; i < nc; i++) INTEGER(out)[i] = (int)(idx[i] + 1);
  }
  UNPROTECT(1);
  return out;
}

SEXP ffi_fit_free(SEXP ptr) {
  if (TYPEOF(ptr) == EXTPTRSXP) state_finalizer(ptr);
  return R_NilValue;
}

/* ---- kernel products on host data ----------------------------------------*/
SEXP ffi_kernel_apply(SEXP x1, SEXP x2, SEXP v, SEXP kernel, SEXP bandwidth, SEXP precision,
                      SEXP device, SEXP threads) {
  check_matrix(x1, "x1");
  check_matrix(x2, "x2");
  check_matrix(v, "v");
  if (Rf_ncols(x1) != Rf_ncols(x2)) raise_status(KRR_ERR_INPUT, "x1 and x2 must have the same columns");
  if (Rf_nrows(v) != Rf_nrows(x2)) raise_status(KRR_ERR_INPUT, "v must have nrow(x2) rows");
  krr_kernel k = {(krr_kernel_type)int1(kernel, "kernel"), num1(bandwidth, "bandwidth")};
  krr_precision prec = int1(precision, "precision") == 0 ? KRR_FLOAT : KRR_DOUBLE;
  const krr_ops *ops = pick_ops(int1(device, "device"));
  int64_t n1 = Rf_nrows(x1), n2 = Rf_nrows(x2);
  int q = Rf_ncols(v);
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)n1, q));
  if (n1 == 0 || q == 0) { UNPROTECT(1); return out; }
  krr_ctx ctx;
  int nth = threads_or_default(int1(threads, "threads"));
  blas_save();
  krr_status st = krr_ctx_init(&ctx, ops, nth, 0);
  if (st == KRR_OK)
    st = krr_kernel_apply_host(&ctx, prec, &k, REAL(x1), n1, REAL(x2), n2, Rf_ncols(x1), REAL(v), q,
                               REAL(out));
  char buf[sizeof ctx.msg];
  memcpy(buf, ctx.msg, sizeof buf);
  krr_ctx_free(&ctx);
  blas_restore();
  if (st != KRR_OK) raise_status(st, buf);
  UNPROTECT(1);
  return out;
}

SEXP ffi_kernel_matrix(SEXP x1, SEXP x2, SEXP kernel, SEXP bandwidth, SEXP precision, SEXP threads) {
  check_matrix(x1, "x1");
  check_matrix(x2, "x2");
  if (Rf_ncols(x1) != Rf_ncols(x2)) raise_status(KRR_ERR_INPUT, "x1 and x2 must have the same columns");
  krr_kernel k = {(krr_kernel_type)int1(kernel, "kernel"), num1(bandwidth, "bandwidth")};
  krr_precision prec = int1(precision, "precision") == 0 ? KRR_FLOAT : KRR_DOUBLE;
  int64_t n1 = Rf_nrows(x1), n2 = Rf_nrows(x2);
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)n1, (int)n2));
  if (n1 == 0 || n2 == 0) { UNPROTECT(1); return out; }
  krr_ctx ctx;
  int nth = threads_or_default(int1(threads, "threads"));
  blas_save();
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), nth, 0);
  if (st == KRR_OK)
    st = krr_kernel_matrix_host(&ctx, prec, &k, REAL(x1), n1, REAL(x2), n2, Rf_ncols(x1), REAL(out));
  char buf[sizeof ctx.msg];
  memcpy(buf, ctx.msg, sizeof buf);
  krr_ctx_free(&ctx);
  blas_restore();
  if (st != KRR_OK) raise_status(st, buf);
  UNPROTECT(1);
  return out;
}

SEXP ffi_threads(SEXP n) {
  int t = int1(n, "threads must be a number");
  if (t > 0) g_threads = krr_cpu_threads_cap(t);
  return Rf_ScalarInteger(threads_or_default(0));
}

SEXP ffi_devices(void) {
  const char *why = NULL;
  const krr_ops *ops = krr_cuda_ops(&why);
  int nd = ops ? krr_cuda_device_count() : 0;
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
  SET_VECTOR_ELT(out, 0, name); SET_STRING_ELT(nms, 0, Rf_mkChar("name"));
  SET_VECTOR_ELT(out, 1, mem); SET_STRING_ELT(nms, 1, Rf_mkChar("memory"));
  SET_VECTOR_ELT(out, 2, cc); SET_STRING_ELT(nms, 2, Rf_mkChar("cc"));
  Rf_setAttrib(out, R_NamesSymbol, nms);
  if (!ops || nd == 0)
    Rf_setAttrib(out, Rf_install("why"), Rf_mkString(why ? why : "no CUDA device found"));
  UNPROTECT(5);
  return out;
}

/* ---- BLAS thread count (tests): set it when n >= 1; the count now, NA when
 * the BLAS has no thread control ------------------------------------------*/
SEXP ffi_blas_threads(SEXP n) {
  int t = int1(n, "n must be a number");
  if (t != NA_INTEGER && t >= 1) krr_cpu_blas_threads_restore(t);
  int cur = krr_cpu_blas_threads_get();
  return Rf_ScalarInteger(cur >= 1 ? cur : NA_INTEGER);
}
