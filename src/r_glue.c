/* R <-> core glue: SEXP <-> core views, status -> classed R condition, the
 * solver state in an external pointer with a finalizer, and the registry's
 * info for R.  The only files that include R headers are src/r_glue.c and
 * src/init.c. */
#include <string.h>
#include <math.h>
#include <setjmp.h>
#define R_NO_REMAP
#include <R.h>
#include <Rinternals.h>
#include "core/krr.h"
#include "core/loss/loss.h"
#include "r_dist.h"
#include "r_glue.h"
#include "core/solvers/svrg.h"

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

/* ---- interrupts -------------------------------------------------------------
 * The core calls ctx->poll between units of work (krr_poll throttles it to
 * one call per 0.1 s).  r_poll runs R_CheckUserInterrupt() under
 * R_UnwindProtect: when R wants to jump (a user interrupt, setTimeLimit(), a
 * handler that exits), the jump is caught here -- it never crosses a core
 * frame -- the core is told to stop (KRR_ERR_INTERRUPT unwinds through its
 * ordinary error path, freeing what it holds), and the entry point, after
 * freeing its own resources, resumes R's jump with R_ContinueUnwind()
 * (raise_status below), so the user sees R's own interrupt or
 * time-limit condition. */
static SEXP g_cont = NULL; /* the continuation token, created once, preserved */
static int g_jumped = 0;   /* an R jump is waiting to be resumed */

/* R checks its time limits (setTimeLimit) on only one call in six of
 * R_CheckUserInterrupt, and at least 0.05 s apart (R_CheckTimeLimits in R's
 * sysutils.c: TIME_CHECK_SKIP = 5, TIME_CHECK_DELTA = 0.05; so in R 4.2):
 * made for loops that call it thousands of times a second.  Called once per
 * 0.1 s, a limit was seen up to 0.6 s late; six calls in a row make every
 * poll a check. */
#define R_TIME_CHECK_CALLS 6
static SEXP poll_body(void *unused) {
  (void)unused;
  for (int i = 0; i < R_TIME_CHECK_CALLS; i++) R_CheckUserInterrupt();
  return R_NilValue;
}
static void poll_clean(void *jb, Rboolean jump) {
  if (jump) longjmp(*(jmp_buf *)jb, 1); /* back to r_poll, past R's frames only */
}
static int r_poll(void *unused) {
  (void)unused;
  if (!g_cont || g_jumped) return 1;
  jmp_buf jb;
  if (setjmp(jb)) {
    g_jumped = 1;
    return 1;
  }
  R_UnwindProtect(poll_body, NULL, poll_clean, &jb, g_cont);
  return 0;
}
/* give a context the R poll (after krr_ctx_init, and on entry for a kept
 * context: clears a previous interrupt) */
static void poll_attach(krr_ctx *ctx) {
  ctx->poll = r_poll;
  ctx->poll_data = NULL;
  ctx->poll_every = 0.1;
  ctx->poll_next = 0;
  ctx->interrupted = 0;
}
/* called once from R_init_askotch */
void askotch_glue_init(void) {
  if (!g_cont) {
    g_cont = R_MakeUnwindCont();
    R_PreserveObject(g_cont);
  }
}

/* ---- errors ----------------------------------------------------------------
 * Raise askotch_error_<status> through the R function raise_from_c() of the
 * package namespace.  Callers free their resources BEFORE calling this (it
 * does not return). */
static void raise_status(krr_status st, const char *msg) {
  blas_restore();
  if (g_jumped) { /* resume R's interrupt / time-limit jump (resources are freed) */
    g_jumped = 0;
    R_ContinueUnwind(g_cont);
  }
  SEXP name = PROTECT(Rf_mkString("askotch"));
  SEXP ns = PROTECT(R_FindNamespace(name));
  SEXP fn = PROTECT(Rf_findFun(Rf_install("raise_from_c"), ns));
  SEXP a1 = PROTECT(Rf_mkString(krr_status_name(st)));
  SEXP a2 = PROTECT(Rf_mkString(msg && *msg ? msg : krr_status_name(st)));
  SEXP call = PROTECT(Rf_lang3(fn, a1, a2));
  Rf_eval(call, ns);
  UNPROTECT(6);
  Rf_error("%s", msg); /* not reached */
}

static void raise_ctx(krr_ctx *ctx, krr_status st) {
  char buf[sizeof ctx->msg];
  memcpy(buf, ctx->msg, sizeof buf);
  raise_status(st, buf);
}

/* free a call's own context (restoring the BLAS threads saved for the call
 * when `restore`), then raise its error, if any */
static void ctx_done(krr_ctx *ctx, krr_status st, int restore) {
  char buf[sizeof ctx->msg];
  memcpy(buf, ctx->msg, sizeof buf);
  krr_ctx_free(ctx);
  if (restore) blas_restore();
  if (st != KRR_OK || g_jumped) raise_status(st, buf);
}

/* the error path and poll for the other glue files (r_glue.h) */
void askotch_r_raise(krr_status st, const char *msg) { raise_status(st, msg); }
void askotch_r_poll_attach(krr_ctx *ctx) { poll_attach(ctx); }
void askotch_r_ctx_done(krr_ctx *ctx, krr_status st) { ctx_done(ctx, st, 0); }

