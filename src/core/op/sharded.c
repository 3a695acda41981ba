/* The MPI-sharded kernel operator: the training rows are split over the
 * ranks of a communicator in contiguous ranges (rank r holds global rows
 * start[r] .. start[r+1] - 1), and so are the n-vectors (nloc rows here).
 * It wraps the exact operator on the local rows; solvers cannot tell it
 * from a one-process operator (op.h).  Tu, Roelofs, Venkataraman and Recht
 * ("Large scale kernel learning using block coordinate descent", 2016,
 * Section 3 and Table 1) distribute block coordinate descent this way: a
 * block's points are gathered from their owners, the block's rows of the
 * product K w are local partial products summed over the ranks, and every
 * rank holds the b x b block system.
 *
 * What moves per call (numbers contributed per rank):
 *   block_load       the rank's own rows of the block: <= b p (allgatherv)
 *   mv(A, NULL)      b q partial sums (allreduce)
 *   mv(NULL, B), mv(A, B), mat of blocks, diag: nothing (B replicated)
 *   mv(NULL, NULL)   the shards in turn (broadcast of X_r and V_r, r = 0..P-1:
 *                    n (p + q) numbers in all; PCG's full product, where the
 *                    whole of X must meet every shard once)
 *   dot, nrm2        one number per column block (allreduce)
 *   gather           b m (allreduce of zero-padded owned rows)
 *   scatter_axpy     nothing (each rank updates its own rows)
 * Blocks are drawn identically on every rank (counter-based RNG), so a
 * block needs no index traffic.  None of this depends on n.  With the serial
 * communicator (one rank) every call is the local operator's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "../dist/dist.h"

typedef struct {
  krr_op *local;   /* owned: the exact operator on the nloc local rows */
  krr_comm *comm;  /* not owned */
  int64_t *start;  /* size + 1 row offsets */
  int64_t *counts, *displs; /* size, allgatherv scratch (bytes) */
  /* scratch, grown on demand: host (hcap elements, 3 arrays) and device */
  void *h1, *h2, *h3;
  int64_t hcap;
  void *dbuf; int64_t dcap;      /* device, elements */
  int64_t *didx; int64_t icap;   /* device, local indices */
  int64_t *hidx, *hpos;          /* host, icap */
} sh_t;

#define SD(op) ((sh_t *)(op)->impl)
#define LOP(op, name, ...) KOP((op)->ctx, (op)->prec, name, __VA_ARGS__)

static krr_dtype dt(const krr_op *op) { return op->prec == KRR_DOUBLE ? KRR_DT_DOUBLE : KRR_DT_FLOAT; }

static krr_status grow_host(krr_op *op, int64_t len) {
  sh_t *S = SD(op);
  if (len <= S->hcap) return KRR_OK;
  free(S->h1); free(S->h2); free(S->h3);
  S->h1 = malloc(op->es * (size_t)len);
  S->h2 = malloc(op->es * (size_t)len);
  S->h3 = malloc(op->es * (size_t)len);
  S->hcap = S->h1 && S->h2 && S->h3 ? len : 0;
  return S->hcap ? KRR_OK : krr_fail(op->ctx, KRR_ERR_MEMORY, "out of host memory");
}
static krr_status grow_dev(krr_op *op, int64_t len) {
  sh_t *S = SD(op);
  if (len <= S->dcap) return KRR_OK;
  krr_dfree(op->ctx, &S->dbuf);
  S->dcap = 0;
  if (!(S->dbuf = krr_dalloc(op->ctx, len, op->es))) return op->ctx->status;
  S->dcap = len;
  return KRR_OK;
}
static krr_status grow_idx(krr_op *op, int64_t len) {
  sh_t *S = SD(op);
  if (len <= S->icap) return KRR_OK;
  if (S->didx) op->ctx->ops->dealloc(op->ctx, S->didx);
  free(S->hidx); free(S->hpos);
  S->icap = 0;
  S->didx = (int64_t *)krr_dalloc(op->ctx, len, sizeof(int64_t));
  S->hidx = (int64_t *)malloc(sizeof(int64_t) * (size_t)len);
  S->hpos = (int64_t *)malloc(sizeof(int64_t) * (size_t)len);
  if (!S->didx || !S->hidx || !S->hpos) return krr_fail(op->ctx, KRR_ERR_MEMORY, "out of memory");
  S->icap = len;
  return KRR_OK;
}

/* Every rank's status before a data collective (krr_comm_agree: one
 * integer when all is well): a rank whose local part failed (an interrupt
 * polled inside its kernel product, a device error) returns to the solver
 * loop's agreement point, which meets the others here; all return the root
 * cause's error and nobody waits in a collective that will not come. */
