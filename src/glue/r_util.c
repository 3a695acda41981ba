/* The R glue's shared helpers (glue.h): the BLAS thread count saved and
 * restored around every entry point, the interrupt poll, core status ->
 * classed R condition, argument checks, the precision / device code tables
 * and the session's thread count. */
#include <string.h>
#include <math.h>
#include <setjmp.h>
#include "glue.h"

/* ---- BLAS thread count -------------------------------------------------------
 * The CPU backend sets OpenBLAS's process-wide thread count for its own calls.
 * Every entry point that can run BLAS saves the user's count on entry
 * (askotch_glue_blas_save) and puts it back before returning
 * (askotch_glue_blas_restore); askotch_glue_raise_status restores too, so an
 * R error (a longjmp) never leaves it changed. */
static int g_blas_saved = -1; /* -1: nothing saved */
void askotch_glue_blas_save(void) { g_blas_saved = krr_cpu_blas_threads_get(); }
void askotch_glue_blas_restore(void) {
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
 * (askotch_glue_raise_status below), so the user sees R's own interrupt or
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
void askotch_glue_poll_attach(krr_ctx *ctx) {
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
void askotch_glue_raise_status(krr_status st, const char *msg) {
  askotch_glue_blas_restore();
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

void askotch_glue_raise_ctx(krr_ctx *ctx, krr_status st) {
  char buf[sizeof ctx->msg];
  memcpy(buf, ctx->msg, sizeof buf);
  askotch_glue_raise_status(st, buf);
}

/* free a call's own context (restoring the BLAS threads saved for the call
 * when `restore`), then raise its error, if any */
void askotch_glue_ctx_done(krr_ctx *ctx, krr_status st, int restore) {
  char buf[sizeof ctx->msg];
  memcpy(buf, ctx->msg, sizeof buf);
  krr_ctx_free(ctx);
  if (restore) askotch_glue_blas_restore();
  if (st != KRR_OK || g_jumped) askotch_glue_raise_status(st, buf);
}

/* ---- argument helpers --------------------------------------------------- */
double askotch_glue_num1(SEXP x, const char *what) {
  if (!Rf_isNumeric(x) || XLENGTH(x) != 1) askotch_glue_raise_status(KRR_ERR_INPUT, what);
  return Rf_asReal(x);
}
int askotch_glue_int1(SEXP x, const char *what) {
  if (!Rf_isNumeric(x) || XLENGTH(x) != 1) askotch_glue_raise_status(KRR_ERR_INPUT, what);
  return Rf_asInteger(x);
}
const char *askotch_glue_str1(SEXP x, const char *what) {
  if (!Rf_isString(x) || XLENGTH(x) != 1 || STRING_ELT(x, 0) == NA_STRING)
    askotch_glue_raise_status(KRR_ERR_INPUT, what);
  return CHAR(STRING_ELT(x, 0));
}
void askotch_glue_check_matrix(SEXP x, const char *what) {
  if (!Rf_isReal(x) || !Rf_isMatrix(x)) {
    char b[256];
    snprintf(b, sizeof b, "%s must be a double matrix", what);
    askotch_glue_raise_status(KRR_ERR_INPUT, b);
  }
}

/* The codes R passes for precision and device: these tables are the only
 * place they are written; R reads them through ffi_info()$codes. */
const code_entry askotch_glue_precision_codes[ASKOTCH_GLUE_N_PRECISION] = {{"single", KRR_FLOAT},
                                                                           {"double", KRR_DOUBLE}};
const code_entry askotch_glue_device_codes[ASKOTCH_GLUE_N_DEVICE] = {{"cpu", DEVICE_CPU},
                                                                     {"cuda", DEVICE_CUDA}};

krr_precision askotch_glue_precision_of(SEXP x) {
  int v = askotch_glue_int1(x, "precision must be a precision code");
  if (v != KRR_FLOAT && v != KRR_DOUBLE)
    askotch_glue_raise_status(KRR_ERR_INPUT, "precision must be a precision code");
  return (krr_precision)v;
}
int askotch_glue_device_of(SEXP x) {
  int v = askotch_glue_int1(x, "device must be a device code");
  if (v != DEVICE_CPU && v != DEVICE_CUDA)
    askotch_glue_raise_status(KRR_ERR_INPUT, "device must be a device code");
  return v;
}

const krr_ops *askotch_glue_pick_ops(int device) {
  if (device == DEVICE_CUDA) {
    const char *why = NULL;
    krr_status st = krr_cuda_status(&why);
    if (st != KRR_OK) askotch_glue_raise_status(st, why ? why : "CUDA is not available");
    return krr_cuda_ops(NULL);
  }
  return krr_cpu_ops();
}

/* the session's thread count (ffi_threads); 0: krr_cpu_threads_default() */
static int g_threads = 0;
int askotch_glue_threads(int t) { return krr_cpu_threads_cap(t > 0 ? t : g_threads); }
void askotch_glue_threads_set(int t) { g_threads = t; }

const krr_solver_def *askotch_glue_solver_def(SEXP name) {
  const char *nm = askotch_glue_str1(name, "`solver` must be a solver name");
  const krr_solver_def *def = krr_solver_lookup(nm);
  if (!def) {
    char b[160];
    snprintf(b, sizeof b, "unknown solver \"%s\"", nm);
    askotch_glue_raise_status(KRR_ERR_INPUT, b);
  }
  return def;
}

/* the declared type of a solver's option (-1: no such option; the setter
 * then names it) */
static int option_type(const krr_solver_def *def, const char *name) {
  for (int i = 0; i < krr_options_count(def); i++) {
    krr_optinfo in;
    krr_options_info(def, i, &in);
    if (!strcmp(in.name, name)) return (int)in.type;
  }
  return -1;
}

/* Fill o from a named R list: NULL skipped, strings are choices, numbers
 * values, logicals the values of flag options (of other options an error),
 * numeric vectors of length > 1 row indices (1-based in R); anything not an
 * atomic vector an error.  Returns KRR_OK or an error in ctx (the caller
 * frees, then raises). */
krr_status askotch_glue_set_options(krr_ctx *ctx, krr_options *o, SEXP opts) {
  if (opts == R_NilValue) return KRR_OK;
  if (TYPEOF(opts) != VECSXP) return krr_fail(ctx, KRR_ERR_INPUT, "solver options must be a list");
  SEXP names = Rf_getAttrib(opts, R_NamesSymbol);
  R_xlen_t k = XLENGTH(opts);
  if (k > 0 && names == R_NilValue)
    return krr_fail(ctx, KRR_ERR_INPUT, "solver options must be named");
  for (R_xlen_t i = 0; i < k; i++) {
    const char *nm = CHAR(STRING_ELT(names, i));
    SEXP v = VECTOR_ELT(opts, i);
    krr_status st = KRR_OK;
    if (!*nm) return krr_fail(ctx, KRR_ERR_INPUT, "solver options must be named");
    if (v == R_NilValue) continue;
    if (!Rf_isVectorAtomic(v))
      return krr_fail(ctx, KRR_ERR_INPUT,
                      "`%s` must be a single number, a name or a vector of row indices; "
                      "found a %s",
                      nm, Rf_type2char(TYPEOF(v)));
    R_xlen_t len = XLENGTH(v);
    const int type = option_type(krr_options_solver(o), nm);
    if (Rf_isLogical(v) && type >= 0 && type != KRR_OPT_FLAG)
      return krr_fail(ctx, KRR_ERR_INPUT, "`%s` takes %s, not TRUE or FALSE", nm,
                      type == KRR_OPT_CHOICE    ? "a name"
                      : type == KRR_OPT_RHO     ? "a number or a name"
                      : type == KRR_OPT_INDICES ? "row indices"
                                                : "a number");
    if (Rf_isString(v) && len == 1) {
      if (STRING_ELT(v, 0) == NA_STRING)
        return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must not be NA", nm);
      st = krr_options_set_str(ctx, o, nm, CHAR(STRING_ELT(v, 0)));
    } else if ((Rf_isNumeric(v) || Rf_isLogical(v)) && len == 1 && !Rf_isFactor(v)) {
      double x = Rf_asReal(v);
      if (ISNA(x)) return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must not be NA", nm);
      st = krr_options_set_num(ctx, o, nm, x);
    } else if (Rf_isNumeric(v) && !Rf_isFactor(v) && len > 1) {
      int64_t *idx = (int64_t *)R_alloc((size_t)len, sizeof(int64_t));
      for (R_xlen_t j = 0; j < len; j++) {
        double x =
            Rf_isReal(v) ? REAL(v)[j] : (INTEGER(v)[j] == NA_INTEGER ? NA_REAL : INTEGER(v)[j]);
        if (!(x >= 1) || !isfinite(x) || x != floor(x) || x > 9007199254740992.0)
          return krr_fail(ctx, KRR_ERR_INPUT, "`%s` must hold row indices (whole numbers >= 1)",
                          nm);
        idx[j] = (int64_t)x - 1;
      }
      st = krr_options_set_indices(ctx, o, nm, idx, (int64_t)len);
    } else {
      st = krr_fail(ctx, KRR_ERR_INPUT,
                    "`%s` must be a single number, a name or a vector of row "
                    "indices",
                    nm);
    }
    if (st != KRR_OK) return st;
  }
  return KRR_OK;
}
