/* dist/: the communicator seam.  Everything the core needs from a
 * distributed engine, as a small table: rank and size, sum / max / min
 * reductions of arrays (status agreement uses max / min), broadcast,
 * allgather(v) and a barrier.  serial.c is the trivial one-process
 * communicator (always compiled, the default); mpi.c the MPI one (the only
 * file of the package that includes mpi.h; without MPI it only says so).
 *
 * Every entry is collective: all ranks call it in the same order.  Errors
 * of the engine come back as KRR_ERR_DEVICE after krr_fail(ctx, ...).
 * Each communicator counts the bytes this rank contributes to collectives
 * (sent payload: count * element size for reductions, the buffer for a
 * broadcast from the root, the own piece of an allgather) and the calls:
 * the instrument behind the "communication per iteration is independent
 * of n" claim (Tu et al., "Large scale kernel learning using block
 * coordinate descent", 2016, Table 1: b^2 words per block). */
#ifndef KRR_DIST_H
#define KRR_DIST_H
#include "../base/base.h"

typedef enum { KRR_DT_DOUBLE = 0, KRR_DT_FLOAT = 1, KRR_DT_INT64 = 2 } krr_dtype;
typedef enum { KRR_RED_SUM = 0, KRR_RED_MAX = 1, KRR_RED_MIN = 2 } krr_redop;

typedef struct krr_comm krr_comm;
typedef struct krr_comm_vt {
  const char *name; /* "serial", "mpi" */
  /* buf[0..count) <- the reduction over ranks (in place) */
  krr_status (*allreduce)(krr_comm *c, krr_ctx *ctx, void *buf, int64_t count, krr_dtype t,
                          krr_redop op);
  /* buf (bytes) <- root's */
  krr_status (*bcast)(krr_comm *c, krr_ctx *ctx, void *buf, int64_t bytes, int root);
  /* recv = concatenation over ranks r of their send (counts[r] bytes at
   * displs[r]); counts / displs known on every rank */
  krr_status (*allgatherv)(krr_comm *c, krr_ctx *ctx, const void *send, int64_t sendbytes,
                           void *recv, const int64_t *counts, const int64_t *displs);
  krr_status (*barrier)(krr_comm *c, krr_ctx *ctx);
  void (*free)(krr_comm *c);
} krr_comm_vt;

struct krr_comm {
  const krr_comm_vt *vt;
  int rank, size;
  double bytes; /* payload bytes this rank contributed to collectives */
  double calls; /* collective calls */
  double seconds; /* wall time spent in collectives (waiting included) */
  int agreed;     /* a failure has been agreed (krr_comm_agree) */
  void *impl;
  /* this rank among the ranks of its machine (MPI_COMM_TYPE_SHARED): a rank
   * takes the GPU local_rank modulo the machine's devices */
  int local_rank, local_size;
};

size_t krr_dtype_size(krr_dtype t);

/* the one-process communicator (static; free is a no-op) */
krr_comm *krr_comm_serial(void);
/* MPI_COMM_WORLD duplicated (errors returned, not fatal); MPI_Init_thread
 * when MPI is not initialised yet (Rmpi / pbdMPI may have done it).  Without
 * MPI in the build: KRR_ERR_NOT_BUILT. */
krr_status krr_comm_mpi_create(krr_ctx *ctx, krr_comm **out);
/* 1 when the build has MPI */
int krr_comm_mpi_built(void);
/* MPI_Finalize when this library initialised MPI and nobody finalised it */
void krr_comm_mpi_finalize(void);
/* 1 while MPI is initialised by this library (not by Rmpi / pbdMPI / a
 * driver before it) */
int krr_comm_mpi_owner(void);
/* NULL, or why a collective of this process can never complete (a rank
 * left before joining it): krr_comm_mpi_finalize then ends the job with
 * MPI_Abort instead of MPI_Finalize */
const char *krr_comm_mpi_broken(void);
void krr_comm_free(krr_comm *c);

static inline krr_status krr_comm_allreduce(krr_comm *c, krr_ctx *ctx, void *buf, int64_t count,
                                            krr_dtype t, krr_redop op) {
  if (c->size <= 1 || count <= 0) return KRR_OK;
  return c->vt->allreduce(c, ctx, buf, count, t, op);
}
static inline krr_status krr_comm_bcast(krr_comm *c, krr_ctx *ctx, void *buf, int64_t bytes,
                                        int root) {
  if (c->size <= 1 || bytes <= 0) return KRR_OK;
  return c->vt->bcast(c, ctx, buf, bytes, root);
}
krr_status krr_comm_allgatherv(krr_comm *c, krr_ctx *ctx, const void *send, int64_t sendbytes,
                               void *recv, const int64_t *counts, const int64_t *displs);
static inline krr_status krr_comm_barrier(krr_comm *c, krr_ctx *ctx) {
  return c->size <= 1 ? KRR_OK : c->vt->barrier(c, ctx);
}
/* Status agreement: every rank passes its own status; all return the same.
 * When some rank failed, the lowest failing rank's status and message are
 * broadcast and recorded on the ranks that did not fail ("rank r: ...").
 * Two small collectives (an allreduce of one integer, a broadcast of the
 * message); a communication failure itself is KRR_ERR_DEVICE. */
krr_status krr_comm_agree(krr_comm *c, krr_ctx *ctx, krr_status st);
/* A failure is agreed once: after krr_comm_agree returned an error, later
 * calls with an error return it without collectives (the ranks that learnt of
 * it inside an operator call unwind through the solver loop's agreement point
 * without meeting anyone), until krr_comm_reset at an entry point that every
 * rank calls together (a solver step, an operator's creation). */
static inline void krr_comm_reset(krr_comm *c) {
  if (c) c->agreed = 0;
}

/* 1 when the `len` bytes at buf are equal on every rank (a 64-bit hash of
 * them, allreduced max and min) */
krr_status krr_comm_same(krr_comm *c, krr_ctx *ctx, const void *buf, int64_t len, int *same);
#endif