/* ---- argument helpers --------------------------------------------------- */
static double num1(SEXP x, const char *what) {
  if (!Rf_isNumeric(x) || XLENGTH(x) != 1) raise_status(KRR_ERR_INPUT, what);
  return Rf_asReal(x);
}
static int int1(SEXP x, const char *what) {
  if (!Rf_isNumeric(x) || XLENGTH(x) != 1) raise_status(KRR_ERR_INPUT, what);
  return Rf_asInteger(x);
}
static const char *str1(SEXP x, const char *what) {
  if (!Rf_isString(x) || XLENGTH(x) != 1 || STRING_ELT(x, 0) == NA_STRING)
    raise_status(KRR_ERR_INPUT, what);
  return CHAR(STRING_ELT(x, 0));
}
static void check_matrix(SEXP x, const char *what) {
  if (!Rf_isReal(x) || !Rf_isMatrix(x)) {
    char b[256];
    snprintf(b, sizeof b, "%s must be a double matrix", what);
    raise_status(KRR_ERR_INPUT, b);
  }
}

/* The codes R passes for precision and device: this table is the only place
 * they are written; R reads it through ffi_info()$codes. */
enum { DEVICE_CPU = 0, DEVICE_CUDA = 1 };
typedef struct {
  const char *name;
  int code;
} code_entry;
static const code_entry precision_codes[] = {{"single", KRR_FLOAT}, {"double", KRR_DOUBLE}};
static const code_entry device_codes[] = {{"cpu", DEVICE_CPU}, {"cuda", DEVICE_CUDA}};
#define N_CODES(tab) ((int)(sizeof tab / sizeof tab[0]))

static krr_precision precision_of(SEXP x) {
  int v = int1(x, "precision must be a precision code");
  if (v != KRR_FLOAT && v != KRR_DOUBLE)
    raise_status(KRR_ERR_INPUT, "precision must be a precision code");
  return (krr_precision)v;
}
static int device_of(SEXP x) {
  int v = int1(x, "device must be a device code");
  if (v != DEVICE_CPU && v != DEVICE_CUDA)
    raise_status(KRR_ERR_INPUT, "device must be a device code");
  return v;
}

static const krr_ops *pick_ops(int device) {
  if (device == DEVICE_CUDA) {
    const char *why = NULL;
    krr_status st = krr_cuda_status(&why);
    if (st != KRR_OK) raise_status(st, why ? why : "CUDA is not available");
    return krr_cuda_ops(NULL);
  }
  return krr_cpu_ops();
}

static int g_threads = 0; /* 0: krr_cpu_threads_default() */
static int threads_or_default(int t) { return krr_cpu_threads_cap(t > 0 ? t : g_threads); }

static const krr_solver_def *solver_def(SEXP name) {
  const char *nm = str1(name, "`solver` must be a solver name");
  const krr_solver_def *def = krr_solver_lookup(nm);
  if (!def) {
    char b[160];
    snprintf(b, sizeof b, "unknown solver \"%s\"", nm);
    raise_status(KRR_ERR_INPUT, b);
  }
  return def;
}

/* Fill o from a named R list: NULL skipped, strings are choices, numbers and
 * logicals values, numeric vectors of length > 1 row indices (1-based in
 * R).  Returns KRR_OK or an error in ctx (the caller frees, then raises). */
static krr_status set_options(krr_ctx *ctx, krr_options *o, SEXP opts) {
  if (opts == R_NilValue) return KRR_OK;
  if (TYPEOF(opts) != VECSXP) return krr_fail(ctx, KRR_ERR_INPUT, "solver options must be a list");
  SEXP names = Rf_getAttrib(opts, R_NamesSymbol);
  R_xlen_t k = XLENGTH(opts);
  if (k > 0 && names == R_NilValue) return krr_fail(ctx, KRR_ERR_INPUT, "solver options must be named");
  for (R_xlen_t i = 0; i < k; i++) {
    const char *nm = CHAR(STRING_ELT(names, i));
    SEXP v = VECTOR_ELT(opts, i);
    krr_status st = KRR_OK;
    if (!*nm) return krr_fail(ctx, KRR_ERR_INPUT, "solver options must be named");
    if (v == R_NilValue) continue;
    R_xlen_t len = XLENGTH(v);
    if (Rf_isString(v) && len == 1) {
      if (STRING_ELT(v, 0) == NA_STRING) return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must not be NA", nm);
      st = krr_options_set_str(ctx, o, nm, CHAR(STRING_ELT(v, 0)));
    } else if ((Rf_isNumeric(v) || Rf_isLogical(v)) && len == 1 && !Rf_isFactor(v)) {
      double x = Rf_asReal(v);
      if (ISNA(x)) return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must not be NA", nm);
      st = krr_options_set_num(ctx, o, nm, x);
    } else if (Rf_isNumeric(v) && !Rf_isFactor(v) && len > 1) {
      int64_t *idx = (int64_t *)R_alloc((size_t)len, sizeof(int64_t));
      for (R_xlen_t j = 0; j < len; j++) {
        double x = Rf_isReal(v) ? REAL(v)[j] : (INTEGER(v)[j] == NA_INTEGER ? NA_REAL : INTEGER(v)[j]);
        if (!(x >= 1) || !isfinite(x) || x != floor(x) || x > 9007199254740992.0)
          return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must hold row indices (whole numbers >= 1)", nm);
        idx[j] = (int64_t)x - 1;
      }
      st = krr_options_set_indices(ctx, o, nm, idx, (int64_t)len);
    } else {
      st = krr_fail(ctx, KRR_ERR_INPUT, "`%s` must be a single number, a name or a vector of row "
                    "indices", nm);
    }
    if (st != KRR_OK) return st;
  }
  return KRR_OK;
}

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
  krr_op *op;       /* what the solver sees (the exact or feature operator, maybe shifted) */
  int64_t features; /* random features M (0: the exact kernel) */
  double *obsd;     /* observation weights: d = sqrt(w) per training row (host), or NULL */
  krr_objective obj;
  krr_solver *solver;
  int ctx_ok;
  krr_stop stop;    /* the stop policy of the current solve (ffi_fit_stop) */
  double pd[2];     /* the objective values of the last exact check (NaN: none) */
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
  poll_attach(&fs->ctx);
  return fs;
}