static krr_status sync_status(krr_op *op, krr_status st) {
  return krr_comm_agree(SD(op)->comm, op->ctx, st);
}

/* the rows of A owned here: local indices (hidx, and on the device) and
 * their positions in A (hpos); returns the count */
static krr_status owned(krr_op *op, const krr_block *A, int64_t *bo) {
  sh_t *S = SD(op);
  int r = S->comm->rank;
  int64_t lo = S->start[r], hi = S->start[r + 1], k = 0;
  KTRY(grow_idx(op, A->b > 0 ? A->b : 1));
  for (int64_t i = 0; i < A->b; i++) {
    int64_t g = A->idx_h[i];
    if (g >= lo && g < hi) { S->hidx[k] = g - lo; S->hpos[k] = i; k++; }
  }
  *bo = k;
  if (k > 0) KTRY(op->ctx->ops->upload(op->ctx, S->didx, S->hidx, sizeof(int64_t) * (size_t)k));
  return KRR_OK;
}

static krr_status sd_block_alloc(krr_op *op, krr_arena *a, krr_block *blk) {
  blk->pts = krr_arena_dev(a, blk->cap * (int64_t)op->p, op->es);
  return blk->pts ? KRR_OK : op->ctx->status;
}

static double sd_block_bytes(const krr_op *op, int64_t cap) {
  return (double)cap * op->p * (double)op->es;
}

/* the block's points, gathered from their owners, in block order */
static krr_status sd_block_load(krr_op *op, krr_block *blk) {
  sh_t *S = SD(op);
  krr_ctx *ctx = op->ctx;
  const int P = S->comm->size, p = op->p;
  const size_t row = op->es * (size_t)p;
  int64_t bo = 0, b = blk->b;
  if (P == 1) return S->local->vt->block_load(S->local, blk);
  krr_status st = owned(op, blk, &bo);
  if (st == KRR_OK) st = grow_host(op, b * p);
  if (st == KRR_OK) st = grow_dev(op, b * p);
  /* own rows (block order) -> h1, compact */
  if (st == KRR_OK && bo > 0)
    st = LOP(op, gather_points, krr_op_exact_points(S->local), p, S->didx, bo, S->dbuf);
  if (st == KRR_OK && bo > 0) st = ctx->ops->download(ctx, S->h1, S->dbuf, row * (size_t)bo);
  KTRY(sync_status(op, st));
  /* counts per rank: rows of the block each owns (known everywhere) */
  for (int r = 0; r < P; r++) S->counts[r] = 0;
  for (int64_t i = 0; i < b; i++) {
    int64_t g = blk->idx_h[i];
    int lo = 0, hi = P - 1; /* owner: start[r] <= g < start[r + 1] */
    while (lo < hi) { int mid = (lo + hi + 1) / 2; if (S->start[mid] <= g) lo = mid; else hi = mid - 1; }
    S->counts[lo] += (int64_t)row;
  }
  int64_t off = 0;
  for (int r = 0; r < P; r++) { S->displs[r] = off; off += S->counts[r]; }
  KTRY(krr_comm_allgatherv(S->comm, ctx, S->h1, (int64_t)row * bo, S->h2, S->counts, S->displs));
  /* rank r's piece lists its rows in block order: walk the block once */
  int64_t *next = (int64_t *)calloc((size_t)P, sizeof(int64_t));
  if (!next) return krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  for (int r = 0; r < P; r++) next[r] = S->displs[r];
  for (int64_t i = 0; i < b; i++) {
    int64_t g = blk->idx_h[i];
    int lo = 0, hi = P - 1;
    while (lo < hi) { int mid = (lo + hi + 1) / 2; if (S->start[mid] <= g) lo = mid; else hi = mid - 1; }
    memcpy((char *)S->h3 + row * (size_t)i, (char *)S->h2 + next[lo], row);
    next[lo] += (int64_t)row;
  }
  free(next);
  return ctx->ops->upload(ctx, blk->pts, S->h3, row * (size_t)b);
}

