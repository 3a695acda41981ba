/* What the R glue files share.  Include after <Rinternals.h> (with
 * R_NO_REMAP defined, as every glue file does). */
#ifndef ASKOTCH_R_GLUE_H
#define ASKOTCH_R_GLUE_H
#include "core/krr.h"

/* r_glue.c: raise askotch_error_<status> (does not return; free first);
 * give a context the R interrupt poll; free a call's own context and raise
 * its error, if any */
void askotch_r_raise(krr_status st, const char *msg);
void askotch_r_poll_attach(krr_ctx *ctx);
void askotch_r_ctx_done(krr_ctx *ctx, krr_status st);

/* r_kernel.c: the kernel list as R reads it (ffi_info()$kernels) */
SEXP askotch_r_kernel_info(void);
#endif