/* The training-set operator: the exact kernel, or M random features drawn
 * from seed; with c > 0 wrapped as K + c 11^T (a penalised intercept), with
 * observation weights as D (.) D, D = diag(fs->obsd) (each wrapper owns its
 * inner operator, also when its creation fails). */
static krr_status make_operator(fit_state *fs, krr_kernel k, double M, double seed, double c) {
  krr_op *inner = NULL, *mid = NULL;
  krr_status st = M > 0 ? krr_op_features_create(&fs->ctx, &fs->pb, &k, (int64_t)M,
                                                 (uint64_t)seed, &inner)
                        : krr_op_exact_create(&fs->ctx, &fs->pb, k, &inner);
  if (st != KRR_OK) return st;
  struct krr_comm *comm = askotch_r_dist_comm(); /* a distributed fit: rows sharded */
  if (comm) {
    krr_op *local = inner;
    if (M > 0 || c > 0 || fs->obsd) {
      krr_op_free(local);
      return krr_fail(&fs->ctx, KRR_ERR_INPUT, "a distributed fit takes the exact kernel without "
                      "features, intercept or observation weights");
    }
    st = krr_op_sharded_create(local, comm, &inner);
    if (st != KRR_OK) return st;
  }
  if (c > 0) {
    st = krr_op_shift_create(inner, c, &mid);
    if (st != KRR_OK) return st;
  } else {
    mid = inner;
  }
  if (fs->obsd) return krr_op_scale_create(mid, fs->obsd, &fs->op);
  fs->op = mid;
  return KRR_OK;
}

/* Observation weights: the solver works on v = D^{-1} alpha (scaled
 * system, op/scale.c).  Multiply (inverse = 0) or divide (inverse = 1) the
 * rows of W (rows x m, host) by the scalings of the rows the weights live
 * on (the training rows, or an inducing-point solver's centres). */
static krr_status obs_rescale(fit_state *fs, double *W, int m, int inverse) {
  if (!fs->obsd) return KRR_OK;
  int64_t rows = krr_solver_weights_rows(fs->solver), nc = krr_solver_ncenters(fs->solver);
  int64_t *idx = NULL;
  if (nc > 0) {
    if (nc != rows) return krr_fail(&fs->ctx, KRR_ERR_INTERNAL, "weights rows %lld != centres %lld",
                                    (long long)rows, (long long)nc);
    idx = (int64_t *)R_alloc((size_t)nc, sizeof(int64_t));
    krr_status st = krr_solver_centers(fs->solver, idx);
    if (st != KRR_OK) return st;
  }
  for (int64_t i = 0; i < rows; i++) {
    double di = fs->obsd[idx ? idx[i] : i];
    for (int c = 0; c < m; c++) W[i + (int64_t)c * rows] = inverse ? W[i + (int64_t)c * rows] / di
                                                                   : W[i + (int64_t)c * rows] * di;
  }
  return KRR_OK;
}

/* Targets as the solver sees them: D y (a copy, R_alloc) with observation
 * weights, else y itself. */
static const double *obs_targets(fit_state *fs, SEXP y) {
  if (!fs->obsd) return REAL(y);
  int64_t n = Rf_nrows(y);
  int m = Rf_ncols(y);
  double *ys = (double *)R_alloc((size_t)(n * m > 0 ? n * m : 1), sizeof(double));
  for (int c = 0; c < m; c++)
    for (int64_t i = 0; i < n; i++) ys[i + c * n] = REAL(y)[i + c * n] * fs->obsd[i];
  return ys;
}