/* out (rows x q, ld ldo, device) summed over the ranks */
static krr_status reduce_dev(krr_op *op, void *out, int64_t rows, int q, int64_t ldo) {
  sh_t *S = SD(op);
  krr_ctx *ctx = op->ctx;
  int64_t len = rows * q;
  if (S->comm->size == 1 || len <= 0) return KRR_OK;
  KTRY(grow_host(op, len));
  for (int c = 0; c < q; c++)
    KTRY(ctx->ops->download(ctx, KAT(S->h1, c * rows, op->es), KAT(out, c * ldo, op->es),
                            op->es * (size_t)rows));
  KTRY(krr_comm_allreduce(S->comm, ctx, S->h1, len, dt(op), KRR_RED_SUM));
  for (int c = 0; c < q; c++)
    KTRY(ctx->ops->upload(ctx, KAT(out, c * ldo, op->es), KAT(S->h1, c * rows, op->es),
                          op->es * (size_t)rows));
  return KRR_OK;
}

/* OUT(nloc x q) = sum_r K(X_local, X_r) V_r: the shards are broadcast in turn */
static krr_status full_mv(krr_op *op, const void *V, int64_t ldv, int q, void *out, int64_t ldo) {
  sh_t *S = SD(op);
  krr_ctx *ctx = op->ctx;
  const int P = S->comm->size, p = op->p, me = S->comm->rank;
  const int64_t nl = op->nloc;
  int64_t mx = 0;
  for (int r = 0; r < P; r++) mx = KRR_MAX(mx, S->start[r + 1] - S->start[r]);
  /* host: X_r (mx x p) in h1 and V_r (mx x q) in h2; device: X_r, V_r, the partial product */
  krr_status st = grow_host(op, mx * KRR_MAX(p, q));
  int64_t need = mx * p + mx * q + nl * q;
  if (st == KRR_OK) st = grow_dev(op, need);
  KTRY(sync_status(op, st));
  void *dX = S->dbuf, *dV = KAT(S->dbuf, mx * p, op->es), *dT = KAT(S->dbuf, mx * (p + q), op->es);
  const void *Xl = krr_op_exact_points(S->local);
  for (int r = 0; r < P; r++) {
    int64_t nr = S->start[r + 1] - S->start[r];
    if (r == me && st == KRR_OK) /* the owner stages its shard (agreed before the broadcast) */
      st = ctx->ops->download(ctx, S->h1, Xl, op->es * (size_t)(nr * p));
    for (int c = 0; r == me && st == KRR_OK && c < q; c++)
      st = ctx->ops->download(ctx, KAT(S->h2, c * nr, op->es), KAT(V, c * ldv, op->es),
                              op->es * (size_t)nr);
    /* every rank's status (this download, the previous shard's product)
     * before the broadcasts: nobody waits for a root that has given up */
    KTRY(sync_status(op, st));
    KTRY(krr_comm_bcast(S->comm, ctx, S->h1, (int64_t)op->es * nr * p, r));
    KTRY(krr_comm_bcast(S->comm, ctx, S->h2, (int64_t)op->es * nr * q, r));
    st = ctx->ops->upload(ctx, dX, S->h1, op->es * (size_t)(nr * p));
    if (st == KRR_OK) st = ctx->ops->upload(ctx, dV, S->h2, op->es * (size_t)(nr * q));
    krr_block B = {0};
    B.b = B.cap = nr;
    B.pts = dX;
    if (st == KRR_OK)
      st = krr_op_mv(S->local, NULL, &B, dV, nr, q, r == 0 ? out : dT, r == 0 ? ldo : nl);
    for (int c = 0; st == KRR_OK && r > 0 && c < q; c++)
      st = LOP(op, axpby, nl, 1.0, KAT(dT, c * nl, op->es), 1.0, KAT(out, c * ldo, op->es));
  }
  return sync_status(op, st);
}

static krr_status sd_mv(krr_op *op, const krr_block *A, const krr_block *B, const void *V,
                        int64_t ldv, int q, void *out, int64_t ldo) {
  sh_t *S = SD(op);
  if (S->comm->size == 1 || B) return krr_op_mv(S->local, A, B, V, ldv, q, out, ldo);
  if (!A) return full_mv(op, V, ldv, q, out, ldo);
  KTRY(sync_status(op, krr_op_mv(S->local, A, NULL, V, ldv, q, out, ldo)));
  return reduce_dev(op, out, A->b, q, ldo);
}

static krr_status sd_mat(krr_op *op, const krr_block *A, const krr_block *B, void *out,
                         int64_t ldo) {
  sh_t *S = SD(op);
  if (S->comm->size > 1 && !B)
    return krr_fail(op->ctx, KRR_ERR_INPUT, "the kernel matrix against all n rows is not formed "
                    "by a distributed operator (use a solver that needs only blocks)");
  return krr_op_mat(S->local, A, B, out, ldo);
}

