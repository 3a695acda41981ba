/* The R glue (src/glue/): SEXP <-> core views, core status -> classed R
 * condition, interrupts, the solver state in an external pointer, and the
 * registry's info for R.  The glue and src/init.c (the registration table of
 * the .Call entry points) are the only files that include R headers; the
 * glue holds no domain logic (the operator a fit uses is composed by the
 * core, krr_op_compose).
 *
 *   r_util.c    the helpers below (errors, interrupts, BLAS threads,
 *               arguments, codes, thread count)
 *   r_fit.c     the solver state: ffi_fit_init, the stop policy
 *               (ffi_fit_stop, ffi_fit_run), the other ffi_fit_*
 *   r_kernel.c  kernel products on host data, pivoted Cholesky, features;
 *               the kernel list, rate, values and derivatives
 *   r_info.c    ffi_info, ffi_check_options, ffi_options_caps, devices,
 *               threads
 *   r_dist.c    the distributed (SPMD) front end (r_dist.h) */
#ifndef ASKOTCH_GLUE_H
#define ASKOTCH_GLUE_H
#define R_NO_REMAP
#include <R.h>
#include <Rinternals.h>
#include "../core/krr.h"

#if defined(__GNUC__)
#define ASKOTCH_NORETURN __attribute__((noreturn))
#else
#define ASKOTCH_NORETURN
#endif

/* ---- BLAS thread count: every entry point that can run BLAS saves the
 * user's count on entry and restores it before returning (raise_status
 * restores too) */
void askotch_glue_blas_save(void);
void askotch_glue_blas_restore(void);

/* ---- interrupts: give a context the R poll (after krr_ctx_init, and on
 * entry for a kept context: clears a previous interrupt) */
void askotch_glue_poll_attach(krr_ctx *ctx);
/* called once from R_init_askotch */
void askotch_glue_init(void);

/* ---- errors: raise askotch_error_<status> (or resume a pending R
 * interrupt / time-limit jump).  Callers free their resources BEFORE calling
 * these (they do not return). */
ASKOTCH_NORETURN void askotch_glue_raise_status(krr_status st, const char *msg);
ASKOTCH_NORETURN void askotch_glue_raise_ctx(krr_ctx *ctx, krr_status st);
/* free a call's own context (restoring the BLAS threads saved for the call
 * when `restore`), then raise its error, if any */
void askotch_glue_ctx_done(krr_ctx *ctx, krr_status st, int restore);

/* ---- arguments: a single number / integer / string, a double matrix (an
 * input error with `what` otherwise) */
double askotch_glue_num1(SEXP x, const char *what);
int askotch_glue_int1(SEXP x, const char *what);
/* the kernel of a call from R's (code, bandwidth) pair, a composite from
 * (code, spec numbers) checked against p columns (r_kernel.c) */
krr_kernel askotch_glue_kernel(SEXP kernel, SEXP bandwidth, int p);
const char *askotch_glue_str1(SEXP x, const char *what);
void askotch_glue_check_matrix(SEXP x, const char *what);

/* The codes R passes for precision and device: these tables are the only
 * place they are written; R reads them through ffi_info()$codes. */
enum { DEVICE_CPU = 0, DEVICE_CUDA = 1 };
typedef struct {
  const char *name;
  int code;
} code_entry;
#define ASKOTCH_GLUE_N_PRECISION 2
#define ASKOTCH_GLUE_N_DEVICE 2
extern const code_entry askotch_glue_precision_codes[ASKOTCH_GLUE_N_PRECISION];
extern const code_entry askotch_glue_device_codes[ASKOTCH_GLUE_N_DEVICE];
krr_precision askotch_glue_precision_of(SEXP x);
int askotch_glue_device_of(SEXP x);
/* the ops table of a device code (a classed error when CUDA is unusable) */
const krr_ops *askotch_glue_pick_ops(int device);

/* ---- threads: t > 0 capped, else the session's count (set by ffi_threads;
 * 0: krr_cpu_threads_default()) */
int askotch_glue_threads(int t);
void askotch_glue_threads_set(int t);

/* ---- solvers: the registry entry of a solver name (an input error when
 * unknown); options filled from a named R list (NULL skipped, strings are
 * choices, numbers and logicals values, numeric vectors of length > 1 row
 * indices, 1-based in R): KRR_OK or an error in ctx (the caller frees, then
 * raises) */
const krr_solver_def *askotch_glue_solver_def(SEXP name);
krr_status askotch_glue_set_options(krr_ctx *ctx, krr_options *o, SEXP opts);

/* ---- r_kernel.c: the kernel list as R reads it (ffi_info()$kernels) */
SEXP askotch_glue_kernel_info(void);
/* what R reads of composite kernels (ffi_info()$composite) */
SEXP askotch_glue_composite_info(void);
#endif