SEXP ffi_fit_init(SEXP x, SEXP y, SEXP kernel, SEXP bandwidth, SEXP lambda, SEXP precision,
                  SEXP device, SEXP solver, SEXP options, SEXP loss, SEXP loss_param,
                  SEXP features, SEXP intercept, SEXP obs_weights, SEXP threads) {
  check_matrix(x, "x");
  check_matrix(y, "y");
  int64_t n = Rf_nrows(x);
  int p = Rf_ncols(x), m = Rf_ncols(y);
  if ((int64_t)Rf_nrows(y) != n) raise_status(KRR_ERR_INPUT, "x and y must have the same number of rows");
  krr_kernel k = {(krr_kernel_type)int1(kernel, "kernel must be an integer code"),
                  num1(bandwidth, "bandwidth must be a number")};
  /* one lambda, or one per column of y (a path solved at once) */
  int path = TYPEOF(lambda) == REALSXP && XLENGTH(lambda) > 1;
  if (path && XLENGTH(lambda) != m)
    raise_status(KRR_ERR_INPUT, "a lambda path needs one lambda per column of y");
  double lam = path ? REAL(lambda)[0] : num1(lambda, "lambda must be a number");
  krr_precision prec = precision_of(precision);
  int dev = device_of(device);
  const krr_solver_def *def = solver_def(solver);
  const krr_loss *ls = krr_loss_lookup(str1(loss, "`loss` must be a loss name"));
  if (!ls) raise_status(KRR_ERR_NOT_BUILT, "this loss is not compiled into this build of askotch");
  double lparam = num1(loss_param, "the loss parameter must be a number");
  double M = num1(features, "features must be a number");
  double cshift = num1(intercept, "intercept must be a number");
  if (!(M >= 0) || M != floor(M) || M > 9007199254740992.0)
    raise_status(KRR_ERR_INPUT, "`features` must be NULL or a positive whole number");
  if (!(cshift >= 0) || !isfinite(cshift))
    raise_status(KRR_ERR_INPUT, "`intercept` must be TRUE, FALSE or a positive number");
  int nth = threads_or_default(int1(threads, "threads must be a number"));
  const krr_ops *ops = pick_ops(dev);
  R_xlen_t nw = XLENGTH(obs_weights);
  if (TYPEOF(obs_weights) != REALSXP || (nw != 0 && nw != n))
    raise_status(KRR_ERR_INPUT, "observation weights must be a double vector with one value per row");
  if (nw > 0 && strcmp(krr_loss_name(ls), "squared") != 0)
    raise_status(KRR_ERR_INPUT, "observation weights are supported for the squared loss only");
  for (R_xlen_t i = 0; i < nw; i++)
    if (!(REAL(obs_weights)[i] > 0) || !isfinite(REAL(obs_weights)[i]))
      raise_status(KRR_ERR_INPUT, "observation weights must be positive and finite");

  fit_state *fs = (fit_state *)calloc(1, sizeof(fit_state));
  if (!fs) raise_status(KRR_ERR_MEMORY, "out of host memory");
  if (nw > 0) {
    fs->obsd = (double *)malloc(sizeof(double) * (size_t)nw);
    if (!fs->obsd) { free(fs); raise_status(KRR_ERR_MEMORY, "out of host memory"); }
    for (R_xlen_t i = 0; i < nw; i++) fs->obsd[i] = sqrt(REAL(obs_weights)[i]);
  }
  krr_options *o = NULL;
  blas_save();
  krr_status st =
      krr_ctx_init(&fs->ctx, ops, krr_cpu_ops(), nth, dev == DEVICE_CUDA ? askotch_r_device_id() : 0);
  fs->ctx_ok = 1;
  poll_attach(&fs->ctx);
  if (st == KRR_OK) st = krr_options_new(&fs->ctx, def, &o);
  if (st == KRR_OK) st = set_options(&fs->ctx, o, options);
  if (st == KRR_OK) st = krr_problem_create(&fs->ctx, prec, REAL(x), n, p, &fs->pb);
  if (st == KRR_OK) st = make_operator(fs, k, M, list_num(options, "seed", 0.0), cshift);
  fs->features = (int64_t)M;
  if (st == KRR_OK) st = krr_objective_init(&fs->ctx, fs->op, ls, lam, obs_targets(fs, y), m, &fs->obj);
  if (st == KRR_OK && krr_loss_param_name(ls)) st = krr_objective_set_param(&fs->ctx, &fs->obj, lparam);
  if (st == KRR_OK && path) st = krr_objective_set_lambdas(&fs->ctx, &fs->obj, REAL(lambda));
  if (st == KRR_OK) st = krr_solver_init(&fs->ctx, fs->op, &fs->obj, o, &fs->solver);
  /* a random-features model is theta = Z^T w over the training rows: the
   * inducing-point solvers' weights live on their centres */
  if (st == KRR_OK && M > 0 && krr_solver_weights_rows(fs->solver) != n)
    st = krr_fail(&fs->ctx, KRR_ERR_INPUT,
                  "`features`: the solver `%s` fits weights on inducing points, not on the "
                  "training points; use random features with joker(), askotch(), pcg() or "
                  "cholesky()", krr_solver_name(def));
  krr_options_free(o);
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

/* check a solver's options without data (the constructors' early check) */
SEXP ffi_check_options(SEXP solver, SEXP options) {
  const krr_solver_def *def = solver_def(solver);
  krr_ctx ctx;
  krr_options *o = NULL;
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), 1, 0);
  if (st == KRR_OK) st = krr_options_new(&ctx, def, &o);
  if (st == KRR_OK) st = set_options(&ctx, o, options);
  if (st == KRR_OK) st = krr_options_check(&ctx, o);
  krr_options_free(o);
  ctx_done(&ctx, st, 0);
  return R_NilValue;
}

static SEXP named_list(int k, const char **names);

/* What a solver with these options can do: list(lambda_path) (the rule of
 * the compiled solver, which R reads instead of knowing it). */
SEXP ffi_options_caps(SEXP solver, SEXP options) {
  const krr_solver_def *def = solver_def(solver);
  krr_ctx ctx;
  krr_options *o = NULL;
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), 1, 0);
  if (st == KRR_OK) st = krr_options_new(&ctx, def, &o);
  if (st == KRR_OK) st = set_options(&ctx, o, options);
  int path = st == KRR_OK && krr_options_lambda_path(o);
  krr_options_free(o);
  ctx_done(&ctx, st, 0);
  static const char *fields[] = {"lambda_path"};
  SEXP out = PROTECT(named_list(1, fields));
  SET_VECTOR_ELT(out, 0, Rf_ScalarLogical(path));
  UNPROTECT(1);
  return out;
}

static const char *generic_names[] = {"iter", "passes", "resid_est", "block_resid", "done",
                                      "t_setup", "t_iter"};
#define N_GENERIC ((int)(sizeof generic_names / sizeof generic_names[0]))