static krr_status sd_diag(krr_op *op, const krr_block *A, double *out) {
  return krr_op_diag(SD(op)->local, A, out);
}

static krr_status sd_dot(krr_op *op, int64_t len, const void *x, const void *y, double *out) {
  sh_t *S = SD(op);
  KTRY(sync_status(op, krr_op_dot(S->local, len, x, y, out)));
  return krr_comm_allreduce(S->comm, op->ctx, out, 1, KRR_DT_DOUBLE, KRR_RED_SUM);
}

static krr_status sd_nrm2(krr_op *op, int64_t len, const void *x, double *out) {
  sh_t *S = SD(op);
  KTRY(sync_status(op, krr_op_nrm2(S->local, len, x, out)));
  if (S->comm->size == 1) return KRR_OK;
  double s = *out * *out;
  KTRY(krr_comm_allreduce(S->comm, op->ctx, &s, 1, KRR_DT_DOUBLE, KRR_RED_SUM));
  *out = sqrt(s);
  return KRR_OK;
}

/* dst(b x m) = src[A, ]: owned rows filled here, zeros elsewhere, summed */
static krr_status sd_gather(krr_op *op, const krr_block *A, const void *src, int m, void *dst,
                            int64_t ldd) {
  sh_t *S = SD(op);
  krr_ctx *ctx = op->ctx;
  if (S->comm->size == 1) return krr_op_gather(S->local, A, src, m, dst, ldd);
  int64_t bo = 0, b = A->b;
  const size_t es = op->es;
  krr_status st = owned(op, A, &bo);
  if (st == KRR_OK) st = grow_host(op, b * m);
  if (st == KRR_OK) st = grow_dev(op, (bo > 0 ? bo : 1) * m);
  if (st == KRR_OK && bo > 0) st = LOP(op, gather_rows, src, op->nloc, m, S->didx, bo, S->dbuf, bo);
  if (st == KRR_OK && bo > 0) st = ctx->ops->download(ctx, S->h2, S->dbuf, es * (size_t)(bo * m));
  KTRY(sync_status(op, st));
  memset(S->h1, 0, es * (size_t)(b * m));
  for (int c = 0; c < m; c++)
    for (int64_t k = 0; k < bo; k++)
      memcpy(KAT(S->h1, c * b + S->hpos[k], es), KAT(S->h2, c * bo + k, es), es);
  KTRY(krr_comm_allreduce(S->comm, ctx, S->h1, b * m, dt(op), KRR_RED_SUM));
  for (int c = 0; c < m; c++)
    KTRY(ctx->ops->upload(ctx, KAT(dst, c * ldd, es), KAT(S->h1, c * b, es), es * (size_t)b));
  return KRR_OK;
}

/* dst[A, ] += alpha src: each rank its own rows (src is replicated) */
static krr_status sd_scatter(krr_op *op, double alpha, const void *src, int64_t lds, int m,
                             const krr_block *A, void *dst) {
  sh_t *S = SD(op);
  krr_ctx *ctx = op->ctx;
  if (S->comm->size == 1) return krr_op_scatter_axpy(S->local, alpha, src, lds, m, A, dst);
  int64_t bo = 0, b = A->b;
  const size_t es = op->es;
  KTRY(owned(op, A, &bo));
  if (bo == 0) return KRR_OK;
  KTRY(grow_host(op, b * m));
  KTRY(grow_dev(op, bo * m));
  for (int c = 0; c < m; c++)
    KTRY(ctx->ops->download(ctx, KAT(S->h1, c * b, es), KAT(src, c * lds, es), es * (size_t)b));
  for (int c = 0; c < m; c++)
    for (int64_t k = 0; k < bo; k++)
      memcpy(KAT(S->h2, c * bo + k, es), KAT(S->h1, c * b + S->hpos[k], es), es);
  KTRY(ctx->ops->upload(ctx, S->dbuf, S->h2, es * (size_t)(bo * m)));
  return LOP(op, scatter_axpy, alpha, S->dbuf, bo, m, S->didx, bo, dst, op->nloc);
}

static krr_status sd_subset(krr_op *op, const krr_block *A, krr_op **out) {
  /* the block's points are replicated: a one-process operator on them */
  return krr_op_subset(SD(op)->local, A, out);
}

static void sd_free(krr_op *op) {
  sh_t *S = SD(op);
  if (S) {
    krr_op_free(S->local);
    free(S->start); free(S->counts); free(S->displs);
    free(S->h1); free(S->h2); free(S->h3);
    krr_dfree(op->ctx, &S->dbuf);
    if (S->didx) op->ctx->ops->dealloc(op->ctx, S->didx);
    free(S->hidx); free(S->hpos);
    free(S);
  }
  free(op);
}

