/* The MPI communicator: the only file of the package that includes mpi.h,
 * compiled with MPI when configure found it (KRR_HAVE_MPI) and otherwise
 * reduced to "not built".  It works on a duplicate of MPI_COMM_WORLD whose
 * error handler returns codes (an engine failure is a status, not an
 * abort); MPI is initialised here only when nobody (Rmpi, pbdMPI, the C
 * driver) did, and then finalised by krr_comm_mpi_finalize.
 *
 * A rank that leaves.  A rank whose process ends normally (R's quit(), the
 * end of a script) while the others wait for it in a collective would leave
 * them waiting for ever: a collective cannot be cancelled.  So every
 * collective here is the non-blocking one, waited for by testing it, and a
 * communicator that is freed (at the end of the process: krr_comm_free, then
 * MPI_Finalize) first tells every other rank, on a second duplicate of
 * MPI_COMM_WORLD, how many collectives it has started.  A rank waiting in
 * its collective number s that hears of a rank that left after fewer than s
 * knows the collective can never complete: it fails with KRR_ERR_DEVICE
 * naming that rank, and the communicator is marked broken (every later
 * collective fails at once; the pending request is abandoned with the
 * staging copies it works on, never the caller's buffers, and the process
 * is ended by MPI_Abort at finalisation, since MPI_Finalize could wait on
 * it).  A rank that left after taking part in collective s did not strand
 * it, so notices from ranks that finish normally cost nothing.  Notices
 * carry a tag per communicator, so a late one from an earlier session of
 * the same process is never read as news.  Where Rmpi or pbdMPI finalise
 * MPI themselves before askotch's communicator is freed, no notice is sent
 * (askotch_mpi_finalize() first sends it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dist.h"

#ifdef KRR_HAVE_MPI
#include <limits.h>
#include <mpi.h>

#include <sched.h>

typedef struct {
  MPI_Comm comm, ctl; /* collectives; notices of ranks that left */
  int tag;            /* the notices' tag: TAG_LEFT + this communicator's number */
  int64_t seq;        /* collectives started on comm */
  int64_t *left;      /* per rank: the collectives it had started when it left, or -1 */
  int broken;         /* a collective can never complete: the message */
  char why[400];
} mpi_t;
static int we_initialised = 0, any_broken = 0;
static char broken_why[400]; /* the first stranded collective's message */
static int n_created = 0;     /* communicators created (the same on every rank) */

#define MC(c) (((mpi_t *)(c)->impl)->comm)
#define TAG_LEFT 7301

static krr_status mpi_err(krr_ctx *ctx, int rc, const char *what) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "code %d", rc);
  return krr_fail(ctx, KRR_ERR_DEVICE, "MPI %s failed: %s", what, s);
}

/* read the notices that arrived; fail (and mark the communicator broken)
 * when a rank left before starting collective number `s` */