/* the generic diagnostics and the solver's named extras */
static SEXP diag_vector(krr_solver *s) {
  krr_diag d;
  krr_solver_diag(s, &d);
  const krr_solver_def *def = krr_options_solver(krr_solver_options(s));
  int ne = krr_solver_extra_count(def), k = N_GENERIC + ne;
  SEXP out = PROTECT(Rf_allocVector(REALSXP, k));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, k));
  double v[N_GENERIC] = {(double)d.iter, d.passes, d.resid_est, d.block_resid, (double)d.done,
                         d.t_setup, d.t_iter};
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
 * the weights (one per training row), and the criterion -- the relative
 * residual for the squared loss, else the relative duality gap
 * (P + D) / max(|P|, |D|) of P and D. */
static krr_status objective_exact(krr_solver *s, void *data, double *crit) {
  fit_state *fs = (fit_state *)data;
  int64_t len = krr_solver_weights_rows(s) * (int64_t)fs->obj.m;
  double *w = (double *)malloc(sizeof(double) * (size_t)(len > 0 ? len : 1)), P = NAN, D = NAN;
  krr_status st = w ? krr_solver_weights(s, w) : krr_fail(&fs->ctx, KRR_ERR_MEMORY, "out of memory");
  if (st == KRR_OK) st = krr_objective_values_host(fs->op, &fs->obj, w, &P, &D);
  free(w);
  if (st != KRR_OK) return st;
  fs->pd[0] = P;
  fs->pd[1] = D;
  if (!strcmp(krr_loss_name(fs->obj.loss), "squared")) return krr_solver_residual(s, crit);
  double sc = fmax(fmax(fabs(P), fabs(D)), 1e-300);
  *crit = (P + D) / sc;
  return KRR_OK;
}

/* A new stop policy for the next solve (krr_stop in krr.h): rule =
 * c(tol, max_passes, time_limit, elapsed, gap, exact_ok, direct, use_floor,
 * objective), `elapsed` the seconds the fit's clock has run already;
 * objective = 1 records P and D at each exact check. */
SEXP ffi_fit_stop(SEXP ptr, SEXP rule) {
  fit_state *fs = get_state(ptr);
  if (!Rf_isReal(rule) || XLENGTH(rule) != 9) raise_status(KRR_ERR_INPUT, "rule must be 9 numbers");
  const double *r = REAL(rule);
  krr_stop *p = &fs->stop;
  krr_stop_init(p, r[0], r[1], r[2]);
  p->t0 -= isfinite(r[3]) ? r[3] : 0;
  p->gap = r[4] != 0;
  p->exact_ok = r[5] != 0;
  p->direct = r[6] != 0;
  p->use_floor = r[7] != 0;
  if (r[8] != 0) {
    if (krr_solver_weights_rows(fs->solver) != fs->pb.n)
      raise_status(KRR_ERR_INPUT, "the objective values need one weight per training point");
    p->exact = objective_exact;
    p->exact_data = fs;
  }
  return R_NilValue;
}

/* Up to `iters` iterations under the stop policy (krr_solver_run);
 * floor_per_w (not NA) is the precision floor per unit ||W||_F that the
 * last call asked for.  list(diag, reason (NA: go on), exact, floor,
 * objective = c(P, D) of an exact check of this call, or NAs). */
SEXP ffi_fit_run(SEXP ptr, SEXP iters, SEXP floor_per_w) {
  fit_state *fs = get_state(ptr);
  int it = int1(iters, "iters must be a number");
  double fw = num1(floor_per_w, "floor_per_w must be a number");
  if (!ISNAN(fw)) fs->stop.floor_per_w = fw;
  fs->pd[0] = fs->pd[1] = NAN;
  krr_stop_result res;
  blas_save();
  krr_status st = krr_solver_run(fs->solver, &fs->stop, it < 1 ? 1 : it, &res);
  if (st != KRR_OK) raise_ctx(&fs->ctx, st); /* state stays valid; R frees it */
  blas_restore();
  const char *why = krr_stop_reason_name(res.reason);
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 5)), nm = PROTECT(Rf_allocVector(STRSXP, 5));
  SET_VECTOR_ELT(out, 0, diag_vector(fs->solver));
  SET_VECTOR_ELT(out, 1, why ? Rf_mkString(why) : Rf_ScalarString(NA_STRING));
  SET_VECTOR_ELT(out, 2, Rf_ScalarReal(res.exact));
  SET_VECTOR_ELT(out, 3, Rf_ScalarReal(fs->stop.floor));
  SEXP pd = Rf_allocVector(REALSXP, 2);
  SET_VECTOR_ELT(out, 4, pd);
  REAL(pd)[0] = fs->pd[0];
  REAL(pd)[1] = fs->pd[1];
  const char *names[] = {"diag", "reason", "exact", "floor", "objective"};
  for (int i = 0; i < 5; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
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

/* c(P, D) at the current weights: the primal and the dual the solver
 * minimises (P + D >= 0); for operators whose weights are one per training
 * row (not the inducing-point solvers) */
SEXP ffi_fit_objective(SEXP ptr) {
  fit_state *fs = get_state(ptr);
  int64_t rows = krr_solver_weights_rows(fs->solver);
  if (rows != fs->pb.n)
    raise_status(KRR_ERR_INPUT, "the objective values need one weight per training point");
  double *w = (double *)R_alloc((size_t)(rows * fs->obj.m), sizeof(double));
  double P = NAN, D = NAN;
  blas_save();
  krr_status st = krr_solver_weights(fs->solver, w);
  if (st == KRR_OK) st = krr_objective_values_host(fs->op, &fs->obj, w, &P, &D);
  if (st != KRR_OK) raise_ctx(&fs->ctx, st);
  blas_restore();
  SEXP out = PROTECT(Rf_allocVector(REALSXP, 2));
  REAL(out)[0] = P;
  REAL(out)[1] = D;
  UNPROTECT(1);
  return out;
}

/* theta = Z^T alpha of a random-features fit: M x m, or (M + 1) x m with
 * an intercept (the last row is sqrt(c) colSums(alpha)) */
SEXP ffi_fit_features_theta(SEXP ptr) {
  fit_state *fs = get_state(ptr);
  if (fs->features <= 0) raise_status(KRR_ERR_INPUT, "not a random-features fit");
  int64_t n = fs->pb.n, nf = krr_op_nfeat(fs->op);
  int m = fs->obj.m;
  if (krr_solver_weights_rows(fs->solver) != n)
    raise_status(KRR_ERR_INPUT, "the weights do not live on the training points");
  SEXP theta = PROTECT(Rf_allocMatrix(REALSXP, (int)nf, m));
  blas_save();
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
  if (st != KRR_OK) raise_ctx(&fs->ctx, st);
  blas_restore();
  UNPROTECT(1);
  return theta;
}

/* predictions psi(xnew)^T theta of a random-features model (host data, CPU) */
SEXP ffi_features_apply(SEXP xnew, SEXP theta, SEXP kernel, SEXP bandwidth, SEXP features,
                        SEXP seed, SEXP precision, SEXP threads) {
  check_matrix(xnew, "xnew");
  check_matrix(theta, "theta");
  krr_kernel k = {(krr_kernel_type)int1(kernel, "kernel"), num1(bandwidth, "bandwidth")};
  double M = num1(features, "features"), sd = num1(seed, "seed");
  (void)precision; /* krr_features_apply works in double */
  if (!(M >= 1) || (double)Rf_nrows(theta) != M)
    raise_status(KRR_ERR_INPUT, "theta must have one row per random feature");
  int64_t nn = Rf_nrows(xnew);
  int m = Rf_ncols(theta);
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)nn, m));
  if (nn == 0 || m == 0) { UNPROTECT(1); return out; }
  krr_ctx ctx;
  int nth = threads_or_default(int1(threads, "threads"));
  blas_save();
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), nth, 0);
  poll_attach(&ctx);
  if (st == KRR_OK)
    st = krr_features_apply(&ctx, &k, Rf_ncols(xnew), (int64_t)M, (uint64_t)sd, REAL(xnew), nn,
                            REAL(theta), m, REAL(out));
  ctx_done(&ctx, st, 1);
  UNPROTECT(1);
  return out;
}