static const krr_op_vt sharded_vt = {
    .name = "sharded",
    .block_alloc = sd_block_alloc,
    .block_bytes = sd_block_bytes,
    .block_load = sd_block_load,
    .mv = sd_mv,
    .mat = sd_mat,
    .diag = sd_diag,
    .dot = sd_dot,
    .nrm2 = sd_nrm2,
    .gather = sd_gather,
    .scatter_axpy = sd_scatter,
    .subset = sd_subset,
    .free = sd_free,
};

krr_status krr_op_sharded_create(krr_op *local, krr_comm *comm, krr_op **out) {
  *out = NULL;
  if (!local) return KRR_ERR_INPUT;
  krr_ctx *ctx = local->ctx;
  krr_status st = KRR_OK;
  krr_comm_reset(comm);
  if (strcmp(local->vt->name, "exact") != 0)
    st = krr_fail(ctx, KRR_ERR_INPUT, "a sharded operator wraps the exact operator (got %s)",
                  local->vt->name);
  /* the shapes and the kernel must agree: every rank checks, all agree */
  int64_t v[4] = {local->p, -(int64_t)local->p, local->n, (int64_t)local->prec};
  if (st == KRR_OK) st = krr_comm_allreduce(comm, ctx, v, 2, KRR_DT_INT64, KRR_RED_MAX);
  if (st == KRR_OK && (v[0] != local->p || -v[1] != local->p))
    st = krr_fail(ctx, KRR_ERR_INPUT, "the shards have different numbers of columns `p` "
                  "(this rank: %d, others up to %lld)", local->p, (long long)v[0]);
  if (st == KRR_OK && local->n < 1)
    st = krr_fail(ctx, KRR_ERR_INPUT, "rank %d holds no training rows: every rank needs at "
                  "least one row of `x`", comm->rank);
  int same = 1;
  double kid[3] = {(double)local->kernel.type, local->kernel.bandwidth, (double)local->prec};
  if (st == KRR_OK) st = krr_comm_same(comm, ctx, kid, (int64_t)sizeof kid, &same);
  if (st == KRR_OK && !same)
    st = krr_fail(ctx, KRR_ERR_INPUT, "the ranks differ in kernel, bandwidth or precision");
  st = krr_comm_agree(comm, ctx, st);
  krr_op *op = NULL;
  sh_t *S = NULL;
  if (st == KRR_OK) {
    op = (krr_op *)calloc(1, sizeof *op);
    S = (sh_t *)calloc(1, sizeof *S);
    if (S) {
      S->start = (int64_t *)calloc((size_t)comm->size + 1, sizeof(int64_t));
      S->counts = (int64_t *)calloc((size_t)comm->size, sizeof(int64_t));
      S->displs = (int64_t *)calloc((size_t)comm->size, sizeof(int64_t));
    }
    if (!op || !S || !S->start || !S->counts || !S->displs)
      st = krr_fail(ctx, KRR_ERR_MEMORY, "out of host memory");
  }
  if (st == KRR_OK) { /* row offsets: allgather of the local counts */
    int64_t *nl = S->start + 1;
    for (int r = 0; r < comm->size; r++) {
      S->counts[r] = (int64_t)sizeof(int64_t);
      S->displs[r] = (int64_t)sizeof(int64_t) * r;
    }
    int64_t mine = local->n;
    st = krr_comm_allgatherv(comm, ctx, &mine, (int64_t)sizeof mine, nl, S->counts, S->displs);
    for (int r = 0; st == KRR_OK && r < comm->size; r++) S->start[r + 1] += S->start[r];
  }
  if (st != KRR_OK) {
    if (S) { free(S->start); free(S->counts); free(S->displs); }
    free(S); free(op);
    krr_op_free(local);
    return st;
  }
  S->local = local;
  S->comm = comm;
  *op = *local;
  op->vt = &sharded_vt;
  op->impl = S;
  op->n = S->start[comm->size];
  op->nloc = local->n;
  op->nfeat = 0;
  *out = op;
  return KRR_OK;
}

/* the communicator and the first global row of a sharded operator (NULL / 0
 * for any other operator) */
krr_comm *krr_op_comm(const krr_op *op, int64_t *row0) {
  if (row0) *row0 = 0;
  if (!op || op->vt != &sharded_vt) return NULL;
  sh_t *S = SD(op);
  if (row0) *row0 = S->start[S->comm->rank];
  return S->comm;
}
