/* The MPI communicator: the only file of the package that includes mpi.h,
 * compiled with MPI when configure found it (KRR_HAVE_MPI) and otherwise
 * reduced to "not built".  It works on a duplicate of MPI_COMM_WORLD whose
 * error handler returns codes (an engine failure is a status, not an
 * abort); MPI is initialised here only when nobody (Rmpi, pbdMPI, the C
 * driver) did, and then finalised by krr_comm_mpi_finalize. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dist.h"

#ifdef KRR_HAVE_MPI
#include <limits.h>
#include <mpi.h>

typedef struct { MPI_Comm comm; } mpi_t;
static int we_initialised = 0;

#define MC(c) (((mpi_t *)(c)->impl)->comm)

static krr_status mpi_err(krr_ctx *ctx, int rc, const char *what) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "code %d", rc);
  return krr_fail(ctx, KRR_ERR_DEVICE, "MPI %s failed: %s", what, s);
}

static MPI_Datatype dtype(krr_dtype t) {
  return t == KRR_DT_FLOAT ? MPI_FLOAT : t == KRR_DT_INT64 ? MPI_INT64_T : MPI_DOUBLE;
}

/* MPI counts are int: larger buffers go in pieces */
#define CHUNK ((int64_t)1 << 30)

static krr_status m_allreduce(krr_comm *c, krr_ctx *ctx, void *buf, int64_t count, krr_dtype t,
                              krr_redop op) {
  double t0 = krr_now();
  MPI_Op mop = op == KRR_RED_MAX ? MPI_MAX : op == KRR_RED_MIN ? MPI_MIN : MPI_SUM;
  size_t es = krr_dtype_size(t);
  for (int64_t i = 0; i < count; i += CHUNK) {
    int k = (int)(count - i < CHUNK ? count - i : CHUNK);
    int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)buf + (size_t)i * es, k, dtype(t), mop, MC(c));
    if (rc != MPI_SUCCESS) return mpi_err(ctx, rc, "Allreduce");
    c->calls += 1;
  }
  c->bytes += (double)count * (double)es;
  c->seconds += krr_now() - t0;
  return KRR_OK;
}

static krr_status m_bcast(krr_comm *c, krr_ctx *ctx, void *buf, int64_t bytes, int root) {
  double t0 = krr_now();
  for (int64_t i = 0; i < bytes; i += CHUNK) {
    int k = (int)(bytes - i < CHUNK ? bytes - i : CHUNK);
    int rc = MPI_Bcast((char *)buf + i, k, MPI_BYTE, root, MC(c));
    if (rc != MPI_SUCCESS) return mpi_err(ctx, rc, "Bcast");
    c->calls += 1;
  }
  if (c->rank == root) c->bytes += (double)bytes;
  c->seconds += krr_now() - t0;
  return KRR_OK;
}

static krr_status m_allgatherv(krr_comm *c, krr_ctx *ctx, const void *send, int64_t sendbytes,
                               void *recv, const int64_t *counts, const int64_t *displs) {
  int P = c->size;
  int *rc_ = (int *)malloc(sizeof(int) * 2 * (size_t)P);
  if (!rc_) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  for (int r = 0; r < P; r++) {
    if (counts[r] > INT_MAX || displs[r] > INT_MAX) {
      free(rc_);
      return krr_fail(ctx, KRR_ERR_INPUT, "an allgather of more than 2 GiB is not supported");
    }
    rc_[r] = (int)counts[r];
    rc_[P + r] = (int)displs[r];
  }
  double t0 = krr_now();
  int rc = MPI_Allgatherv(send, (int)sendbytes, MPI_BYTE, recv, rc_, rc_ + P, MPI_BYTE, MC(c));
  free(rc_);
  if (rc != MPI_SUCCESS) return mpi_err(ctx, rc, "Allgatherv");
  c->calls += 1;
  c->bytes += (double)sendbytes;
  c->seconds += krr_now() - t0;
  return KRR_OK;
}

static krr_status m_barrier(krr_comm *c, krr_ctx *ctx) {
  int rc = MPI_Barrier(MC(c));
  if (rc != MPI_SUCCESS) return mpi_err(ctx, rc, "Barrier");
  c->calls += 1;
  return KRR_OK;
}

static void m_free(krr_comm *c) {
  if (!c) return;
  int fin = 0;
  MPI_Finalized(&fin);
  if (c->impl && !fin) MPI_Comm_free(&((mpi_t *)c->impl)->comm);
  free(c->impl);
  free(c);
}

static const krr_comm_vt mpi_vt = {"mpi", m_allreduce, m_bcast, m_allgatherv, m_barrier, m_free};

int krr_comm_mpi_built(void) { return 1; }

int krr_comm_mpi_owner(void) { return we_initialised; }

krr_status krr_comm_mpi_create(krr_ctx *ctx, krr_comm **out) {
  *out = NULL;
  int init = 0, fin = 0, rc;
  MPI_Finalized(&fin);
  if (fin) return krr_fail(ctx, KRR_ERR_INPUT, "MPI has already been finalised in this process");
  MPI_Initialized(&init);
  if (!init) {
    int provided = 0;
    rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return krr_fail(ctx, KRR_ERR_DEVICE, "MPI_Init_thread failed");
    we_initialised = 1;
  }
  krr_comm *c = (krr_comm *)calloc(1, sizeof *c);
  mpi_t *m = (mpi_t *)calloc(1, sizeof *m);
  if (!c || !m) {
    free(c); free(m);
    return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  }
  rc = MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
  if (rc != MPI_SUCCESS) {
    free(c); free(m);
    return mpi_err(ctx, rc, "Comm_dup");
  }
  MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(m->comm, &c->rank);
  MPI_Comm_size(m->comm, &c->size);
  c->vt = &mpi_vt;
  c->impl = m;
  *out = c;
  return KRR_OK;
}

void krr_comm_mpi_finalize(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (we_initialised && init && !fin) MPI_Finalize();
  we_initialised = 0;
}

#else /* no MPI in this build */

int krr_comm_mpi_built(void) { return 0; }

int krr_comm_mpi_owner(void) { return 0; }

krr_status krr_comm_mpi_create(krr_ctx *ctx, krr_comm **out) {
  *out = NULL;
  return krr_fail(ctx, KRR_ERR_NOT_BUILT, "askotch was built without MPI (configure: "
                  "ASKOTCH_MPI=yes with libopenmpi-dev installed)");
}

void krr_comm_mpi_finalize(void) {}

#endif