SEXP ffi_fit_weights(SEXP ptr) {
  fit_state *fs = get_state(ptr);
  int64_t rows = krr_solver_weights_rows(fs->solver);
  SEXP w = PROTECT(Rf_allocMatrix(REALSXP, (int)rows, fs->obj.m));
  blas_save();
  krr_status st = krr_solver_weights(fs->solver, REAL(w));
  if (st == KRR_OK) st = obs_rescale(fs, REAL(w), fs->obj.m, 0);
  if (st != KRR_OK) raise_ctx(&fs->ctx, st);
  blas_restore();
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
    if (st != KRR_OK) raise_ctx(&fs->ctx, st);
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
  check_matrix(y, "y");
  if ((int64_t)Rf_nrows(y) != fs->pb.n) raise_status(KRR_ERR_INPUT, "the new targets must have one row per training point");
  blas_save();
  krr_status st = krr_solver_set_targets(fs->solver, obs_targets(fs, y), Rf_ncols(y));
  if (st != KRR_OK) raise_ctx(&fs->ctx, st);
  blas_restore();
  return R_NilValue;
}

SEXP ffi_fit_set_lambda(SEXP ptr, SEXP lambda) {
  fit_state *fs = get_state(ptr);
  blas_save();
  krr_status st = krr_solver_set_lambda(fs->solver, num1(lambda, "lambda must be a number"));
  if (st != KRR_OK) raise_ctx(&fs->ctx, st);
  blas_restore();
  return R_NilValue;
}

SEXP ffi_fit_set_weights(SEXP ptr, SEXP w) {
  fit_state *fs = get_state(ptr);
  check_matrix(w, "weights");
  if ((int64_t)Rf_nrows(w) != krr_solver_weights_rows(fs->solver) || Rf_ncols(w) != fs->obj.m)
    raise_status(KRR_ERR_INPUT, "the starting weights must have the shape of the fit's weights");
  double *w0 = REAL(w);
  if (fs->obsd) {
    size_t len = (size_t)XLENGTH(w);
    w0 = (double *)R_alloc(len > 0 ? len : 1, sizeof(double));
    memcpy(w0, REAL(w), sizeof(double) * len);
  }
  blas_save();
  krr_status st = obs_rescale(fs, w0, fs->obj.m, 1);
  if (st == KRR_OK) st = krr_solver_set_weights(fs->solver, w0);
  if (st != KRR_OK) raise_ctx(&fs->ctx, st);
  blas_restore();
  return R_NilValue;
}

SEXP ffi_fit_free(SEXP ptr) {
  if (TYPEOF(ptr) == EXTPTRSXP) state_finalizer(ptr);
  return R_NilValue;
}