static krr_status m_check_left(krr_comm *c, krr_ctx *ctx, int64_t s) {
  mpi_t *m = (mpi_t *)c->impl;
  if (!m->broken) {
    int flag = 1;
    MPI_Status ms;
    while (flag) {
      if (MPI_Iprobe(MPI_ANY_SOURCE, m->tag, m->ctl, &flag, &ms) != MPI_SUCCESS) break;
      if (!flag) break;
      int64_t v = -1;
      if (MPI_Recv(&v, 1, MPI_INT64_T, ms.MPI_SOURCE, m->tag, m->ctl, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        break;
      if (ms.MPI_SOURCE >= 0 && ms.MPI_SOURCE < c->size) m->left[ms.MPI_SOURCE] = v;
    }
    for (int r = 0; r < c->size && !m->broken; r++)
      if (m->left[r] >= 0 && m->left[r] < s) {
        m->broken = any_broken = 1;
        snprintf(m->why, sizeof m->why,
                 "rank %d left the MPI job (its process ended or it finalised askotch's MPI) "
                 "after %lld collective operations, while rank %d waits in operation %lld: the "
                 "distributed computation cannot go on (end every rank's script together)",
                 r, (long long)m->left[r], c->rank, (long long)s);
        if (!broken_why[0]) memcpy(broken_why, m->why, sizeof broken_why);
      }
  }
  return m->broken ? krr_fail(ctx, KRR_ERR_DEVICE, "%s", m->why) : KRR_OK;
}

/* before starting collective number seq + 1: nobody left before it */
static krr_status m_begin(krr_comm *c, krr_ctx *ctx) {
  return m_check_left(c, ctx, ((mpi_t *)c->impl)->seq + 1);
}

/* a collective was started (MPI's return code rc): counted -- only once
 * started, so that ranks waiting in one this rank never joined hear of it
 * when it leaves -- and waited for by testing it, listening for notices.
 * On an error with m->broken set the request is still pending, abandoned:
 * the buffers it was given must then never be freed (the callers run the
 * collectives on staging copies of their own, leaked in that case). */
static krr_status m_started(krr_comm *c, krr_ctx *ctx, int rc, MPI_Request *req, const char *what) {
  mpi_t *m = (mpi_t *)c->impl;
  if (rc != MPI_SUCCESS) return mpi_err(ctx, rc, what);
  m->seq += 1;
  for (;;) {
    int done = 0;
    rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_err(ctx, rc, what);
    if (done) return KRR_OK;
    KTRY(m_check_left(c, ctx, m->seq));
    sched_yield(); /* an oversubscribed rank lets the others run */
  }
}

/* a staging copy of n bytes (src: copied in), freed unless its collective
 * was abandoned */
static void *m_stage(krr_ctx *ctx, const void *src, size_t n) {
  void *s = malloc(n ? n : 1);
  if (!s) krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  else if (src && n) memcpy(s, src, n);
  return s;
}
static void m_unstage(krr_comm *c, krr_status st, void *s) {
  if (st == KRR_OK || !((mpi_t *)c->impl)->broken) free(s);
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
    char *part = (char *)buf + (size_t)i * es;
    MPI_Request req;
    KTRY(m_begin(c, ctx));
    void *s = m_stage(ctx, part, (size_t)k * es);
    if (!s) return KRR_ERR_MEMORY;
    krr_status st = m_started(c, ctx, MPI_Iallreduce(MPI_IN_PLACE, s, k, dtype(t), mop, MC(c), &req),
                              &req, "Allreduce");
    if (st == KRR_OK) memcpy(part, s, (size_t)k * es);
    m_unstage(c, st, s);
    KTRY(st);
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
    char *part = (char *)buf + i;
    MPI_Request req;
    KTRY(m_begin(c, ctx));
    void *s = m_stage(ctx, c->rank == root ? part : NULL, (size_t)k);
    if (!s) return KRR_ERR_MEMORY;
    krr_status st = m_started(c, ctx, MPI_Ibcast(s, k, MPI_BYTE, root, MC(c), &req), &req, "Bcast");
    if (st == KRR_OK && c->rank != root) memcpy(part, s, (size_t)k);
    m_unstage(c, st, s);
    KTRY(st);
    c->calls += 1;
  }
  if (c->rank == root) c->bytes += (double)bytes;
  c->seconds += krr_now() - t0;
  return KRR_OK;
}

static krr_status m_allgatherv(krr_comm *c, krr_ctx *ctx, const void *send, int64_t sendbytes,
                               void *recv, const int64_t *counts, const int64_t *displs) {
  int P = c->size;
  int64_t total = 0;
  for (int r = 0; r < P; r++) {
    if (counts[r] > INT_MAX || displs[r] > INT_MAX)
      return krr_fail(ctx, KRR_ERR_INPUT, "an allgather of more than 2 GiB is not supported");
    if (displs[r] + counts[r] > total) total = displs[r] + counts[r];
  }
  KTRY(m_begin(c, ctx));
  /* one staging block: the int counts and displacements, the send and the
   * receive buffers (all must outlive an abandoned request) */
  const size_t ib = sizeof(int) * 2 * (size_t)P;
  char *s = (char *)m_stage(ctx, NULL, ib + (size_t)sendbytes + (size_t)total);
  if (!s) return KRR_ERR_MEMORY;
  int *rc_ = (int *)s;
  char *sb = s + ib, *rb = sb + sendbytes;
  for (int r = 0; r < P; r++) {
    rc_[r] = (int)counts[r];
    rc_[P + r] = (int)displs[r];
  }
  if (sendbytes > 0) memcpy(sb, send, (size_t)sendbytes);
  double t0 = krr_now();
  MPI_Request req;
  krr_status st = m_started(c, ctx, MPI_Iallgatherv(sb, (int)sendbytes, MPI_BYTE, rb, rc_, rc_ + P,
                                                    MPI_BYTE, MC(c), &req),
                            &req, "Allgatherv");
  if (st == KRR_OK)
    for (int r = 0; r < P; r++)
      if (counts[r] > 0) memcpy((char *)recv + displs[r], rb + displs[r], (size_t)counts[r]);
  m_unstage(c, st, s);
  KTRY(st);
  c->calls += 1;
  c->bytes += (double)sendbytes;
  c->seconds += krr_now() - t0;
  return KRR_OK;
}

static krr_status m_barrier(krr_comm *c, krr_ctx *ctx) {
  MPI_Request req;
  KTRY(m_begin(c, ctx));
  KTRY(m_started(c, ctx, MPI_Ibarrier(MC(c), &req), &req, "Barrier"));
  c->calls += 1;
  return KRR_OK;
}

/* this rank leaves: every other rank is told how many collectives it
 * started (8-byte messages, sent eagerly; waited for at most a second) */
static void m_free(krr_comm *c) {
  if (!c) return;
  int fin = 0;
  MPI_Finalized(&fin);
  mpi_t *m = (mpi_t *)c->impl;
  if (m && !fin) {
    MPI_Request *req = (MPI_Request *)malloc(sizeof(MPI_Request) * (size_t)c->size);
    int64_t *v = (int64_t *)malloc(sizeof(int64_t));
    int nr = 0;
    if (req && v) {
      *v = m->seq;
      for (int r = 0; r < c->size; r++)
        if (r != c->rank && MPI_Isend(v, 1, MPI_INT64_T, r, m->tag, m->ctl, &req[nr]) == MPI_SUCCESS)
          nr++;
      int done = 0;
      const double t0 = krr_now();
      while (!done && MPI_Testall(nr, req, &done, MPI_STATUSES_IGNORE) == MPI_SUCCESS && !done &&
             krr_now() - t0 < 1.0)
        sched_yield();
      if (!done) { /* left to complete on their own; v must outlive them */
        for (int i = 0; i < nr; i++) MPI_Request_free(&req[i]);
        v = NULL;
      }
    }
    free(v);
    free(req);
    /* the notices that arrived from the others (they end too) */
    int flag = 1;
    MPI_Status ms;
    while (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, m->ctl, &flag, &ms) == MPI_SUCCESS && flag) {
      int64_t x;
      if (MPI_Recv(&x, 1, MPI_INT64_T, ms.MPI_SOURCE, ms.MPI_TAG, m->ctl, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        break;
    }
    if (!m->broken) MPI_Comm_free(&m->comm); /* (a broken one has a request pending) */
    MPI_Comm_free(&m->ctl);
  }
  if (m) free(m->left);
  free(m);
  free(c);
}

static const krr_comm_vt mpi_vt = {"mpi", m_allreduce, m_bcast, m_allgatherv, m_barrier, m_free};

int krr_comm_mpi_built(void) { return 1; }

int krr_comm_mpi_owner(void) { return we_initialised; }

const char *krr_comm_mpi_broken(void) { return any_broken ? broken_why : NULL; }

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
  if (rc == MPI_SUCCESS) {
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &m->ctl);
    if (rc != MPI_SUCCESS) MPI_Comm_free(&m->comm);
  }
  if (rc != MPI_SUCCESS) {
    free(c); free(m);
    return mpi_err(ctx, rc, "Comm_dup");
  }
  MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(m->ctl, MPI_ERRORS_RETURN);
  MPI_Comm_rank(m->comm, &c->rank);
  MPI_Comm_size(m->comm, &c->size);
  /* the ranks sharing this machine (for the choice of GPU); if MPI cannot
   * say, every rank counts as a machine of its own (device 0) */
  c->local_rank = 0;
  c->local_size = 1;
  MPI_Comm node;
  if (MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node) ==
      MPI_SUCCESS) {
    MPI_Comm_rank(node, &c->local_rank);
    MPI_Comm_size(node, &c->local_size);
    MPI_Comm_free(&node);
  }
  m->left = (int64_t *)malloc(sizeof(int64_t) * (size_t)c->size);
  if (!m->left) {
    MPI_Comm_free(&m->comm);
    MPI_Comm_free(&m->ctl);
    free(c); free(m);
    return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  }
  for (int r = 0; r < c->size; r++) m->left[r] = -1;
  /* a notice from an earlier communicator of this process that arrived late
   * (the context may be reused) carries that one's tag */
  m->tag = TAG_LEFT + (n_created++ % 16384);
  c->vt = &mpi_vt;
  c->impl = m;
  *out = c;
  return KRR_OK;
}

void krr_comm_mpi_finalize(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  /* a stranded collective (a rank left): MPI_Finalize could wait on it */
  if (any_broken && init && !fin) MPI_Abort(MPI_COMM_WORLD, 1);
  if (we_initialised && init && !fin) MPI_Finalize();
  we_initialised = 0;
}

#else /* no MPI in this build */

int krr_comm_mpi_built(void) { return 0; }

int krr_comm_mpi_owner(void) { return 0; }

const char *krr_comm_mpi_broken(void) { return NULL; }

krr_status krr_comm_mpi_create(krr_ctx *ctx, krr_comm **out) {
  *out = NULL;
  return krr_fail(ctx, KRR_ERR_NOT_BUILT, "askotch was built without MPI (configure: "
                  "ASKOTCH_MPI=yes with libopenmpi-dev installed)");
}

void krr_comm_mpi_finalize(void) {}

#endif
