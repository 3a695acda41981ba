/* The R glue of the distributed (SPMD) front end: one communicator per R
 * process (MPI_COMM_WORLD duplicated; MPI initialised here unless Rmpi or
 * pbdMPI did it), collectives on R vectors for the R-level statistics
 * (standardisation, bandwidth, option hashes), and the switch that makes the
 * next fit's operator sharded.  Errors come back as c(status, message) for
 * the R side to raise as classed conditions. */
#include <string.h>
#include <R.h>
#include <Rinternals.h>
#include "../core/krr.h"
#include "../core/dist/dist.h"
#include "r_dist.h"

static krr_comm *g_comm = NULL;
static int g_use = 0;

struct krr_comm *askotch_r_dist_comm(void) {
  return g_use ? g_comm : NULL;
}

int askotch_r_device_id(void) {
  int nd = g_comm ? krr_cuda_device_count() : 0;
  return nd > 1 ? g_comm->local_rank % nd : 0;
}

static SEXP failure(krr_ctx *ctx, krr_status st) {
  SEXP out = PROTECT(Rf_allocVector(STRSXP, 2));
  SET_STRING_ELT(out, 0, Rf_mkChar(krr_status_name(st)));
  SET_STRING_ELT(out, 1, Rf_mkChar(ctx->msg[0] ? ctx->msg : krr_status_name(st)));
  UNPROTECT(1);
  return out;
}

static krr_status need_comm(krr_ctx *ctx) {
  memset(ctx, 0, sizeof *ctx);
  if (!g_comm) return krr_fail(ctx, KRR_ERR_INPUT, "MPI is not started (askotch_mpi_init())");
  return KRR_OK;
}

SEXP ffi_mpi_built(void) { return Rf_ScalarLogical(krr_comm_mpi_built()); }

SEXP ffi_mpi_init(void) {
  krr_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  if (!g_comm) {
    krr_status st = krr_comm_mpi_create(&ctx, &g_comm);
    if (st != KRR_OK) return failure(&ctx, st);
  }
  SEXP out = PROTECT(Rf_allocVector(REALSXP, 3));
  REAL(out)[0] = g_comm->rank;
  REAL(out)[1] = g_comm->size;
  REAL(out)[2] = krr_comm_mpi_owner();
  UNPROTECT(1);
  return out;
}

SEXP ffi_mpi_finalize(void) {
  const char *why = krr_comm_mpi_broken();
  if (why) REprintf("askotch: ending the MPI job (MPI_Abort): %s\n", why);
  if (g_comm) krr_comm_free(g_comm);
  g_comm = NULL;
  g_use = 0;
  krr_comm_mpi_finalize();
  return R_NilValue;
}

SEXP ffi_mpi_use(SEXP on) {
  g_use = Rf_asLogical(on) == TRUE && g_comm != NULL;
  return R_NilValue;
}

const char *const askotch_r_reduce_names[ASKOTCH_R_N_REDUCE] = {
    [KRR_RED_SUM] = "sum", [KRR_RED_MAX] = "max", [KRR_RED_MIN] = "min"};

/* x (double) reduced over the ranks by op (a krr_redop code) */
SEXP ffi_mpi_allreduce(SEXP x, SEXP op) {
  krr_ctx ctx;
  int code = Rf_asInteger(op);
  krr_status st = need_comm(&ctx);
  if (st == KRR_OK && (code < 0 || code >= ASKOTCH_R_N_REDUCE))
    st = krr_fail(&ctx, KRR_ERR_INPUT, "unknown reduction code %d", code);
  if (st != KRR_OK) return failure(&ctx, st);
  SEXP out = PROTECT(Rf_duplicate(Rf_coerceVector(x, REALSXP)));
  st = krr_comm_allreduce(g_comm, &ctx, REAL(out), XLENGTH(out), KRR_DT_DOUBLE, (krr_redop)code);
  UNPROTECT(1);
  return st == KRR_OK ? out : failure(&ctx, st);
}

/* root's raw vector on every rank (its length first) */
SEXP ffi_mpi_bcast(SEXP x, SEXP root) {
  krr_ctx ctx;
  krr_status st = need_comm(&ctx);
  if (st != KRR_OK) return failure(&ctx, st);
  int r = Rf_asInteger(root);
  double len = g_comm->rank == r ? (double)XLENGTH(x) : 0;
  st = krr_comm_bcast(g_comm, &ctx, &len, sizeof len, r);
  if (st != KRR_OK) return failure(&ctx, st);
  SEXP out = PROTECT(Rf_allocVector(RAWSXP, (R_xlen_t)len));
  if (g_comm->rank == r && len > 0) memcpy(RAW(out), RAW(x), (size_t)len);
  st = krr_comm_bcast(g_comm, &ctx, RAW(out), (int64_t)len, r);
  UNPROTECT(1);
  return st == KRR_OK ? out : failure(&ctx, st);
}

/* bytes this rank contributed and collective calls, since the start */
SEXP ffi_mpi_bytes(void) {
  SEXP out = PROTECT(Rf_allocVector(REALSXP, 2));
  REAL(out)[0] = g_comm ? g_comm->bytes : 0;
  REAL(out)[1] = g_comm ? g_comm->calls : 0;
  UNPROTECT(1);
  return out;
}