/* TRUE when the pointer holds a live state (FALSE after saveRDS/readRDS or free) */
SEXP ffi_fit_alive(SEXP ptr) {
  return Rf_ScalarLogical(TYPEOF(ptr) == EXTPTRSXP && R_ExternalPtrAddr(ptr) != NULL);
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
  static const char *ofields[] = {"name", "type", "default", "lo", "hi", "lo_open", "choices", "doc"};
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
    if (krr_solver_supports(def, krr_loss_get(i))) SET_STRING_ELT(ls, j++, Rf_mkChar(krr_loss_name(krr_loss_get(i))));
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

/* What R reads at load: the solvers (options, losses, capabilities), the
 * losses, the kernels (r_kernel.c: names in code order, metric, text, rate)
 * and the codes of precision and device. */
SEXP ffi_info(void) {
  static const char *fields[] = {"solvers", "losses", "kernels", "codes", "loss_info"};
  static const char *cfields[] = {"precision", "device", "reduce"};
  SEXP out = PROTECT(named_list(5, fields));
  int ns = krr_solver_count();
  const char **snames = (const char **)R_alloc((size_t)(ns > 0 ? ns : 1), sizeof(char *));
  for (int i = 0; i < ns; i++) snames[i] = krr_solver_name(krr_solver_get(i));
  SEXP sv = PROTECT(named_list(ns, snames));
  for (int i = 0; i < ns; i++) SET_VECTOR_ELT(sv, i, solver_info(krr_solver_get(i)));
  SET_VECTOR_ELT(out, 0, sv);
  SEXP ls = PROTECT(Rf_allocVector(STRSXP, krr_loss_count()));
  for (int i = 0; i < krr_loss_count(); i++) SET_STRING_ELT(ls, i, Rf_mkChar(krr_loss_name(krr_loss_get(i))));
  SET_VECTOR_ELT(out, 1, ls);
  SET_VECTOR_ELT(out, 2, askotch_r_kernel_info());
  SEXP codes = PROTECT(named_list(3, cfields));
  code_entry reduce[ASKOTCH_R_N_REDUCE];
  for (int i = 0; i < ASKOTCH_R_N_REDUCE; i++)
    reduce[i] = (code_entry){askotch_r_reduce_names[i], i};
  SET_VECTOR_ELT(codes, 0, code_vector(precision_codes, N_CODES(precision_codes)));
  SET_VECTOR_ELT(codes, 1, code_vector(device_codes, N_CODES(device_codes)));
  SET_VECTOR_ELT(codes, 2, code_vector(reduce, ASKOTCH_R_N_REDUCE));
  SET_VECTOR_ELT(out, 3, codes);
  int nl = krr_loss_count();
  const char **lnames = (const char **)R_alloc((size_t)(nl > 0 ? nl : 1), sizeof(char *));
  for (int i = 0; i < nl; i++) lnames[i] = krr_loss_name(krr_loss_get(i));
  SEXP li = PROTECT(named_list(nl, lnames));
  for (int i = 0; i < nl; i++) SET_VECTOR_ELT(li, i, loss_info(krr_loss_get(i)));
  SET_VECTOR_ELT(out, 4, li);
  UNPROTECT(5);
  return out;
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
  krr_precision prec = precision_of(precision);
  int dev = device_of(device);
  const krr_ops *ops = pick_ops(dev);
  int64_t n1 = Rf_nrows(x1), n2 = Rf_nrows(x2);
  int q = Rf_ncols(v);
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)n1, q));
  if (n1 == 0 || q == 0) { UNPROTECT(1); return out; }
  krr_ctx ctx;
  int nth = threads_or_default(int1(threads, "threads"));
  blas_save();
  krr_status st =
      krr_ctx_init(&ctx, ops, krr_cpu_ops(), nth, dev == DEVICE_CUDA ? askotch_r_device_id() : 0);
  poll_attach(&ctx);
  if (st == KRR_OK)
    st = krr_kernel_apply_host(&ctx, prec, &k, REAL(x1), n1, REAL(x2), n2, Rf_ncols(x1), REAL(v), q,
                               REAL(out));
  ctx_done(&ctx, st, 1);
  UNPROTECT(1);
  return out;
}

SEXP ffi_kernel_matrix(SEXP x1, SEXP x2, SEXP kernel, SEXP bandwidth, SEXP precision, SEXP threads) {
  check_matrix(x1, "x1");
  check_matrix(x2, "x2");
  if (Rf_ncols(x1) != Rf_ncols(x2)) raise_status(KRR_ERR_INPUT, "x1 and x2 must have the same columns");
  krr_kernel k = {(krr_kernel_type)int1(kernel, "kernel"), num1(bandwidth, "bandwidth")};
  krr_precision prec = precision_of(precision);
  int64_t n1 = Rf_nrows(x1), n2 = Rf_nrows(x2);
  SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)n1, (int)n2));
  if (n1 == 0 || n2 == 0) { UNPROTECT(1); return out; }
  krr_ctx ctx;
  int nth = threads_or_default(int1(threads, "threads"));
  blas_save();
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), nth, 0);
  poll_attach(&ctx);
  if (st == KRR_OK)
    st = krr_kernel_matrix_host(&ctx, prec, &k, REAL(x1), n1, REAL(x2), n2, Rf_ncols(x1), REAL(out));
  ctx_done(&ctx, st, 1);
  UNPROTECT(1);
  return out;
}

/* Greedy partial Cholesky of K(x, x) (linalg/pchol.c) in double on the CPU:
 * list(L = n x r (columns past rank unused), d = diag(K - L L^T), rank,
 * pivots = 1-based).  pw: pivot weights (length n) or NULL. */
SEXP ffi_pivoted_cholesky(SEXP x, SEXP kernel, SEXP bandwidth, SEXP pw, SEXP rank, SEXP stop_trace,
                          SEXP tiny, SEXP threads) {
  check_matrix(x, "x");
  krr_kernel k = {(krr_kernel_type)int1(kernel, "kernel"), num1(bandwidth, "bandwidth")};
  int64_t n = Rf_nrows(x);
  int p = Rf_ncols(x);
  int r = int1(rank, "rank must be a number");
  if (r < 0 || r > n) raise_status(KRR_ERR_INPUT, "rank must lie in [0, nrow(x)]");
  if (!Rf_isNull(pw) && (!Rf_isReal(pw) || XLENGTH(pw) != n))
    raise_status(KRR_ERR_INPUT, "pivot weights must be a double vector of length nrow(x)");
  double stop = num1(stop_trace, "stop_trace must be a number"), tn = num1(tiny, "tiny must be a number");
  SEXP Lr = PROTECT(Rf_allocMatrix(REALSXP, (int)n, r));
  SEXP d = PROTECT(Rf_allocVector(REALSXP, n));
  SEXP pv = PROTECT(Rf_allocVector(REALSXP, r));
  krr_ctx ctx;
  int64_t *piv = (int64_t *)calloc((size_t)(r > 0 ? r : 1), sizeof(int64_t));
  int got = 0;
  blas_save();
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(),
                               threads_or_default(int1(threads, "threads")), 0);
  poll_attach(&ctx);
  if (st == KRR_OK && !piv) st = krr_fail(&ctx, KRR_ERR_MEMORY, "out of host memory");
  if (st == KRR_OK)
    st = krr_kernel_pchol_host(&ctx, &k, REAL(x), n, p, Rf_isNull(pw) ? NULL : REAL(pw), r, stop, tn,
                               REAL(Lr), REAL(d), piv, &got);
  for (int j = 0; j < got; j++) REAL(pv)[j] = (double)piv[j] + 1.0;
  free(piv);
  ctx_done(&ctx, st, 1);
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

SEXP ffi_threads(SEXP n) {
  int t = int1(n, "threads must be a number");
  if (t > 0) g_threads = krr_cpu_threads_cap(t);
  return Rf_ScalarInteger(threads_or_default(0));
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
  SET_VECTOR_ELT(out, 0, name); SET_STRING_ELT(nms, 0, Rf_mkChar("name"));
  SET_VECTOR_ELT(out, 1, mem); SET_STRING_ELT(nms, 1, Rf_mkChar("memory"));
  SET_VECTOR_ELT(out, 2, cc); SET_STRING_ELT(nms, 2, Rf_mkChar("cc"));
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

/* ---- BLAS thread count (tests): set it when n >= 1; the count now, NA when
 * the BLAS has no thread control ------------------------------------------*/
SEXP ffi_blas_threads(SEXP n) {
  int t = int1(n, "n must be a number");
  if (t != NA_INTEGER && t >= 1) krr_cpu_blas_threads_restore(t);
  int cur = krr_cpu_blas_threads_get();
  return Rf_ScalarInteger(cur >= 1 ? cur : NA_INTEGER);
}

/* ---- sketched preconditioned SVRG on explicit features (core/solvers/svrg.c) ----
 * x: n x p standardised points; features 0: phi(x) = x (linear ridge), else
 * M random Fourier features of the kernel (the draws of ffi_features_apply
 * for the same seed); opts: rank, lanczos_iters, epochs, epoch_length, step,
 * precondition, sampling, tol, seed; w0: NULL or the d x m start. */
SEXP ffi_svrg(SEXP x, SEXP y, SEXP lambda, SEXP features, SEXP kernel, SEXP bandwidth,
              SEXP opts, SEXP threads, SEXP w0) {
  check_matrix(x, "x");
  check_matrix(y, "y");
  if (!Rf_isReal(opts) || XLENGTH(opts) != 9) raise_status(KRR_ERR_INPUT, "svrg: opts must be 9 numbers");
  const double *ov = REAL(opts);
  int64_t n = Rf_nrows(x);
  int p = Rf_ncols(x), m = Rf_ncols(y);
  if (Rf_nrows(y) != n) raise_status(KRR_ERR_INPUT, "svrg: y must have one row per point");
  double M = num1(features, "features"), lam = num1(lambda, "lambda");
  krr_kernel k = {(krr_kernel_type)int1(kernel, "kernel"), num1(bandwidth, "bandwidth")};
  int64_t d = M > 0 ? (int64_t)M : p;
  krr_svrg_opts o = {(int)ov[0], (int)ov[1], (int)ov[2], (int64_t)ov[3], ov[4], (int)ov[5],
                     (int)ov[6], ov[7], (uint64_t)ov[8]};
  if (Rf_isNull(w0) == 0) {
    check_matrix(w0, "w0");
    if (Rf_nrows(w0) != d || Rf_ncols(w0) != m) raise_status(KRR_ERR_INPUT, "svrg: w0 has the wrong shape");
  }
  const char *nm[] = {"weights", "objective", "gradient", "sigma2", "beta_hat", "eta", "epochs",
                      "rank", "lanczos_iters", "seconds", ""};
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
  int nth = threads_or_default(int1(threads, "threads"));
  blas_save();
  krr_status st = krr_ctx_init(&ctx, krr_cpu_ops(), krr_cpu_ops(), nth, 0);
  poll_attach(&ctx);
  double *Zt = NULL;
  if (st == KRR_OK) {
    Zt = (double *)malloc(sizeof(double) * (size_t)(d * n));
    if (!Zt) st = krr_fail(&ctx, KRR_ERR_MEMORY, "svrg: cannot hold the %.0f x %.0f features",
                           (double)n, (double)d);
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
  ctx_done(&ctx, st, 1);
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
